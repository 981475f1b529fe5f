"""Kueue flavor assignment vectors ported from kubernetes-sigs/kueue v0.19.2
pkg/scheduler/flavorassigner/flavorassigner_test.go (TestAssignFlavors) and pkg/scheduler/scheduler_test.go (TAS)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gpufleet.simulate import kueue_admission as ka
from gpufleet.simulate.workload import Container, PodSet, PodSpec, Workload

SPOT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
FLAVORS = {
    "default": ka.Flavor(name="default", node_labels={}, node_taints=(), tolerations=(), topology_name=None),
    "one": ka.Flavor(name="one", node_labels={"type": "one"}, node_taints=(), tolerations=(), topology_name=None),
    "two": ka.Flavor(name="two", node_labels={"type": "two"}, node_taints=(), tolerations=(), topology_name=None),
    "tainted": ka.Flavor(name="tainted", node_labels={}, node_taints=(SPOT,), tolerations=(), topology_name=None),
    "taint_and_toleration": ka.Flavor(
        name="taint_and_toleration",
        node_labels={},
        node_taints=(SPOT,),
        tolerations=(SPOT_TOLERATION,),
        topology_name=None,
    ),
    "tas-default": ka.Flavor(
        name="tas-default", node_labels={}, node_taints=(), tolerations=(), topology_name="default"
    ),
}


def q(nominal: int, borrowing: int | None = None, lending: int | None = None) -> ka.ResourceQuota:
    return ka.ResourceQuota(nominal=nominal, borrowing_limit=borrowing, lending_limit=lending)


def cq(
    name: str,
    *flavors: tuple[str, dict[str, ka.ResourceQuota]],
    cohort: str | None = None,
    checks: tuple[str, ...] = (),
) -> ka.ClusterQueue:
    covered = tuple(dict.fromkeys(r for _, quotas in flavors for r in quotas))
    return ka.ClusterQueue(
        name=name,
        cohort=cohort,
        namespace_selector={},
        resource_groups=((covered, tuple(flavors)),),
        admission_checks=checks,
    )


def kueue(*queues: ka.ClusterQueue) -> ka.Kueue:
    return ka.Kueue(
        manage_without_queue_name=False,
        managed_namespaces=None,
        frameworks=frozenset({"batch/job"}),
        exclude_prefixes=(),
        flavors=FLAVORS,
        cluster_queues={c.name: c for c in queues},
        local_queues={},
        provisioning_checks=frozenset(),
    )


def ps(
    name: str = "main",
    count: int = 1,
    tolerations: tuple[dict[str, Any], ...] = (),
    selector: dict[str, str] | None = None,
    terms: tuple[dict[str, Any], ...] = (),
    topology: bool = False,
    **requests: int,
) -> PodSet:
    reqs = {k.replace("_", "/"): v for k, v in requests.items()}
    pod = PodSpec(
        containers=(Container(name="c", requests=reqs, limits={}),),
        tolerations=tolerations,
        node_selector=selector or {},
        required_terms=terms,
        topology_request=topology,
    )
    return PodSet(name=name, count=count, pod=pod)


def assign(
    queue: ka.ClusterQueue, *pod_sets: PodSet, others: tuple[ka.ClusterQueue, ...] = ()
) -> tuple[dict[str, str], str | None]:
    return ka.assign(kueue(queue, *others), queue, pod_sets, {})


GiB = 1024


def test_single_flavor_fits() -> None:
    assert assign(cq("test-clusterqueue", ("default", {"cpu": q(1000), "memory": q(2)})), ps(cpu=1000, memory=1)) == (
        {"main": "default"},
        None,
    )


def test_single_flavor_fits_tainted_flavor() -> None:
    assert assign(cq("c", ("tainted", {"cpu": q(4000)})), ps(tolerations=(SPOT_TOLERATION,), cpu=1000)) == (
        {"main": "tainted"},
        None,
    )


def test_single_flavor_fits_tainted_flavor_with_toleration() -> None:
    assert assign(cq("c", ("taint_and_toleration", {"cpu": q(4000)})), ps(cpu=1000)) == (
        {"main": "taint_and_toleration"},
        None,
    )


def test_multiple_resources_in_a_group_does_not_fit() -> None:
    queue = cq("c", ("one", {"cpu": q(2000), "memory": q(GiB)}), ("two", {"cpu": q(4000), "memory": q(5)}))
    _, reason = assign(queue, ps(cpu=3000, memory=10))
    assert (
        reason
        == "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered"
        " podsets requests (0) + current podset request (3) > maximum capacity (2), insufficient quota for memory in"
        " flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity"
        " (5Mi)"
    )


def test_multiple_flavors_fits_while_skipping_tainted_flavor() -> None:
    queue = cq("c", ("tainted", {"cpu": q(4000)}), ("two", {"cpu": q(4000)}))
    assert assign(queue, ps(cpu=3000)) == ({"main": "two"}, None)
    _, reason = assign(cq("c", ("tainted", {"cpu": q(4000)})), ps(cpu=3000))
    assert (
        reason
        == "couldn't assign flavors to pod set main: untolerated taint {instance spot NoSchedule <nil>} in flavor"
        " tainted"
    )


def test_multiple_flavors_fits_a_node_selector() -> None:
    # "ignored1: foo" is not a key of any flavor: Kueue ignores it
    queue = cq("c", ("one", {"cpu": q(4000)}), ("two", {"cpu": q(4000)}))
    assert assign(queue, ps(selector={"type": "two", "ignored1": "foo"}, cpu=1000)) == ({"main": "two"}, None)


def test_multiple_flavors_fits_with_node_affinity() -> None:
    queue = cq("c", ("one", {"cpu": q(4000)}), ("two", {"cpu": q(4000)}))
    term = {"matchExpressions": [{"key": "type", "operator": "In", "values": ["two"]}]}
    assert assign(queue, ps(terms=(term,), selector={"ignored1": "foo"}, cpu=1000)) == ({"main": "two"}, None)


def test_multiple_flavors_does_not_fit_node_affinity() -> None:
    queue = cq("c", ("one", {"cpu": q(4000)}), ("two", {"cpu": q(4000)}))
    term = {"matchExpressions": [{"key": "type", "operator": "In", "values": ["three"]}]}
    _, reason = assign(queue, ps(terms=(term,), cpu=1000))
    assert (
        reason
        == "couldn't assign flavors to pod set main: flavor one doesn't match node affinity, flavor two doesn't match"
        " node affinity"
    )


def test_multiple_specs_fit_different_flavors() -> None:
    queue = cq("c", ("one", {"cpu": q(4000)}), ("two", {"cpu": q(10000)}))
    assert assign(queue, ps("driver", cpu=5000), ps("worker", cpu=3000)) == ({"driver": "two", "worker": "one"}, None)


def test_multiple_specs_fits_borrowing() -> None:
    queue = cq("c", ("default", {"cpu": q(2000, borrowing=98000), "memory": q(2 * GiB)}), cohort="test-cohort")
    secondary = cq("s", ("default", {"cpu": q(198000), "memory": q(198 * GiB)}), cohort="test-cohort")
    assert assign(
        queue, ps("driver", cpu=4000, memory=GiB), ps("worker", cpu=6000, memory=4 * GiB), others=(secondary,)
    ) == ({"driver": "default", "worker": "default"}, None)


def test_not_enough_space_to_borrow() -> None:
    # The upstream case also has 9 of the secondary's 10 CPUs in use; here the lendingLimit 0 alone keeps them.
    queue = cq("c", ("one", {"cpu": q(1000)}), cohort="test-cohort")
    secondary = cq("s", ("one", {"cpu": q(10000, lending=0)}), cohort="test-cohort")
    _, reason = assign(queue, ps(cpu=2000), others=(secondary,))
    assert (
        reason
        == "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered"
        " podsets requests (0) + current podset request (2) > maximum capacity (1)"
    )


def test_resource_not_listed_in_cluster_queue() -> None:
    _, reason = assign(cq("c", ("one", {"cpu": q(4000)})), ps(**{"example.com_gpu": 2}))
    assert reason == "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in ClusterQueue"


def test_zero_resource_request_not_in_cluster_queue_succeeds() -> None:
    assert assign(cq("c", ("default", {"cpu": q(4000)})), ps(cpu=1000, **{"example.com_gpu": 0})) == (
        {"main": "default"},
        None,
    )


# TestAssignFlavors "zero resource request defined in clusterQueue should get flavor assigned": an explicit zero of a
# covered resource still takes part in flavor assignment (and fits a quota of 0).
def test_zero_resource_request_defined_in_cluster_queue_gets_a_flavor() -> None:
    queue = cq("c", ("default", {"cpu": q(4000), "example.com/gpu": q(4)}))
    assert assign(queue, ps(cpu=1000, **{"example.com_gpu": 0})) == ({"main": "default"}, None)
    assert assign(cq("c", ("default", {"cpu": q(0)})), ps(cpu=0)) == ({"main": "default"}, None)


# flavorassigner.go assignFlavors fails a pod set only when "podSet.Requests.Len() > 0 && len(Flavors) == 0": one
# that requests nothing is admitted with no flavor (issue 27: the model said "no flavor covers its resources").
def test_a_pod_set_with_no_requests_is_admitted_with_no_flavor() -> None:
    queue = cq("c", ("one", {"cpu": q(4000)}))
    assert assign(queue, ps()) == ({}, None)
    assert assign(queue, ps("idle"), ps("worker", cpu=1000)) == ({"worker": "one"}, None)
    # a request of a resource the ClusterQueue does not cover, at zero, is no request either (#8079)
    assert assign(queue, ps(**{"example.com_gpu": 0})) == ({}, None)


# scheduler_test.go: a PodSet without a topology request skips the TAS flavor of a mixed queue
# ("Flavors considered: one: tas-default(NoFit;Flavor \"tas-default\" supports only TopologyAwareScheduling)")
def test_mixed_queue_non_tas_pod_set_skips_tas_flavor() -> None:
    queue = cq("tas-main", ("tas-default", {"cpu": q(50000)}), ("default", {"cpu": q(50000)}))
    assert assign(queue, ps("one", cpu=1000)) == ({"one": "default"}, None)
    _, reason = assign(
        cq("tas-main", ("tas-default", {"cpu": q(50000)}), ("one", {"cpu": q(50000)})),
        ps("one", selector={"type": "two"}, cpu=1000),
    )
    assert (
        reason == 'couldn\'t assign flavors to pod set one: Flavor "tas-default" supports only TopologyAwareScheduling,'
        " flavor one doesn't match node affinity"
    )


def test_tas_only_queue_implies_topology() -> None:
    """tas_flavorassigner.go isTASImplied: a queue whose flavors all have a topology admits PodSets without a request
    (and, with no Ready node to count, fits none of them)."""
    _, reason = assign(cq("tas-main", ("tas-default", {"cpu": q(50000)})), ps("one", cpu=1000))
    assert reason == 'couldn\'t assign flavors to pod set one: topology "default" allows to fit only 0 out of 1 pod(s)'


def test_namespace_and_queue_resolution() -> None:
    k = ka.Kueue(
        manage_without_queue_name=False,
        managed_namespaces={
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}]
        },
        frameworks=frozenset({"batch/job", "pod"}),
        exclude_prefixes=(),
        flavors=FLAVORS,
        cluster_queues={
            "a": ka.ClusterQueue(
                name="a",
                cohort=None,
                namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
                resource_groups=((("cpu",), (("default", {"cpu": q(4000)}),)),),
                admission_checks=(),
            )
        },
        local_queues={("team-a", "a"): "a"},
        provisioning_checks=frozenset(),
    )

    def wl(kind: str, ns: str, labels: dict[str, str]) -> Workload:
        return Workload(kind=kind, namespace=ns, name="w", labels=labels, pod_sets=(ps(cpu=1000),))

    assert ka.admit(k, wl("Job", "team-a", {"kueue.x-k8s.io/queue-name": "a"}), {}).cluster_queue == "a"
    assert (
        ka.admit(k, wl("Job", "team-a", {"kueue.x-k8s.io/queue-name": "b"}), {}).reason == "LocalQueue b doesn't exist"
    )
    # configuration_types.go: without a queue name and with manageJobsWithoutQueueName false, a Job is not managed
    assert ka.admit(k, wl("Job", "team-a", {}), {}).managed is False
    # ... pod-based integrations are never managed outside managedJobsNamespaceSelector, even with the label
    assert ka.admit(k, wl("Pod", "other", {"kueue.x-k8s.io/queue-name": "a"}), {}).managed is False
    # defaults.go: the LocalQueue "default" fills a missing queue name in a managed namespace
    k2 = ka.Kueue(
        **{**{f: getattr(k, f) for f in k.__dataclass_fields__}, "local_queues": {("team-a", "default"): "a"}}
    )
    assert ka.admit(k2, wl("Pod", "team-a", {}), {}).cluster_queue == "a"


@pytest.mark.parametrize(
    "resource, amount, text",
    [
        ("cpu", 3000, "3"),
        ("cpu", 1500, "1500m"),
        ("memory", 10, "10Mi"),
        ("memory", 2048, "2Gi"),
        ("nvidia.com/gpu", 8, "8"),
    ],
)
def test_quantity_format(resource: str, amount: int, text: str) -> None:
    assert ka.fmt(resource, amount) == text


# kueue v0.19.2 pkg/controller/jobs/pod/pod_webhook_test.go TestDefault: "default queue is created, pod has no queue
# label" (the pod gets queue-name default and is gated), "default queue isn't created, pod has no queue label" (left
# alone), "doesn’t match the managedJobsNamespaceSelector" (left alone even with a queue label). A DaemonSet's pod is
# such a plain pod: the owner walk stops at the DaemonSet (issue 27).
@pytest.mark.parametrize(
    ("namespace", "default_queue", "labels", "managed", "queue"),
    [
        ("team", True, {}, True, "default"),
        ("team", False, {}, False, None),
        ("team", True, {"kueue.x-k8s.io/queue-name": "queue"}, True, "queue"),
        ("kube-system", True, {"kueue.x-k8s.io/queue-name": "queue"}, False, "queue"),
    ],
)
def test_pod_webhook_queue_defaulting(
    namespace: str, default_queue: bool, labels: dict[str, str], managed: bool, queue: str | None
) -> None:
    k = dataclasses.replace(
        kueue(),
        frameworks=frozenset({"pod"}),
        managed_namespaces={
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team"]}]
        },
        local_queues={("team", "default"): "cq"} if default_queue else {},
    )
    pod = Workload(kind="Pod", namespace=namespace, name="test-pod", labels=labels, pod_sets=(ps(cpu=100),))
    assert ka.managed(k, pod)[0] is managed
    assert ka.queue_name(k, pod) == queue
