"""The workload layer of the admission stage (gpufleet.plan.manifests.workloads): what is installed by default and when
turned off, who owns JobSet, the order of the releases, the ClusterTrainingRuntimes against the chart's own files,
and Kueue's integrations, the team Role and the queue-name policy following exactly what is installed."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.manifests import kueue, network, tenancy, workloads
from gpufleet.plan.parts import BuildContext, Resource
from gpufleet.plan.stages import admission as stage
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fabric, Fleet
from gpufleet.spec.names import EFA_RESOURCE, GPU_RESOURCE, group_taints, tolerations_for
from tests.upstream import chart_dir, chart_values, require_shared, unknown_value_keys, validate_object


def _build(fleet: Fleet) -> dict[str, Resource]:
    content = stage.build(BuildContext(fleet=fleet, environment="prod", through="cost"))
    return {r.id: r for r in content.resources}


def _set(**choices: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["workloads"] = choices

    return edit


def _l40s(d: dict[str, Any]) -> None:
    d["nodeGroups"].append(
        {
            "name": "l40s",
            "instanceType": "g6e.12xlarge",
            "workloadClass": "Inference",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
            "scaling": {"minSize": 0, "maxSize": 4},
        }
    )


def _no_training(d: dict[str, Any]) -> None:
    d["nodeGroups"][0]["workloadClass"] = "Batch"


# What each fleet installs (Kueue's frameworks name exactly these, between batch/job and pod).
@pytest.mark.parametrize(
    ("edits", "installed", "releases"),
    [
        ((), [kueue.JOBSET_FRAMEWORK, kueue.TRAINJOB_FRAMEWORK], {"helm-jobset", "helm-kubeflow-trainer"}),
        ((_no_training,), [], set()),
        ((_set(trainer="None"),), [kueue.JOBSET_FRAMEWORK], {"helm-jobset"}),
        ((_set(trainer="None", jobSet="None"),), [], set()),
        (
            (_no_training, _set(trainer="Install")),
            [kueue.JOBSET_FRAMEWORK, kueue.TRAINJOB_FRAMEWORK],
            {"helm-jobset", "helm-kubeflow-trainer"},
        ),
        # a 4-GPU node and 4 GPUs per replica: one node holds it, no LWS
        ((_no_training, _l40s, _set(inferenceReplicaGpus={"l40s": 4})), [], set()),
        ((_no_training, _l40s, _set(inferenceReplicaGpus={"l40s": 8})), [kueue.LWS_FRAMEWORK], {"helm-lws"}),
        ((_no_training, _l40s, _set(leaderWorkerSet="Install")), [kueue.LWS_FRAMEWORK], {"helm-lws"}),
        (
            (_l40s, _set(inferenceReplicaGpus={"l40s": 8}, leaderWorkerSet="None")),
            [kueue.JOBSET_FRAMEWORK, kueue.TRAINJOB_FRAMEWORK],
            {"helm-jobset", "helm-kubeflow-trainer"},
        ),
    ],
    ids=[
        "training-group",
        "no-training-group",
        "trainer-off",
        "both-off",
        "trainer-on-without-training-group",
        "replica-fits-a-node",
        "replica-spans-two-nodes",
        "lws-on",
        "lws-off",
    ],
)
def test_what_is_installed_and_what_kueue_rbac_and_the_policy_name(
    make_fleet: Callable[..., Fleet], edits: tuple[Any, ...], installed: list[str], releases: set[str]
) -> None:
    fleet = make_fleet(*edits)
    resources = _build(fleet)
    assert {r for r in resources if r.startswith("helm-") and r != stage.HELM_ID} == releases
    config = kueue.controller_configuration(fleet)
    assert config["integrations"]["frameworks"] == ["batch/job", *installed, "pod", "deployment", "statefulset"]
    role = resources["role-vision-gpufleet-team"].args["object"]
    granted = {(g, p) for rule in role["rules"][1:] for g in rule["apiGroups"] for p in rule["resources"]}
    # ... and KEDA's ScaledObjects where the fleet installs KEDA (an Inference group), the job kinds aside
    assert granted - {tenancy.SCALED_OBJECT} == {kueue.RESOURCES[f][:2] for f in installed}
    assert (tenancy.SCALED_OBJECT in granted) == bool(tenancy.scaling_resources(fleet))
    policy = resources["validatingadmissionpolicy-cluster-gpufleet-require-queue-name"].args["object"]
    matched = [r["resources"][0] for r in policy["spec"]["matchConstraints"]["resourceRules"]]
    assert matched == ["jobs", *(kueue.RESOURCES[f][1] for f in installed)]


def test_no_teams_installs_nothing_and_pins_nothing(make_fleet: Callable[..., Fleet]) -> None:
    from gpufleet.spec.deployed import deployed_components

    def no_teams(d: dict[str, Any]) -> None:
        d["teams"] = []

    fleet = make_fleet(no_teams)
    assert _build(fleet) == {}
    assert kueue.installed_frameworks(fleet) == ()
    assert {"jobSet", "trainer", "leaderWorkerSet"} & deployed_components(fleet) == set()


def test_gpufleet_owns_jobset_and_the_trainer_waits_for_it(fleet: Fleet) -> None:
    resources = _build(fleet)
    jobset, trainer = resources["helm-jobset"], resources["helm-kubeflow-trainer"]
    assert jobset.args["chart"] == "oci://registry.k8s.io/jobset/charts/jobset"
    assert trainer.args["chart"] == "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"
    assert (jobset.args["version"], trainer.args["version"]) == ("0.12.0", "2.3.0")
    # The Trainer chart would install its own JobSet 0.12.0 otherwise (Chart.yaml dependency, condition jobset.install).
    assert trainer.args["values"]["jobset"] == {"install": False}
    assert trainer.depends_on == (stage.HELM_ID, jobset.id)
    assert jobset.depends_on == (stage.HELM_ID,)
    # The data cache would bring the lws 0.8.0 subchart beside gpufleet's LWS.
    assert trainer.args["values"]["dataCache"] == {"enabled": False}
    runtimes = [r for r in resources.values() if r.type.endswith(":ClusterTrainingRuntime")]
    assert {r.args["object"]["metadata"]["name"] for r in runtimes} == {
        "torch-distributed",
        "deepspeed-distributed",
        "gpufleet-efa-h100",
    }
    assert all(r.depends_on == (trainer.id,) for r in runtimes)


def test_the_trainer_chart_depends_on_the_pinned_jobset() -> None:
    chart = yaml.safe_load((chart_dir("kubeflow-trainer", "2.3.0") / "Chart.yaml").read_text())
    (dep,) = [d for d in chart["dependencies"] if d["name"] == "jobset"]
    assert dep["version"] in COMPONENTS["jobSet"].supported
    assert dep["condition"] == "jobset.install"


@pytest.mark.parametrize(
    ("key", "values"),
    [
        ("jobSet", workloads.jobset_values),
        ("trainer", lambda _version: workloads.trainer_values()),
        ("leaderWorkerSet", workloads.lws_values),
    ],
)
def test_values_exist_in_every_supported_chart(key: str, values: Callable[[str], dict[str, Any]]) -> None:
    component = COMPONENTS[key]
    for version in component.supported:
        assert list(unknown_value_keys(values(version), chart_values(component.chart, version))) == []


def test_controller_images_are_the_released_ones() -> None:
    # The git values.yaml says `main` with pullPolicy Always; the released chart the release tag (hack/ scripts).
    assert chart_values("jobset", "0.12.0")["image"]["tag"] == "main"
    assert workloads.jobset_values("0.12.0")["image"] == {
        "repository": "registry.k8s.io/jobset/jobset",
        "tag": "v0.12.0",
        "pullPolicy": "IfNotPresent",
    }
    assert workloads.lws_values("0.10.0")["image"]["manager"]["tag"] == "v0.10.0"
    assert yaml.safe_load((chart_dir("lws", "0.10.0") / "Chart.yaml").read_text())["appVersion"] == "v0.10.0"


def _chart_runtime(name: str, trainer_version: str) -> dict[str, Any]:
    """The chart's runtime file as Helm renders it: the image helper resolved, the label includes dropped."""
    text = (chart_dir("kubeflow-trainer", trainer_version) / "runtimes" / f"{name}.yaml").read_text()
    text = re.sub(r"\{\{ include \"trainer.runtimeImage\" [^}]*\}\}", workloads.deepspeed_image(trainer_version), text)
    text = "\n".join(line for line in text.splitlines() if "{{" not in line)
    out: dict[str, Any] = yaml.safe_load(text)
    return out


@pytest.mark.parametrize("name", [workloads.TORCH_RUNTIME, workloads.DEEPSPEED_RUNTIME])
def test_built_in_runtimes_are_the_charts_own(name: str) -> None:
    require_shared()
    ours = {
        workloads.TORCH_RUNTIME: workloads.torch_runtime(),
        workloads.DEEPSPEED_RUNTIME: workloads.deepspeed_runtime("2.3.0"),
    }[name]
    theirs = _chart_runtime(name, "2.3.0")
    assert ours["spec"] == theirs["spec"]
    assert (ours["apiVersion"], ours["kind"], ours["metadata"]["name"]) == (
        theirs["apiVersion"],
        theirs["kind"],
        theirs["metadata"]["name"],
    )
    framework = workloads.FRAMEWORK_LABEL
    assert ours["metadata"]["labels"][framework] == theirs["metadata"]["labels"][framework]
    # Validated by the Trainer's webhook like any runtime: no opt-out label.
    assert "trainer.kubeflow.org/webhook-validation" not in ours["metadata"]["labels"]
    assert validate_object(ours) == []


def test_the_efa_runtime_carries_what_an_efa_node_needs(fleet: Fleet) -> None:
    group = fleet.node_group("h100")
    runtime = workloads.efa_runtime(fleet, group)
    assert validate_object(runtime) == []
    (node,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert node["name"] == "node" and node["template"]["metadata"]["labels"] == {workloads.ANCESTOR_LABEL: "trainer"}
    pod = node["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpufleet.io/node-group": "h100"}
    assert pod["tolerations"] == tolerations_for(group_taints(group))
    assert {"key": EFA_RESOURCE, "operator": "Equal", "value": "true", "effect": "NoSchedule"} in pod["tolerations"]
    (container,) = pod["containers"]
    assert container["name"] == "node"
    assert {e["name"]: e["value"] for e in container["env"]} == network.nccl_env(Fabric.EFA)
    limits = container["resources"]["limits"]
    # p5.48xlarge: 8 H100, 32 EFA interfaces
    assert (limits[GPU_RESOURCE], limits[EFA_RESOURCE], limits["hugepages-2Mi"]) == (8, 32, "5120Mi")
    requests = container["resources"]["requests"]
    assert {k: requests[k] for k in limits} == limits  # huge pages and extended resources: requests equal limits
    shape = kueue.per_gpu(group)
    quota = kueue.resource_amounts(group, 8)
    assert int(requests["cpu"]) * 1000 <= shape.cpu_milli * 8
    assert int(requests["memory"].removesuffix("Mi")) < int(quota["memory"].removesuffix("Mi"))
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def test_efa_runtimes_only_for_efa_training_groups(make_fleet: Callable[..., Fleet]) -> None:
    def efa_batch(d: dict[str, Any]) -> None:
        d["nodeGroups"][0]["workloadClass"] = "Batch"

    assert [g.name for g in workloads.efa_groups(make_fleet())] == ["h100"]
    assert workloads.efa_groups(make_fleet(efa_batch, _set(trainer="Install"))) == []
    assert defaults.trainer(make_fleet(efa_batch)) is False


def test_access_table_lists_the_installed_kinds(make_fleet: Callable[..., Fleet]) -> None:
    from gpufleet.plan.access_table import access_values

    assert "(jobsets, trainjobs)" in access_values(make_fleet(), "cost")["team_edit"]
    assert "(none installed)" in access_values(make_fleet(_no_training), "cost")["team_edit"]
    assert tenancy.job_resources(make_fleet(_no_training)) == []
