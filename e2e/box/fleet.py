"""A fleet in the box: synthesise the spec's tree with the gpufleet CLI, start a control plane, register the
fleet's nodes, apply the tree."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from e2e.box import apply, charts, cluster, karpenter, nodes, tenancy
from e2e.box.client import ApiError
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet


@dataclass
class Fleet:
    spec: Path
    env: str
    tree: Path
    plan: RolloutPlan
    cluster: cluster.Cluster
    report: apply.Report
    # Karpenter, where the box runs it (up(..., karpenter=True)); its pools' nodes are then launched, not pre-created
    karpenter: karpenter.Running | None = None

    def stop(self) -> None:
        if self.karpenter is not None:
            self.karpenter.stop()
        self.cluster.stop()


def gpufleet(*args: str) -> subprocess.CompletedProcess[str]:
    """The gpufleet CLI as a user runs it, in a process of its own (its exit and output as they are)."""
    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import entry; entry()", *args], capture_output=True, text=True
    )


def synth(spec: Path, env: str, out: Path) -> Path:
    done = gpufleet("synth", str(spec), "--env", env, "--out", str(out))
    if done.returncode != 0:
        raise RuntimeError(f"gpufleet synth {spec} --env {env} exited {done.returncode}:\n{done.stderr}")
    return out


def plan_of(spec: Path, env: str) -> RolloutPlan:
    return build_plan(load_fleet(str(spec), env).environments[env], env)


def existing_prometheus(plan: RolloutPlan) -> bool:
    return plan.fleet.telemetry.prometheus == "Existing"


def existing_namespaces(plan: RolloutPlan) -> list[str]:
    """Namespaces the spec says the cluster already has, which the box creates before applying: an existing
    Prometheus's (telemetry.existingNamespace), where gpufleet puts its dashboards and rules."""
    tel = plan.fleet.telemetry
    return [tel.existing_namespace] if tel is not None and tel.existing_namespace else []


def up(
    spec: Path,
    env: str,
    root: Path | None = None,
    log=sys.stderr,
    *,
    run_karpenter: bool = False,
    releases_only: bool = False,
    tokens: Mapping[str, tuple[str, tuple[str, ...]]] | None = None,
) -> Fleet:
    """The fleet in a box. With run_karpenter, Karpenter runs (e2e.box.karpenter) and launches its pools' nodes
    from zero; without, every group's nodes are pre-created up to maxSize. With releases_only, only the tree's Helm
    releases are applied (their CRDs and controllers), and a Job's pods complete: the objects are left to the Pulumi
    engine, which awaits them (e2e/test_engine.py). `tokens`: bearer tokens the API server accepts (cluster.start)."""
    root = Path(root or tempfile.mkdtemp(prefix="gpufleet-box-"))
    tree = synth(spec, env, root / "tree")
    plan = plan_of(spec, env)
    box = cluster.start(root / "cluster", complete_jobs=releases_only, tokens=tokens)
    try:
        wanted = plan.fleet.cluster.kubernetes_version
        got = box.versions["kubernetes"]
        if not got.lstrip("v").startswith(wanted + "."):
            print(
                f"box: the fleet runs Kubernetes {wanted}; the box runs {got}, the minor e2e/controlplane/go.mod pins",
                file=log,
            )
        for node in nodes.fleet(plan, got, launched=run_karpenter):
            try:
                box.admin.create(node)
            except ApiError as exc:
                raise RuntimeError(f"node {node['metadata']['name']} refused: {exc}") from None
        tenancy.edit_policy_role(box)
        for namespace in existing_namespaces(plan):
            box.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        if existing_prometheus(plan):
            # the Prometheus Operator's CRDs come with the existing Prometheus the spec names
            crds, missing = charts.crds_only("kube-prometheus-stack", "")
            if missing:
                raise RuntimeError(f"the existing Prometheus's CRDs are not in ../shared: {', '.join(missing)}")
            for crd in crds:
                box.admin.apply(crd)
        report = apply.apply_tree(
            box, tree, got, karpenter.to_kwok if run_karpenter else lambda obj: obj, releases_only=releases_only
        )
        for member in [] if releases_only else tenancy.members(plan):  # their namespaces are the engine's
            tenancy.grant(box, member)
        running = karpenter.start(box, plan, tree, got) if run_karpenter else None
    except BaseException:
        box.stop()
        raise
    return Fleet(spec, env, tree, plan, box, report, running)
