"""Weight prefetch (teams[].prefetch, issue 34 item 3): the DaemonSet keeps each node's Mountpoint cache holding the
team's weights. Its pods must share the node's Mountpoint Pod with the team's serving pods, which the driver decides
by the fields of awslabs/mountpoint-s3-csi-driver v2.7.0 cmd/aws-s3-csi-controller/csicontroller/reconciler.go
buildFieldFilters (gpufleet.simulate.volumes.sharing_key, the model's port of that rule, not the renderer's); the
script reads each file once and again only when it changes."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.manifests import prefetch
from gpufleet.plan.rollout import build_plan
from gpufleet.simulate.volumes import sharing_key
from tests.network.fleets import fleet, group

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "gpufleet" / "data" / "prefetch" / "prefetch.py"
EXAMPLE = yaml.safe_load((ROOT / "fleet.yaml").read_text())

SERVE = group(
    "serve", "g6e.12xlarge", local="RAID0", max_size=8, taints="[{key: serve, value: 'y', effect: NoSchedule}]"
)
SERVE = SERVE.replace("workloadClass: Training", "workloadClass: Inference")
SPEC = """\
teams:
  - name: llm
    quotas: [{nodeGroup: serve, gpus: 4}]
    prefetch: [{nodeGroup: serve, paths: [models/llama/, tokenizer.json]}]
checkpoints:
  bucket: team-checkpoints
  modelParameters: 70000000000
  meanTimeBetweenFailuresHours: 6
  mountpoint: {}
"""


def _objects(kind: str) -> list[tuple[Any, Mapping[str, Any]]]:
    plan = build_plan(fleet([SERVE], SPEC), "prod")
    return [
        (r, r.args["object"])
        for s in plan.included()
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == kind
    ]


@pytest.fixture(scope="module")
def daemonset() -> tuple[Any, Mapping[str, Any]]:
    (found,) = [(r, o) for r, o in _objects("DaemonSet") if o["metadata"]["name"] == "prefetch-serve"]
    return found


def _volume() -> Mapping[str, Any]:
    (pv,) = [o for _, o in _objects("PersistentVolume") if o["metadata"]["name"] == "llm-s3-serve"]
    return pv


def test_the_daemonset_runs_in_the_teams_namespace_on_the_group_after_its_claim(daemonset) -> None:
    resource, ds = daemonset
    assert ds["metadata"]["namespace"] == "llm"
    assert resource.depends_on == (
        "persistentvolumeclaim-llm-s3-serve",
        "configmap-llm-gpufleet-prefetch",
        "helm-aws-mountpoint-s3-csi-driver",
    )
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpufleet.io/node-group": "serve"}
    assert {"key": "serve", "operator": "Equal", "value": "y", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["volumes"][0] == {
        "name": "weights",
        "persistentVolumeClaim": {"claimName": "s3-serve", "readOnly": True},
    }
    (container,) = pod["containers"]
    assert container["command"][-3:] == ["/weights", "models/llama/", "tokenizer.json"]
    # The team's queue, and nothing for Kueue to charge to it.
    assert ds["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "llm"
    assert "resources" not in container
    # First in the team's ClusterQueue: its highest class (serving, as the team has an Inference quota).
    assert pod["priorityClassName"] == "serving"
    # An update never leaves a node without a pod on the claim (the Mountpoint Pod would end).
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


@pytest.mark.parametrize(
    ("serving", "shares"),
    [
        ({"serviceAccountName": "checkpoint-writer"}, True),
        # another account, or an fsGroup: a Mountpoint Pod (and an empty cache) of its own
        ({"serviceAccountName": "default"}, False),
        ({"serviceAccountName": "checkpoint-writer", "securityContext": {"fsGroup": 1000}}, False),
    ],
)
def test_serving_pods_share_the_mountpoint_pod_only_as_the_claims_account_without_fs_group(
    daemonset, serving: Mapping[str, Any], shares: bool
) -> None:
    pv = _volume()
    keeper = sharing_key(pv, "llm", daemonset[1]["spec"]["template"]["spec"], driver="2.7.0")
    assert (sharing_key(pv, "llm", serving, driver="2.7.0") == keeper) is shares
    # a Mountpoint Pod another driver version created is given to no new pod (reconciler.go @ v2.7.0
    # shouldAssignNewWorkloadToMountpointPod)
    assert sharing_key(pv, "llm", serving, driver="2.8.0") != keeper


def test_the_daemonset_rolls_with_the_csi_driver() -> None:
    """Issue 41 item 12: after a driver upgrade a prefetch pod that stays pins the old driver's Mountpoint Pod, which
    the new driver gives to no new serving pod (an empty cache for each). The pod template names the driver version,
    so a bump of versions.mountpointS3Csi changes it and the DaemonSet rolls, after the driver's release."""
    spec = fleet([SERVE], SPEC)
    bumped = dataclasses.replace(spec, versions=dataclasses.replace(spec.versions, mountpoint_s3_csi="2.8.0"))

    def template(f: Any) -> Mapping[str, Any]:
        (ds,) = [
            r.args["object"]
            for s in build_plan(f, "prod").included()
            for r in s.content.resources
            if r.args.get("object", {}).get("kind") == "DaemonSet"
            and r.args["object"]["metadata"]["name"] == "prefetch-serve"
        ]
        out: Mapping[str, Any] = ds["spec"]["template"]
        return out

    now, then = template(spec), template(bumped)
    assert now["metadata"]["annotations"] == {prefetch.DRIVER_ANNOTATION: "2.7.0"}
    assert then["metadata"]["annotations"] == {prefetch.DRIVER_ANNOTATION: "2.8.0"}
    assert {**now, "metadata": {}} == {**then, "metadata": {}}


@pytest.mark.parametrize("example", ["vllm.yaml", "lws-inference.yaml", "inference.yaml"])
def test_the_documented_serving_pods_would_share_the_prefetched_cache(daemonset, example: str) -> None:
    """The examples mount s3-l40s as the prefetch pods do: same account, no fsGroup (the rest of the key is the PV's),
    and serve what the example fleet prefetches."""
    keeper = daemonset[1]["spec"]["template"]["spec"]
    docs = list(yaml.safe_load_all((ROOT / "docs" / "examples" / example).read_text()))
    pods = []
    for doc in docs:
        spec = doc.get("spec", {})
        for template in (spec.get("template"), spec.get("leaderWorkerTemplate", {}).get("leaderTemplate"),
                         spec.get("leaderWorkerTemplate", {}).get("workerTemplate")):  # fmt: skip
            if template and any("persistentVolumeClaim" in v for v in template["spec"].get("volumes", [])):
                pods.append(template["spec"])
    assert pods, f"{example} mounts no claim"
    prefetched = next(t for t in EXAMPLE["teams"] if t["name"] == "language")["prefetch"][0]["paths"]
    served = ""
    for pod in pods:
        assert pod.get("serviceAccountName") == keeper["serviceAccountName"]
        (mount,) = [m for c in pod["containers"] for m in c.get("volumeMounts", []) if m["name"] == "weights"]
        served += " ".join(" ".join(c.get("command", []) + c.get("args", [])) for c in pod["containers"])
        assert "fsGroup" not in (pod.get("securityContext") or {}) and "fsGroup" not in keeper["securityContext"]
    assert any(f"{mount['mountPath']}/{p.rstrip('/')}" in served for p in prefetched), served


def test_one_configmap_per_team_holds_the_script() -> None:
    (config,) = [o for _, o in _objects("ConfigMap") if o["metadata"]["name"] == prefetch.CONFIGMAP]
    assert config["metadata"]["namespace"] == "llm"
    assert config["data"] == {"prefetch.py": SCRIPT.read_text()}


# ---------------------------------------------------------------------------------------------------------------
# The script, run here on a directory standing in for the claim


@pytest.fixture
def script() -> Any:
    spec = importlib.util.spec_from_file_location("prefetch_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_file_is_read_once_and_again_when_it_changes(tmp_path: Path, script: Any, capsys) -> None:
    (tmp_path / "models" / "llama").mkdir(parents=True)
    (tmp_path / "models" / "llama" / "a.safetensors").write_bytes(b"x" * 3000)
    (tmp_path / "models" / "llama" / "b.safetensors").write_bytes(b"y" * 5000)
    (tmp_path / "tokenizer.json").write_bytes(b"{}")
    (tmp_path / "other.bin").write_bytes(b"z" * 9999)  # not listed: never read
    seen: dict[str, tuple[int, int]] = {}
    paths = ["models/llama/", "tokenizer.json", "missing/"]
    assert script.sweep(str(tmp_path), paths, seen) == (3, 8002)
    assert "prefetch: missing/ not found under the claim; trying again next sweep" in capsys.readouterr().out
    assert script.sweep(str(tmp_path), paths, seen) == (0, 0)
    (tmp_path / "models" / "llama" / "c.safetensors").write_bytes(b"n" * 10)  # a new shard
    changed = tmp_path / "models" / "llama" / "a.safetensors"
    changed.write_bytes(b"x" * 4000)
    os.utime(changed, ns=(1, 1))
    assert script.sweep(str(tmp_path), paths, seen) == (2, 4010)


def test_an_unreadable_file_is_reported_and_tried_again(tmp_path: Path, script: Any, capsys, monkeypatch) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "w.bin").write_bytes(b"w" * 10)
    real = script.read

    def failing(path: str) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(script, "read", failing)
    seen: dict[str, tuple[int, int]] = {}
    assert script.sweep(str(tmp_path), ["m"], seen) == (0, 0)
    assert "Input/output error; trying again next sweep" in capsys.readouterr().out
    monkeypatch.setattr(script, "read", real)
    assert script.sweep(str(tmp_path), ["m"], seen) == (1, 10)


def test_the_first_sweep_says_what_it_measured(script: Any) -> None:
    assert script.report(3, 101_500_000_000, 40.6, 3, True) == (
        "prefetch: read 3 file(s), 101.5 GB, in 41 s (2.50 GB/s); 3 file(s) cached; first sweep of this pod: the"
        " node's s3 rate if its cache was empty, its nvme rate if it was warm"
    )
    assert script.report(1, 2_000_000_000, 1.0, 4, False).endswith("(2.00 GB/s); 4 file(s) cached")
