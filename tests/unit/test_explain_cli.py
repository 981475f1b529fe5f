"""`gpufleet explain`: the JSON contract (issue 11), exit codes, positioned manifest errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "fleet.yaml")
NOTEBOOK = str(ROOT / "docs/examples/notebook.yaml")
# The fleet state every verdict assumes (issue 27), in the JSON of each workload and at the end of the text.
# The example fleet keeps a warm l40s node (headroom), so its verdicts name the placeholders too.
ASSUMES = (
    "assumes an otherwise idle fleet: no other workload holds quota or nodes; groups grow to maxSize through the"
    " autoscaler (a Karpenter pool: to its NodePool limit); gpufleet's headroom placeholders hold their warm nodes"
)


_JOB = (
    "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, namespace: vision}}\nspec:\n  template:\n    spec:\n"
    "      {pod}\n      containers:\n        - name: c\n          image: x\n          {container}\n"
)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_json_contract(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    two_shares = _write(
        tmp_path,
        "two.yaml",
        Path(NOTEBOOK)
        .read_text()
        .replace("notebook-alice", "greedy")
        .replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 2"),
    )
    code = main(["explain", SPEC, "--env", "prod", NOTEBOOK, two_shares, "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out == {
        "workloads": [
            {
                "kind": "Pod",
                "namespace": "vision",
                "name": "notebook-alice",
                "runs": True,
                "clusterQueue": "vision",
                "flavor": "notebooks",
                "nodeGroup": "notebooks",
                "provisionedBy": [],
                "reasons": [],
                "pods": {"total": 1, "admitted": 1},
                "assumes": ASSUMES,
            },
            {
                "kind": "Pod",
                "namespace": "vision",
                "name": "greedy",
                "runs": False,
                "clusterQueue": "vision",
                "flavor": "notebooks",
                "nodeGroup": None,
                "provisionedBy": [],
                "reasons": [
                    {
                        "stage": "device-plugin",
                        "message": (
                            "UnexpectedAdmissionError on node group notebooks: request for 'nvidia.com/gpu: 2' too"
                            " large: maximum request size for shared resources is 1"
                        ),
                        "fix": (
                            "ask for nvidia.com/gpu: 1 per container on shared node group notebooks, or use an"
                            " Exclusive group"
                        ),
                    }
                ],
                "pods": {"total": 1, "admitted": 0},
                "assumes": ASSUMES,
            },
        ]
    }


def test_text_and_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--env", "prod", SPEC, NOTEBOOK]) == 0
    out = capsys.readouterr().out
    assert (
        out.splitlines()[0]
        == "Pod vision/notebook-alice: runs, through ClusterQueue vision, flavor notebooks, on node group notebooks"
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: [\n", ":2:1: not valid YAML: expected the node content, but found '<stream end>'"),
        ("---\nfoo: 1\n", ":2:1: not a Kubernetes object: a manifest document needs apiVersion and kind"),
        (
            (
                "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: vision}\nspec:\n  template:\n   "
                " spec:\n      containers:\n        - name: c\n          resources: {limits: {cpu: lots}}\n"
            ),
            ":9:37: Job spec.template.spec.containers[0].resources.limits.cpu: 'lots' is not a Kubernetes quantity",
        ),
        # Hostile manifests (issue 26 item 4): each of these exited 3 (those of a wrong type, and the namespace
        # accepted as "[1]": tests/unit/test_manifest_shapes.py).
        ("[" * 1000 + "]" * 1000 + "\n", ":1:65: the document nests deeper than 64 levels"),
        # Past LibYAML's own limit (1,000 flow levels), which it reports as an error: the bounds read the events
        # with the pure-Python parser then, as the spec loader does (issue 47 item 8: RecursionError, exit 3).
        ("[" * 1001 + "]" * 1001 + "\n", ":1:65: the document nests deeper than 64 levels"),
        ("kind: Pod\nspec: " + "{a: " * 3000 + "}" * 3000 + "\n", ":2:259: the document nests deeper than 64 levels"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e]\n",
            ":5:28: the document expands to more than 50000 values (YAML aliases are expanded where they are used)",
        ),
        (
            _JOB.format(pod="", container="resources: {limits: {cpu: " + "9" * 400 + "}}"),
            ":11:37: Job spec.template.spec.containers[0].resources.limits.cpu: '" + "9" * 400 + "' is larger than a"
            " Kubernetes quantity can be",
        ),
        (
            _JOB.format(pod="", container="").replace("name: j,", "name: !!int x,"),
            ":3:18: not valid YAML: a value its tag cannot read",
        ),
        (
            "a: !!binary 'x'\n",
            ":1:4: not valid YAML: failed to decode base64 data: Invalid base64-encoded string: number of data"
            " characters (1) cannot be 1 more than a multiple of 4",
        ),
    ],
)
def test_bad_manifest_is_a_positioned_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, "m.yaml", text)
    assert main(["explain", SPEC, "--env", "prod", path]) == 2
    err = capsys.readouterr().err
    assert err == f"gpufleet explain: error: {path}{message}\n"


def test_text_of_a_deployment_partly_admitted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 27: Kueue admits a Deployment's pods one by one; 10 of 12 run and the text says so."""
    server = _write(
        tmp_path,
        "server.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: server, namespace: language}\nspec:\n  replicas: 12\n"
        "  selector: {matchLabels: {app: server}}\n  template:\n    metadata: {labels: {app: server}}\n    spec:\n      nodeSelector: {gpufleet.io/node-group: l40s}\n      containers:\n"
        "        - {name: c, readinessProbe: {tcpSocket: {port: 8000}}, resources: {limits: {nvidia.com/gpu: 4}}}\n",
    )
    assert main(["explain", SPEC, "--env", "prod", server]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "Deployment language/server: 10 of 12 pods run; 2 wait for quota: couldn't assign flavors to pod set main:"
        " flavor h100 doesn't match node affinity, insufficient unused quota for nvidia.com/gpu in flavor l40s, 4 more"
        " needed, flavor notebooks doesn't match node affinity"
    )
    assert lines[1] == "  running: through ClusterQueue language, flavor l40s, on node group l40s"
    assert lines[2].startswith("  fix: ")
    assert lines[-1] == f"({ASSUMES})"


def test_text_of_a_pod_admitted_with_no_flavor(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    idle = _write(
        tmp_path,
        "idle.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: idle, namespace: vision}\nspec:\n  containers: [{name: c}]\n",
    )
    assert main(["explain", SPEC, "--env", "prod", idle]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "Pod vision/idle: runs, through ClusterQueue vision, no flavor (it requests nothing), on node group system"
    )


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", SPEC, NOTEBOOK]) == 2
    assert "the following arguments are required: --env" in capsys.readouterr().err
    assert main(["explain", "--env", "prod", SPEC]) == 2
    assert "error: no workload in" in capsys.readouterr().err


def test_docs_examples_run_on_the_group_they_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 11 "done when": `gpufleet explain fleet.yaml --env prod` on the docs' example jobs reports each runs,
    on the group it names."""
    examples = sorted(str(p) for p in (ROOT / "docs/examples").glob("*.yaml"))
    assert len(examples) >= 3
    assert main(["explain", SPEC, "--env", "prod", *examples, "--format", "json"]) == 0
    workloads = json.loads(capsys.readouterr().out)["workloads"]
    named = {
        "finetune": "h100",
        "llm-server": "l40s",
        "llm-multinode": "l40s",
        "vllm-server": "l40s",
        "notebook-alice": "notebooks",
        "eval-asr": "a100-mig",
        "dataloader-check": "h100",
    }
    assert {w["name"]: w["nodeGroup"] for w in workloads} == named
    assert all(w["runs"] and w["clusterQueue"] == w["namespace"] for w in workloads)


def test_as_a_member_of_another_team(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: a workload in a namespace its submitter cannot write to is stopped at the access gate."""
    member = "arn:aws:sts::111122223333:assumed-role/language-researchers/alice"
    assert main(["explain", SPEC, "--env", "prod", NOTEBOOK, "--as", member, "--format", "json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)["workloads"]
    assert verdict["reasons"] == [
        {
            "stage": "access",
            "message": (
                f"{member} (team language, group gpufleet-team-language) may create workloads only in namespace"
                " language; the Pod is in namespace vision, where the API server forbids it (Forbidden)"
            ),
            "fix": (
                "submit it in namespace language, or move arn:aws:iam::111122223333:role/language-researchers to"
                " teams[vision].members (one access entry per principal)"
            ),
        }
    ]
    assert (
        main(["explain", SPEC, "--env", "prod", NOTEBOOK, "--as", "arn:aws:iam::111122223333:role/vision-researchers"])
        == 0
    )


def test_as_needs_a_principal_arn(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", SPEC, "--env", "prod", NOTEBOOK, "--as", "alice"]) == 2
    assert (
        capsys.readouterr().err == "gpufleet explain: error: --as: 'alice' is not an IAM role, user or assumed-role ARN"
        " (arn:aws:iam::<account>:role/<name>, arn:aws:iam::<account>:user/<name> or"
        " arn:aws:sts::<account>:assumed-role/<name>/<session>)\n"
    )


def _vllm(max_replicas: int, target: str = "vllm-server") -> str:
    """docs/examples/vllm.yaml (a Deployment of 4-GPU replicas and its ScaledObject) with another maxReplicaCount."""
    text = (ROOT / "docs/examples/vllm.yaml").read_text()
    text = text.replace("maxReplicaCount: 2", f"maxReplicaCount: {max_replicas}")
    return text.replace("kind: Deployment, name: vllm-server}", f"kind: Deployment, name: {target}}}")


def test_a_scaled_object_is_judged_at_its_max_replica_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41 item 17: explain reads a KEDA ScaledObject and judges its target again at maxReplicaCount: 16
    replicas of 4 GPUs is 64, beyond what the language team's ClusterQueue holds on l40s; the Deployment as written (1
    replica) runs, its burst does not, and the fix is the team's quota, the replicas, or borrowing."""
    manifest = _write(tmp_path, "vllm.yaml", _vllm(16))
    assert main(["explain", SPEC, "--env", "prod", manifest, "--format", "json"]) == 1
    written, burst = json.loads(capsys.readouterr().out)["workloads"]
    assert (written["name"], written["runs"], written["pods"]) == ("vllm-server", True, {"total": 1, "admitted": 1})
    assert "scaledBy" not in written
    assert burst["scaledBy"] == {"scaledObject": "vllm-server", "maxReplicaCount": 16}
    assert (burst["name"], burst["runs"], burst["pods"]) == ("vllm-server", False, {"total": 16, "admitted": 10})
    (reason,) = burst["reasons"]
    assert (
        reason["stage"] == "admission"
        and "insufficient unused quota for nvidia.com/gpu in flavor l40s" in (reason["message"])
    )
    assert reason["fix"].startswith("raise the team's quota on that node group (teams[].quotas[].gpus), lower the")
    assert main(["explain", SPEC, "--env", "prod", manifest]) == 1
    text = capsys.readouterr().out.splitlines()
    assert any(
        line.startswith(
            "Deployment language/vllm-server at ScaledObject vllm-server's maxReplicaCount 16: 10 of 16 pods run; 6"
            " wait for quota: "
        )
        for line in text
    )
    assert (
        "  note: KEDA scales it up to ScaledObject vllm-server's maxReplicaCount 16, and the fleet holds 10 of them:"
        " set maxReplicaCount to at most 10, or raise the quota"
    ) in text
    # the documented maximum, 2, fits
    assert main(["explain", SPEC, "--env", "prod", _write(tmp_path, "ok.yaml", _vllm(2)), "--format", "json"]) == 0
    assert [w.get("scaledBy") for w in json.loads(capsys.readouterr().out)["workloads"]] == [
        None,
        {"scaledObject": "vllm-server", "maxReplicaCount": 2},
    ]


def test_a_scaled_object_without_its_target_is_a_positioned_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _write(tmp_path, "vllm.yaml", _vllm(2, target="vllm-srv"))
    assert main(["explain", SPEC, "--env", "prod", manifest]) == 2
    assert capsys.readouterr().err == (
        f"gpufleet explain: error: {manifest}:82:65: ScaledObject spec.scaleTargetRef.name: Deployment"
        " language/vllm-srv is not among the manifests given: give its manifest too, and explain judges it at the"
        " ScaledObject's maxReplicaCount\n"
    )
