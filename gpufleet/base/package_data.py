"""Files shipped inside the gpufleet package (gpufleet/data, listed in pyproject's package-data), read through
importlib.resources so an installed wheel finds them as a checkout does."""

from __future__ import annotations

from importlib import resources


def text(path: str) -> str:
    """The UTF-8 text of `path` below the package root (e.g. "data/health/kube.py")."""
    return resources.files("gpufleet").joinpath(path).read_text(encoding="utf-8")
