"""Health stage builders: EKS auto repair overrides use the names EKS documents, thresholds, NPD plugin config,
the remediation controller's decisions per workload class, and the health scripts' exit codes."""

from __future__ import annotations

import copy
import datetime
import json
import os
import stat
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.manifests import health
from gpufleet.rules.pipeline import load_fleet
from gpufleet.spec.fleet import Fleet
from tests.promtool import CASES

INSTALL = load_fleet(str(CASES / "observability-install" / "fleet.yaml"), "prod").environments["prod"]
SHARING = load_fleet(str(CASES / "sharing-strategies" / "fleet.yaml"), "prod").environments["prod"]
EXISTING = load_fleet(str(CASES / "observability-existing" / "fleet.yaml"), "prod").environments["prod"]
EXISTING_WITH_REPAIR = replace(EXISTING, health=replace(EXISTING.health, auto_repair="Enabled"))
DATA = Path(health.__file__).resolve().parents[2] / "data" / "health"

# EKS's documented actions (https://docs.aws.amazon.com/eks/latest/userguide/node-health-nma.html, "NVIDIA XID error
# codes") for the codes it lists; NVIDIA's resolution bucket for the codes agent v1.7.0 added; repairAction enum
# Replace | Reboot | NoAction (API_NodeRepairConfigOverrides).
V170_XIDS = {
    "NvidiaXID46Error": "Reboot", "NvidiaXID48Error": "Reboot", "NvidiaXID54Error": "Replace", "NvidiaXID62Error": "Reboot",
    "NvidiaXID63Error": "Reboot", "NvidiaXID64Error": "Reboot", "NvidiaXID74Error": "Replace", "NvidiaXID79Error": "Replace",
    "NvidiaXID95Error": "Reboot", "NvidiaXID109Error": "Reboot", "NvidiaXID110Error": "Reboot", "NvidiaXID119Error": "Replace",
    "NvidiaXID120Error": "Replace", "NvidiaXID136Error": "Reboot", "NvidiaXID140Error": "Replace", "NvidiaXID142Error": "Replace",
    "NvidiaXID143Error": "Reboot", "NvidiaXID151Error": "Replace", "NvidiaXID155Error": "Reboot", "NvidiaXID156Error": "Reboot",
    "NvidiaXID158Error": "Reboot",
}  # fmt: skip
EXPLICIT = {
    "NvidiaDoubleBitError": "Replace", "NvidiaNVLinkError": "Replace", "NvidiaDeviceCountMismatch": "Replace",
    # The agent lost its DCGM host engine: nothing about the GPUs; a replacement would run the same software.
    "DCGMError": "NoAction",
}  # fmt: skip
# DCGM health incidents (`DCGMHealthCode<N>`, N from NVIDIA/DCGM v4.6.0 dcgmlib/dcgm_errors.h, the codes of its
# modules/health): the remediator owns them (NoAction), except where the GPU is gone or must be reset, which EKS
# repairs as it does the named reason: 4 VOLATILE_DBE_DETECTED (as NvidiaDoubleBitError), 120 FALLEN_OFF_BUS (as
# XID 79), 81 UNCONTAINED_ERROR (as XID 95), 125 GPU_RECOVERY_RESET, 126 GPU_RECOVERY_REBOOT.
DCGM_460 = (3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 33, 36, 52, 70, 71, 80, 81, 101, 119, 120, 121, 123, 125,
            126, 127, 128, 131, 132)  # fmt: skip
EKS_HEALTH_CODES = {4: "Replace", 120: "Replace", 81: "Reboot", 125: "Reboot", 126: "Reboot"}
HEALTH_CODES = {f"DCGMHealthCode{n}": EKS_HEALTH_CODES.get(n, "NoAction") for n in DCGM_460}


def actions(fleet: Fleet, group: str) -> dict[str, str]:
    cfg = health.node_repair_config(fleet, fleet.node_group(group))
    assert cfg is not None
    return {o["nodeUnhealthyReason"]: o["repairAction"] for o in cfg["nodeRepairConfigOverrides"]}


def test_repair_overrides_use_eks_condition_names_and_actions() -> None:
    group = INSTALL.node_group("a100")
    cfg = health.node_repair_config(INSTALL, group)
    assert cfg is not None and cfg["enabled"] is True
    overrides = cfg["nodeRepairConfigOverrides"]
    assert {o["nodeMonitoringCondition"] for o in overrides} == {"AcceleratedHardwareReady"}
    assert actions(INSTALL, "a100") == {**V170_XIDS, **EXPLICIT, **HEALTH_CODES}
    assert {o["minRepairWaitTimeMins"] for o in overrides} == {5}  # Training repairs sooner
    assert all(
        set(o) == {"nodeMonitoringCondition", "nodeUnhealthyReason", "minRepairWaitTimeMins", "repairAction"}
        for o in overrides
    )


def test_xid_overrides_follow_the_pinned_agent_version() -> None:
    # v1.6.4's well-known list lacks 136, 142, 143, 151, 155, 156 and 158 (dcgm_policies.go at each tag); XIDs the
    # agent only reports as events (13, 31, 94, 121 before v1.6.4) get no override.
    older = replace(
        INSTALL,
        versions=replace(
            INSTALL.versions, addons={**INSTALL.versions.addons, "nodeMonitoringAgent": "v1.6.4-eksbuild.1"}
        ),
    )
    xids = {r for r in actions(older, "a100") if r.startswith("NvidiaXID")}
    assert xids == set(V170_XIDS) - {f"NvidiaXID{c}Error" for c in (136, 142, 143, 151, 155, 156, 158)}
    assert not {"NvidiaXID13Error", "NvidiaXID31Error", "NvidiaXID94Error", "NvidiaXID121Error"} & set(
        actions(INSTALL, "a100")
    )


def test_one_owner_per_dcgm_fault_class() -> None:
    # Before: no DCGMHealthCode<N> override, so EKS's default repair (reboot or replace after 10 minutes) raced the
    # remediator's Interactive grace and one-replica-at-a-time serving drain on the same DCGM health verdict.
    got = actions(INSTALL, "l4")
    assert {r: a for r, a in got.items() if r.startswith("DCGMHealthCode")} == HEALTH_CODES
    # The agent skips 122 (IMEX) and never reports 0 (no error): no override names a reason it cannot report.
    assert "DCGMHealthCode122" not in got and "DCGMHealthCode0" not in got
    # DCGMDiagnosticFailure can never be reported: the agent runs active diagnostics only with DCGM_DIAG_LEVEL set
    # (monitors/nvidia/dcgm/dcgm_activediagnostic.go), its DaemonSet sets only HOST_ROOT and MY_NODE_NAME, and the
    # add-on configuration schema has no env (charts/configuration.schema.json, v1.7.0).
    assert "DCGMDiagnosticFailure" not in got
    # The codes follow the DCGM the pinned operator runs: v26.3.3 ships DCGM 4.5.2 (40 yes, 131 and 132 not yet).
    older = EXISTING_WITH_REPAIR
    codes = {r for r in actions(older, older.node_groups[0].name) if r.startswith("DCGMHealthCode")}
    assert codes == {f"DCGMHealthCode{n}" for n in (*set(DCGM_460) - {131, 132}, 40)}


def test_repair_args_are_the_provider_schema_names() -> None:
    pytest.importorskip("pulumi_aws")
    from pulumi._types import input_type_py_to_pulumi_names
    from pulumi_aws.eks import _inputs

    # The engine's names of the SDK's input types (plan args hold those, not the Python names).
    top = set(input_type_py_to_pulumi_names(_inputs.NodeGroupNodeRepairConfigArgs).values())
    nested = set(input_type_py_to_pulumi_names(_inputs.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs).values())
    cfg = health.node_repair_config(INSTALL, INSTALL.node_group("l4"))
    assert cfg is not None
    assert set(cfg) <= top
    assert set(cfg["nodeRepairConfigOverrides"][0]) == nested


@pytest.mark.parametrize(
    ("name", "unhealthy", "parallel", "wait"),
    [("a100", 3, 1, 5), ("l4", 2, 1, 15)],  # maxSize 12 -> ceil(2.4) = 3; maxSize 6 -> ceil(1.2) = 2
)
def test_repair_thresholds(name: str, unhealthy: int, parallel: int, wait: int) -> None:
    cfg = health.node_repair_config(INSTALL, INSTALL.node_group(name))
    assert cfg is not None
    assert (cfg["maxUnhealthyNodeThresholdCount"], cfg["maxParallelNodesRepairedCount"]) == (unhealthy, parallel)
    assert cfg["nodeRepairConfigOverrides"][0]["minRepairWaitTimeMins"] == wait


def test_repair_disabled_gives_none_and_batch_repairs_in_parallel() -> None:
    assert health.node_repair_config(EXISTING, EXISTING.node_group("batch")) is None
    assert health.repair_thresholds(EXISTING.node_group("batch")) == {
        "maxUnhealthyNodeThresholdCount": 4,
        "maxParallelNodesRepairedCount": 2,
    }


def test_npd_plugin_and_sidecar() -> None:
    values = health.npd_values(INSTALL)
    monitor = json.loads(values["settings"]["custom_monitor_definitions"]["dcgm-health-monitor.json"])
    assert monitor["plugin"] == "custom"
    assert monitor["conditions"] == [
        {"type": "DCGMUnhealthy", "reason": "DCGMHealthy", "message": "DCGM health watches and diagnostics pass"}
    ]
    assert monitor["rules"][0]["type"] == "permanent" and monitor["rules"][0]["condition"] == "DCGMUnhealthy"
    assert values["settings"]["custom_plugin_monitors"] == ["/custom-config/dcgm-health-monitor.json"]
    sidecar = values["extraContainers"][0]
    assert sidecar["image"] == "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"  # the operator v26.7.0 hostengine
    env = {e["name"]: e["value"] for e in sidecar["env"]}
    assert env == {
        "DCGM_HOST": "nvidia-dcgm.gpu-operator.svc",
        "DCGM_DIAG_LEVEL": "1",
        "DCGM_CHECK_INTERVAL_SECONDS": "120",
        "STATE_DIR": "/var/run/gpufleet-health",
    }
    assert {e["name"]: e["value"] for e in values["env"]}["MAX_RESULT_AGE_SECONDS"] == str(3 * 120 + 60)
    assert values["tolerations"] == [{"operator": "Exists"}]
    term = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [{"key": "gpufleet.io/node-group", "operator": "In", "values": ["a100", "l4"]}]
    assert health.npd_values(EXISTING)["extraContainers"][0]["image"].endswith("dcgm:4.5.2-1-ubuntu22.04")


def test_gate_prefers_a_training_group_that_always_has_a_node() -> None:
    assert health.gate_group(INSTALL).name == "a100"
    assert health.gate_group(EXISTING).name == "batch"  # nothing has minSize >= 1: Batch before Interactive
    job = health.planted_fault_objects(INSTALL)[-1]
    assert job["kind"] == "Job" and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"gpufleet.io/node-group": "a100"}


def test_remediator_and_planted_fault_run_with_the_least_they_need() -> None:
    deployment = health.remediator_objects(INSTALL)[-1]
    job = health.planted_fault_objects(INSTALL)[-1]
    for obj in (deployment, job):
        pod = obj["spec"]["template"]["spec"]
        assert pod["securityContext"] == {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }
        # Both call the API with their own ServiceAccount, so the token stays (an annotated Checkov skip).
        assert "automountServiceAccountToken" not in pod and pod["serviceAccountName"] == obj["metadata"]["name"]
    # The fault goes through the DCGM host engine's API: no host path, no root (before: root writing a hostPath file
    # that NPD's plugin read instead of DCGM's verdict).
    job_pod = job["spec"]["template"]["spec"]
    assert all("hostPath" not in v for v in job_pod["volumes"])
    (injector,) = job_pod["initContainers"]
    assert injector["restartPolicy"] == "Always"  # a native sidecar: it ends with the checker
    assert injector["image"] == "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"  # dcgmi matches the engine
    assert injector["command"] == ["/bin/bash", "/opt/gpufleet/inject-dcgm-fault.sh"]
    skips = {
        obj["metadata"]["name"]: {
            v.split("=", 1)[0] for k, v in obj["metadata"]["annotations"].items() if k.startswith("checkov.io/skip")
        }
        for obj in (deployment, job)
    }
    assert skips == {
        "gpufleet-remediator": {"CKV_K8S_8", "CKV_K8S_9", "CKV_K8S_38"},
        "gpufleet-planted-fault": {"CKV_K8S_38"},
    }


def test_the_gate_holds_the_fault_past_the_repair_wait_only_with_auto_repair() -> None:
    env = {
        e["name"]: e.get("value")
        for e in health.planted_fault_objects(INSTALL)[-1]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["REPAIR_HOLD_SECONDS"] == str(5 * 60 + 300)  # a100 is Training: repair wait 5 minutes
    off = replace(INSTALL, health=replace(INSTALL.health, auto_repair="Disabled"))
    env = {
        e["name"]: e.get("value")
        for e in health.planted_fault_objects(off)[-1]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["REPAIR_HOLD_SECONDS"] == "0"


# --- the remediation controller (gpufleet/data/health/remediator.py) -------------------------------------


def _remediator() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpufleet_remediator", DATA / "remediator.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    import sys

    sys.modules["gpufleet_remediator"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


R = _remediator()


def _node(status: str, wclass: str, *, cordoned: bool = False, ours: bool = False, since: int = 0) -> dict[str, Any]:
    ann = {R.ANN_CORDONED: R.ME, R.ANN_CORDONED_AT: str(since)} if ours else {}
    return {
        "metadata": {
            "name": "n1",
            "labels": {R.LABEL_NODE_GROUP: "g", R.LABEL_WORKLOAD_CLASS: wclass},
            "annotations": ann,
        },
        "spec": {"unschedulable": cordoned},
        "status": {"conditions": [{"type": "DCGMUnhealthy", "status": status}]},
    }


def _pod(name: str, *, gpu: bool = True, owner: str | None = "ReplicaSet", phase: str = "Running") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": f"{name}-owner", "controller": True}]
    res = {"limits": {"nvidia.com/gpu": "1"}} if gpu else {"requests": {"cpu": "1"}}
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": res}]}, "status": {"phase": phase}}


class FakeApi:
    def __init__(self, ready: dict[str, tuple[int, int]] | None = None) -> None:
        self.ready = ready or {}
        self.calls: list[tuple[str, str, Any]] = []

    def get(self, path: str) -> Any:
        name = path.rsplit("/", 1)[-1]
        wanted, ready = self.ready.get(name, (1, 1))
        return {"spec": {"replicas": wanted}, "status": {"readyReplicas": ready}}

    def patch(self, path: str, body: Any) -> Any:
        self.calls.append(("PATCH", path, body))

    def post(self, path: str, body: Any) -> Any:
        self.calls.append(("POST", path, body))


PODS = [_pod("a"), _pod("b"), _pod("ds", owner="DaemonSet"), _pod("cpu", gpu=False), _pod("done", phase="Succeeded")]


@pytest.mark.parametrize(
    ("wclass", "evicted"),
    [("Training", ["ns/a", "ns/b"]), ("Batch", ["ns/a", "ns/b"]), ("Inference", ["ns/a"]), ("Interactive", [])],
)
def test_unhealthy_node_is_cordoned_then_drained_per_class(wclass: str, evicted: list[str]) -> None:
    acts = R.plan_node(FakeApi(), _node("True", wclass), PODS, R.Config(), now=100.0)
    assert acts.cordon == ["n1"]
    assert acts.evict == evicted


def test_on_a_dra_node_the_pods_that_claim_devices_are_drained() -> None:
    # devices DRA: no pod asks for nvidia.com/gpu; the pods holding GPUs name ResourceClaims (issue 43 item 6).
    claiming = _pod("claims", gpu=False)
    claiming["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "h100-dra-gpu-8"}]
    claiming["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    pods = [claiming, _pod("cpu", gpu=False)]
    assert R.plan_node(FakeApi(), _node("True", "Training"), pods, R.Config(), now=100.0).evict == ["ns/claims"]
    assert R.evictable(claiming) and not R.evictable(_pod("cpu", gpu=False))


def _ready(pod: dict[str, Any], ready: bool) -> dict[str, Any]:
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return pod


def test_inference_waits_for_capacity() -> None:
    api = FakeApi(ready={"a-owner": (3, 2), "b-owner": (3, 2)})  # a replica is already missing elsewhere
    pods = [_ready(p, True) for p in copy.deepcopy(PODS)]
    acts = R.plan_node(api, _node("True", "Inference", cordoned=True, ours=True), pods, R.Config(), now=100.0)
    assert acts.evict == [] and acts.cordon == []
    assert acts.waiting == ["ns/a: waiting for serving capacity", "ns/b: waiting for serving capacity"]


def test_inference_evicts_the_broken_replica_it_is_the_missing_capacity() -> None:
    # The replica on the bad GPU is the NotReady one: its workload is one short because of the candidate itself.
    # Before: readyReplicas 2 < replicas 3 held it forever.
    api = FakeApi(ready={"a-owner": (3, 2), "b-owner": (3, 2)})
    pods = [_ready(_pod("a"), True), _ready(_pod("b"), False)]
    acts = R.plan_node(api, _node("True", "Inference", cordoned=True, ours=True), pods, R.Config(), now=100.0)
    assert acts.evict == ["ns/b"]  # the broken replica first, and only one per pass
    assert acts.waiting == ["ns/a: waiting for serving capacity"]
    # A replica missing elsewhere is still missing capacity: a Ready candidate waits, a NotReady one still goes.
    api = FakeApi(ready={"a-owner": (3, 1), "b-owner": (3, 1)})
    acts = R.plan_node(api, _node("True", "Inference", cordoned=True, ours=True), pods, R.Config(), now=100.0)
    assert acts.evict == [] and len(acts.waiting) == 2
    acts = R.plan_node(api, _node("True", "Inference", cordoned=True, ours=True), [pods[1]], R.Config(), now=100.0)
    assert acts.evict == []  # 1 of 3 ready and this one broken: another replica is missing too, wait


def test_interactive_grace_period_then_drain_and_cordon_only() -> None:
    node = _node("True", "Interactive", cordoned=True, ours=True, since=1000)
    assert R.plan_node(FakeApi(), node, PODS, R.Config(interactive_grace_seconds=3600), now=1000 + 3599).evict == []
    assert R.plan_node(FakeApi(), node, PODS, R.Config(interactive_grace_seconds=3600), now=1000 + 3600).evict == [
        "ns/a",
        "ns/b",
    ]
    only = R.plan_node(FakeApi(), _node("True", "Training"), PODS, R.Config(remediation="CordonOnly"), now=0.0)
    assert only.cordon == ["n1"] and only.evict == []


def test_healthy_node_uncordoned_only_when_we_cordoned_it_and_unknown_is_left_alone() -> None:
    assert R.plan_node(
        FakeApi(), _node("False", "Training", cordoned=True, ours=True), [], R.Config(), 0.0
    ).uncordon == ["n1"]
    assert R.plan_node(FakeApi(), _node("False", "Training", cordoned=True), [], R.Config(), 0.0).uncordon == []
    unknown = R.plan_node(FakeApi(), _node("Unknown", "Training"), PODS, R.Config(), 0.0)
    assert (unknown.cordon, unknown.evict) == ([], [])


def test_a_node_unhealthy_then_unknown_stays_cordoned_and_keeps_draining() -> None:
    # A degrading GPU often stalls DCGM itself (NVIDIA/NVSentinel#1748): True then Unknown is no all-clear.
    # Before: the node was uncordoned UNKNOWN_RELEASE_SECONDS after the condition left True.
    cfg = R.Config(unknown_release_seconds=1800)
    node = _node("Unknown", "Training", cordoned=True, ours=True, since=1000)
    node["status"]["conditions"][0]["lastTransitionTime"] = "1970-01-01T00:20:00Z"  # 1200: left True then
    for now in (1000 + 1800, 10**9):
        acts = R.plan_node(FakeApi(), node, PODS, cfg, now=now)
        assert acts.uncordon == [] and acts.cordon == []
        assert acts.evict == ["ns/a", "ns/b"]  # the last verdict was unhealthy: the drain goes on
        assert acts.waiting == ["n1: DCGM verdict Unknown after unhealthy; kept cordoned until the check passes"]
    # Only a passing check gives the node back.
    node["status"]["conditions"][0]["status"] = "False"
    assert R.plan_node(FakeApi(), node, PODS, cfg, now=10**9).uncordon == ["n1"]
    # Unknown never cordons a node that was not unhealthy, and someone else's cordon is never touched.
    assert R.plan_node(FakeApi(), _node("Unknown", "Training"), PODS, cfg, now=10**9).cordon == []
    assert R.plan_node(FakeApi(), _node("Unknown", "Training", cordoned=True), PODS, cfg, now=10**9).uncordon == []


def test_a_node_we_cordoned_is_released_when_its_condition_is_gone() -> None:
    # No condition at all (Node Problem Detector removed, the node object re-created): nothing will report again.
    cfg = R.Config(unknown_release_seconds=1800)
    node = _node("Unknown", "Training", cordoned=True, ours=True, since=1000)
    node["status"]["conditions"] = []
    assert R.plan_node(FakeApi(), node, PODS, cfg, now=1000 + 1799).uncordon == []
    assert R.plan_node(FakeApi(), node, PODS, cfg, now=1000 + 1800).uncordon == ["n1"]


@pytest.mark.parametrize("remediation", ["CordonAndDrain", "CordonOnly"])
@pytest.mark.parametrize("wclass", ["Training", "Batch", "Inference", "Interactive"])
@pytest.mark.parametrize("after", ["False", "Unknown then False", "absent"])
def test_every_path_that_cordons_has_a_path_that_uncordons(remediation: str, wclass: str, after: str) -> None:
    cfg = R.Config(remediation=remediation, unknown_release_seconds=1800)
    api = FakeApi()
    acts = R.plan_node(api, _node("True", wclass), PODS, cfg, now=100.0)
    assert acts.cordon == ["n1"]
    R.apply(api, acts, 100.0, cfg)
    patched = api.calls[0][2]
    node = _node(
        "Unknown" if after != "False" else "False",
        wclass,
        cordoned=patched["spec"]["unschedulable"],
        ours=patched["metadata"]["annotations"][R.ANN_CORDONED] == R.ME,
        since=100,
    )
    if after == "absent":
        node["status"]["conditions"] = []
    if after == "Unknown then False":
        assert R.plan_node(api, node, [], cfg, now=100.0 + 10**6).uncordon == []
        node["status"]["conditions"][0]["status"] = "False"
    assert R.plan_node(api, node, [], cfg, now=100.0 + 1800).uncordon == ["n1"]


def test_the_remediator_gets_its_release_time_from_the_check_cadence() -> None:
    assert health.unknown_release_seconds(INSTALL) == max(
        1800, 2 * (3 * INSTALL.health.check_interval_seconds + health.DIAG_SECONDS[INSTALL.health.dcgm_diag_level])
    )


def test_apply_cordons_with_annotation_and_evicts_through_the_eviction_api() -> None:
    api = FakeApi()
    R.apply(api, R.Actions(cordon=["n1"], evict=["ns/a"]), 42.0, R.Config())
    assert api.calls[0] == (
        "PATCH",
        "/api/v1/nodes/n1",
        {"spec": {"unschedulable": True}, "metadata": {"annotations": {R.ANN_CORDONED: R.ME, R.ANN_CORDONED_AT: "42"}}},
    )
    assert api.calls[1][0:2] == ("POST", "/api/v1/namespaces/ns/pods/a/eviction")
    assert api.calls[1][2]["kind"] == "Eviction"


# --- the shell scripts ------------------------------------------------------------------------------------


def _run(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh" if script.endswith("check-dcgm-health.sh") else "bash", str(DATA / script)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("result", "planted", "age", "code"),
    [
        ("0 all good\n", False, 0, 0),
        ("1 dcgmi diag -r 1: | Memory | Fail |\n", False, 0, 1),
        ("2 cannot query DCGM\n", False, 0, 2),
        (None, False, 0, 2),
        ("0 old\n", False, 5000, 2),
        # A planted-fault file no longer bypasses DCGM's verdict: the gate injects its fault into DCGM itself.
        ("0 all good\n", True, 0, 0),
    ],
)
def test_npd_plugin_exit_codes(tmp_path: Path, result: str | None, planted: bool, age: int, code: int) -> None:
    if result is not None:
        (tmp_path / "result").write_text(result)
        t = time.time() - age
        os.utime(tmp_path / "result", (t, t))
    if planted:
        (tmp_path / "planted-fault").write_text("test\n")
    proc = _run("check-dcgm-health.sh", {"STATE_DIR": str(tmp_path), "MAX_RESULT_AGE_SECONDS": "900"})
    assert proc.returncode == code, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("health_out", "health_rc", "diag_out", "code"),
    [
        ("Overall Health: Healthy", 0, "| Deployment | Pass |", 0),
        ("Overall Health: Failure\n  GPU 0 ... Fail: XID 79", 0, "| Deployment | Pass |", 1),
        ("Overall Health: Healthy", 0, "| Memory             | Fail                  |", 1),
        ("Error: unable to connect to host engine", 255, "", 2),
        # MIG: the hierarchy lists GPU instances, so diag is skipped and the health watches decide (was: Unknown).
        ("Overall Health: Healthy", 0, "MIG", 0),
        ("Overall Health: Failure\n  GPU 0 ... Fail: XID 79", 0, "MIG", 1),
        # A diag that refuses because of MIG is a skip, not Unknown; one that fails to run otherwise stays Unknown.
        ("Overall Health: Healthy", 0, "Error: Running diagnostics on MIG-enabled GPUs is not supported", 0),
        ("Overall Health: Healthy", 0, "Error: the diagnostic plugin crashed", 2),
    ],
)
def test_dcgm_sidecar_maps_dcgmi_output(
    tmp_path: Path, health_out: str, health_rc: int, diag_out: str, code: int
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dcgmi"
    hierarchy = (
        "| -> I 0/1 | GPU Instance (EntityID: 0) |" if diag_out == "MIG" else "| GPU 0 | GPU GPU-0 (EntityID: 0) |"
    )
    diag_rc = 0 if "|" in diag_out else 1
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$1" in health) case "$*" in *-c*) printf "%s\\n" "{health_out}"; exit {health_rc};; esac; exit 0;; '
        f'discovery) printf "%s\\n" "{hierarchy}"; exit 0;; '
        f'diag) printf "%s\\n" "{diag_out}"; exit {diag_rc};; esac\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    state = tmp_path / "state"
    proc = _run(
        "dcgm-health-loop.sh", {"STATE_DIR": str(state), "ONCE": "true", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    )
    assert proc.returncode == 0, proc.stderr
    assert (state / "result").read_text().split(" ", 1)[0] == str(code)


def _planted_fault() -> Any:
    import importlib.util
    import sys

    sys.path.insert(0, str(DATA))
    try:
        spec = importlib.util.spec_from_file_location("gpufleet_planted_fault", DATA / "planted_fault.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules["gpufleet_planted_fault"] = mod
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(DATA))
    return mod


PF = _planted_fault()


class FaultyCluster:
    """A node with DCGM behind it: the injector (simulated) reports the fault while the inject flag exists; the
    condition follows DCGM's verdict, the remediator cordons and drains, the agent reports DCGMHealthCode80.
    `reboot_at`: the poll at which EKS reboots the node (a changed bootID)."""

    def __init__(self, fault_dir: Path, pods_left_after: int = 4, reboot_at: int | None = None) -> None:
        self.dir = fault_dir
        self.polls = 0
        self.pods_left_after = pods_left_after
        self.reboot_at = reboot_at
        self.seen_bad = False

    def injector(self, _: float = 0) -> None:
        """One pass of inject-dcgm-fault.sh, as the Job's `sleep` between polls."""
        if (self.dir / "inject").exists():
            (self.dir / "injected").touch()
        elif (self.dir / "injected").exists():
            (self.dir / "injected").unlink()
            (self.dir / "cleared").touch()

    def get(self, path: str) -> Any:
        self.polls += 1
        bad = (self.dir / "inject").exists()
        self.seen_bad |= bad
        if "/pods" in path:
            return {"items": [] if self.seen_bad and self.polls > self.pods_left_after else [_pod("job")]}
        boot = "b2" if self.reboot_at is not None and self.polls >= self.reboot_at else "b1"
        return {
            "metadata": {"uid": "u1"},
            "spec": {"unschedulable": bad},
            "status": {
                "nodeInfo": {"bootID": boot},
                "conditions": [
                    {"type": "DCGMUnhealthy", "status": "True" if bad else "False"},
                    {
                        "type": "AcceleratedHardwareReady",
                        "status": "False" if bad else "True",
                        "reason": "DCGMHealthCode80" if bad else "NvidiaAcceleratedHardwareIsReady",
                    },
                ],
            },
        }


def _clock() -> Any:
    ticks = iter(range(10**6))
    return lambda: next(ticks)


def test_planted_fault_goes_through_dcgm_and_sees_every_step(tmp_path: Path) -> None:
    cluster = FaultyCluster(tmp_path)
    kw = {"poll": 0, "sleep": cluster.injector, "clock": _clock()}
    assert PF.verify(cluster, "n1", str(tmp_path), "CordonAndDrain", "Training", timeout=50, repair_hold=20, **kw)
    assert not (tmp_path / "inject").exists() and (tmp_path / "cleared").exists() and (tmp_path / "done").exists()


def test_planted_fault_fails_when_eks_repairs_the_node_it_should_leave_alone(tmp_path: Path) -> None:
    # A reboot during the hold: EKS did not stand back (a missing or wrong override).
    cluster = FaultyCluster(tmp_path, reboot_at=25)
    kw = {"poll": 0, "sleep": cluster.injector, "clock": _clock()}
    assert not PF.verify(cluster, "n1", str(tmp_path), "CordonAndDrain", "Training", timeout=50, repair_hold=100, **kw)
    assert not (tmp_path / "inject").exists()  # the injection always stops


def test_planted_fault_on_an_interactive_node_expects_its_pods_kept(tmp_path: Path) -> None:
    kept = FaultyCluster(tmp_path / "kept", pods_left_after=10**6)
    (tmp_path / "kept").mkdir()
    kw = {"poll": 0, "sleep": kept.injector, "clock": _clock()}
    assert PF.verify(kept, "n1", str(tmp_path / "kept"), "CordonAndDrain", "Interactive", timeout=50, **kw)
    evicted = FaultyCluster(tmp_path / "evicted", pods_left_after=0)  # evicted at once: the grace was ignored
    (tmp_path / "evicted").mkdir()
    kw = {"poll": 0, "sleep": evicted.injector, "clock": _clock()}
    assert not PF.verify(evicted, "n1", str(tmp_path / "evicted"), "CordonAndDrain", "Interactive", timeout=50, **kw)


def test_planted_fault_fails_when_dcgm_never_takes_the_injection(tmp_path: Path) -> None:
    class NoEngine:
        def get(self, path: str) -> Any:
            if "/pods" in path:
                return {"items": []}
            return {"spec": {}, "status": {"conditions": [{"type": "DCGMUnhealthy", "status": "False"}]}}

    kw = {"poll": 0, "sleep": lambda s: None, "clock": _clock()}
    assert not PF.verify(NoEngine(), "n1", str(tmp_path), "CordonAndDrain", "Training", timeout=3, **kw)
    assert not (tmp_path / "inject").exists() and (tmp_path / "done").exists()


@pytest.mark.parametrize(("flag", "value"), [("inject", "1"), (None, None)])
def test_the_injector_asks_dcgm_for_a_row_remap_failure(tmp_path: Path, flag: str | None, value: str | None) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    fake = bin_dir / "dcgmi"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    fault = tmp_path / "fault"
    fault.mkdir()
    if flag:
        (fault / flag).touch()
    env = {
        "FAULT_DIR": str(fault),
        "ONCE": "true",
        "DCGM_HOST": "engine:5555",
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    proc = _run("inject-dcgm-fault.sh", env)
    assert proc.returncode == 0, proc.stderr
    if value is None:
        assert not calls.exists()  # no flag, nothing injected before: DCGM is left alone
    else:
        assert calls.read_text() == f"test --host engine:5555 --inject --gpuid 0 -f 395 -v {value}\n"
        assert (fault / "injected").exists()


def _stage_objects(fleet: Fleet, stage: str) -> list[dict[str, Any]]:
    from gpufleet.plan.rollout import build_plan

    plan = build_plan(fleet, "prod")
    content = next(s for s in plan.stages if s.name == stage).content
    return [r.args["object"] for r in content.resources if "object" in r.args]


def test_the_straggler_metric_is_scraped_from_training_pods_in_team_namespaces() -> None:
    # Before: the rules read gpufleet_training_step_seconds, but nothing rendered a scrape for it.
    monitors = [o for o in _stage_objects(INSTALL, "health") if o["kind"] == "PodMonitor"]
    assert len(monitors) == 1
    spec = monitors[0]["spec"]
    assert monitors[0]["metadata"]["namespace"] == "monitoring"
    assert monitors[0]["metadata"]["labels"]["gpufleet.io/monitoring"] == "true"
    assert spec["selector"] == {"matchLabels": {"gpufleet.io/training-metrics": "true"}}
    assert spec["namespaceSelector"] == {"matchNames": sorted(t.namespace for t in INSTALL.teams)}
    # honorLabels false keeps the target's namespace, which the rules group by with the job's training_job.
    assert spec["podMetricsEndpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": False}
    ]
    no_teams = replace(INSTALL, teams=())
    (bare,) = [o for o in _stage_objects(no_teams, "health") if o["kind"] == "PodMonitor"]
    assert bare["spec"]["namespaceSelector"] == {"any": True}


def _with_hardware(node: dict[str, Any], reason: str) -> dict[str, Any]:
    node["status"]["conditions"].append({"type": "AcceleratedHardwareReady", "status": "False", "reason": reason})
    return node


def test_the_remediator_yields_its_pacing_to_eks_on_faults_eks_repairs() -> None:
    # One owner per fault class: on a fault EKS reboots or replaces the node for (the GPU is gone), the Interactive
    # grace and the one-replica-at-a-time serving drain would only be cut short by the repair: evict now.
    cfg = R.Config(eks_repaired_reasons=frozenset({"NvidiaXID79Error", "DCGMHealthCode120"}))
    for wclass in ("Interactive", "Inference"):
        node = _with_hardware(_node("True", wclass, cordoned=True, ours=True, since=100), "NvidiaXID79Error")
        api = FakeApi(ready={"a-owner": (3, 1), "b-owner": (3, 1)})  # serving capacity short elsewhere
        acts = R.plan_node(api, node, PODS, cfg, now=200.0)
        assert acts.evict == ["ns/a", "ns/b"], wclass
        assert acts.waiting == ["n1: EKS node auto repair owns NvidiaXID79Error: GPU pods evicted before its repair"]
    # A fault the remediator owns (DCGMHealthCode80 is NoAction for EKS) keeps the class's pacing.
    node = _with_hardware(_node("True", "Interactive", cordoned=True, ours=True, since=100), "DCGMHealthCode80")
    assert R.plan_node(FakeApi(), node, PODS, cfg, now=200.0).evict == []
    # Without auto repair (no reasons passed) nothing is EKS's.
    node = _with_hardware(_node("True", "Interactive", cordoned=True, ours=True, since=100), "NvidiaXID79Error")
    assert R.plan_node(FakeApi(), node, PODS, R.Config(), now=200.0).evict == []


def test_the_remediator_is_told_which_reasons_eks_repairs() -> None:
    def env(fleet: Fleet) -> dict[str, str]:
        container = health.remediator_objects(fleet)[-1]["spec"]["template"]["spec"]["containers"][0]
        return {e["name"]: e["value"] for e in container["env"]}

    reasons = set(env(INSTALL)["EKS_REPAIRED_REASONS"].split(","))
    assert {"NvidiaXID79Error", "NvidiaDoubleBitError", "DCGMHealthCode120", "DCGMHealthCode4"} <= reasons
    assert not {"DCGMHealthCode80", "DCGMError", "DCGMHealthCode101"} & reasons  # NoAction: the remediator's
    off = replace(INSTALL, health=replace(INSTALL.health, auto_repair="Disabled"))
    assert env(off)["EKS_REPAIRED_REASONS"] == ""


def test_on_a_karpenter_pool_the_gate_holds_within_karpenters_toleration() -> None:
    """Issue 41 item 5: on a Karpenter pool Karpenter's node repair owns AcceleratedHardwareReady (10 minutes from the
    condition's transition, then the NodeClaim is deleted; cloudprovider.go RepairPolicies @ v1.14.1): the gate holds
    5 minutes counted from that transition (REPAIR_OWNER Karpenter), not EKS's repair wait and five more counted
    from when it sees the condition, which outlasted the toleration and lost the node mid-gate."""
    karpenter = replace(
        INSTALL,
        node_groups=tuple(
            replace(g, provisioner="Karpenter") if g.name == health.gate_group(INSTALL).name else g
            for g in INSTALL.node_groups
        ),
    )
    group = health.gate_group(karpenter)
    assert (health.repair_owner(karpenter, group), health.repair_hold_seconds(karpenter, group)) == ("Karpenter", 300)
    env = {
        e["name"]: e.get("value")
        for e in health.planted_fault_objects(karpenter)[-1]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert (env["REPAIR_OWNER"], env["REPAIR_HOLD_SECONDS"]) == ("Karpenter", "300")
    managed = {
        e["name"]: e.get("value")
        for e in health.planted_fault_objects(INSTALL)[-1]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert (managed["REPAIR_OWNER"], managed["REPAIR_HOLD_SECONDS"]) == ("EKS", str(5 * 60 + 300))


class KarpenterCluster(FaultyCluster):
    """The agent's condition turns False at one tick (its lastTransitionTime); Karpenter replaces the node (a new
    uid) once it has been False for its 10-minute toleration. One tick is one second."""

    T0 = 1_800_000_000.0

    def __init__(self, fault_dir: Path) -> None:
        super().__init__(fault_dir)
        self.tick = 0
        self.transition: float | None = None

    def clock(self) -> float:
        self.tick += 1
        return float(self.tick)

    def wall(self) -> float:
        return self.T0 + self.tick

    def get(self, path: str) -> Any:
        out = super().get(path)
        if "/pods" in path:
            return out
        bad = (self.dir / "inject").exists()
        if bad and self.transition is None:
            self.transition = self.wall()
        if not bad:
            self.transition = None
        cond = out["status"]["conditions"][1]
        if self.transition is not None:
            stamp = datetime.datetime.fromtimestamp(self.transition, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            cond["lastTransitionTime"] = stamp
            if self.wall() - self.transition >= health.KARPENTER_REPAIR_TOLERATION_SECONDS:
                out["metadata"]["uid"] = "u2"  # the NodeClaim deleted, a new node
        return out


def test_planted_fault_on_a_karpenter_pool_counts_the_hold_from_the_transition(tmp_path: Path) -> None:
    """The drain took 400 s after the condition turned False: counted from when the Job sees it, EKS's hold (600 s)
    runs past Karpenter's toleration and the node is replaced mid-gate; counted from the transition (owner
    Karpenter), 300 s end before it, and the gate passes."""
    slow = KarpenterCluster(tmp_path / "eks")
    (tmp_path / "eks").mkdir()
    slow.pods_left_after = 400
    kw = {"poll": 0, "sleep": slow.injector, "clock": slow.clock, "wall": slow.wall}
    assert not PF.verify(
        slow, "n1", str(tmp_path / "eks"), "CordonAndDrain", "Training", timeout=10**4, repair_hold=600, **kw
    )
    ok = KarpenterCluster(tmp_path / "karpenter")
    (tmp_path / "karpenter").mkdir()
    ok.pods_left_after = 400
    kw = {"poll": 0, "sleep": ok.injector, "clock": ok.clock, "wall": ok.wall}
    assert PF.verify(
        ok,
        "n1",
        str(tmp_path / "karpenter"),
        "CordonAndDrain",
        "Training",
        timeout=10**4,
        repair_hold=300,
        repair_owner="Karpenter",
        **kw,
    )
