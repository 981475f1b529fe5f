"""What a cluster's role among several (clusters[], gpufleet.spec.clusters) adds to its plan: one ClusterRole per role,
in ROLES, and `of(fleet)` for a fleet's own (Single for a spec of one cluster). The stage builders and the rollout
ask it, never the role's name. A new role is a class here, a line in ROLES and its value in the schema's enum.

The Manager follows Kueue's MultiKueue (site/content/en/docs/tasks/manage/setup_multikueue.md and
concepts/multikueue.md @ v0.19.2): an AdmissionCheck of controller kueue.x-k8s.io/multikueue on every ClusterQueue,
its MultiKueueConfig listing the workers in the spec's order, a MultiKueueCluster per worker reading its kubeconfig
from a Secret in kueue-system, and the Incremental dispatcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from gpufleet.facts.stages import StageName
from gpufleet.plan.manifests import multikueue
from gpufleet.spec.fleet import Fleet


class ClusterRole(Protocol):
    @property
    def name(self) -> str: ...

    def builds(self, stage: StageName) -> bool:
        """Whether the cluster has anything of `stage` (the stages it has not are empty, with `skipped_note`)."""
        ...

    def skipped_note(self, stage: StageName) -> str:
        """plan.md's note of a stage the role does not build."""
        ...

    def kueue_objects(self, fleet: Fleet) -> list[dict[str, Any]]:
        """Kueue objects the role adds beside the queues (created after the Kueue release, before the queues)."""
        ...

    def admission_checks(self, fleet: Fleet) -> tuple[str, ...]:
        """The AdmissionChecks every ClusterQueue of the cluster carries."""
        ...

    def kueue_configuration(self, fleet: Fleet) -> Mapping[str, Any]:
        """Keys the role adds to Kueue's controller Configuration."""
        ...

    def feature_gates(self, fleet: Fleet) -> list[dict[str, Any]]:
        """controllerManager.featureGates of the kueue chart."""
        ...

    def admission_notes(self, fleet: Fleet) -> list[str]:
        """Its lines of plan.md's admission stage."""
        ...


class Single:
    """A spec of one cluster: the cluster runs what it admits."""

    name = "Single"

    def builds(self, stage: StageName) -> bool:
        return True

    def skipped_note(self, stage: StageName) -> str:
        return ""

    def kueue_objects(self, fleet: Fleet) -> list[dict[str, Any]]:
        return []

    def admission_checks(self, fleet: Fleet) -> tuple[str, ...]:
        return ()

    def kueue_configuration(self, fleet: Fleet) -> Mapping[str, Any]:
        return {}

    def feature_gates(self, fleet: Fleet) -> list[dict[str, Any]]:
        return []

    def admission_notes(self, fleet: Fleet) -> list[str]:
        return []


class Worker(Single):
    """A worker of clusters[]: a cluster of its own that also admits what the manager dispatches to it; it needs each
    team's namespace and LocalQueue, which it has by construction (gpufleet.spec.clusters)."""

    name = "Worker"

    def admission_notes(self, fleet: Fleet) -> list[str]:
        assert fleet.multikueue is not None
        position = [w.name for w in fleet.multikueue.workers].index(fleet.multikueue.cluster) + 1
        return [
            "",
            (
                f"MultiKueue worker {position} of {len(fleet.multikueue.workers)}: the manager"
                f" `{fleet.multikueue.manager.name}` dispatches the teams' admitted workloads here, into the same"
                " namespaces and LocalQueues; quota here is this cluster's node groups' (docs/multi-cluster.md)."
            ),
        ]


# The manager's stages: the cluster with its CPU system nodes, and admission. Telemetry (DCGM, GPU rules and
# dashboards) and the later stages have nothing to do on a cluster without GPU node groups.
MANAGER_STAGES: tuple[StageName, ...] = ("foundation", "admission")


class Manager(Single):
    """The manager of clusters[]: teams submit to it, it runs no GPU work, it dispatches."""

    name = "Manager"

    def builds(self, stage: StageName) -> bool:
        return stage in MANAGER_STAGES

    def skipped_note(self, stage: StageName) -> str:
        return (
            f"The MultiKueue manager runs no GPU node group, so nothing of {stage}: the workers' stacks deploy it"
            " (docs/multi-cluster.md)."
        )

    def kueue_objects(self, fleet: Fleet) -> list[dict[str, Any]]:
        assert fleet.multikueue is not None
        workers = [w.name for w in fleet.multikueue.workers]
        return [
            multikueue.admission_check(),
            multikueue.config(workers),
            *(multikueue.cluster(w) for w in workers),
        ]

    def admission_checks(self, fleet: Fleet) -> tuple[str, ...]:
        return (multikueue.ADMISSION_CHECK,)

    def kueue_configuration(self, fleet: Fleet) -> Mapping[str, Any]:
        assert fleet.multikueue is not None
        return multikueue.configuration(fleet.multikueue.step_size)

    def feature_gates(self, fleet: Fleet) -> list[dict[str, Any]]:
        return multikueue.feature_gates()

    def admission_notes(self, fleet: Fleet) -> list[str]:
        assert fleet.multikueue is not None
        mk = fleet.multikueue
        order = ", ".join(f"`{w.name}` ({w.region})" for w in mk.workers)
        return [
            "",
            (
                f"MultiKueue manager: every ClusterQueue carries the AdmissionCheck `{multikueue.ADMISSION_CHECK}`;"
                f" the Incremental dispatcher nominates {mk.step_size} more worker(s) a round, in this order: {order}"
                f" (MultiKueueConfig `{multikueue.CONFIG}`). Each worker's kubeconfig is the Secret"
                f" `{multikueue.secret_name('<worker>')}` in kueue-system (docs/multi-cluster.md). The ClusterQueues"
                " hold the sum of the workers' quotas: one flavor per worker node group, as the workers have it."
            ),
        ]


ROLES: Mapping[str, ClusterRole] = {r.name: r for r in (Single(), Worker(), Manager())}


def of(fleet: Fleet) -> ClusterRole:
    return ROLES[fleet.multikueue.role if fleet.multikueue is not None else "Single"]
