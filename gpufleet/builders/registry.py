"""Importing this module registers every stage builder with gpufleet.plan."""

from gpufleet.builders import (  # noqa: F401
    admission,
    cost,
    foundation,
    health,
    network,
    sharing,
    storage,
    telemetry,
)
