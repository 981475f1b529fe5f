"""The job APIs the workload layer installs, as `explain` sees them (issue 28 item 3): served exactly when the plan
installs their chart, at the versions the pinned CRDs serve, and a kind turned off stops at stage api with the spec
field that installs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.simulate import api_server
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload
from tests import fastyaml
from tests.upstream import require_shared

MakeModel = Callable[..., FleetModel]
CRDS = {
    "jobset": ("jobset.x-k8s.io_jobsets.yaml",),
    "kubeflow-trainer": (
        "trainer.kubeflow.org_trainjobs.yaml",
        "trainer.kubeflow.org_trainingruntimes.yaml",
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
    ),
    "lws": ("leaderworkerset.x-k8s.io_leaderworkersets.yaml",),
}


@pytest.mark.parametrize("chart", sorted(CRDS))
def test_chart_kinds_are_what_the_pinned_crds_serve(chart: str) -> None:
    served = {}
    for name in CRDS[chart]:
        crd = fastyaml.load((require_shared() / "crds" / name).read_text())
        group = crd["spec"]["group"]
        served[crd["spec"]["names"]["kind"]] = tuple(
            f"{group}/{v['name']}" for v in crd["spec"]["versions"] if v["served"]
        )
    assert dict(api_server.CHART_KINDS[chart]) == served


def _off(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["workloads"] = {**d.get("workloads", {}), key: "None"}
        if key == "jobSet":
            d["workloads"]["trainer"] = "None"

    return edit


@pytest.mark.parametrize(
    ("off", "kind", "api", "spec", "field"),
    [
        (
            "trainer",
            "TrainJob",
            "trainer.kubeflow.org/v1alpha1",
            {"runtimeRef": {"name": "torch-distributed"}},
            "workloads.trainer",
        ),
        (
            "jobSet",
            "JobSet",
            "jobset.x-k8s.io/v1alpha2",
            {
                "replicatedJobs": [
                    {"name": "w", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}
                ]
            },
            "workloads.jobSet",
        ),
        (
            "leaderWorkerSet",
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io/v1",
            {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "c"}]}}}},
            "workloads.leaderWorkerSet",
        ),
    ],
)
def test_a_job_api_turned_off_stops_at_api_naming_its_field(
    make_model: MakeModel, off: str, kind: str, api: str, spec: dict[str, Any], field: str
) -> None:
    served = make_model().served
    assert kind in served
    model = make_model(_off(off))
    assert kind not in model.served
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "w", "namespace": "vision"}, "spec": spec}
    verdict = explain(model, workload(obj))
    assert not verdict.runs and verdict.reasons[0].stage == "api"
    assert verdict.reasons[0].message == (
        f'no matches for kind "{kind}" in version "{api}": the fleet installs no {kind} API (kubectl apply fails'
        " before Kueue sees it)"
    )
    assert verdict.reasons[0].fix == f"install it with {field} in the fleet spec"
