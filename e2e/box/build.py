"""Build the box's binaries from their pinned Go modules, once per pin set.

Each Go module of e2e/ (controlplane, controllers, kueue, karpenter) is built into a cache directory keyed by the
sha256 of its go.mod, go.sum, every Go file of its own and the Go toolchain version, so a second run with the same
pins finds the binaries and starts in seconds; a change of a pin builds into a new key. A build goes to a staging
directory renamed into place only when every binary is there, so an interrupted build leaves nothing that looks
complete.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

E2E = Path(__file__).resolve().parents[1]
# A Go newer than the machine's: the modules' go.mod say `go 1.27` (Kueue v0.19.2 and its peers need Go 1.26+,
# k8s.io/kubernetes v1.35 1.25+); the go command fetches this toolchain as a module.
GOTOOLCHAIN = "go1.27.3"
CACHE = Path(os.environ.get("GPUFLEET_E2E_CACHE", "~/.cache/gpufleet/e2e")).expanduser()


@dataclass(frozen=True)
class Module:
    """One Go module of e2e/ and the binaries built from it: output name -> package path."""

    name: str
    binaries: dict[str, str]

    @property
    def dir(self) -> Path:
        return E2E / self.name


CONTROLPLANE = Module(
    "controlplane",
    {
        "etcd": "./cmd/etcd",
        "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
        "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
        "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
        "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    },
)
CONTROLLERS = Module(
    "controllers",
    {
        "kwok": "sigs.k8s.io/kwok/cmd/kwok",
        "jobset": "sigs.k8s.io/jobset",
        "lws": "sigs.k8s.io/lws/cmd",
        "trainer": "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
        "helm": "helm.sh/helm/v3/cmd/helm",
    },
)
# Kueue links the other controllers' API libraries (and Trainer's TrainJob builder): its own module keeps them at
# the versions its release's go.mod names (e2e/kueue/go.mod says why).
KUEUE = Module("kueue", {"kueue": "sigs.k8s.io/kueue/cmd/kueue"})
# Karpenter's kwok provider (e2e/karpenter/cmd/karpenter: upstream's kwok main plus the AWS provider's reservation
# label); its own module, so its Kubernetes libraries do not move the controllers' pins.
KARPENTER = Module("karpenter", {"karpenter": "./cmd/karpenter"})
MODULES = (CONTROLPLANE, CONTROLLERS, KUEUE, KARPENTER)
# The real Pulumi engine (e2e/test_engine.py): the CLI, and the kubernetes provider the engine finds on PATH (an
# "ambient" plugin: https://www.pulumi.com/docs/iac/concepts/plugins/). Pulumi's Python language host
# (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) is not served by the module proxy, so the
# program runs inline through the Automation API, whose Python SDK serves the language runtime in-process.
PULUMI = Module("pulumi", {"pulumi": "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"})
PULUMI_KUBERNETES = Module("pulumikubernetes", {"pulumi-resource-kubernetes": "./cmd/pulumi-resource-kubernetes"})
ENGINE = (PULUMI, PULUMI_KUBERNETES)
PROVIDER = "github.com/pulumi/pulumi-kubernetes/provider/v4"


def go_env() -> dict[str, str]:
    env = dict(os.environ, GOTOOLCHAIN=GOTOOLCHAIN, GOFLAGS="-mod=readonly -buildvcs=false", CGO_ENABLED="0")
    return env


def _key(module: Module) -> str:
    digest = hashlib.sha256(GOTOOLCHAIN.encode())
    for path in sorted([module.dir / "go.mod", module.dir / "go.sum", *module.dir.rglob("*.go")]):
        digest.update(f"{path.relative_to(module.dir)}\n".encode() + path.read_bytes())
    for out, pkg in sorted(module.binaries.items()):
        digest.update(f"{out}={pkg}\n".encode())
    digest.update(_version_flags(module).encode())
    return digest.hexdigest()[:16]


def bin_dir(module: Module) -> Path:
    return CACHE / f"{module.name}-{_key(module)}"


def built(module: Module) -> bool:
    return all((bin_dir(module) / b).is_file() for b in module.binaries)


def required(module: Module, path: str) -> str:
    """The version of `path` that the module's go.mod requires."""
    for line in (module.dir / "go.mod").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in (path, "require") and path in parts:
            return parts[parts.index(path) + 1]
    raise KeyError(f"{module.dir / 'go.mod'} requires no {path}")


def provider_version() -> str:
    """The version the provider reports: its module's pseudo-version (a commit of upstream's master), not a release
    number it is not."""
    return required(PULUMI_KUBERNETES, PROVIDER).lstrip("v")


def _version_flags(module: Module) -> str:
    """The version each release build stamps into its binaries, so `--version` says which release this is: Pulumi's
    (its Makefile's -X of sdk/v3/go/common/version.Version; unstamped, the CLI says v3.0.0 and asks for an update),
    the provider's (pulumi-kubernetes' Makefile, pkg/version.Version) and Kubernetes' (hack/lib/version.sh; without it
    v0.0.0-master)."""
    if module is PULUMI:
        version = required(module, "github.com/pulumi/pulumi/pkg/v3")
        return f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={version}"
    if module is PULUMI_KUBERNETES:
        return f"-X {PROVIDER}/pkg/version.Version={provider_version()}"
    if module is not CONTROLPLANE:
        return ""
    version = required(module, "k8s.io/kubernetes")
    major, minor = version.lstrip("v").split(".")[:2]
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}", f"-X {pkg}.gitMinor={minor}"]
    return " ".join(flags)


def _prepare(module: Module) -> None:
    """Files a module's build embeds that its Go module does not ship: the provider's schema-embed.json and
    terraform-mapping-embed.json, written as upstream's cmd/pulumi-resource-kubernetes/generate.go writes them (the
    schema with its version set; both re-serialized compactly)."""
    if module is not PULUMI_KUBERNETES:
        return
    subprocess.run(["go", "mod", "download", PROVIDER], cwd=module.dir, env=go_env(), check=True)
    src = module_dir(PROVIDER, required(module, PROVIDER)) / "cmd" / "pulumi-resource-kubernetes"
    out = module.dir / "cmd" / "pulumi-resource-kubernetes"
    schema = json.loads((src / "schema.json").read_text())
    schema["version"] = provider_version()
    (out / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((src / "terraform-mapping.json").read_text())
    (out / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


def build(module: Module, log=sys.stderr) -> Path:
    """The module's binaries, built where the cache has none for these pins. One build per module at a time: a second
    process (the tests, while .ci/run's background build is at this module) waits for the first and takes its
    binaries."""
    target = bin_dir(module)
    if built(module):
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{module.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built(module):
            _build(module, target, log)
    return target


def _build(module: Module, target: Path, log) -> None:
    _prepare(module)
    staging = target.with_name(target.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    started = time.monotonic()
    print(f"box: building {module.name} ({', '.join(module.binaries)}) into {target}", file=log, flush=True)
    cmd = ["go", "build", "-trimpath", f"-ldflags=-s -w {_version_flags(module)}", "-o", str(staging) + "/"]
    # One `go build` per binary: the output name is the package's last element otherwise (sigs.k8s.io/lws/cmd
    # would be `cmd`); the compiled packages they share come from Go's build cache after the first.
    for out, pkg in module.binaries.items():
        subprocess.run([*cmd[:-1], str(staging / out), pkg], cwd=module.dir, env=go_env(), check=True)
    staging.rename(target)
    print(f"box: built {module.name} in {time.monotonic() - started:.0f} s", file=log, flush=True)


def build_all(log=sys.stderr, modules: tuple[Module, ...] = MODULES) -> dict[str, Path]:
    """Every binary of the modules (by default the box's) by name, built where needed, two modules at a time: a
    module's downloads and its single-threaded links overlap the other's compiles (Go's build cache is safe for
    concurrent go commands: https://pkg.go.dev/cmd/go#hdr-Build_and_test_caching)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        dirs = list(pool.map(lambda m: build(m, log), modules))
    return {b: d / b for module, d in zip(modules, dirs, strict=True) for b in module.binaries}


def module_dir(path: str, version: str) -> Path:
    """Where the Go module cache holds a module's source (its CRDs and webhook manifests are read from there)."""
    gomodcache = subprocess.run(
        ["go", "env", "GOMODCACHE"], env=go_env(), capture_output=True, text=True, check=True
    ).stdout.strip()
    escaped = "".join("!" + c.lower() if c.isupper() else c for c in path)
    return Path(gomodcache) / f"{escaped}@{version}"
