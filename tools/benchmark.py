"""Benchmark (not a timed test): validate and synth time for the example fleet and a generated large fleet.

    python tools/benchmark.py            # validate + synth, example and generated
    python tools/benchmark.py --no-synth # validate only

The generated fleet has 100 node groups and 300 teams (validate) and the same 100 groups (synth). Synth
runs in a child process per case so peak memory (ru_maxrss) is that case's alone."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from gpufleet.pipeline import load_fleet

ROOT = Path(__file__).resolve().parents[1]
TYPES = ["p5.48xlarge", "p4d.24xlarge", "g6e.12xlarge", "g5.xlarge", "g6.2xlarge"]


def generated_fleet(groups: int, teams: int) -> str:
    base = yaml.safe_load((ROOT / "fleet.yaml").read_text())
    template = next(g for g in base["nodeGroups"] if g["name"] == "l40s")
    base["nodeGroups"] = []
    for i in range(groups):
        group = dict(template, name=f"group-{i:03d}", instanceType=TYPES[i % len(TYPES)], scaling={"minSize": 0, "maxSize": 64})
        group.pop("images", None)
        base["nodeGroups"].append(group)
    base["teams"] = [
        {"name": f"team-{j:03d}", "cohort": f"cohort-{j % 10}", "quotas": [{"nodeGroup": f"group-{(j + k) % groups:03d}", "gpus": 8, "borrowingLimit": 8} for k in range(3)]}
        for j in range(teams)
    ]
    base["cost"] = {"gpuHourUsd": {}}
    base["environments"] = {"prod": {"rollout": {"through": "cost"}}}
    return yaml.safe_dump(base, sort_keys=False)


def time_validate(path: Path, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        load_fleet(str(path))
        best = min(best, time.perf_counter() - start)
    return best


def time_synth(path: Path) -> tuple[float, float]:
    """(seconds, peak MiB) of `gpufleet synth` in a fresh process."""
    code = (
        "import json, resource, sys, time\n"
        "t = time.perf_counter()\n"
        "from gpufleet.pipeline import load_fleet\n"
        "from gpufleet.synth import synth_tree\n"
        f"fleet = load_fleet({str(path)!r}, 'prod').environments['prod']\n"
        "synth_tree(fleet, 'prod')\n"
        "print(json.dumps([time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    seconds, mib = json.loads(out.stdout.strip().splitlines()[-1])
    return seconds, mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-synth", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "fleet-100x300.yaml"
        big.write_text(generated_fleet(100, 300))
        synth_big = Path(tmp) / "fleet-100.yaml"
        synth_big.write_text(generated_fleet(100, 30))
        print(f"validate example fleet.yaml:            {time_validate(ROOT / 'fleet.yaml') * 1000:8.1f} ms (best of 5)")
        print(f"validate 100 node groups, 300 teams:    {time_validate(big, 3) * 1000:8.1f} ms (best of 3)")
        if not args.no_synth:
            for label, path in (("example fleet.yaml (prod)", ROOT / "fleet.yaml"), ("100 node groups (prod)", synth_big)):
                seconds, mib = time_synth(path)
                print(f"synth {label:33s} {seconds:8.2f} s, peak {mib:6.0f} MiB")


if __name__ == "__main__":
    main()
