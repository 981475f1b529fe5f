"""Properties of explain over hostile manifests and of diagnose over hostile logs (issue 26 items 3 and 4): whatever
the files hold, exit 0, 1 or 2 with a message, never 3, never a traceback, nothing written."""

from __future__ import annotations

import copy
import shutil
import time
import tracemalloc
from pathlib import Path

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpufleet.diagnose.nccl import parse_nccl
from tests.properties.cli import run, scratch
from tests.properties.digits import translated
from tests.properties.mutations import deep_yaml, mutate, text, yaml_document

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "tests/specs/valid/minimal.yaml"
WORKLOADS = [
    doc
    for path in sorted((ROOT / "docs/examples").glob("*.yaml"))
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict)
]
FIXTURES = ROOT / "tests/diagnose/fixtures"
LOG_LINES = sorted(
    {line for path in sorted(FIXTURES.glob("*.log")) for line in path.read_text(errors="replace").splitlines()}
)
NODE_LINES = sorted(
    {line for path in sorted(FIXTURES.glob("*.txt")) for line in path.read_text(errors="replace").splitlines()}
)
# Shapes that once backtracked or recursed: runs of digits, colons, brackets, spaces and deep nesting
PUMPS = ["1", ":", "1:", "[0]", "[0]a:", " ", "a", "-", "/", "(", "<0>", "{", "["]


@st.composite
def manifest(draw: st.DrawFn) -> str:
    """One to three documents: workloads of the examples with values, keys and types changed, or any YAML."""
    if draw(st.integers(0, 4)) == 0:
        return draw(yaml_document())
    docs = [
        mutate(draw, copy.deepcopy(draw(st.sampled_from(WORKLOADS))), draw(st.integers(1, 4)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    return yaml.safe_dump_all(docs, sort_keys=False)


@settings(max_examples=max(4, settings.default.max_examples // 2))
@given(manifest())
def test_explain_of_a_hostile_manifest_never_crashes(text_: str) -> None:
    with scratch() as root:
        shutil.copy(MINIMAL, root / "fleet.yaml")
        (root / "m.yaml").write_text(text_, encoding="utf-8")
        result = run(["explain", "fleet.yaml", "--env", "dev", "m.yaml"], root)
        assert result.code == 0 or (result.stdout + result.stderr).strip()


@st.composite
def log_line(draw: st.DrawFn, lines: list[str]) -> str:
    line = draw(st.sampled_from(lines))
    how = draw(st.sampled_from(["as is", "cut", "pump", "insert", "digits"]))
    if how == "cut":
        return line[: draw(st.integers(0, len(line)))]
    if how == "pump":
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.sampled_from(PUMPS)) * draw(st.integers(1, 4000)) + line[at:]
    if how == "digits" and any(c in "0123456789" for c in line):  # issue 47 item 9: "8²" passed isdigit()
        return draw(translated(line))
    if how == "insert":
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(text) + line[at:]
    return line


@given(st.lists(log_line(LOG_LINES), max_size=40), st.lists(log_line(NODE_LINES), max_size=40), st.binary(max_size=64))
def test_diagnose_of_a_hostile_log_never_crashes(nccl: list[str], node: list[str], noise: bytes) -> None:
    with scratch() as root:
        (root / "nccl.log").write_bytes("\n".join(nccl).encode("utf-8", "surrogatepass") + noise)
        (root / "node.txt").write_text("\n".join(node), encoding="utf-8", errors="surrogatepass")
        result = run(["diagnose", "--nccl-log", "nccl.log", "--node-describe", "node.txt"], root)
        assert result.stdout.strip() or result.stderr.strip()


# A launcher's per-rank prefixes (torchrun, mpirun): what an interleaved line glues before each rank's write
RANK_PREFIXES = ["[rank{}]:", "[1,{}]<stdout>:", "[0,{}]<stderr>:"]
BARE_LOG_LINES = [line for line in LOG_LINES if not line.startswith("[") and "]<std" not in line and "]:" not in line]


@st.composite
def rank_writes(draw: st.DrawFn) -> list[str]:
    """Two to four ranks' lines, each behind its launcher prefix (the first may have none: a bare writer)."""
    lines = draw(st.lists(st.sampled_from(BARE_LOG_LINES), min_size=2, max_size=4, unique=True))
    prefix = draw(st.sampled_from(RANK_PREFIXES))
    return [line if i == 0 and draw(st.booleans()) else prefix.format(i) + line for i, line in enumerate(lines)]


@given(rank_writes(), st.booleans())
def test_ranks_interleaved_on_one_line_read_as_they_wrote_them(writes: list[str], other_version: bool) -> None:
    """Issue 47 item 10: ranks' writes glued on one line parse as the same writes on lines of their own, and diagnose
    over them (beside another log, so versions are compared) never crashes."""
    glued, apart = "".join(writes) + "\n", "\n".join(writes) + "\n"
    assert parse_nccl(glued) == parse_nccl(apart)
    with scratch() as root:
        (root / "glued.log").write_text(glued, encoding="utf-8")
        (root / "other.log").write_text(f"NCCL version {'2.18.3' if other_version else '2.26.2'}+cuda12.2\n")
        run(["diagnose", "--nccl-log", "glued.log", "--nccl-log", "other.log"], root)


@given(deep_yaml(), st.sampled_from(["document", "spec", "containers"]), st.booleans())
def test_explain_of_a_deeply_nested_manifest_never_crashes(deep: str, where: str, running: bool) -> None:
    """Issue 47 item 8: nesting beyond the bounds, as a whole document, a field or a list entry, in a manifest or in
    --running, is a positioned error (LibYAML's own limit used to leave it to the composer: RecursionError)."""
    if where == "document":
        manifest_text = deep
    else:
        indented = "\n".join("    " + line for line in deep.splitlines())
        manifest_text = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  {where}:\n{indented}\n"
    with scratch() as root:
        shutil.copy(MINIMAL, root / "fleet.yaml")
        (root / "m.yaml").write_text(manifest_text, encoding="utf-8")
        (root / "w.yaml").write_text(yaml.safe_dump(WORKLOADS[0]), encoding="utf-8")
        argv = ["--running", "m.yaml", "w.yaml"] if running else ["m.yaml"]
        result = run(["explain", "fleet.yaml", "--env", "dev", *argv], root)
        # an empty cut: no workload in m.yaml, or with m.yaml as --running, none in w.yaml (an example's ConfigMap)
        named = "m.yaml" in result.stderr or (running and "no workload in w.yaml" in result.stderr)
        assert result.code == 2 and named, result.stderr


def _many_pods(kind: str, count: int, selector: dict[str, str]) -> dict[str, object]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}], "nodeSelector": selector}
    if selector:
        pod["tolerations"] = [{"operator": "Exists"}]
    if kind == "Job":
        spec: dict[str, object] = {"parallelism": count, "completions": count, "template": {"spec": pod}}
    else:
        del pod["restartPolicy"]
        spec = {
            "replicas": count,
            "selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": pod},
        }
    return {
        "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
        "kind": kind,
        "metadata": {"name": "many", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": spec,
    }


@settings(max_examples=max(4, settings.default.max_examples // 4))
@given(
    st.sampled_from(["Job", "Deployment"]),
    st.one_of(st.integers(1, 3000), st.integers(3000, 2**31 - 1), st.integers(2**31, 10**18)),
    st.sampled_from([{}, {"gpufleet.io/node-group": "l4"}]),
    st.booleans(),
)
@example("Job", 10**8, {}, True)  # the reproducer, on the system group (10^9 pods made it allocate 8 GB)
@example("Deployment", 10**8, {"gpufleet.io/node-group": "l4"}, True)
def test_explain_of_many_pods_is_bounded_by_the_fleet(
    kind: str, count: int, selector: dict[str, str], running: bool
) -> None:
    """Issue 47 item 5: pods that request nothing still take one of a node's allocatable pods each, so a declared
    count beyond what the fleet's nodes hold is refused (or runs in part) in time and memory independent of it: a
    --running Job of 10^9 such pods allocated a record per pod until MemoryError."""
    with scratch() as root:
        shutil.copy(MINIMAL, root / "fleet.yaml")
        (root / "many.yaml").write_text(yaml.safe_dump(_many_pods(kind, count, selector)), encoding="utf-8")
        (root / "w.yaml").write_text(yaml.safe_dump(_many_pods("Job", 1, {})), encoding="utf-8")
        argv = ["--running", "many.yaml", "w.yaml"] if running else ["many.yaml"]
        tracemalloc.start()
        started = time.monotonic()
        try:
            run(["explain", "fleet.yaml", "--env", "dev", *argv], root)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 * 2**20, f"{count} pods: {peak / 2**20:.0f} MiB"
        assert time.monotonic() - started < 20
