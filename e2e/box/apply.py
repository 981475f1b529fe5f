"""Apply a synth tree to the box as the Pulumi program would: every Kubernetes object with server-side apply, in
stage order and, within a stage, after everything it depends on (the inventory's dependsOn), each Helm release
bringing what e2e.box.charts says the box can have of it at its place in that order.

The report lists every object the API server refused, with its message; objects of a kind the box has no API for
(an aggregated API it does not run) are listed apart, with why.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.box import charts, controllers
from e2e.box.client import ApiError, Client
from e2e.box.cluster import Cluster

RELEASE = "kubernetes:helm.sh/v3:Release"
# Objects the box does not apply from a chart: an APIService would send the API server's discovery to a Service
# no process backs (and block namespace deletion), the chart's cert Secrets are the controller's own rotation's.
SKIPPED_CHART_KINDS = ("APIService",)


@dataclass
class Refusal:
    source: str
    kind: str
    name: str
    message: str

    def line(self) -> str:
        return f"{self.source}: {self.kind} {self.name}: {self.message}"


@dataclass
class Report:
    applied: int = 0
    refused: list[Refusal] = field(default_factory=list)
    not_applied: list[str] = field(default_factory=list)
    # objects of a kind the box has no API for (its CRD not found): never judged, so the test fails on them
    unserved: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    running: dict[str, controllers.Running] = field(default_factory=dict)

    def text(self) -> str:
        lines = [f"applied {self.applied} objects, {len(self.refused)} refused, {len(self.unserved)} of no served kind"]
        lines += [f"  REFUSED {r.line()}" for r in self.refused]
        lines += [f"  UNSERVED {n}" for n in self.unserved]
        lines += [f"  not applied: {n}" for n in self.not_applied]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def ordered(inventory: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Inventory entries in the order Pulumi may create them: stage by stage, each after its dependencies."""
    by_id = {e["id"]: e for e in inventory}
    done: set[str] = set()
    stages = list(dict.fromkeys(e["stage"] for e in inventory))

    def visit(entry: dict[str, Any], trail: tuple[str, ...]) -> Iterator[dict[str, Any]]:
        if entry["id"] in done:
            return
        assert entry["id"] not in trail, f"dependency cycle: {' -> '.join(trail)}"
        for dep in entry.get("dependsOn", []):
            if dep in by_id:
                yield from visit(by_id[dep], (*trail, entry["id"]))
        done.add(entry["id"])
        yield entry

    for stage in stages:
        for entry in inventory:
            if entry["stage"] == stage:
                yield from visit(entry, ())


_REF = re.compile(r"<ref:(?P<resource>[^.>]+)\.(?P<attribute>[^>]+)>")


def _resolved(match: re.Match[str]) -> str:
    """What `pulumi up` would put where the tree shows an Output of an AWS resource: a value of the shape AWS gives
    that attribute (a CRD's pattern checks it: EC2NodeClass ids must match sg-[0-9a-z]+), derived from the
    reference so it is the same in every run."""
    resource, attribute = match["resource"], match["attribute"]
    digest = hashlib.sha256(match[0].encode()).hexdigest()
    if attribute.endswith(("SecurityGroupId",)) or (attribute == "id" and "security-group" in resource):
        return f"sg-{digest[:17]}"
    if resource.startswith("fsx") and attribute == "id":
        return f"fs-{digest[:17]}"
    if attribute == "dnsName":
        return f"fs-{digest[:17]}.fsx.box.internal"
    if attribute == "mountName":
        return digest[:8]
    return f"box-{resource}-{attribute}"[:63]


def resolve_outputs(obj: Any) -> Any:
    """The object with every Output placeholder replaced by a resolved value (see _resolved)."""
    if isinstance(obj, str):
        return _REF.sub(_resolved, obj)
    if isinstance(obj, list):
        return [resolve_outputs(v) for v in obj]
    if isinstance(obj, dict):
        return {k: resolve_outputs(v) for k, v in obj.items()}
    return obj


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta.get("name", "?")


def _apply(client: Client, obj: dict[str, Any], source: str, report: Report) -> bool:
    try:
        client.apply(obj)
    except ApiError as exc:
        if exc.status == 404 and exc.reason == "NotFound" and "has no resource" in exc.message:
            report.unserved.append(f"{source}: {obj['kind']} {_name(obj)}: {exc.message}")
            return False
        report.refused.append(Refusal(source, obj["kind"], _name(obj), exc.message))
        return False
    report.applied += 1
    return True


def _wait_established(client: Client, crds: list[dict[str, Any]]) -> None:
    for crd in crds:
        for version in crd["spec"]["versions"]:
            if version.get("served", True):
                client.wait_for_kind(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])


def _namespace(client: Client, name: str, source: str, report: Report) -> None:
    _apply(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, source, report)


def _release(cluster: Cluster, tree: Path, entry: dict[str, Any], report: Report, kube_version: str) -> None:
    client = cluster.admin
    helm = yaml.safe_load((tree / entry["file"]).read_text())
    chart, namespace, source = charts.chart_name(helm["chart"]), helm["namespace"], entry["id"]
    if (entry.get("inputs") or {}).get("createNamespace"):
        _namespace(client, namespace, source, report)
    if chart in charts.RUNNABLE:
        src = charts.RUNNABLE[chart]
        if src.version.lstrip("v") != src.wanted:
            report.notes.append(f"{chart}: the fleet pins {src.wanted}; the module proxy serves {src.version} nearest")
        name = (entry.get("inputs") or {}).get("name", chart)
        objects = charts.render(cluster.binaries["helm"], name, namespace, src, helm.get("values") or {}, kube_version)
        crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
        for crd in crds:
            _apply(client, crd, source, report)
        _wait_established(client, crds)
        hooks = [o for o in objects if o["kind"] in controllers.WEBHOOK_KINDS]
        for obj in objects:
            if obj["kind"] in SKIPPED_CHART_KINDS:
                report.not_applied.append(
                    f"{source}: {obj['kind']} {_name(obj)}: an aggregated API the box does not serve"
                )
            elif obj["kind"] != "CustomResourceDefinition" and obj not in hooks:
                obj.setdefault("metadata", {}).setdefault("namespace", namespace) if _namespaced(client, obj) else None
                _apply(client, obj, source, report)
        running = controllers.start(cluster, chart, objects, namespace)
        report.running[chart] = running
        for hook in hooks:
            _apply(client, controllers.pointed(hook, running), source, report)
        return
    crds, missing = charts.crds_only(chart, str(helm.get("version", "")))
    for crd in crds:
        _apply(client, crd, source, report)
    _wait_established(client, crds)
    report.notes.append(f"{chart}: CRDs only ({len(crds)}); its controllers do not run in the box")
    report.not_applied += [f"{source}: CRD file {m} not found (python tools/fetch_upstream.py)" for m in missing]


def _namespaced(client: Client, obj: dict[str, Any]) -> bool:
    try:
        return client.resource(obj["apiVersion"], obj["kind"]).namespaced
    except ApiError:
        return False


def objects(tree: Path) -> list[dict[str, Any]]:
    """The tree's Kubernetes objects (not its Helm releases), in stage order, outputs resolved."""
    inventory = json.loads((tree / "inventory.json").read_text())
    return [
        resolve_outputs(yaml.safe_load((tree / e["file"]).read_text())) for e in ordered(inventory) if _is_object(e)
    ]


def _is_object(entry: dict[str, Any]) -> bool:
    kind, file = entry["type"], entry.get("file", "")
    return kind.startswith("kubernetes:") and kind != RELEASE and file.endswith(".yaml") and "/k8s/" in file


def apply_tree(
    cluster: Cluster,
    tree: Path,
    kube_version: str,
    transform: Callable[[dict[str, Any]], dict[str, Any]] = lambda obj: obj,
    *,
    releases_only: bool = False,
) -> Report:
    """Every object and release of the tree in stage order; `transform` is the box's wiring of an object (a
    NodePool pointed at Karpenter's kwok node class), identity by default. With releases_only, the releases alone
    (their CRDs and controllers): the objects are then the Pulumi engine's to apply (e2e/test_engine.py)."""
    report = Report()
    inventory = json.loads((tree / "inventory.json").read_text())
    for entry in ordered(inventory):
        if entry["type"] == RELEASE:
            _release(cluster, tree, entry, report, kube_version)
        elif _is_object(entry) and not releases_only:
            obj = resolve_outputs(yaml.safe_load((tree / entry["file"]).read_text()))
            _apply(cluster.admin, transform(obj), entry["id"], report)
    return report
