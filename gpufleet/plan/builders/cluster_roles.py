"""What a cluster's role among several (clusters[], gpufleet.spec.clusters) adds to its plan: one ClusterRole per role,
in ROLES, and `of(fleet)` for a fleet's own (Single for a spec of one cluster).

Why, with sources: docs/multi-cluster.md, "Design notes", gpufleet/plan/builders/cluster_roles.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from gpufleet.base import package_data
from gpufleet.facts.stages import StageName
from gpufleet.plan.builders.cluster import pod_identity_resources, tags
from gpufleet.plan.builders.common import AWS_PROVIDER
from gpufleet.plan.manifests import multikueue
from gpufleet.plan.parts import BuildContext, Ref, Resource
from gpufleet.spec import images
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.names import partition

CREDENTIALS_ROLE = "multikueue-credentials-role"


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

    @property
    def runs_gpus(self) -> bool:
        """Whether the cluster has GPU node groups, so GPU telemetry (DCGM, its rules and dashboard)."""
        ...

    def kube_state_metrics_values(self, fleet: Fleet) -> dict[str, Any]:
        """kube-state-metrics values the role adds (the Manager's MultiKueueCluster conditions)."""
        ...

    def rule_groups(self, fleet: Fleet) -> list[dict[str, Any]]:
        """Prometheus rule groups the role adds to the telemetry stage."""
        ...

    def foundation_resources(self, ctx: BuildContext) -> list[Resource]:
        """AWS resources the role adds to stage 1 (the Manager's credentials role and its access entries on the
        workers), only when the environment reaches admission, where what uses them is."""
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

    runs_gpus = True

    def kube_state_metrics_values(self, fleet: Fleet) -> dict[str, Any]:
        return {}

    def rule_groups(self, fleet: Fleet) -> list[dict[str, Any]]:
        return []

    def foundation_resources(self, ctx: BuildContext) -> list[Resource]:
        return []


class Worker(Single):
    """A worker of clusters[]: a cluster of its own that also admits what the manager dispatches to it; it needs each
    team's namespace and LocalQueue, which it has by construction (gpufleet.spec.clusters)."""

    name = "Worker"

    def kueue_objects(self, fleet: Fleet) -> list[dict[str, Any]]:
        return multikueue.worker_objects()

    def admission_notes(self, fleet: Fleet) -> list[str]:
        assert fleet.multikueue is not None
        position = [w.name for w in fleet.multikueue.workers].index(fleet.multikueue.cluster) + 1
        return [
            "",
            (
                f"MultiKueue worker {position} of {len(fleet.multikueue.workers)}: the manager"
                f" `{fleet.multikueue.manager.name}` dispatches the teams' admitted workloads here, into the same"
                " namespaces and LocalQueues; quota here is this cluster's node groups' (docs/multi-cluster.md)."
                f" The manager acts here as the ServiceAccount `{multikueue.NS_KUEUE}/{multikueue.WORKER_ACCOUNT}`"
                f" (ClusterRole `{multikueue.WORKER_ACCOUNT}`, the rules of Kueue's create-multikueue-kubeconfig.sh);"
                f" the group `{multikueue.MINTER_GROUP}` may only mint its tokens (Role `{multikueue.TOKEN_ROLE}`)."
            ),
        ]


# The manager's stages: the cluster with its CPU system nodes, telemetry without its GPU parts (Prometheus and the
# MultiKueue alerts), and admission. The later stages have nothing to do on a cluster without GPU node groups.
MANAGER_STAGES: tuple[StageName, ...] = ("foundation", "telemetry", "admission")


class Manager(Single):
    """The manager of clusters[]: teams submit to it, it runs no GPU work, it dispatches."""

    name = "Manager"
    runs_gpus = False

    def kube_state_metrics_values(self, fleet: Fleet) -> dict[str, Any]:
        return multikueue.kube_state_metrics_values()

    def rule_groups(self, fleet: Fleet) -> list[dict[str, Any]]:
        assert fleet.multikueue is not None
        return multikueue.rule_groups([w.name for w in fleet.multikueue.workers])

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
            *multikueue.manager_objects(
                [(w.name, w.region) for w in fleet.multikueue.workers],
                images.reference(fleet, "python"),
                package_data.text(f"data/multikueue/{multikueue.SCRIPT}"),
                package_data.text(f"data/multikueue/{multikueue.CLIENT}"),
            ),
        ]

    def foundation_resources(self, ctx: BuildContext) -> list[Resource]:
        """The credentials role only the CronJob's ServiceAccount on this cluster may assume (EKS Pod Identity), and
        on each worker an access entry that maps it to the group allowed to mint the MultiKueue ServiceAccount's
        tokens there.

        Why: docs/multi-cluster.md, "Design notes", cluster_roles.foundation_resources."""
        fleet = ctx.fleet
        if not ctx.includes("admission") or not fleet.teams:
            return []
        assert fleet.multikueue is not None
        workers = [(w.name, w.region) for w in fleet.multikueue.workers]
        out = pod_identity_resources(
            fleet,
            role=CREDENTIALS_ROLE,
            policy=f"{CREDENTIALS_ROLE}-policy",
            association=f"{CREDENTIALS_ROLE}-pod-identity",
            name_prefix=f"{fleet.name}-multikueue-",
            description=(
                f"MultiKueue credentials of EKS cluster {fleet.cluster.name}: mints the workers' kubeconfigs (EKS Pod"
                f" Identity, {multikueue.NS_KUEUE}/{multikueue.CREDENTIALS})"
            ),
            policy_name="multikueue-credentials",
            policy_document=multikueue.credentials_iam_policy(partition(fleet.cluster.region), workers),
            namespace=multikueue.NS_KUEUE,
            service_account=multikueue.CREDENTIALS,
        )
        for name, region in workers:
            provider = f"{AWS_PROVIDER}-{name}"
            out += [
                Resource(
                    id=provider,
                    type="pulumi:providers:aws",
                    args={
                        "region": region,
                        "defaultTags": {"tags": tags(fleet)},
                        "skipCredentialsValidation": False,
                        "skipRegionValidation": True,
                    },
                ),
                Resource(
                    id=f"multikueue-access-{name}",
                    type="aws:eks/accessEntry:AccessEntry",
                    provider=provider,
                    args={
                        "clusterName": name,
                        "principalArn": Ref(CREDENTIALS_ROLE, "arn"),
                        "kubernetesGroups": [multikueue.MINTER_GROUP],
                        "type": "STANDARD",
                        "tags": tags(fleet),
                    },
                ),
            ]
        return out

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
            "",
            (
                f"Credentials: the CronJob `{multikueue.NS_KUEUE}/{multikueue.CREDENTIALS}` (`{multikueue.SCHEDULE}`,"
                f" every {multikueue.RENEW_HOURS} h) mints each worker a token of `{multikueue.WORKER_ACCOUNT}` valid"
                f" {multikueue.TOKEN_SECONDS // 3600} h (TokenRequest) and rewrites its Secret, then fails unless the"
                " MultiKueueCluster is Active; it reaches the workers as the Pod Identity role"
                f" `{CREDENTIALS_ROLE}`, which each worker's access entry maps to the group"
                f" `{multikueue.MINTER_GROUP}`."
                " Nothing is dispatched before its first run: start one after deploying (docs/multi-cluster.md,"
                ' "Rotating credentials").'
            ),
        ]


ROLES: Mapping[str, ClusterRole] = {r.name: r for r in (Single(), Worker(), Manager())}


def of(fleet: Fleet) -> ClusterRole:
    return ROLES[fleet.multikueue.role if fleet.multikueue is not None else "Single"]
