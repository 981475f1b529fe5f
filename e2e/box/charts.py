"""The CRDs and objects each Helm release of a synth tree brings, as the box can have them.

The four controllers the box runs (Kueue, JobSet, LeaderWorkerSet, Kubeflow Trainer) ship their charts in their Go
modules: the box renders each with Helm (built from its module too) and the values gpufleet wrote, and applies what
the chart renders: CRDs, RBAC, the manager's Deployment (KWOK runs its pods; the controller itself runs as a local
process, e2e.box.controllers), its ConfigMap and its webhook configurations, pointed at that process. For every
other chart the box has only the CRDs (../shared/crds, or the upstream cache): its controllers do not run here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.box import build

SHARED = Path(__file__).resolve().parents[3] / "shared"
CACHE = Path("~/.cache/gpufleet/upstream").expanduser()


@dataclass(frozen=True)
class ChartSource:
    """Where a controller's chart and module are, and the version the module proxy gave (`wanted` is the fleet's)."""

    module: str
    chart_dir: str
    wanted: str
    # A module no go.mod of e2e/ requires, downloaded as source at this tag (the AWS Karpenter provider's chart)
    pinned: str = ""
    # the e2e/ module that builds it and pins its version
    go_module: build.Module = build.CONTROLLERS

    @property
    def version(self) -> str:
        return self.pinned or build.required(self.go_module, self.module)

    @property
    def root(self) -> Path:
        return build.module_dir(self.module, self.version)


# chart name (as the tree's helm file names it, last path element) -> its module, at the version its e2e/ module
# requires (e2e/controllers/go.mod; e2e/kueue/go.mod for Kueue); `wanted` is the release the fleet pins.
# LeaderWorkerSet v0.10.0's module is not served (the module proxy answers 403 for its zip): v0.9.0 is the nearest
# it serves.
RUNNABLE: Mapping[str, ChartSource] = {
    "kueue": ChartSource("sigs.k8s.io/kueue", "charts/kueue", "0.19.2", go_module=build.KUEUE),
    "jobset": ChartSource("sigs.k8s.io/jobset", "charts/jobset", "0.12.0"),
    "lws": ChartSource("sigs.k8s.io/lws", "charts/lws", "0.10.0"),
    "kubeflow-trainer": ChartSource("github.com/kubeflow/trainer/v2", "charts/kubeflow-trainer", "2.3.0"),
}
# Charts the box does not run, by the CRD files of theirs that ../shared/crds holds.
CRDS_ONLY: Mapping[str, tuple[str, ...]] = {
    "kube-prometheus-stack": (
        "monitoring.coreos.com_servicemonitors.yaml",
        "monitoring.coreos.com_podmonitors.yaml",
        "monitoring.coreos.com_prometheusrules.yaml",
    ),
    "gpu-operator": ("nvidia.com_clusterpolicies.yaml", "nvidia.com_nvidiadrivers.yaml"),
    "karpenter": ("karpenter.k8s.aws_ec2nodeclasses.yaml",),
    "karpenter-crd": ("karpenter.k8s.aws_ec2nodeclasses.yaml",),
    "network-operator": ("mellanox.com_nicclusterpolicies.yaml", "k8s.cni.cncf.io_network-attachment-definitions.yaml"),
}
# Charts whose CRDs are templates (KEDA's: kedacore/charts keda/templates/crds), so ../shared has none: the box takes
# them from the project's Go module at the chart's release (kedacore/keda config/crd/bases; its release and chart
# versions match), downloaded as source by the go command, not built.
# Karpenter's own CRDs (karpenter.sh: NodePool, NodeClaim, NodeOverlay) come from sigs.k8s.io/karpenter at the
# release of the AWS provider's chart (the two are released in lockstep; ../shared lacks NodeOverlay).
MODULE_CRDS: Mapping[str, tuple[str, str]] = {
    "keda": ("github.com/kedacore/keda/v2", "config/crd/bases"),
    "karpenter": ("sigs.k8s.io/karpenter", "pkg/apis/crds"),
    "karpenter-crd": ("sigs.k8s.io/karpenter", "pkg/apis/crds"),
}


def chart_name(chart: str) -> str:
    return chart.rstrip("/").rsplit("/", 1)[-1]


def docs(text: str) -> Iterator[dict[str, Any]]:
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and doc.get("kind"):
            if doc["kind"] == "List":
                yield from doc.get("items", [])
            else:
                yield doc


def upstream_root() -> Path | None:
    given = os.environ.get("GPUFLEET_UPSTREAM_DIR")
    for root in (Path(given) if given else SHARED, CACHE):
        if (root / "crds").is_dir():
            return root
    return None


def crds_only(chart: str, version: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The CRDs the box applies for a chart it does not run, and the files it could not find."""
    out, missing = [], []
    root = upstream_root()
    for name in CRDS_ONLY.get(chart, ()):
        path = root / "crds" / name if root else None
        if path is None or not path.is_file():
            missing.append(f"crds/{name}")
            continue
        out += docs(path.read_text())
    if chart in MODULE_CRDS:
        module, crd_dir = MODULE_CRDS[chart]
        tag = "v" + version.lstrip("v")
        subprocess.run(
            ["go", "mod", "download", f"{module}@{tag}"], env=build.go_env(), capture_output=True, check=True
        )
        for path in sorted(
            (build.module_dir(module, tag) / crd_dir).glob("karpenter.sh_*.yaml" if "karpenter" in module else "*.yaml")
        ):
            out += docs(path.read_text())
    return out, missing


def render(
    helm: Path, release: str, namespace: str, source: ChartSource, values: Mapping[str, Any], kube_version: str
) -> list[dict[str, Any]]:
    """`helm template` of a controller's chart from its module, CRDs included, with the tree's values.

    The chart is copied out of the read-only module cache; Trainer's chart declares JobSet and LWS as dependencies
    fetched from a registry, which the box cannot do: they are dropped where the values turn them off (gpufleet sets
    jobset.install: false and dataCache.enabled: false, installing JobSet as a release of its own), and a
    dependency still on is an error."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-chart-") as tmp:
        chart = Path(tmp) / "chart"
        shutil.copytree(source.root / source.chart_dir, chart)
        for p in chart.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        meta = yaml.safe_load((chart / "Chart.yaml").read_text())
        merged = _merge(yaml.safe_load((chart / "values.yaml").read_text()) or {}, values)
        for dep in meta.pop("dependencies", []) or []:
            on = _condition(merged, dep.get("condition", ""))
            if on:
                raise RuntimeError(
                    f"chart {source.chart_dir} needs dependency {dep['name']}, which the box cannot fetch"
                )
        (chart / "Chart.yaml").write_text(yaml.safe_dump(meta))
        values_file = Path(tmp) / "values.yaml"
        values_file.write_text(yaml.safe_dump(dict(values)))
        out = subprocess.run(
            [
                str(helm),
                "template",
                release,
                str(chart),
                "--namespace",
                namespace,
                "--include-crds",
                "--kube-version",
                kube_version,
                "-f",
                str(values_file),
            ],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"helm template {source.chart_dir}: {out.stderr.strip()}")
        return list(docs(out.stdout))


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _condition(values: Mapping[str, Any], condition: str) -> bool:
    """Helm's dependency condition: the first of the comma-separated paths that resolves to a bool decides; none: on."""
    for path in filter(None, condition.split(",")):
        node: Any = values
        for part in path.strip().split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, bool):
            return node
    return True
