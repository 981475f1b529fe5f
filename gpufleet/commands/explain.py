"""would these workloads run on this fleet: queue, flavor, node group, or the first gate that stops them and why

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/commands/explain.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from dataclasses import dataclass, replace
from typing import Any

import yaml

from gpufleet.base.errors import UsageError, render_issue, sort_issues
from gpufleet.base.inputs import read_bounded, yaml_beyond_bounds
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import Validated, open_spec
from gpufleet.simulate import authorization, claims, dispatch, scaling
from gpufleet.simulate.verdict import ASSUMPTION, FleetModel, Verdict, explain, fleet_model, with_running
from gpufleet.simulate.workload import KINDS, Workload, WorkloadError, is_workload, unserved, workload
from gpufleet.spec import clusters, object_shapes
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.load import MAX_SPEC_BYTES, positions

EXIT_RUNS, EXIT_WOULD_NOT, EXIT_USAGE = 0, 1, 2


class ManifestError(Exception):
    """A manifest that cannot be judged: `FILE:LINE:COL: message`."""


@dataclass(frozen=True, slots=True)
class _Doc:
    path: str
    text: str  # the file's
    node: yaml.Node
    data: Any


def _position(path: str, node: yaml.Node, field: str) -> str:
    """FILE:LINE:COL of `field` (a dotted path with [i]) inside the document node, or of its deepest known parent."""
    for part in re.findall(r"[^.\[\]]+|\[[0-9]+\]", field):
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and part.startswith("["):
            i = int(part[1:-1])
            nxt = node.value[i] if i < len(node.value) else None
        else:
            nxt = None
        if nxt is None:
            break
        node = nxt
    mark = node.start_mark
    return f"{path}:{mark.line + 1}:{mark.column + 1}"


def _manifest_text(path: str) -> str:
    """A manifest file's text, read as the spec loader reads a spec (gpufleet.base.inputs): a regular file of at most
    MAX_SPEC_BYTES, its YAML within the loader's depth and value bounds."""
    try:
        text = read_bounded(path, MAX_SPEC_BYTES, "no manifest of workloads needs").decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    too_big = yaml_beyond_bounds(text)
    if too_big is not None:
        raise ManifestError(f"{path}:{too_big}")
    return text


def read_manifests(path: str) -> list[_Doc]:
    text = _manifest_text(path)
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise ManifestError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    docs = []
    for node in nodes:
        if node is None:
            continue
        data = _construct(path, node)
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("apiVersion"), str)
            or not isinstance(data.get("kind"), str)
        ):
            mark = node.start_mark
            raise ManifestError(
                f"{path}:{mark.line + 1}:{mark.column + 1}: not a Kubernetes object: a manifest document needs"
                " apiVersion and kind"
            )
        docs.append(_Doc(path, text, node, data))
    return docs


_UNREADABLE = (yaml.YAMLError, ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError)


class _KubectlLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a plain timestamp stays the text it is: kubectl reads manifests with go-yaml v2,
    which keeps a timestamp-like value as a string (gopkg.in/yaml.v2 decode.go: "for backward compatibility"), so
    the API server sees `2024-01-01` where a string belongs, not a date."""


def _timestamp_text(loader: _KubectlLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]  # a timestamp is a scalar node


_KubectlLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_text)


def _construct(path: str, node: yaml.Node) -> Any:
    loader = _KubectlLoader("")
    try:
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark or node.start_mark
        problem = exc.problem or exc.context or "cannot be read"
        raise ManifestError(f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem}") from None
    except _UNREADABLE:
        # An explicit tag (`!!int x`, `!!timestamp x`) skips YAML's resolver, and PyYAML's constructors assume the
        # resolver matched the text: on anything else they fail inside their parsing code (as in gpufleet.spec.load).
        mark = _unreadable_scalar(node) or node.start_mark
        raise ManifestError(
            f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: a value its tag cannot read"
        ) from None


def _unreadable_scalar(node: yaml.Node) -> yaml.Mark | None:
    """Where the first scalar its tag's constructor cannot read is (the constructors' errors carry no mark)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.ScalarNode):
            try:
                _KubectlLoader("").construct_object(current, deep=True)
            except _UNREADABLE:
                return current.start_mark
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))
        elif isinstance(current, yaml.MappingNode):
            stack.extend(n for pair in reversed(current.value) for n in reversed(pair))
    return None


def _is_spec(path: str) -> bool:
    """Whether the file is a fleet spec (its first document says kind: Fleet). Anything unreadable is not: read as a
    manifest, it gets its error there."""
    try:
        first = next(yaml.safe_load_all(_manifest_text(path)), None)
    except (ManifestError, *_UNREADABLE):
        return False
    return isinstance(first, dict) and first.get("kind") == "Fleet"


RUNNING_HELP = "workloads already running (they hold the nodes they run on; repeat for several files)"


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", required=True, help="the environment whose plan the workloads meet")
    parser.add_argument("--running", action="append", default=[], metavar="MANIFEST", help=RUNNING_HELP)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--as", dest="principal", metavar="ARN", help="the IAM principal that submits the workloads")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Options may come between or after the paths (`explain fleet.yaml --env prod job.yaml`), which argparse's
    # subcommand parsing cannot express: the paths and options are parsed again, intermixed, in run().
    parser.add_argument("--env", help="the environment whose plan the workloads meet (required)")
    parser.add_argument("--format", choices=("text", "json"))
    parser.add_argument("--running", action="append", metavar="MANIFEST", help=RUNNING_HELP)
    parser.add_argument(
        "--as",
        dest="principal",
        metavar="ARN",
        help="the IAM role, user or assumed-role ARN that submits the workloads: checks it may create them",
    )
    parser.add_argument(
        "paths",
        nargs=argparse.REMAINDER,
        metavar="[SPEC] MANIFEST...",
        help="the fleet spec (default: fleet.yaml), then manifests",
    )


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gpufleet explain", description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="[SPEC] MANIFEST...")
    _options(parser)
    return parser.parse_intermixed_args(argv)


def _text(verdicts: list[Verdict]) -> str:
    lines = []
    for v in verdicts:
        at = f" at ScaledObject {v.scaled_by[0]}'s maxReplicaCount {v.scaled_by[1]}" if v.scaled_by else ""
        head = f"{v.kind} {v.namespace}/{v.name}{at}: "
        via = f"through ClusterQueue {v.cluster_queue}, " if v.cluster_queue else ""
        if v.cluster_queue:
            # a pod set that requests nothing is admitted with no flavor (kueue flavorassigner.go assignFlavors)
            via += f"flavor {v.flavor}, " if v.flavor else "no flavor (it requests nothing), "
        provisioned = "".join(f"; {p.text()}" for p in v.provisioned)
        if v.runs:
            lines.append(head + f"runs, {via}on node group {v.node_group}{provisioned}")
        elif v.pods_admitted:
            # Pods admitted one by one (a Deployment's), or a LeaderWorkerSet's groups: part of them run.
            waiting = v.pods_total - v.pods_admitted
            what = "quota" if v.reasons and v.reasons[0].stage == "admission" else "nodes"
            if v.groups is not None:
                admitted, total = v.groups
                ran = (
                    f"{admitted} of {total} groups run ({v.pods_admitted} of {v.pods_total} pods); {total - admitted}"
                    f" wait{'s' * (total - admitted == 1)} for {what}"
                )
            else:
                ran = f"{v.pods_admitted} of {v.pods_total} pods run; {waiting} wait for {what}"
            lines.append(head + ran + (f": {v.reasons[0].message}" if v.reasons else ""))
            lines.append(f"  running: {via}on node group {v.node_group}{provisioned}")
            lines += [f"  fix: {r.fix}" for r in v.reasons]
        else:
            where = f" (ClusterQueue {v.cluster_queue})" if v.cluster_queue else ""
            lines.append(head + f"would not run{where}")
            for r in v.reasons:
                lines += [f"  {r.stage}: {r.message}", f"  fix: {r.fix}"]
        lines += [f"  note: {n}" for n in v.notes]
    lines.append(f"({verdicts[0].assumes if verdicts else ASSUMPTION})")
    return "\n".join(lines)


def _shape_errors(docs: list[_Doc], kubernetes_version: str) -> None:
    """Refuse the workload objects of the wrong shape for the API server (gpufleet.spec.object_shapes), every one
    of them, each error rendered as the spec loader renders a spec's (position, source line, caret, hint) and
    counted per file; the model reads only objects of the shapes their schemas give."""
    blocks: dict[str, list[str]] = {}
    for doc in docs:
        if not is_workload(doc.data) or object_shapes.conforms(doc.data, kubernetes_version):
            continue
        source = positions(doc.node, doc.path, doc.text)
        meta = doc.data.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        context = f"{doc.data['kind']} {name}" if isinstance(name, str) else str(doc.data["kind"])
        found = [replace(i, context=context) for i in object_shapes.issues(doc.data, kubernetes_version, source.plain)]
        for issue in sort_issues(source, found):
            positioned = replace(issue, position=source.locate(issue))
            blocks.setdefault(doc.path, []).append(render_issue(source, positioned))
    if blocks:
        raise ManifestError("\n".join("\n".join(b + [f"{path}: {len(b)} error(s)"]) for path, b in blocks.items()))


def _workloads(docs: list[_Doc], model: FleetModel, kubernetes_version: str, *, scaled: bool = True) -> list[Workload]:
    """The workloads of documents whose shapes conform (_shape_errors), read as the API server reads them, then (with
    `scaled`) each KEDA ScaledObject's target again at its maxReplicaCount (gpufleet.simulate.scaling)."""
    workloads = []
    for doc in (d for d in docs if is_workload(d.data)):
        kind, api_version = str(doc.data["kind"]), str(doc.data["apiVersion"])
        obj = object_shapes.as_read(doc.data, kubernetes_version)
        try:
            if object_shapes.known(api_version, kind, kubernetes_version):
                workloads.append(workload(obj))
            elif api_version in model.served.get(kind, ()):
                # served, by a CRD the plan applies that gpufleet ships no schema of: read as it is
                workloads.append(workload(obj))
            else:
                workloads.append(unserved(obj))
        except WorkloadError as exc:
            raise _manifest_error(doc, exc) from None
    bursts = []
    for doc in docs if scaled else []:
        if scaling.is_scaled_object(doc.data):
            try:
                bursts.append(scaling.at_most(doc.data, workloads))
            except WorkloadError as exc:
                raise _manifest_error(doc, exc) from None
    return workloads + bursts


def _manifest_error(doc: _Doc, exc: WorkloadError) -> ManifestError:
    field, _, message = str(exc).partition(": ")
    return ManifestError(f"{_position(doc.path, doc.node, field)}: {doc.data['kind']} {field}: {message}")


def _at_maximum(verdict: Verdict) -> Verdict:
    """A target judged at its ScaledObject's maxReplicaCount that does not all run: what the burst gets, and the
    maximum the fleet holds."""
    if verdict.scaled_by is None or verdict.runs:
        return verdict
    name, top = verdict.scaled_by
    holds = verdict.groups[0] if verdict.groups is not None else verdict.pods_admitted
    note = (
        f"KEDA scales it up to ScaledObject {name}'s maxReplicaCount {top}, and the fleet holds {holds} of them: set"
        f" maxReplicaCount to at most {holds}, or raise the quota"
    )
    return dataclasses.replace(verdict, notes=(*verdict.notes, note))


def run(args: argparse.Namespace) -> int:
    try:
        given = [
            f"--{flag}={getattr(args, name)}"
            for flag, name in (("env", "env"), ("format", "format"), ("as", "principal"))
            if getattr(args, name, None)
        ] + [f"--running={path}" for path in getattr(args, "running", None) or []]
        args = _parse(list(args.paths) + given)
    except SystemExit as exc:  # argparse printed the usage error
        return int(exc.code or 0)
    paths: list[str] = list(args.paths)
    spec = paths.pop(0) if len(paths) > 1 and _is_spec(paths[0]) else "fleet.yaml"
    if not paths:
        raise UsageError("give at least one MANIFEST")
    if args.principal is not None:
        try:
            authorization.identity(args.principal)
        except authorization.PrincipalError as exc:
            raise UsageError(f"--as: {exc}") from None
    try:
        docs = [d for p in paths for d in read_manifests(p)]
        running = [d for p in args.running for d in read_manifests(p)]
    except ManifestError as exc:
        print(f"gpufleet explain: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # With clusters[], --env names a stack (<env>.<cluster>): the environment's every cluster is validated, so a
    # manager's workloads can be judged on each worker too.
    validated = open_spec(spec, clusters.split_stack(args.env)[0])
    fleet = validated.fleet(args.env)
    version = fleet.cluster.kubernetes_version
    try:
        _shape_errors(docs + running, version)  # the fleet's Kubernetes version decides the built-in schemas
    except ManifestError as exc:
        print(f"gpufleet explain: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not any(is_workload(d.data) for d in docs):
        raise UsageError(f"no workload in {', '.join(paths)} (kinds: {', '.join(KINDS)})")
    model = fleet_model(build_plan(fleet, args.env))
    # ResourceClaimTemplates given beside the workloads: the cluster holds them once applied (gpufleet.simulate.claims)
    given_templates = dict(model.claim_templates)
    for doc in docs + running:
        if claims.is_template(doc.data):
            claims.add_template(given_templates, doc.data)
    model = dataclasses.replace(model, claim_templates=given_templates)
    try:
        workloads = _workloads(docs, model, version)
        already = _workloads(running, model, version, scaled=False)  # what runs now, not what KEDA may scale it to
    except ManifestError as exc:
        print(f"gpufleet explain: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if fleet.multikueue is not None and fleet.multikueue.role == "Manager":
        if running:
            raise UsageError("--running: a manager runs nothing; give a worker's stack to judge what runs there")
        return _across(validated, fleet, model, workloads, docs, args)
    for wl in already:
        ran = explain(model, wl)
        if not ran.runs:
            why = f": {ran.reasons[0].message}" if ran.reasons else ""
            raise UsageError(f"--running: {wl.kind} {wl.namespace}/{wl.name} would not run on this fleet itself{why}")
        model = with_running(model, wl, ran)
    verdicts = [_at_maximum(explain(model, w, args.principal)) for w in workloads]
    if args.format == "json":
        print(json.dumps({"workloads": [v.json() for v in verdicts]}, indent=2))
    else:
        print(_text(verdicts))
    return EXIT_RUNS if all(v.runs for v in verdicts) else EXIT_WOULD_NOT


def _across(
    validated: Validated,
    manager: Fleet,
    model: FleetModel,
    workloads: list[Workload],
    docs: list[_Doc],
    args: argparse.Namespace,
) -> int:
    """Workloads submitted to a MultiKueue manager: judged there up to Kueue's admission, then on each worker's own
    model in the MultiKueueConfig's order, rounds of stepSize (gpufleet.simulate.dispatch)."""
    mk = manager.multikueue
    assert mk is not None
    environment = clusters.split_stack(args.env)[0]
    workers = []
    for worker in mk.workers:
        stack = clusters.stack_name(environment, worker.name)
        fleet = validated.fleet(stack)
        worker_model = fleet_model(build_plan(fleet, stack))
        templates = dict(worker_model.claim_templates)
        for doc in docs:
            if claims.is_template(doc.data):
                claims.add_template(templates, doc.data)
        worker_model = dataclasses.replace(worker_model, claim_templates=templates)
        # read again as this worker serves them: a kind it does not install is refused by its API server
        workers.append((worker.name, _workloads(docs, worker_model, fleet.cluster.kubernetes_version), worker_model))
    results = []
    for i, wl in enumerate(workloads):
        verdict = explain(model, wl, args.principal)
        on_workers = [(name, _at_maximum(explain(m, wls[i]))) for name, wls, m in workers]
        results.append(dispatch.dispatch(mk.cluster, verdict, on_workers, mk.step_size))
    if args.format == "json":
        print(json.dumps({"workloads": [d.json() for d in results]}, indent=2))
    else:
        print("\n".join([line for d in results for line in dispatch.text(d)] + [f"({model.assumes})"]))
    return EXIT_RUNS if all(d.runs for d in results) else EXIT_WOULD_NOT
