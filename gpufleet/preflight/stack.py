"""The Pulumi stack's `aws:region` against the spec's cluster.region (no AWS call: the project's own files).

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/stack.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec.fleet import Fleet


def _project(spec: Path) -> Path | None:
    for directory in [spec.resolve().parent, *spec.resolve().parent.parents][:4]:
        if (directory / "Pulumi.yaml").is_file():
            return directory
    return None


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None


def stack_file(spec: str, env: str) -> Path | None:
    """The stack configuration file of environment `env`, when the spec sits in a Pulumi project that has one."""
    project = _project(Path(spec))
    if project is None:
        return None
    settings = _load(project / "Pulumi.yaml")
    config_dir = settings.get("stackConfigDir", ".") if isinstance(settings, dict) else "."
    path = project / str(config_dir) / f"Pulumi.{env}.yaml"
    return path if path.is_file() else None


def check_stack_region(fleet: Fleet, spec: str, env: str) -> list[AccountFinding]:
    path = stack_file(spec, env)
    if path is None:
        return []
    data = _load(path)
    config = data.get("config") if isinstance(data, dict) else None
    region = config.get("aws:region") if isinstance(config, dict) else None
    if region == fleet.cluster.region:
        return []
    if region is None:
        return [
            AccountFinding(
                severity="warning",
                node_group=None,
                message=f"stack {env} ({path}) sets no aws:region; the spec's cluster.region is {fleet.cluster.region}",
                hint=f"pulumi config set aws:region {fleet.cluster.region} --stack {env}",
                scope="stack",
            )
        ]
    return [
        AccountFinding(
            severity="error",
            node_group=None,
            message=(
                f"stack {env} ({path}) has aws:region {region}, the spec's cluster.region is {fleet.cluster.region}"
            ),
            hint=f"pulumi config set aws:region {fleet.cluster.region} --stack {env} (or change cluster.region)",
            scope="stack",
        )
    ]
