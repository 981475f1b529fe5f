"""write a commented starter spec: one cluster, a GPU node group per instance type, one team, dev and prod

Why, with sources: docs/commands.md, "Design notes", gpufleet/commands/init.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
from pathlib import Path

from gpufleet import __version__
from gpufleet.base import package_data
from gpufleet.base.errors import SpecError, UsageError, did_you_mean
from gpufleet.base.render import render
from gpufleet.facts import ami_releases, catalog
from gpufleet.facts.versions import KUBERNETES_VERSIONS
from gpufleet.rules.pipeline import Validated, validate_loaded
from gpufleet.spec.load import load_text
from gpufleet.tree.output import TargetRefused, write_new_file

EXIT_OK = 0
DEFAULT_INSTANCE_TYPES = "g6.xlarge"
_AMI_TYPES = {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}
_MAX_NODES = 2
# Examples the user replaces (marked REPLACE in the spec): a documentation range (RFC 5737) and the example account.
EXAMPLE_CIDR = "203.0.113.0/24"
EXAMPLE_TEAM_ROLE = "arn:aws:iam::111122223333:role/my-team"


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


def _efa(entry: catalog.InstanceType) -> bool:
    # A Training group of an EFA-capable type runs multi-node jobs: without fabric EFA its NCCL traffic takes TCP
    # (the catalog's efa_supported comes from EC2 DescribeInstanceTypes NetworkInfo.EfaSupported).
    return entry.efa_supported and _workload_class(entry) == "Training"


def starter_spec(types: list[catalog.InstanceType]) -> str:
    """The commented starter spec for these instance types (YAML text)."""
    kubernetes = _kubernetes_version()
    lines = [
        (
            "# A starter fleet written by `gpufleet init`. Replace every example marked REPLACE (account 111122223333,"
            " VPC,"
        ),
        "# subnets, the endpoint's CIDR, the team's role); fields: docs/spec-reference.md. Versions and the CPU system",
        "# node group take gpufleet's defaults. Then: gpufleet validate && gpufleet synth --env dev && gpufleet check",
        "apiVersion: gpufleet/v1alpha1",
        "kind: Fleet",
        "metadata: {name: my-fleet}",
        "cluster:",
        "  name: my-fleet",
        "  region: us-east-1",
        f'  kubernetesVersion: "{kubernetes}"',
        '  admins: [{principalArn: "arn:aws:iam::111122223333:role/platform-admin"}]'
        "  # REPLACE: IAM roles, cluster admin",
        # gpufleet check fails an endpoint open to the internet (rule endpoint-not-open): the starter names one
        # documentation range (RFC 5737 TEST-NET-3) to replace with the VPN or CI egress that runs kubectl and pulumi.
        f"  publicEndpoint: {{cidrs: [{EXAMPLE_CIDR}]}}  # REPLACE: who reaches the API (VPN, CI egress)",
        "  network: {vpcId: vpc-0123456789abcdef0, subnetIds: [subnet-0123456789abcdef0, subnet-0123456789abcdef1]}"
        "  # REPLACE",
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
        if _efa(entry):
            lines += [
                "    fabric: EFA  # EFA interfaces, the EFA device plugin, NCCL over EFA and a bandwidth gate",
                "    zone: use1-az4  # EFA stays within one zone: the zone ID of the subnet below (replace both)",
                "    subnetIds: [subnet-0123456789abcdef0]",
            ]
    lines += [
        "teams:  # each team gets a namespace and a Kueue queue with a GPU quota per node group",
        "  - name: my-team",
        # gpufleet check fails a team without members (team-has-members): nobody could use its quota.
        f'    members: [{{principalArn: "{EXAMPLE_TEAM_ROLE}"}}]  # REPLACE: who submits its work',
        "    quotas:",
        *(f"      - {{nodeGroup: {_group_name(e)}, gpus: {e.gpu_count * _MAX_NODES}}}" for e in types),
        "environments:  # one Pulumi stack each; `through` is the last stage it deploys",
        "  dev: {rollout: {through: admission}}",
        "  prod: {rollout: {through: cost}}",
    ]
    return "\n".join(lines) + "\n"


# The program entry of a fleet repository (and of this checkout's __main__.py): the package does the rest.
PROGRAM = "from gpufleet.components.program import run\n\nrun()\n"
# The policy pack's entry: the Pulumi CLI runs this directory's __main__.py, which runs the installed pack.
POLICY_PROGRAM = 'import runpy\n\nrunpy.run_module("gpufleet.policies", run_name="__main__")\n'


# The oldest Pulumi CLI the fleet repository runs with, written into its Pulumi.yaml as requiredPulumiVersion: 3.219.0
# is the first release that reads that key and refuses a CLI outside the range (pulumi/pulumi CHANGELOG 3.219.0, #21627;
# older ones ignore unknown top-level keys of Pulumi.yaml), and it has the Python runtime option `toolchain` Pulumi.yaml
# sets (3.120.0).
MINIMUM_PULUMI_CLI = "3.219.0"
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*([.-]?(a|b|rc|dev|post)[0-9]*)*")
_SOURCES = (
    "give a version on your package index (0.1.0), a wheel file (dist/gpufleet-0.1.0-py3-none-any.whl) or a git"
    " URL at a tag (git+https://git.example.com/platform/gpufleet.git@v0.1.0)"
)


def requirement(source: str | None) -> str:
    """The requirements.txt line that installs gpufleet from `source` (--gpufleet): a version on the package index
    (None: this one), a wheel file (its absolute file: URL, so the repository installs from any directory), or a
    git URL at a tag or commit.

    Why: docs/commands.md, "Design notes", init.requirement."""
    if source is None:
        return f"gpufleet=={__version__}"
    if _VERSION.fullmatch(source):
        return f"gpufleet=={source}"
    if source.endswith(".whl"):
        wheel = Path(source).expanduser().resolve()
        if not wheel.name.startswith("gpufleet-"):
            raise UsageError(f"--gpufleet {source}: not a gpufleet wheel (its name starts with gpufleet-)")
        if not wheel.is_file():
            raise UsageError(f"--gpufleet {source}: no such file; build it with `pip wheel --no-deps .` in gpufleet")
        return f"gpufleet @ {wheel.as_uri()}"
    if source.startswith("git+"):
        if "@" not in source.rsplit("/", 1)[-1]:
            raise UsageError(f"--gpufleet {source}: pin a tag, as in {source}@v{__version__}")
        return f"gpufleet @ {source}"
    raise UsageError(f"--gpufleet {source}: {_SOURCES}")


def _data(name: str) -> str:
    return package_data.text(f"data/fleet-repo/{name}")


def repository(text: str, validated: Validated, gpufleet: str | None = None) -> dict[str, str]:
    """The files of a fleet repository for the starter spec `text` (validated as `validated`), path -> content;
    `gpufleet`: where it installs gpufleet from (--gpufleet, `requirement`)."""
    installs = requirement(gpufleet)
    fleet = validated.base
    environments = [(env.name, env.through) for env in fleet.environments]
    pack_requirements = package_data.text("policies/requirements.txt")
    files = {
        "fleet.yaml": text,
        "Pulumi.yaml": (
            f"name: {fleet.name}\n"
            "runtime:\n"
            "  name: python\n"
            "  options:\n"
            "    toolchain: pip\n"
            "    virtualenv: .venv  # python3 -m venv .venv && .venv/bin/pip install -r requirements.txt\n"
            f"description: The GPU fleet {fleet.name}, from fleet.yaml by gpufleet {__version__}.\n"
            "stackConfigDir: stacks\n"
            f'requiredPulumiVersion: ">={MINIMUM_PULUMI_CLI}"  # the oldest Pulumi CLI the program runs with\n'
        ),
        "__main__.py": PROGRAM,
        "policies/PulumiPolicy.yaml": (
            "# The gpufleet policy pack, run from the installed package: pulumi preview --policy-pack policies\n"
            "runtime:\n"
            "  name: python\n"
            "  options:\n"
            "    virtualenv: ../.venv\n"
            f"version: {__version__}\n"
            "description: gpufleet fleet policies (the same rules as `gpufleet check`)\n"
        ),
        "policies/__main__.py": POLICY_PROGRAM,
        "requirements.txt": (
            "# gpufleet pinned (upgrade it in a pull request of its own: the review diff shows what changes),\n"
            "# then the policy pack's requirements. `gpufleet init --pulumi DIR --gpufleet SOURCE` chose where from:\n"
            "# a version on the package index, a wheel file, or a git URL at a tag.\n"
            f"{installs}\n" + pack_requirements
        ),
        ".github/workflows/gpufleet.yml": _data("gpufleet.yml"),
        ".checkov.yaml": _data("checkov.yaml"),
        ".gitignore": ".venv/\n__pycache__/\n/out/\n",
        "README.md": render(
            "fleet-repo-readme.md.j2",
            name=fleet.name,
            version=__version__,
            requirement=installs,
            minimum_pulumi=MINIMUM_PULUMI_CLI,
            region=fleet.cluster.region,
            environments=environments,
            first=environments[0][0],
        ),
    }
    for env, _ in environments:
        files[f"stacks/Pulumi.{env}.yaml"] = (
            f"# Stack name = environment name in the fleet spec (environments.{env}).\n"
            "config:\n"
            f"  aws:region: {fleet.cluster.region}\n"
            "  gpufleet:spec: fleet.yaml\n"
        )
    return dict(sorted(files.items()))


def write_repository(directory: str, files: dict[str, str]) -> None:
    """Write `files` into `directory`, which must be absent or empty, all at once: into a hidden directory beside it,
    renamed into place (rename replaces only an empty directory). Raises UsageError; nothing is left on failure."""
    target = Path(os.path.abspath(directory))
    if target.is_symlink() or (target.exists() and (not target.is_dir() or any(target.iterdir()))):
        raise UsageError(f"--pulumi {directory}: exists and is not an empty directory; give a new one")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.gpufleet-init-", dir=target.parent))
    except OSError as exc:
        raise UsageError(f"--pulumi {directory}: cannot write in {target.parent}: {exc.strerror or exc}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp's 0700 would become the repository's mode
        for name, content in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        os.rename(staging, target)
    except OSError as exc:
        raise UsageError(f"--pulumi {directory}: cannot write it: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--instance-types",
        default=DEFAULT_INSTANCE_TYPES,
        metavar="TYPES",
        help=f"comma-separated GPU instance types, one node group each (default: {DEFAULT_INSTANCE_TYPES})",
    )
    parser.add_argument(
        "--out",
        help="the file to write (default: fleet.yaml), never an existing one; - prints the spec",
    )
    parser.add_argument(
        "--pulumi",
        metavar="DIR",
        help=(
            "write a fleet repository into DIR (absent or empty) instead: the spec, Pulumi.yaml, a stack per"
            " environment, the program entry, the policy pack, the review workflow and a README"
        ),
    )
    parser.add_argument(
        "--gpufleet",
        metavar="SOURCE",
        help=(
            f"with --pulumi: where the repository installs gpufleet from: a version on the package index (default:"
            f" {__version__}), a wheel file, or a git URL at a tag (git+https://...@v{__version__})"
        ),
    )


def run(args: argparse.Namespace) -> int:
    if args.pulumi is not None and args.out is not None:
        raise UsageError("--out and --pulumi: give one (the repository's spec is DIR/fleet.yaml)")
    if args.gpufleet is not None and args.pulumi is None:
        raise UsageError("--gpufleet: only with --pulumi (it is what the repository's requirements.txt installs)")
    if args.pulumi is not None:
        requirement(args.gpufleet)  # a bad source is a usage error before anything is validated or written
    text = starter_spec(instance_types(args.instance_types))
    out = args.out or "fleet.yaml"
    name = "fleet.yaml" if out == "-" or args.pulumi is not None else out
    try:
        validated = validate_loaded(load_text(text, name))
    except SpecError as exc:  # gpufleet wrote a spec it rejects itself: a bug (exit 3), with what it rejected
        raise RuntimeError(f"gpufleet init made a spec it rejects itself:\n{exc.render()}") from None
    if args.pulumi is not None:
        write_repository(args.pulumi, repository(text, validated, args.gpufleet))
        print(f'wrote the fleet repository {args.pulumi}; next: its README.md, "Before the first deploy"')
        return EXIT_OK
    args.out = out
    if args.out == "-":
        print(text, end="")
        return EXIT_OK
    try:
        write_new_file(args.out, text)
    except TargetRefused as exc:
        raise UsageError(f"--out {args.out}: {exc}") from None
    print(f"wrote {args.out}; next: gpufleet validate {args.out}")
    return EXIT_OK
