"""The MultiKueue manager's objects (kueue.x-k8s.io/v1beta2) and its controller settings, as plain dicts.

Why, with sources: docs/multi-cluster.md, "Design notes", gpufleet/plan/manifests/multikueue.py.
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.plan.manifests import restricted
from gpufleet.plan.manifests.checksum import data_sha256
from gpufleet.spec.names import LABEL_MANAGED_BY

API = "kueue.x-k8s.io/v1beta2"
# The controller that processes a MultiKueue AdmissionCheck (pkg/controller/admissionchecks/multikueue, ControllerName).
CONTROLLER = "kueue.x-k8s.io/multikueue"
ADMISSION_CHECK = "multikueue"
CONFIG = "workers"
# apis/config/v1beta2 MultiKueueDispatcherModeIncremental.
INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
# The key of the Secret the MultiKueueCluster reads (setup_multikueue.md: `--from-file=kubeconfig=...`).
KUBECONFIG_KEY = "kubeconfig"
# pkg/features/kube_features.go @ v0.19.2: MultiKueue beta and on since 0.9; the Incremental dispatcher's stepSize
# (MultiKueueIncrementalDispatcherConfig) and its following MultiKueueConfig's order (...RespectConfigOrder) beta and on
# since 0.19.
FEATURE_GATES = (
    "MultiKueue",
    "MultiKueueIncrementalDispatcherConfig",
    "MultiKueueIncrementalDispatcherRespectConfigOrder",
)


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(LABEL_MANAGED_BY)}


def admission_check() -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "AdmissionCheck",
        "metadata": _meta(ADMISSION_CHECK),
        "spec": {
            "controllerName": CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG},
        },
    }


def config(workers: list[str]) -> dict[str, Any]:
    """The workers, most preferred first: the Incremental dispatcher nominates them in this order."""
    return {"apiVersion": API, "kind": "MultiKueueConfig", "metadata": _meta(CONFIG), "spec": {"clusters": workers}}


def secret_name(worker: str) -> str:
    return f"multikueue-{worker}"


def cluster(worker: str) -> dict[str, Any]:
    """One worker, connected with the kubeconfig in the Secret `secret_name(worker)` of Kueue's namespace."""
    return {
        "apiVersion": API,
        "kind": "MultiKueueCluster",
        "metadata": _meta(worker),
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name(worker)}}},
    }


def configuration(step_size: int) -> dict[str, Any]:
    """The `multiKueue` block of the manager's controller Configuration."""
    return {
        "multiKueue": {
            "dispatcherName": INCREMENTAL_DISPATCHER,
            "incrementalDispatcherConfig": {"stepSize": step_size},
        }
    }


def feature_gates() -> list[dict[str, Any]]:
    """The kueue chart's controllerManager.featureGates (a list of {name, enabled}: charts/kueue/values.yaml)."""
    return [{"name": gate, "enabled": True} for gate in FEATURE_GATES]


# --- Credentials (issue 44 item 4; docs/multi-cluster.md, "Rotating credentials") ------------------------------------
# On each worker: a ServiceAccount bound to the ClusterRole MultiKueue needs there, and a Role whose only permission is
# to mint that ServiceAccount's tokens (TokenRequest), bound to the group the manager's credentials role is mapped to by
# an EKS access entry on the worker.
NS_KUEUE = "kueue-system"
WORKER_ACCOUNT = "gpufleet-multikueue"
TOKEN_ROLE = "gpufleet-multikueue-token"
# The Kubernetes group of the manager's credentials role on every worker (its EKS access entry's kubernetesGroups).
MINTER_GROUP = "gpufleet-multikueue-credentials"
CREDENTIALS = "gpufleet-multikueue-credentials"
# The first renewal, as a Job the manager's `pulumi up` creates and awaits: without it no Secret exists, nothing is
# dispatched until the CronJob's first run (up to 6 h), and a worker that cannot be reached shows only then.
FIRST_RENEWAL = f"{CREDENTIALS}-first"
SCRIPT = "credentials.py"
CLIENT = "kube.py"  # gpufleet/data/multikueue/kube.py, a link to gpufleet/data/health/kube.py
# A token lives 24 h and is renewed every 6 h: three renewals may fail (and alert) before the one in use expires.
TOKEN_SECONDS = 24 * 3600
SCHEDULE = "17 */6 * * *"
RENEW_HOURS = 6
ACTIVE_WAIT_SECONDS = 120


def _verbs(*verbs: str) -> list[str]:
    return list(verbs)


_CRUD = _verbs("create", "delete", "get", "list", "watch")
_GET = _verbs("get")


def _pair(group: str, resource: str, verbs: list[str] = _CRUD) -> list[dict[str, Any]]:
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)},
        {"apiGroups": [group], "resources": [f"{resource}/status"], "verbs": list(_GET)},
    ]


# The rules of the ClusterRole MultiKueue needs on a worker, exactly as Kueue's
# site/static/examples/multikueue/create-multikueue-kubeconfig.sh @ v0.19.2 writes them (the script
# setup_multikueue.md runs; tests/multikueue/test_credentials.py reads the pinned script and compares), in its order:
# every job kind MultiKueue dispatches, its Workloads, and read access to the queues.
WORKER_RULES: tuple[dict[str, Any], ...] = (
    *_pair("batch", "jobs"),
    {"apiGroups": [""], "resources": ["pods"], "verbs": list(_CRUD)},
    *_pair("apps", "statefulsets"),
    *_pair("leaderworkerset.x-k8s.io", "leaderworkersets"),
    *_pair("jobset.x-k8s.io", "jobsets"),
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_CRUD, "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    *_pair("kubeflow.org", "tfjobs"),
    *_pair("kubeflow.org", "paddlejobs"),
    *_pair("kubeflow.org", "pytorchjobs"),
    *_pair("kubeflow.org", "xgboostjobs"),
    *_pair("kubeflow.org", "mpijobs"),
    *_pair("ray.io", "rayjobs"),
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": [*_CRUD, "update", "patch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayclusters/status"], "verbs": list(_GET)},
    *_pair("ray.io", "rayservices"),
    *_pair("workload.codeflare.dev", "appwrappers"),
)


def _labelled(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta = _meta(name)
    if namespace:
        meta["namespace"] = namespace
    return meta


def _binding(kind: str, name: str, role_kind: str, subjects: list[dict[str, Any]], ns: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _labelled(name, ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": subjects,
    }


def worker_objects() -> list[dict[str, Any]]:
    """What a worker holds for the manager: the ServiceAccount MultiKueue acts as, its ClusterRole and binding, and
    the Role that lets the manager's credentials group mint the account's tokens and nothing else (RBAC
    resourceNames narrow `create` on the token subresource to this one account)."""
    account = {"kind": "ServiceAccount", "name": WORKER_ACCOUNT, "namespace": NS_KUEUE}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _labelled(WORKER_ACCOUNT, NS_KUEUE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _labelled(WORKER_ACCOUNT),
            "rules": [dict(r) for r in WORKER_RULES],
        },
        _binding("ClusterRoleBinding", WORKER_ACCOUNT, "ClusterRole", [account], None),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _labelled(TOKEN_ROLE, NS_KUEUE),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["serviceaccounts/token"],
                    "resourceNames": [WORKER_ACCOUNT],
                    "verbs": ["create"],
                }
            ],
        },
        _binding(
            "RoleBinding",
            TOKEN_ROLE,
            "Role",
            [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": MINTER_GROUP}],
            NS_KUEUE,
        ),
    ]


def credentials_iam_policy(partition: str, workers: list[tuple[str, str]]) -> str:
    """The manager's credentials role: it reads each worker's endpoint and CA, nothing else on AWS (what it may do
    on a worker is the access entry's group's RBAC there)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DescribeWorkers",
                    "Effect": "Allow",
                    "Action": ["eks:DescribeCluster"],
                    "Resource": [f"arn:{partition}:eks:{region}:*:cluster/{name}" for name, region in workers],
                }
            ],
        },
        indent=2,
    )


def manager_objects(workers: list[tuple[str, str]], image: str, script: str, client: str) -> list[dict[str, Any]]:
    """The manager's rotation: the CronJob's ServiceAccount (EKS Pod Identity gives it the credentials role), what it
    may do here (apply each worker's Secret, read each MultiKueueCluster), its script with the in-cluster client it
    imports (`client`, kube.py, the health scripts' too), the first renewal's Job and the CronJob."""
    names = [name for name, _ in workers]
    account = [{"kind": "ServiceAccount", "name": CREDENTIALS, "namespace": NS_KUEUE}]
    data = {SCRIPT: script, CLIENT: client}
    env = {
        "WORKERS": ",".join(f"{name}={region}" for name, region in workers),
        "NAMESPACE": NS_KUEUE,
        "SECRET_PREFIX": secret_name(""),
        "WORKER_NAMESPACE": NS_KUEUE,
        "WORKER_SERVICE_ACCOUNT": WORKER_ACCOUNT,
        "TOKEN_SECONDS": str(TOKEN_SECONDS),
        "ACTIVE_WAIT_SECONDS": str(ACTIVE_WAIT_SECONDS),
    }
    labels = {"app.kubernetes.io/name": CREDENTIALS}
    pod: dict[str, Any] = {
        "spec": {
            "serviceAccountName": CREDENTIALS,
            "restartPolicy": "Never",
            "securityContext": dict(restricted.POD),
            "containers": [
                {
                    "name": "renew",
                    "image": image,
                    "command": ["python", "-u", f"/opt/gpufleet/{SCRIPT}"],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "volumeMounts": [{"name": "script", "mountPath": "/opt/gpufleet", "readOnly": True}],
                    "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                    "securityContext": dict(restricted.CONTAINER),
                }
            ],
            "volumes": [{"name": "script", "configMap": {"name": CREDENTIALS}}],
        },
    }
    job = {
        "backoffLimit": 2,
        "activeDeadlineSeconds": 900,
        "template": {
            # A changed script rolls into the next run's pods.
            "metadata": {"labels": labels, "annotations": {"gpufleet.io/scripts-sha256": data_sha256(data)}},
            **pod,
        },
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _labelled(CREDENTIALS, NS_KUEUE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _labelled(CREDENTIALS, NS_KUEUE),
            # RBAC cannot narrow `create` by name (kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to
            # -resources): a server-side apply that creates the Secret needs it unnamed; the rest is per Secret.
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [secret_name(n) for n in names],
                    "verbs": ["get", "patch", "update"],
                },
            ],
        },
        _binding("RoleBinding", CREDENTIALS, "Role", account, NS_KUEUE),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _labelled(CREDENTIALS),
            "rules": [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["multikueueclusters"],
                    "resourceNames": names,
                    "verbs": ["get"],
                }
            ],
        },
        _binding("ClusterRoleBinding", CREDENTIALS, "ClusterRole", account, None),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _labelled(CREDENTIALS, NS_KUEUE), "data": data},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": _labelled(FIRST_RENEWAL, NS_KUEUE), "spec": job},
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": _labelled(CREDENTIALS, NS_KUEUE),
            "spec": {
                "schedule": SCHEDULE,
                "concurrencyPolicy": "Forbid",
                # A run missed by up to an hour (the controller down, a node drained) still runs.
                "startingDeadlineSeconds": 3600,
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {"spec": job},
            },
        },
    ]


# --- The alert (docs/multi-cluster.md, "Rotating credentials"): Kueue exports no metric of a MultiKueueCluster
# The alert: the manager's kube-state-metrics reads each MultiKueueCluster's conditions as custom
# resource state (Kueue exports no metric of them).
METRIC_PREFIX = "gpufleet_multikueue_cluster"
CONDITION_METRIC = f"{METRIC_PREFIX}_condition"
# Inactive this long alerts: longer than a reconnect after the CronJob rewrites a Secret.
INACTIVE_FOR = "10m"
# The CronJob's last success older than this (two runs missed) alerts: the token in use then has 11 h left.
OVERDUE_HOURS = 2 * RENEW_HOURS + 1


def kube_state_metrics_values() -> dict[str, Any]:
    """The kube-state-metrics subchart's values (charts/kube-state-metrics/values.yaml 8.4.0: customResourceState,
    rbac.extraRules) that export every MultiKueueCluster's conditions."""
    return {
        "customResourceState": {
            "enabled": True,
            "config": {
                "kind": "CustomResourceStateMetrics",
                "spec": {
                    "resources": [
                        {
                            "groupVersionKind": {
                                "group": "kueue.x-k8s.io",
                                "version": "v1beta2",
                                "kind": "MultiKueueCluster",
                            },
                            "metricNamePrefix": METRIC_PREFIX,
                            "labelsFromPath": {"cluster": ["metadata", "name"]},
                            "metrics": [
                                {
                                    "name": "condition",
                                    "help": "A MultiKueueCluster's status conditions: 1 when True, else 0.",
                                    "each": {
                                        "type": "Gauge",
                                        "gauge": {
                                            "path": ["status", "conditions"],
                                            "labelsFromPath": {"type": ["type"]},
                                            "valueFrom": ["status"],
                                        },
                                    },
                                }
                            ],
                        }
                    ]
                },
            },
        },
        "rbac": {
            "extraRules": [
                {"apiGroups": ["kueue.x-k8s.io"], "resources": ["multikueueclusters"], "verbs": ["list", "watch"]}
            ]
        },
    }


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def rule_groups(workers: list[str]) -> list[dict[str, Any]]:
    """The manager's alerts: a worker's MultiKueueCluster inactive, or never reported, and the credentials CronJob
    overdue (kube-state-metrics' kube_cronjob_status_last_successful_time, docs/metrics/workload/cronjob-metrics.md)."""
    active = f'{CONDITION_METRIC}{{type="Active"}}'
    unreported = " or ".join(f'absent({CONDITION_METRIC}{{type="Active",cluster="{w}"}})' for w in workers)
    overdue = (
        f'time() - kube_cronjob_status_last_successful_time{{namespace="{NS_KUEUE}",cronjob="{CREDENTIALS}"}}'
        f" > {OVERDUE_HOURS * 3600}"
    )
    renew_now = f"kubectl -n {NS_KUEUE} create job --from=cronjob/{CREDENTIALS} renew-now"
    return [
        {
            "name": "gpufleet-multikueue",
            "rules": [
                _alert(
                    "MultiKueueClusterInactive",
                    f"max by (cluster) ({active}) == 0",
                    INACTIVE_FOR,
                    "critical",
                    "MultiKueue worker {{ $labels.cluster }} is inactive: nothing is dispatched to it",
                    "MultiKueueCluster {{ $labels.cluster }} reports Active False or Unknown (an expired or refused"
                    " kubeconfig, the worker unreachable). Check `kubectl get multikueuecluster"
                    " {{ $labels.cluster }}` and the last Job of the CronJob"
                    f" {NS_KUEUE}/{CREDENTIALS}; renew at once with `{renew_now}`.",
                ),
                _alert(
                    "MultiKueueClusterUnreported",
                    unreported,
                    "30m",
                    "warning",
                    "MultiKueue worker {{ $labels.cluster }} reports no Active condition",
                    "kube-state-metrics sees no Active condition of MultiKueueCluster {{ $labels.cluster }}: it does"
                    f" not exist, or Kueue has not reconciled it (its Secret never written: start the CronJob"
                    f" {NS_KUEUE}/{CREDENTIALS} once).",
                ),
                _alert(
                    "MultiKueueCredentialsOverdue",
                    overdue,
                    "0m",
                    "warning",
                    f"The MultiKueue credentials CronJob has not succeeded for {OVERDUE_HOURS} h",
                    f"CronJob {NS_KUEUE}/{CREDENTIALS} renews each worker's token every {RENEW_HOURS} h and the token"
                    f" lives {TOKEN_SECONDS // 3600} h: after {OVERDUE_HOURS} h without a success the one in use"
                    f" expires in {TOKEN_SECONDS // 3600 - OVERDUE_HOURS} h. Its failed Jobs' logs name the worker and"
                    " the error.",
                ),
            ],
        }
    ]
