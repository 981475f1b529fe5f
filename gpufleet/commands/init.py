"""write a commented starter spec: one cluster, a GPU node group per instance type, one team, dev and prod

`gpufleet init [--instance-types g6.xlarge,...] [--out fleet.yaml]` writes the smallest fleet that validates,
plans and synthesises, for the given GPU instance types (default g6.xlarge, one NVIDIA L4): each becomes a node
group named after it, with the AMI type of its architecture and the newest AMI release gpufleet knows for the
newest Kubernetes version it supports, and the team gets every GPU of every group as quota. The account, VPC and
subnets are examples to replace. Versions and the system node group are left to gpufleet's defaults.

The text is validated through the same loader as `gpufleet validate` before anything is written; it is written
atomically and never over an existing file (`--out -` prints it instead). An instance type that is not in the
catalog (gpufleet/facts/catalog.py) is a usage error naming the closest one. Exit 0 written, 2 a usage error.
"""

from __future__ import annotations

import argparse

from gpufleet.base.errors import SpecError, UsageError, did_you_mean
from gpufleet.facts import ami_releases, catalog
from gpufleet.facts.versions import KUBERNETES_VERSIONS
from gpufleet.rules.pipeline import validate_loaded
from gpufleet.spec.load import load_text
from gpufleet.tree.output import TargetRefused, write_new_file

EXIT_OK = 0
DEFAULT_INSTANCE_TYPES = "g6.xlarge"
_AMI_TYPES = {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}
_MAX_NODES = 2


def _kubernetes_version() -> str:
    """The newest Kubernetes version gpufleet renders for that has a known NVIDIA AMI release on every architecture."""
    return max(
        (v for v in KUBERNETES_VERSIONS if all(ami_releases.newest(ami, v) for ami in _AMI_TYPES.values())),
        key=lambda v: tuple(int(p) for p in v.split(".")),
    )


def instance_types(value: str) -> list[catalog.InstanceType]:
    """The catalog entries of a comma-separated list; raises UsageError naming the first unknown or repeated one."""
    names = [name.strip() for name in value.split(",")]
    if not any(names):
        raise UsageError("--instance-types: give at least one GPU instance type, e.g. g6.xlarge")
    found: list[catalog.InstanceType] = []
    for name in names:
        entry = catalog.lookup(name)
        if entry is None:
            families = {t.family for t in catalog.CATALOG.values()}
            hint = (
                did_you_mean(name, catalog.gpu_instance_names())
                or f"the GPU instance types gpufleet knows: {', '.join(sorted(families))} families"
                " (gpufleet/facts/catalog.py)"
            )
            raise UsageError(f'--instance-types: "{name}" is not a GPU instance type gpufleet knows; {hint}')
        if entry in found:
            raise UsageError(f"--instance-types: {name} is given twice; each instance type becomes one node group")
        found.append(entry)
    return found


def _group_name(entry: catalog.InstanceType) -> str:
    return entry.name.replace(".", "-")


def _workload_class(entry: catalog.InstanceType) -> str:
    # Eight GPUs with EFA are built for multi-node training; smaller instances usually run batch jobs.
    return "Training" if entry.efa_supported and entry.gpu_count >= 8 else "Batch"


def starter_spec(types: list[catalog.InstanceType]) -> str:
    """The commented starter spec for these instance types (YAML text)."""
    kubernetes = _kubernetes_version()
    lines = [
        (
            "# A starter fleet written by `gpufleet init`. Replace the example account (111122223333), VPC and subnets"
            " with"
        ),
        "# yours; every field is described in docs/spec-reference.md. Component versions and the CPU system node group",
        "# take gpufleet's defaults (plan.md lists them). Then: gpufleet validate && gpufleet synth --env dev",
        "apiVersion: gpufleet/v1alpha1",
        "kind: Fleet",
        "metadata: {name: my-fleet}",
        "cluster:",
        "  name: my-fleet",
        "  region: us-east-1",
        f'  kubernetesVersion: "{kubernetes}"',
        '  admins: [{principalArn: "arn:aws:iam::111122223333:role/platform-admin"}]  # IAM roles with cluster admin',
        "  network: {vpcId: vpc-0123456789abcdef0, subnetIds: [subnet-0123456789abcdef0, subnet-0123456789abcdef1]}",
        "nodeGroups:  # one per GPU instance type; scaled from 0 by the Cluster Autoscaler",
    ]
    for entry in types:
        ami = _AMI_TYPES[entry.architecture]
        lines += [
            f"  - name: {_group_name(entry)}  # {entry.gpu_count} x NVIDIA {entry.gpu_model}",
            f"    instanceType: {entry.name}",
            f"    workloadClass: {_workload_class(entry)}  # Training | Inference | Batch | Interactive",
            f'    ami: {{type: {ami}, releaseVersion: "{ami_releases.newest(ami, kubernetes)}"}}',
            f"    scaling: {{maxSize: {_MAX_NODES}}}",
        ]
    lines += [
        "teams:  # each team gets a namespace and a Kueue queue with a GPU quota per node group",
        "  - name: my-team",
        "    quotas:",
        *(f"      - {{nodeGroup: {_group_name(e)}, gpus: {e.gpu_count * _MAX_NODES}}}" for e in types),
        "environments:  # one Pulumi stack each; `through` is the last stage it deploys",
        "  dev: {rollout: {through: admission}}",
        "  prod: {rollout: {through: cost}}",
    ]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--instance-types",
        default=DEFAULT_INSTANCE_TYPES,
        metavar="TYPES",
        help=f"comma-separated GPU instance types, one node group each (default: {DEFAULT_INSTANCE_TYPES})",
    )
    parser.add_argument(
        "--out",
        default="fleet.yaml",
        help="the file to write (default: fleet.yaml), never an existing one; - prints the spec",
    )


def run(args: argparse.Namespace) -> int:
    text = starter_spec(instance_types(args.instance_types))
    name = "fleet.yaml" if args.out == "-" else args.out
    try:
        validate_loaded(load_text(text, name))
    except SpecError as exc:  # gpufleet wrote a spec it rejects itself: a bug (exit 3), with what it rejected
        raise RuntimeError(f"gpufleet init made a spec it rejects itself:\n{exc.render()}") from None
    if args.out == "-":
        print(text, end="")
        return EXIT_OK
    try:
        write_new_file(args.out, text)
    except TargetRefused as exc:
        raise UsageError(f"--out {args.out}: {exc}") from None
    print(f"wrote {args.out}; next: gpufleet validate {args.out}")
    return EXIT_OK
