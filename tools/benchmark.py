"""Benchmark (not a timed test): synth against the Pulumi mock floor, and validate / plan of the example.

    python tools/benchmark.py                 # the example fleet and generated fleets of 12, 24, 48, 96 groups
    python tools/benchmark.py --sizes 24,96 --repeat 5

Synth can never beat the runtime it runs under, so it is measured against a floor: the time the same mock runtime
takes to register the same tree (every entry of the synth's inventory.json, with its type, name, inputs, parent
and dependsOn) as bare `pulumi.CustomResource` / `ComponentResource` objects, with no gpufleet code. Each
measurement runs in a fresh child process and counts that process's CPU time (user + system) from the spec to
the tree (after the imports both processes share; see `child`); CPU time, not wall time, so that other work on
the machine does not move the ratio. Each of `--repeat` rounds measures every fleet once, and the best of the
rounds is reported, with the child's peak resident memory. A generated fleet of N groups has 3N teams, each with quotas
on three groups.

Two floors are measured. `floor` gives each dependsOn as the resource object itself. `floor-urn` names each
stage's readiness by its URN, as synth does (components/stage.py `UrnDependency`): the engine receives the same
requests, but the SDK's cycle check no longer walks every earlier stage for every resource. At scale synth is
faster than `floor` for that reason alone; `floor-urn` is the floor of the program as it is.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks

from gpufleet.commands.synth import synth_tree
from gpufleet.components.recording import run_under_mocks
from gpufleet.components.stage import UrnDependency
from gpufleet.plan.parts import render_table
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.tree.read import resources

ROOT = Path(__file__).resolve().parents[1]
TYPES = ["p5.48xlarge", "p4d.24xlarge", "g6e.12xlarge", "g5.xlarge", "g6.2xlarge"]
SIZES = (12, 24, 48, 96)
READINESS = "pulumi:index:Stash"


def generated_fleet(groups: int, teams: int) -> str:
    base = yaml.safe_load((ROOT / "fleet.yaml").read_text())
    template = next(g for g in base["nodeGroups"] if g["name"] == "l40s")
    base["nodeGroups"] = []
    for i in range(groups):
        group = dict(
            template, name=f"group-{i:03d}", instanceType=TYPES[i % len(TYPES)], scaling={"minSize": 0, "maxSize": 64}
        )
        group.pop("images", None)
        base["nodeGroups"].append(group)
    base["teams"] = [
        {
            "name": f"team-{j:03d}",
            "cohort": f"cohort-{j % 10}",
            "quotas": [
                {"nodeGroup": f"group-{(j + k) % groups:03d}", "gpus": 8, "borrowingLimit": 8} for k in range(3)
            ],
        }
        for j in range(teams)
    ]
    base["cost"] = {"gpuHourUsd": {}}
    base.pop("workloads", None)  # it names the example's l40s group
    base["environments"] = {"prod": {"rollout": {"through": "cost"}}}
    return yaml.safe_dump(base, sort_keys=False)


def replay(inventory: list[dict[str, Any]], by_urn: bool = False) -> None:
    """Register `inventory` as bare resources: parents and dependsOn targets before the resources naming them.
    `by_urn`: name each stage's readiness by its URN, as synth does (components/stage.py `UrnDependency`)."""
    by_name = {e["name"]: e for e in inventory}
    made: dict[str, pulumi.Resource] = {}

    def make(name: str) -> pulumi.Resource:
        if name in made:
            return made[name]
        entry = by_name[name]
        parent = make(entry["parent"]) if entry["parent"] else None
        depends_on = [
            UrnDependency(make(d)) if by_urn and by_name[d]["type"] == READINESS else make(d)
            for d in entry["dependsOn"]
        ]
        opts = pulumi.ResourceOptions(parent=parent, depends_on=depends_on or None)
        typ: str = entry["type"]
        if typ.startswith("gpufleet:stage:"):
            made[name] = pulumi.ComponentResource(typ, name, None, opts)
        elif typ.startswith("pulumi:providers:"):
            made[name] = pulumi.ProviderResource(
                typ.removeprefix("pulumi:providers:"), name, dict(entry["inputs"]), opts
            )
        else:
            made[name] = pulumi.CustomResource(typ, name, dict(entry["inputs"]), opts)
        return made[name]

    for entry in inventory:
        make(entry["name"])


class FloorMocks(pulumi_mocks.Mocks):
    """The least a mock can do: echo the inputs back."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        return {}


def load_inventory(tree_path: str) -> list[dict[str, Any]]:
    """The entries, with their inputs, of the tree `synth` left (read before the floor's clock starts)."""
    files: dict[str, str] = json.loads(Path(tree_path).read_text())
    return resources(json.loads(files["inventory.json"]), files)


def floor(inventory: list[dict[str, Any]], by_urn: bool) -> None:
    """Child process: replay an inventory under the mock runtime synth uses."""
    run_under_mocks(FloorMocks(), lambda: replay(inventory, by_urn), "prod")


def synth(spec: str, env: str, tree_path: str) -> None:
    """Child process: `gpufleet synth` without writing files; leaves the tree's files for the floor."""
    _, tree = synth_tree(load_fleet(spec, env).environments[env], env)
    Path(tree_path).write_text(json.dumps(dict(tree.files)))


def child(argv: list[str]) -> None:
    """Measure one synth or floor run. Both processes import the same modules (above) before the clock starts:
    the Pulumi runtime and the two SDK packages; anything synth imports beyond them is counted in synth."""
    kind, *args = argv
    inventory = load_inventory(args[0]) if kind != "synth" else []
    start = time.process_time()
    synth(*args) if kind == "synth" else floor(inventory, by_urn=kind == "floor-urn")
    cpu = time.process_time() - start
    print(json.dumps({"cpu": cpu, "mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def measure(*argv: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "tools.benchmark", "--child", *argv], capture_output=True, text=True, cwd=ROOT
    )
    if out.returncode:
        raise SystemExit(f"benchmark child {argv} failed:\n{out.stderr}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def best(runs: list[dict[str, float]]) -> dict[str, float]:
    return {"cpu": min(r["cpu"] for r in runs), "mib": min(r["mib"] for r in runs)}


def time_core(spec: Path, env: str, runs: int = 5) -> tuple[float, float]:
    """(validate, plan) CPU seconds in this process, best of `runs`: what `gpufleet validate` / `plan` do."""
    validate = plan = float("inf")
    for _ in range(runs):
        start = time.process_time()
        fleet = load_fleet(str(spec)).environments[env]
        validate = min(validate, time.process_time() - start)
        start = time.process_time()
        render_table(build_plan(load_fleet(str(spec), env).environments[env], env))
        plan = min(plan, time.process_time() - start)
    assert fleet
    return validate, plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="node group counts of the generated fleets")
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds of every measurement; the best of each is reported"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    validate, plan = time_core(ROOT / "fleet.yaml", "prod")
    print(
        f"example fleet.yaml: validate {validate * 1000:.0f} ms, plan --env prod {plan * 1000:.0f} ms (CPU, best of 5)"
    )
    print(f"synth against the floor (CPU seconds, best of {args.repeat} rounds; peak MiB of the process):")
    print(
        f"  {'fleet':28s} {'resources':>9s} {'synth':>8s} {'floor':>8s} {'ratio':>6s} {'floor-urn':>9s} {'ratio':>6s}"
        f" {'synth MiB':>10s} {'floor MiB':>10s}"
    )
    times: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cases: list[tuple[str, Path, int]] = [("example fleet.yaml (prod)", ROOT / "fleet.yaml", 0)]
        for n in sizes:
            spec = Path(tmp) / f"fleet-{n}.yaml"
            spec.write_text(generated_fleet(n, 3 * n))
            cases.append((f"{n} node groups, {3 * n} teams", spec, n))
        # Rounds run every measurement of every fleet once, so that a quiet or a busy spell of a shared machine
        # touches all sizes alike (measured size by size, a quiet minute for one size moved the growth by a fifth).
        runs: dict[tuple[int, str], list[dict[str, float]]] = {}
        for _ in range(args.repeat):
            for _label, spec, n in cases:
                tree = Path(tmp) / f"tree-{n}.json"
                runs.setdefault((n, "synth"), []).append(measure("synth", str(spec), "prod", str(tree)))
                for kind in ("floor", "floor-urn"):
                    runs.setdefault((n, kind), []).append(measure(kind, str(tree)))
        for label, _spec, n in cases:
            s, f, u = (best(runs[n, kind]) for kind in ("synth", "floor", "floor-urn"))
            count = len(load_inventory(str(Path(tmp) / f"tree-{n}.json")))
            times[n] = (s["cpu"], f["cpu"], u["cpu"])
            print(
                f"  {label:28s} {count:9d} {s['cpu']:8.2f} {f['cpu']:8.2f} {s['cpu'] / f['cpu']:6.2f} {u['cpu']:9.2f}"
                f" {s['cpu'] / u['cpu']:6.2f} {s['mib']:10.0f} {f['mib']:10.0f}"
            )
    for small, large in ((24, 96), (12, 48)):
        if small in times and large in times:
            synth_growth, floor_growth, urn_growth = (times[large][i] / times[small][i] for i in range(3))
            print(
                f"growth: synth of {large} groups takes {synth_growth:.2f}x the time of {small} groups"
                f" (floor {floor_growth:.2f}x, floor-urn {urn_growth:.2f}x)"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        main()
