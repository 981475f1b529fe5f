"""`gpufleet explain` checks every workload manifest against the schema the API server reads it with before the model
reads it (issue 47 item 2): each shape below exited 3 (a traceback) in explain, with --running and with --as. Now:
exit 2, each error positioned and rendered as the spec loader renders a spec's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "fleet.yaml")
MEMBER = "arn:aws:iam::111122223333:role/vision-researchers"

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: vision
  labels: {{kueue.x-k8s.io/queue-name: vision}}{meta}
spec:{pod}
  containers:
    - name: c
      image: busybox{container}
"""
TRAIN_JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: t
  namespace: vision
  labels: {{kueue.x-k8s.io/queue-name: vision}}
spec:
  runtimeRef: {runtime}
  trainer:
    numNodes: 2
    env:
      - {env}
"""


def _pod(meta: str = "", pod: str = "", container: str = "") -> str:
    return POD.format(meta=meta, pod=pod, container=container)


def _train_job(runtime: str = "{name: gpufleet-efa-h100}", env: str = "{name: NCCL_DEBUG, value: WARN}") -> str:
    return TRAIN_JOB.format(runtime=runtime, env=env)


# (manifest, line, column, the message after the path, the source line, the hint) of each reproducer of issue 47
REPRODUCERS = {
    "tolerations-as-text": (
        _pod(pod="\n  tolerations: x"),
        8,
        16,
        'spec.tolerations: expected list, got string "x" (Pod p)',
        "  tolerations: x",
    ),
    "volumes-as-a-number": (
        _pod(pod="\n  volumes: 3"),
        8,
        12,
        "spec.volumes: expected list, got integer 3 (Pod p)",
        "  volumes: 3",
    ),
    "owner-references-as-a-number": (
        _pod(meta="\n  ownerReferences: 3"),
        7,
        20,
        "metadata.ownerReferences: expected list, got integer 3 (Pod p)",
        "  ownerReferences: 3",
    ),
    "pod-security-context-as-a-float": (
        _pod(pod="\n  securityContext: 1.5"),
        8,
        20,
        "spec.securityContext: expected mapping, got number 1.5 (Pod p)",
        "  securityContext: 1.5",
    ),
    "container-security-context-as-text": (
        _pod(container="\n      securityContext: privileged"),
        11,
        24,
        'spec.containers[0].securityContext: expected mapping, got string "privileged" (Pod p)',
        "      securityContext: privileged",
    ),
    "train-job-runtime-ref-as-a-number": (
        _train_job(runtime="3"),
        8,
        15,
        "spec.runtimeRef: expected mapping, got integer 3 (TrainJob t)",
        "  runtimeRef: 3",
    ),
    "train-job-env-entry-as-text": (
        _train_job(env="NCCL_DEBUG=WARN"),
        12,
        9,
        'spec.trainer.env[0]: expected mapping, got string "NCCL_DEBUG=WARN" (TrainJob t)',
        "      - NCCL_DEBUG=WARN",
    ),
    "train-job-env-value-as-a-list": (
        _train_job(env="{name: NCCL_DEBUG, value: [WARN]}"),
        12,
        35,
        'spec.trainer.env[0].value: expected string, got list ["WARN"] (TrainJob t)',
        "      - {name: NCCL_DEBUG, value: [WARN]}",
    ),
}


def _rendered(path: str, line: int, column: int, message: str, source: str) -> str:
    gutter = f"{line:>5} | "
    caret = " " * (len(gutter) - 2) + "| " + " " * (column - 1) + "^"
    return (
        f"gpufleet explain: error: {path}:{line}:{column}: {message}\n{gutter}{source}\n{caret}\n{path}: 1 error(s)\n"
    )


def _argv(how: str, bad: str, good: str) -> list[str]:
    if how == "running":
        return ["--running", bad, good]
    if how == "as":
        return [bad, "--as", MEMBER]
    return [bad]


@pytest.mark.parametrize("how", ["manifest", "running", "as"])
@pytest.mark.parametrize("case", sorted(REPRODUCERS))
def test_a_manifest_of_the_wrong_shape_is_refused_where_it_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, how: str
) -> None:
    text, line, column, message, source = REPRODUCERS[case]
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text(text)
    good.write_text(_pod())
    assert main(["explain", SPEC, "--env", "prod", *_argv(how, str(bad), str(good))]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", _rendered(str(bad), line, column, message, source))


def test_every_error_of_every_document_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(_pod(pod="\n  volumes: 3") + "---\n" + _train_job(runtime="3", env="x"))
    assert main(["explain", SPEC, "--env", "prod", str(path)]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if ": " in line and "|" not in line] == [
        f"gpufleet explain: error: {path}:8:12: spec.volumes: expected list, got integer 3 (Pod p)",
        f"{path}:20:15: spec.runtimeRef: expected mapping, got integer 3 (TrainJob t)",
        f'{path}:24:9: spec.trainer.env[0]: expected mapping, got string "x" (TrainJob t)',
        f"{path}: 3 error(s)",
    ]


@pytest.mark.parametrize(
    ("text", "message", "source", "hint"),
    [
        (
            _pod(pod="\n  restartPolicy: yes"),
            "8:18: spec.restartPolicy: yes is read by YAML 1.1 as the boolean true, but a string is expected (Pod p)",
            "  restartPolicy: yes",
            'hint: quote it: "yes"',
        ),
        (
            _pod(pod="\n  nodeSelector: {gpufleet.io/node-group: 1}"),
            "8:42: spec.nodeSelector.gpufleet.io/node-group: 1 is read by YAML 1.1 as the number 1, but a string is"
            " expected (Pod p)",
            "  nodeSelector: {gpufleet.io/node-group: 1}",
            'hint: quote it: "1"',
        ),
        (
            _pod()
            .replace("spec:\n", "spec:\n  replicas: 1\n")
            .replace("kind: Pod", "kind: Job")
            .replace("apiVersion: v1", "apiVersion: batch/v1"),
            '7:1: spec: missing required field "template" (Job p)',
            "spec:",
            None,
        ),
        (
            _pod(pod="\n  priority: 3000000000"),
            "8:13: spec.priority: 3000000000 is beyond the range of an int32 (-2147483648 to 2147483647) (Pod p)",
            "  priority: 3000000000",
            None,
        ),
    ],
    ids=["yaml-1.1-boolean", "yaml-1.1-number", "required", "int32"],
)
def test_what_else_the_api_server_refuses_of_a_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str, source: str, hint: str | None
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert main(["explain", SPEC, "--env", "prod", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"gpufleet explain: error: {path}:{message}"
    assert lines[1].endswith(f" | {source}")
    assert lines[3:] == ([hint] if hint else []) + [f"{path}: 1 error(s)"]


def test_what_the_api_server_accepts_is_not_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A null anywhere (the decoders' zero value), a field the schema does not know (dropped with a warning), a
    timestamp-like value where text belongs (kubectl's YAML reader keeps it text) and a whole number written 1.0
    (kubectl sends JSON's 1)."""
    path = tmp_path / "m.yaml"
    path.write_text(
        _pod(
            meta="\n  annotations: {built: 2026-01-01}\n  creationTimestamp: null",
            pod="\n  tolerations: null\n  futureField: {a: 1}\n  priority: 1.0",
        )
    )
    assert main(["explain", SPEC, "--env", "prod", str(path)]) == 0, capsys.readouterr().err


def test_a_kind_no_fleet_serves_is_judged_without_reading_its_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No schema is shipped for a kind at an apiVersion no gpufleet fleet serves (PyTorchJob: no training-operator
    v1 is installed; a Job at batch/v2): kubectl's discovery refuses it before anything reads its body, and so does
    explain, whatever the body holds (its metadata is an ObjectMeta still)."""
    path = tmp_path / "m.yaml"
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j, namespace: vision}\n"
        "spec: {pytorchReplicaSpecs: 3}\n---\n"
        "apiVersion: batch/v2\nkind: Job\nmetadata: {name: k, namespace: vision}\nspec: {template: 3}\n"
    )
    assert main(["explain", SPEC, "--env", "prod", str(path), "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert 'no matches for kind \\"PyTorchJob\\" in version \\"kubeflow.org/v1\\"' in out
    assert 'no matches for kind \\"Job\\" in version \\"batch/v2\\"' in out
    path.write_text("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j, ownerReferences: 3}\n")
    assert main(["explain", SPEC, "--env", "prod", str(path)]) == 2
    assert "metadata.ownerReferences: expected list, got integer 3 (PyTorchJob j)" in capsys.readouterr().err


_JOB = (
    "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, namespace: vision}}\nspec:\n  template:\n    spec:\n"
    "      {pod}\n      containers:\n        - name: c\n          image: x\n          {container}\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _JOB.format(pod="", container="resources: x"),
            '11:22: spec.template.spec.containers[0].resources: expected mapping, got string "x" (Job j)',
        ),
        (
            _JOB.format(pod="nodeSelector: [1]", container=""),
            "7:21: spec.template.spec.nodeSelector: expected mapping, got list [1] (Job j)",
        ),
        (
            _JOB.format(pod="nodeSelector: {a: 1}", container=""),
            "7:25: spec.template.spec.nodeSelector.a: 1 is read by YAML 1.1 as the number 1, but a string is expected"
            " (Job j)",
        ),
        (
            _JOB.format(pod="affinity: x", container=""),
            '7:17: spec.template.spec.affinity: expected mapping, got string "x" (Job j)',
        ),
        (
            _JOB.format(pod="affinity: {nodeAffinity: [1]}", container=""),
            "7:32: spec.template.spec.affinity.nodeAffinity: expected mapping, got list [1] (Job j)",
        ),
        (
            _JOB.replace("namespace: vision", "namespace: [1]").format(pod="", container=""),
            "3:32: metadata.namespace: expected string, got list [1] (Job j)",
        ),
    ],
    ids=["resources", "node-selector-list", "node-selector-value", "affinity", "node-affinity", "namespace"],
)
def test_the_shapes_round_3_fixed_one_by_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    """Issue 26 item 4's reproducers (each exited 3, or the namespace was read as "[1]"), now refused by the schema."""
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert main(["explain", SPEC, "--env", "prod", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[0] == f"gpufleet explain: error: {path}:{message}"
