"""gpufleet planted-fault verification (the health stage's gate), run as a Job on one GPU node.

The fault goes into DCGM, not around it: the Job's injector sidecar (inject-dcgm-fault.sh, the operator's DCGM
image) keeps a row-remap failure in the node's host engine cache while $FAULT_DIR/inject exists, so DCGM's own
health watch FAILs and the verdict travels the path of a real fault: the dcgm-health sidecar's `dcgmi health -c`,
Node Problem Detector's DCGMUnhealthy condition, the remediation controller. The Job checks each step in turn:

- DCGM took the injection, the condition turns True, the node is cordoned;
- per workload class with CordonAndDrain: Training/Batch GPU pods are drained; an Interactive node's GPU pods stay
  (the grace period);
- with EKS node auto repair (REPAIR_HOLD_SECONDS > 0): the node monitoring agent reports AcceleratedHardwareReady
  False with DCGMHealthCode80, and for the group's repair wait and five minutes more EKS stands back (the same node
  object, the same boot: no reboot, no replacement), as the remediator-owned override says;
- on a Karpenter pool (REPAIR_OWNER Karpenter), whose node repair replaces the node 10 minutes after the condition's
  lastTransitionTime whatever the reason: the hold is counted from that transition, not from when the Job sees it,
  and ends before Karpenter's toleration does, so Karpenter's repair stands back for as long as it should and the
  node is not lost mid-gate;
- after the injection stops, the condition returns to False and the node is uncordoned.

Exit 0 when every step is seen in time, 1 otherwise; the injection always stops."""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remediator import Api, condition_status, evictable  # noqa: E402

HARDWARE_CONDITION = "AcceleratedHardwareReady"
# DCGM_FR_ROW_REMAP_FAILURE (NVIDIA/DCGM dcgmlib/dcgm_errors.h), as the agent names a health incident.
INJECTED_REASON = "DCGMHealthCode80"


def wait(
    what: str,
    test: Callable[[], bool],
    timeout: float,
    poll: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    deadline = clock() + timeout
    while True:
        if test():
            print(json.dumps({"step": what, "ok": True}), flush=True)
            return True
        if clock() >= deadline:
            print(json.dumps({"step": what, "ok": False, "timeoutSeconds": timeout}), flush=True)
            return False
        sleep(poll)


def hold(
    what: str,
    test: Callable[[], bool],
    duration: float,
    poll: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """`test` stays true for `duration` seconds."""
    end = clock() + duration
    while True:
        if not test():
            print(json.dumps({"step": what, "ok": False}), flush=True)
            return False
        if clock() >= end:
            print(json.dumps({"step": what, "ok": True, "heldSeconds": duration}), flush=True)
            return True
        sleep(poll)


def _condition(node: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in node.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def _since(condition: dict[str, Any]) -> float:
    """A condition's lastTransitionTime (RFC 3339, UTC) as a Unix time; now where it has none."""
    stamp = str(condition.get("lastTransitionTime") or "")
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


def verify(
    api: Api,
    node: str,
    fault_dir: str,
    remediation: str,
    workload_class: str,
    timeout: float,
    poll: float = 10.0,
    repair_hold: float = 0.0,
    repair_owner: str = "EKS",
    wall: Callable[[], float] = time.time,
    **kw: Any,
) -> bool:
    def get() -> dict[str, Any]:
        try:
            obj: dict[str, Any] = api.get(f"/api/v1/nodes/{node}")
        except Exception:  # gone (replaced) or unreachable: no step holds
            return {}
        return obj

    def gpu_pods() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = api.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]
        return [p for p in items if evictable(p)]

    def flag(name: str) -> str:
        return os.path.join(fault_dir, name)

    start = get()
    identity = (start.get("metadata", {}).get("uid"), start.get("status", {}).get("nodeInfo", {}).get("bootID"))

    def same_node() -> bool:
        now = get()
        return (now.get("metadata", {}).get("uid"), now.get("status", {}).get("nodeInfo", {}).get("bootID")) == identity

    held_pods = [p["metadata"]["name"] for p in gpu_pods()] if workload_class == "Interactive" else []
    with open(flag("inject"), "w", encoding="utf-8") as f:
        f.write(f"gpufleet planted-fault verification on {node}\n")
    ok = True
    try:
        ok = wait("DCGM host engine took the injected fault", lambda: os.path.exists(flag("injected")), timeout, poll, **kw)
        ok = ok and wait(
            "condition DCGMUnhealthy=True (DCGM's health watch)",
            lambda: condition_status(get()) == "True",
            timeout,
            poll,
            **kw,
        )
        if ok and remediation != "None":
            ok = wait("node cordoned", lambda: bool(get().get("spec", {}).get("unschedulable")), timeout, poll, **kw)
        if ok and remediation == "CordonAndDrain" and workload_class in ("Training", "Batch"):
            ok = wait("GPU pods drained", lambda: not gpu_pods(), timeout, poll, **kw)
        if ok and remediation == "CordonAndDrain" and held_pods:
            left = {p["metadata"]["name"] for p in gpu_pods()}
            ok = set(held_pods) <= left
            print(json.dumps({"step": "interactive GPU pods kept in the grace period", "ok": ok}), flush=True)
        if ok and repair_hold > 0:
            ok = wait(
                f"{HARDWARE_CONDITION}=False reason {INJECTED_REASON} (node monitoring agent)",
                lambda: _condition(get(), HARDWARE_CONDITION).get("reason") == INJECTED_REASON
                and _condition(get(), HARDWARE_CONDITION).get("status") == "False",
                timeout,
                poll,
                **kw,
            )
            duration = repair_hold
            owner = "EKS node auto repair"
            if repair_owner == "Karpenter":
                # Karpenter counts its toleration from the condition's transition (health controller
                # findUnhealthyConditions): so does the hold, whatever the earlier steps took.
                owner = "Karpenter node repair"
                duration = max(0.0, repair_hold - (wall() - _since(_condition(get(), HARDWARE_CONDITION))))
            ok = ok and hold(f"{owner} stands back (same node, same boot)", same_node, duration, poll, **kw)
    finally:
        os.remove(flag("inject"))
    if ok:
        ok = wait("DCGM host engine cleared the fault", lambda: os.path.exists(flag("cleared")), timeout, poll, **kw)
    if ok:
        ok = wait("condition DCGMUnhealthy=False", lambda: condition_status(get()) == "False", timeout, poll, **kw)
    if ok and remediation != "None":
        ok = wait("node uncordoned", lambda: not get().get("spec", {}).get("unschedulable"), timeout, poll, **kw)
    with open(flag("done"), "w", encoding="utf-8") as f:
        f.write("done\n")
    return ok


def main() -> None:  # pragma: no cover - runs in the cluster
    from kube import Kube

    ok = verify(
        Kube(),
        node=os.environ["NODE_NAME"],
        fault_dir=os.environ.get("FAULT_DIR", "/fault"),
        remediation=os.environ.get("REMEDIATION", "CordonAndDrain"),
        workload_class=os.environ.get("WORKLOAD_CLASS", "Training"),
        timeout=float(os.environ.get("STEP_TIMEOUT_SECONDS", "600")),
        repair_hold=float(os.environ.get("REPAIR_HOLD_SECONDS", "0")),
        repair_owner=os.environ.get("REPAIR_OWNER", "EKS"),
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
