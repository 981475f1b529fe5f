"""Write gpufleet/data/eks-ami-releases.json from awslabs/amazon-eks-ami's CHANGELOG.md.

    python tools/eks_ami_releases.py CHANGELOG.md COMMIT DATE

The CHANGELOG lists, per AMI release (`# AMI Release vYYYYMMDD`), the AMI names of every Kubernetes minor
(`amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260714`) and the EKS release version they carry
(`1.33.13-20260714`). Releases headed `[ABANDONED]` were never published and are skipped. Only the AL2023 AMI types
gpufleet renders (NVIDIA for GPU groups, STANDARD for the system nodes) and the Kubernetes minors of
gpufleet.facts.versions.KUBERNETES_VERSIONS are kept. COMMIT and DATE name the CHANGELOG version read (the catalog's
as-of).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpufleet.facts.versions import KUBERNETES_VERSIONS  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "gpufleet" / "data" / "eks-ami-releases.json"
_SECTION = re.compile(r"^# (?=(?:\[ABANDONED\] )?AMI Release )", re.M)
_NAME = re.compile(r"amazon-eks-node-al2023-(x86_64|arm64)-(nvidia|standard)-(\d+\.\d+)-v(\d{8})\b")
_RELEASE = re.compile(r"<td[^>]*>(\d+\.\d+\.\d+-\d{8})</td>")


def parse(text: str) -> dict[str, dict[str, list[str]]]:
    """AMI type -> Kubernetes minor -> release versions, oldest first."""
    found: dict[str, dict[str, set[str]]] = {}
    for section in _SECTION.split(text)[1:]:
        if section.startswith("[ABANDONED]"):
            continue
        for block in section.split("<summary><b>Kubernetes ")[1:]:
            minor = block.split("<", 1)[0].strip()
            release = None
            # A release cell spans the AMI-name rows below it (rowspan), so it applies until the next one.
            for row in block.split("</table>", 1)[0].split("<tr>"):
                if match := _RELEASE.search(row):
                    release = match[1]
                name = _NAME.search(row)
                if name is None or release is None or minor not in KUBERNETES_VERSIONS:
                    continue
                arch, flavor, name_minor, date = name.groups()
                if name_minor != minor or not release.startswith(f"{minor}.") or not release.endswith(date):
                    raise ValueError(f"{name[0]} under Kubernetes {minor} carries release {release}")
                ami_type = f"AL2023_{'x86_64' if arch == 'x86_64' else 'ARM_64'}_{flavor.upper()}"
                found.setdefault(ami_type, {}).setdefault(minor, set()).add(release)
    return {
        t: {m: sorted(r, key=lambda v: v.split("-")[1]) for m, r in sorted(minors.items())}
        for t, minors in sorted(found.items())
    }


def main() -> None:
    changelog, commit, date = sys.argv[1:4]
    catalog = {
        "source": "https://github.com/awslabs/amazon-eks-ami/blob/main/CHANGELOG.md",
        "commit": commit,
        "asOf": date,
        "releases": parse(Path(changelog).read_text()),
    }
    OUT.write_text(json.dumps(catalog, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
