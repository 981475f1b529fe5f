"""Every shell script gpufleet renders passes shellcheck: node user data, the bandwidth gate's command, the health
scripts. Collected from the plans of every golden case (all environments), so a new script is checked as soon as a
case renders it. shellcheck is the Debian package of that name; .ci/run installs it when missing."""

from __future__ import annotations

import base64
import binascii
import email
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet

CASES = Path(__file__).resolve().parents[1] / "golden" / "cases"
SHELLS = ("/bin/bash", "bash", "/bin/sh", "sh")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]{40,}")


def _scripts(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if _BASE64.fullmatch(value):
            try:
                value = base64.b64decode(value, validate=False).decode()
            except (binascii.Error, UnicodeDecodeError):
                return
        if value.startswith("#!"):
            out.append(value)
        elif value.startswith("MIME-Version"):
            for part in email.message_from_string(value).walk():
                if part.get_content_type() == "text/x-shellscript":
                    out.append(part.get_payload(decode=True).decode())
    elif isinstance(value, dict):
        command = value.get("command")
        if isinstance(command, list) and len(command) >= 3 and command[0] in SHELLS and command[1] == "-c":
            out.append("#!/bin/bash\n" + command[2])
        for item in value.values():
            _scripts(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _scripts(item, out)


def rendered_scripts() -> dict[str, str]:
    """script text -> where it first appears (case/environment/resource)."""
    found: dict[str, str] = {}
    for case in sorted(CASES.iterdir()):
        for env, fleet in load_fleet(str(case / "fleet.yaml")).environments.items():
            for stage in build_plan(fleet, env).stages:
                for res in stage.content.resources:
                    out: list[str] = []
                    _scripts(dict(res.args), out)
                    for script in out:
                        found.setdefault(script, f"{case.name}/{env}/{res.id}")
    for name in ("check-dcgm-health.sh", "dcgm-health-loop.sh"):
        found.setdefault(
            (resources.files("gpufleet") / "data" / "health" / name).read_text(), f"gpufleet/data/health/{name}"
        )
    return found


def test_every_rendered_script_passes_shellcheck(tmp_path: Path) -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package shellcheck; .ci/run installs it)")
    scripts = rendered_scripts()
    assert any("nccl" in where for where in scripts.values()), "the bandwidth gate script was not collected"
    assert any("launch-template" in where for where in scripts.values()), "no user data script was collected"
    failures = []
    for i, (script, where) in enumerate(scripts.items()):
        path = tmp_path / f"{i}.sh"
        path.write_text(script)
        result = subprocess.run(["shellcheck", "--shell=bash", str(path)], capture_output=True, text=True, timeout=60)
        if result.returncode:
            failures.append(f"{where}:\n{result.stdout}")
    assert failures == []
