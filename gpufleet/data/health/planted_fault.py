"""gpufleet planted-fault verification (the health stage's gate), run as a Job on one GPU node.

It plants a fault that makes the node's DCGM health check fail, then checks the loop end to end:
the DCGMUnhealthy condition is set, the node is cordoned, its GPU pods are drained (Training/Batch nodes with
CordonAndDrain), and after the fault is removed the condition clears and the node is uncordoned. Exit 0 when
every expected step is seen in time, 1 otherwise (the fault is always removed)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remediator import Api, condition_status, evictable  # noqa: E402


def wait(what: str, test: Callable[[], bool], timeout: float, poll: float, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> bool:
    deadline = clock() + timeout
    while True:
        if test():
            print(json.dumps({"step": what, "ok": True}), flush=True)
            return True
        if clock() >= deadline:
            print(json.dumps({"step": what, "ok": False, "timeoutSeconds": timeout}), flush=True)
            return False
        sleep(poll)


def verify(api: Api, node: str, fault_file: str, remediation: str, workload_class: str, timeout: float, poll: float = 10.0, **kw: Any) -> bool:
    def get() -> dict[str, Any]:
        obj: dict[str, Any] = api.get(f"/api/v1/nodes/{node}")
        return obj

    def gpu_pods() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = api.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]
        return [p for p in items if evictable(p)]

    with open(fault_file, "w", encoding="utf-8") as f:
        f.write(f"gpufleet planted-fault verification on {node}\n")
    ok = True
    try:
        ok = wait("condition DCGMUnhealthy=True", lambda: condition_status(get()) == "True", timeout, poll, **kw)
        if ok and remediation != "None":
            ok = wait("node cordoned", lambda: bool(get().get("spec", {}).get("unschedulable")), timeout, poll, **kw)
        if ok and remediation == "CordonAndDrain" and workload_class in ("Training", "Batch"):
            ok = wait("GPU pods drained", lambda: not gpu_pods(), timeout, poll, **kw)
    finally:
        os.remove(fault_file)
    if ok:
        ok = wait("condition DCGMUnhealthy=False", lambda: condition_status(get()) == "False", timeout, poll, **kw)
    if ok and remediation != "None":
        ok = wait("node uncordoned", lambda: not get().get("spec", {}).get("unschedulable"), timeout, poll, **kw)
    return ok


def main() -> None:  # pragma: no cover - runs in the cluster
    from kube import Kube

    ok = verify(
        Kube(),
        node=os.environ["NODE_NAME"],
        fault_file=os.path.join(os.environ.get("STATE_DIR", "/var/run/gpufleet-health"), "planted-fault"),
        remediation=os.environ.get("REMEDIATION", "CordonAndDrain"),
        workload_class=os.environ.get("WORKLOAD_CLASS", "Training"),
        timeout=float(os.environ.get("STEP_TIMEOUT_SECONDS", "600")),
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
