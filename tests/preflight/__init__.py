"""Tests of `gpufleet preflight`."""
