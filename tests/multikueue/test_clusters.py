"""clusters[] (issue 44): the spec of a MultiKueue manager and its workers, each bad input with its exact positioned
message, the projection onto one fleet per cluster, the role seam, and the manager's objects in the golden trees."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet import cli
from gpufleet.base.errors import SpecError, format_path
from gpufleet.plan import fleet_summary
from gpufleet.plan.builders import cluster_roles
from gpufleet.rules.pipeline import load_fleet, load_fleet_text
from gpufleet.spec import clusters
from gpufleet.spec.schema import fleet_schema

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "golden" / "cases" / "multikueue" / "fleet.yaml"
TREES = ROOT / "tests" / "golden" / "trees" / "multikueue"
BASE: dict[str, Any] = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
MANAGER, EAST, WEST = "prod.research-manager", "prod.research-use1", "prod.research-usw2"


def _spec(change: Any = None) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    if change is not None:
        change(data)
    return data


def _errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as raised:
        load_fleet_text(yaml.safe_dump(data, sort_keys=False))
    return [(format_path(i.path), i.message) for i in raised.value.issues if i.severity == "error"]


def _second_manager(d: dict[str, Any]) -> None:
    d["clusters"][2]["role"] = "Manager"
    del d["clusters"][2]["nodeGroups"]
    d["teams"][0]["quotas"].pop()


def _manager_groups(d: dict[str, Any]) -> None:
    d["clusters"][0]["nodeGroups"] = d["clusters"][2].pop("nodeGroups")
    d["clusters"].pop()
    d["teams"][0]["quotas"].pop()


def _same_group(d: dict[str, Any]) -> None:
    d["clusters"][2]["nodeGroups"][0]["name"] = "l40s-use1"
    d["teams"][0]["quotas"].pop()


CASES = [
    pytest.param(
        lambda d: d.update(nodeGroups=d["clusters"][1]["nodeGroups"]),
        [("nodeGroups", "a spec with clusters[] lists each worker's node groups under it, not here")],
        id="top-level-node-groups",
    ),
    pytest.param(
        lambda d: d["cluster"].update(region="us-east-1"),
        [
            (
                "cluster.region",
                "with clusters[], each cluster gives its own region (clusters[].region); cluster holds what they share",
            )
        ],
        id="shared-region",
    ),
    pytest.param(
        lambda d: d["clusters"][0].update(
            role="Worker", nodeGroups=[{**d["clusters"][1]["nodeGroups"][0], "name": "x"}]
        ),
        [("clusters", "no cluster has role Manager: MultiKueue dispatches from exactly one manager cluster")],
        id="no-manager",
    ),
    pytest.param(
        _second_manager,
        [("clusters[2].role", "a second Manager (clusters[0] is one): a fleet dispatches from exactly one")],
        id="second-manager",
    ),
    pytest.param(
        _manager_groups,
        [
            (
                "clusters[0].nodeGroups",
                "the Manager runs no GPU work: MultiKueue dispatches every admitted workload to a worker, and Kueue"
                " does not support a manager that is one of its own workers",
            )
        ],
        id="manager-runs-gpus",
    ),
    pytest.param(
        lambda d: d["clusters"][2].update(name="research-manager"),
        [
            (
                "clusters[2].name",
                'cluster "research-manager" is also clusters[0]: one cluster has one role (Kueue does not support a'
                " manager that is one of its own workers)",
            )
        ],
        id="manager-is-a-worker",
    ),
    pytest.param(
        _same_group,
        [
            (
                "clusters[2].nodeGroups[0].name",
                'node group "l40s-use1" is also in clusters[1]: node group names are unique across the fleet (a'
                " team's quota names one)",
            )
        ],
        id="group-name-twice",
    ),
    pytest.param(
        lambda d: d["teams"][1]["quotas"][0].update(nodeGroup="h100"),
        [("teams[1].quotas[0].nodeGroup", 'no worker has a node group "h100"')],
        id="quota-on-no-worker",
    ),
    # A rule of one cluster, run on the worker's projection, names the path the user wrote.
    pytest.param(
        lambda d: d["clusters"][2]["nodeGroups"][0]["scaling"].update(minSize=3),
        [("clusters[2].nodeGroups[0].scaling.minSize", "minSize 3 is larger than maxSize 2")],
        id="worker-rule-path",
    ),
]


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_each_bad_input_is_one_positioned_error(change: Any, expected: list[tuple[str, str]]) -> None:
    assert _errors(_spec(change)) == expected


def test_an_error_points_at_the_line_the_user_wrote() -> None:
    text = SPEC.read_text(encoding="utf-8").replace("scaling: {maxSize: 2}", "scaling: {minSize: 3, maxSize: 2}")
    with pytest.raises(SpecError) as raised:
        load_fleet_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "minSize: 3" in t)
    assert (
        raised.value.render()
        .splitlines()[0]
        .startswith(f"fleet.yaml:{line}:28: clusters[2].nodeGroups[0].scaling.minSize: ")
    )


def test_each_cluster_and_environment_is_a_stack_and_validates_alone() -> None:
    assert sorted(load_fleet(str(SPEC)).environments) == [MANAGER, EAST, WEST]
    assert list(load_fleet(str(SPEC), WEST).environments) == [WEST]
    assert clusters.split_stack(WEST) == ("prod", "research-usw2")
    assert clusters.split_stack("prod") == ("prod", None)


def test_the_projection_gives_each_worker_its_groups_and_quotas_and_the_manager_none() -> None:
    fleets = load_fleet(str(SPEC)).environments
    assert [g.name for g in fleets[EAST].node_groups] == ["l40s-use1"]
    assert [g.name for g in fleets[WEST].node_groups] == ["l40s-usw2"]
    assert fleets[MANAGER].node_groups == ()
    assert [(t.name, [q.node_group for q in t.quotas]) for t in fleets[WEST].teams] == [
        ("vision", ["l40s-usw2"]),
        ("speech", []),
    ]
    assert [w.name for w in fleets[MANAGER].queued.multikueue.workers] == ["research-use1", "research-usw2"]
    assert [g.name for g in fleets[MANAGER].queued.node_groups] == ["l40s-use1", "l40s-usw2"]
    assert fleets[EAST].cluster.region == "us-east-1" and fleets[WEST].cluster.region == "us-west-2"


def test_every_role_of_the_schema_has_one_cluster_role_and_a_single_cluster_has_its_own() -> None:
    enum = fleet_schema()["properties"]["clusters"]["items"]["properties"]["role"]["enum"]
    assert sorted(cluster_roles.ROLES) == sorted([*enum, "Single"])
    fleets = load_fleet(str(SPEC)).environments
    assert cluster_roles.of(fleets[MANAGER]).name == "Manager"
    assert cluster_roles.of(fleets[WEST]).name == "Worker"
    assert cluster_roles.of(load_fleet(str(ROOT / "fleet.yaml")).base).name == "Single"


# ---------------------------------------------------------------------------------------------------------------
# The golden trees (tests/golden/test_tree_schemas.py holds their objects to the pinned Kueue CRDs).


def _objects(stack: str, kind: str) -> dict[str, Any]:
    out = {}
    for path in sorted((TREES / stack).glob(f"*/k8s/{kind}-*.yaml")):
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[obj["metadata"]["name"]] = obj
    return out


def _kueue_configuration(stack: str) -> dict[str, Any]:
    values = yaml.safe_load((TREES / stack / "03-admission" / "helm" / "kueue.yaml").read_text(encoding="utf-8"))
    config: dict[str, Any] = yaml.safe_load(values["values"]["managerConfig"]["controllerManagerConfigYaml"])
    return {"featureGates": values["values"]["controllerManager"].get("featureGates"), **config}


def _quota(queue: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        flavor["name"]: {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
        for group in queue["spec"].get("resourceGroups", [])
        for flavor in group["flavors"]
    }


def test_the_manager_dispatches_to_the_workers_in_the_spec_order() -> None:
    (check,) = _objects(MANAGER, "AdmissionCheck").values()
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "workers"},
    }
    assert _objects(MANAGER, "MultiKueueConfig")["workers"]["spec"] == {"clusters": ["research-use1", "research-usw2"]}
    assert {name: c["spec"] for name, c in _objects(MANAGER, "MultiKueueCluster").items()} == {
        w: {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"multikueue-{w}"}}}
        for w in ("research-use1", "research-usw2")
    }
    config = _kueue_configuration(MANAGER)
    assert config["multiKueue"] == {
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
        "incrementalDispatcherConfig": {"stepSize": 1},
    }
    assert {g["name"] for g in config["featureGates"] if g["enabled"]} >= {"MultiKueue"}
    for queue in _objects(MANAGER, "ClusterQueue").values():
        assert queue["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}
    for worker in (EAST, WEST):
        assert "multiKueue" not in _kueue_configuration(worker)
        assert not _objects(worker, "AdmissionCheck")


def test_the_manager_quota_is_the_sum_of_the_workers() -> None:
    for team in ("vision", "speech"):
        manager = _quota(_objects(MANAGER, "ClusterQueue")[team])
        workers: dict[str, dict[str, Any]] = {}
        for worker in (EAST, WEST):
            workers.update(_quota(_objects(worker, "ClusterQueue")[team]))
        assert manager == workers, team
    # the same flavors as the workers have them
    for worker in (EAST, WEST):
        for name, flavor in _objects(worker, "ResourceFlavor").items():
            assert _objects(MANAGER, "ResourceFlavor")[name] == flavor


def test_every_worker_has_each_team_namespace_and_local_queues_as_the_manager() -> None:
    for kind in ("Namespace", "LocalQueue", "WorkloadPriorityClass"):
        names = {n for n in _objects(MANAGER, kind) if kind != "Namespace" or n in ("vision", "speech")}
        for worker in (EAST, WEST):
            assert names <= set(_objects(worker, kind)), (kind, worker)
    # speech has no quota in us-west-2: its queue there admits nothing, and exists for what is dispatched
    assert "resourceGroups" not in _objects(WEST, "ClusterQueue")["speech"]["spec"]


def test_the_manager_runs_no_gpu_stage() -> None:
    plan = json.loads((TREES / MANAGER / "plan.json").read_text(encoding="utf-8"))
    text = json.dumps(plan)
    assert "gpu-operator" not in {p.name.split(".")[0] for p in (TREES / MANAGER).glob("*/helm/*.yaml")}
    assert "helm-gpu-operator" not in text


def test_an_environment_overrides_a_worker_group_by_name_and_scales_its_quotas() -> None:
    data = _spec()
    data["environments"]["dev"] = {
        "rollout": {"through": "admission"},
        "quotaScaling": "MaxSize",
        "overrides": {"nodeGroups": {"l40s-use1": {"scaling": {"maxSize": 2}}}},
    }
    fleets = load_fleet_text(yaml.safe_dump(data, sort_keys=False)).environments
    assert fleets["dev.research-use1"].node_group("l40s-use1").max_size == 2
    assert fleets[EAST].node_group("l40s-use1").max_size == 4
    assert [q.gpus for q in fleets["dev.research-use1"].teams[0].quotas] == [4]
    assert [q.gpus for q in fleets["dev.research-usw2"].teams[0].quotas] == [4]
    assert _errors(
        _spec(
            lambda d: d["environments"]["prod"].update(overrides={"nodeGroups": {"l40s": {"scaling": {"maxSize": 1}}}})
        )
    ) == [
        (
            "environments.prod.overrides.nodeGroups.l40s",
            'overrides a node group "l40s" that does not exist in nodeGroups',
        )
    ]


@pytest.mark.parametrize(
    ("workers", "step", "rounds"),
    [
        (["a", "b", "c"], 1, [["a"], ["b"], ["c"]]),
        (["a", "b", "c"], 2, [["a", "b"], ["c"]]),
        (["a", "b"], 3, [["a", "b"]]),
    ],
)
def test_the_incremental_dispatcher_nominates_step_size_more_workers_a_round(
    workers: list[str], step: int, rounds: list[list[str]]
) -> None:
    assert fleet_summary.dispatch_rounds(workers, step) == rounds


def test_plan_of_an_environment_is_the_fleet_wide_summary_and_synth_names_the_stacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["plan", str(SPEC), "--env", "prod"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2:7] == [
        "#  stack                  role     region     GPU node groups  GPUs at maxSize",
        "1  prod.research-use1     Worker   us-east-1  l40s-use1        16",
        "2  prod.research-usw2     Worker   us-west-2  l40s-usw2        8",
        "3  prod.research-manager  Manager  us-east-1  -                -",
        "",
    ]
    assert "- round 2 (after 5 minutes unadmitted): research-usw2" in out
    assert "vision  8              4              12" in out
    assert out.count("rollout through admission") == 3
    assert cli.main(["synth", str(SPEC), "--env", "prod", "--out", "unused"]) == 2
    assert "name one of prod.research-manager, prod.research-use1, prod.research-usw2" in capsys.readouterr().err
