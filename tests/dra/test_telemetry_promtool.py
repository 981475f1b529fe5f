"""GPU-hours by team on a DRA group (issue 43 item 6), under the real promtool, on the golden case dra-mixed (prod),
with series shaped as the pinned exporters emit them on DRA nodes:

- kube-state-metrics 2.20.0: a DRA node advertises no `nvidia_com_gpu` (only cpu, memory, pods ...) and carries
  `label_gpufleet_io_device_manager="DRA"` (the allowlist gpufleet sets); a pod's GPUs appear nowhere in
  `kube_pod_container_resource_requests`, only as `kube_pod_resourceclaim_info` per `spec.resourceClaims` entry
  (internal/store/pod.go @ v2.20.0), its node in `kube_pod_info`.
- dcgm-exporter: with KUBERNETES_ENABLE_DRA a claimed GPU's series carries the pod (`exported_*` once scraped) and
  the claim's `dra_*` labels (internal/pkg/transformation/kubernetes.go, Process, @ 4.5.3-4.8.2); without it the
  series has no pod at all.

Two DRA nodes of h100-dra (p5.48xlarge, 8 GPUs, $6.88 a GPU-hour): on d1 `llm`'s training pod holds the node's 8
GPUs (one claim from `h100-dra-gpu-8`) for the first 30 minutes; on d2 a pod holds 2 GPUs (`h100-dra-gpu-2`,
idle), an aligned pod 2 (two claims from `h100-dra-gpu-efa`, busy), the whole run. A pod naming a claim of no
template of gpufleet's (a shared ResourceClaim, which Kueue refuses) is not counted. One device-plugin node of h200
has lost its GPUs: GPUNodeZeroAllocatable fires there and never on a DRA node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.promtool import CASES, run_rule_tests, series, stage_rule_groups
from tests.series import KSM, dcgm, ksm_node

SPEC = CASES / "dra-mixed" / "fleet.yaml"
MINUTES = 150
WHOLE = f"x{MINUTES}"
DRA_GPU = "gpu_nvidia_com_deviceclass_resource_k8s_io_devices"


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    return stage_rule_groups(SPEC, "prod", "telemetry") + stage_rule_groups(SPEC, "prod", "cost")


def dra_node(name: str, values: str) -> list[dict[str, str]]:
    """A Ready DRA node of h100-dra as kube-state-metrics sees it: no GPU resource among its allocatable."""
    labels = {"label_gpufleet_io_node_group": "h100-dra", "label_gpufleet_io_device_manager": "DRA"}
    return [
        series("kube_node_labels", {**KSM, "node": name, **labels}, f"1{values}"),
        series(
            "kube_node_status_condition", {**KSM, "node": name, "condition": "Ready", "status": "true"}, f"1{values}"
        ),
        series("kube_node_spec_unschedulable", {**KSM, "node": name}, f"0{values}"),
        series(
            "kube_node_status_allocatable", {**KSM, "node": name, "resource": "cpu", "unit": "core"}, f"191{values}"
        ),
        series(
            "kube_node_spec_taint",
            {**KSM, "node": name, "key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            f"1{values}",
        ),
    ]


def claiming_pod(
    namespace: str, pod: str, node: str, claims: list[tuple[str, str]], values: str
) -> list[dict[str, str]]:
    """A Running pod with one `kube_pod_resourceclaim_info` per (pod-local name, template) it names; template ""
    is a claim named directly (resourceClaimName)."""
    ids = {**KSM, "namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
    out = [
        series(
            "kube_pod_info",
            {
                **ids,
                "node": node,
                "host_ip": "10.0.2.7",
                "pod_ip": "10.0.2.40",
                "created_by_kind": "Job",
                "created_by_name": pod.rsplit("-", 1)[0],
                "priority_class": "",
                "host_network": "false",
            },
            values,
        ),
        series("kube_pod_status_phase", {**ids, "phase": "Running"}, values),
        # Requests of other resources only: the GPUs are claimed.
        series(
            "kube_pod_container_resource_requests",
            {**ids, "container": "main", "node": node, "resource": "cpu", "unit": "core"},
            values.replace("1", "12"),
        ),
    ]
    for claim, template in claims:
        out.append(
            series(
                "kube_pod_resourceclaim_info",
                {
                    **ids,
                    "claim_name": claim,
                    "resourceclaim_name": f"{pod}-{claim}-x7k2p" if template else "shared",
                    "resourceclaim_template_name": template,
                },
                values,
            )
        )
    return out


def dra_dcgm(node: str, gpu: int, values: str, pod: tuple[str, str] | None, claim: str = "") -> dict[str, str]:
    """dcgm-exporter's SM activity of one GPU of a DRA node; `pod` when KUBERNETES_ENABLE_DRA mapped it."""
    out = dcgm("DCGM_FI_PROF_SM_ACTIVE", node, gpu, values, pod=pod)
    if pod:
        out["series"] = out["series"][:-1] + (
            f',dra_claim_name="{claim}",dra_claim_namespace="{pod[0]}",dra_driver_name="gpu.nvidia.com",'
            f'dra_pool_name="{node}",dra_device_name="gpu-{gpu}"}}'
        )
    return out


TRAIN = "1x29 stale"  # minutes 0..29
ALL = f"1{WHOLE}"


def _inputs(*, exporter_dra: bool) -> list[dict[str, str]]:
    inputs = dra_node("d1", WHOLE) + dra_node("d2", WHOLE)
    inputs += claiming_pod("llm", "train-0", "d1", [("gpus", "h100-dra-gpu-8")], TRAIN)
    inputs += claiming_pod("llm", "nb-0", "d2", [("gpus", "h100-dra-gpu-2")], ALL)
    inputs += claiming_pod(
        "llm", "ring-0", "d2", [("gpu-efa-0", "h100-dra-gpu-efa"), ("gpu-efa-1", "h100-dra-gpu-efa")], ALL
    )
    inputs += claiming_pod("llm", "stray-0", "d2", [("gpus", "")], ALL)
    # h200: a device-plugin node that lost its GPUs.
    inputs += ksm_node("h1", "h200", 0, WHOLE)
    inputs.append(
        series(
            "kube_node_spec_taint",
            {**KSM, "node": "h1", "key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            f"1{WHOLE}",
        )
    )

    def mapped(pod: str) -> tuple[str, str] | None:
        return ("llm", pod) if exporter_dra else None

    if exporter_dra:
        # While train-0 holds d1's GPUs their series name it; once it ends the exporter drops the pod's labels.
        inputs += [dra_dcgm("d1", g, "0.9x29 stale", mapped("train-0"), "train-0-gpus-x7k2p") for g in range(8)]
        inputs += [dra_dcgm("d1", g, f"_x29 0x{MINUTES - 30}", None) for g in range(8)]
    else:
        inputs += [dra_dcgm("d1", g, f"0.9x29 0x{MINUTES - 30}", None) for g in range(8)]
    inputs += [dra_dcgm("d2", g, f"0{WHOLE}", mapped("nb-0"), "nb-0-gpus-x7k2p") for g in (0, 1)]
    inputs += [dra_dcgm("d2", g, f"0.8{WHOLE}", mapped("ring-0"), f"ring-0-gpu-efa-{g - 2}-x7k2p") for g in (2, 3)]
    inputs += [dra_dcgm("d2", g, f"0{WHOLE}", None) for g in range(4, 8)]
    return inputs


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _expect(expr: str, at: str, samples: list[tuple[dict[str, str], float]]) -> dict[str, Any]:
    return {
        "expr": expr,
        "eval_time": at,
        "exp_samples": [{"labels": expr + _labels(labels), "value": value} for labels, value in samples],
    }


ALLOCATION = [
    _expect(
        "gpufleet:dra_template_gpus",
        "10m",
        [
            (
                {
                    "namespace": "gpufleet-network",
                    "resourceclaim_template_name": "nccl-gate-h100-dra",
                    "node_group": "h100-dra",
                },
                1,
            ),
            *[
                ({"namespace": "llm", "resourceclaim_template_name": f"h100-dra-gpu-{n}", "node_group": "h100-dra"}, n)
                for n in (1, 2, 4, 8)
            ],
            ({"namespace": "llm", "resourceclaim_template_name": "h100-dra-gpu-efa", "node_group": "h100-dra"}, 1),
        ],
    ),
    _expect(
        "gpufleet:node_gpus_allocatable:sum",
        "10m",
        [
            ({"node": "d1", "node_group": "h100-dra"}, 8),
            ({"node": "d2", "node_group": "h100-dra"}, 8),
            ({"node": "h1", "node_group": "h200"}, 0),
        ],
    ),
    _expect(
        "gpufleet:pod_gpus_requested:sum",
        "10m",
        [
            ({"namespace": "llm", "pod": "train-0", "node": "d1", "resource": DRA_GPU}, 8),
            ({"namespace": "llm", "pod": "nb-0", "node": "d2", "resource": DRA_GPU}, 2),
            ({"namespace": "llm", "pod": "ring-0", "node": "d2", "resource": DRA_GPU}, 2),
        ],
    ),
    _expect(
        "namespace_node_group:gpufleet_gpus_allocated:sum",
        "10m",
        [({"namespace": "llm", "node_group": "h100-dra"}, 12)],
    ),
    _expect(
        "namespace_node_group:gpufleet_gpus_allocated:sum", "60m", [({"namespace": "llm", "node_group": "h100-dra"}, 4)]
    ),
    _expect("node_group:gpufleet_gpus_free:sum", "10m", [({"node_group": "h100-dra"}, 4), ({"node_group": "h200"}, 0)]),
    _expect(
        "node_group:gpufleet_largest_free_block:max",
        "60m",
        [({"node_group": "h100-dra"}, 8), ({"node_group": "h200"}, 0)],
    ),
    # The last hour (minutes 90..149): nb-0's 2 GPUs and ring-0's 2, at $6.88.
    _expect("team:gpufleet_gpu_hours_allocated:1h", "149m", [({"team": "llm"}, 4)]),
    _expect("team:gpufleet_gpu_cost_allocated_usd:1h", "149m", [({"team": "llm"}, 27.52)]),
]


def _zero_allocatable() -> dict[str, Any]:
    return {
        "eval_time": "30m",
        "alertname": "GPUNodeZeroAllocatable",
        "exp_alerts": [
            {
                "exp_labels": {"alertname": "GPUNodeZeroAllocatable", "severity": "critical", "node": "h1"},
                "exp_annotations": {
                    "summary": "Ready GPU node h1 advertises no allocatable GPUs",
                    "description": (
                        "The node is Ready but the NVIDIA device plugin has not registered (or lost) its GPUs, so GPU"
                        " pods cannot land there. Check the nvidia-device-plugin and driver validator pods on the node."
                    ),
                },
            }
        ],
    }


def test_dra_allocation_and_idle_with_the_exporters_dra_mapping(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    idle = [
        _expect("namespace:gpufleet_gpus_idle:sum", "60m", [({"namespace": "llm"}, 2)]),
        _expect("team:gpufleet_gpu_hours_idle:1h", "149m", [({"team": "llm"}, 2)]),
    ]
    run_rule_tests(
        tmp_path,
        groups,
        [
            {
                "interval": "1m",
                "input_series": _inputs(exporter_dra=True),
                "promql_expr_test": ALLOCATION + idle,
                "alert_rule_test": [_zero_allocatable()],
            }
        ],
    )


def test_dra_allocation_without_the_exporters_dra_mapping_counts_no_idle(
    tmp_path: Path, groups: list[dict[str, Any]]
) -> None:
    # The allocation comes from kube-state-metrics alone; no series names a pod, so no GPU is idle "for" a team.
    idle = [
        _expect("namespace:gpufleet_gpus_idle:sum", "60m", []),
        _expect("team:gpufleet_gpu_hours_idle:1h", "149m", []),
    ]
    run_rule_tests(
        tmp_path,
        groups,
        [
            {
                "interval": "1m",
                "input_series": _inputs(exporter_dra=False),
                "promql_expr_test": ALLOCATION + idle,
                "alert_rule_test": [_zero_allocatable()],
            }
        ],
    )
