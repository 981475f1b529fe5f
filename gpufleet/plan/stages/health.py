"""Stage 7: health. DCGM health checks to a node condition (Node Problem Detector), cordon/drain remediation,
straggler alerts, and the planted-fault verification gate.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/stages/health.py.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from gpufleet.plan.builders.common import helm, k8s
from gpufleet.plan.manifests import health, node_monitoring, rules_promql, telemetry
from gpufleet.plan.parts import AtFoundation, BuildContext, Gate, Resource, StageContent
from gpufleet.plan.stages.telemetry import prometheus_dependency
from gpufleet.spec.names import NS_HEALTH
from gpufleet.spec.provisioning import scaled_by

NPD_RELEASE = "node-problem-detector"


def at_foundation(ctx: BuildContext) -> AtFoundation:
    fleet = ctx.fleet
    return AtFoundation(node_repair=partial(health.node_repair_config, fleet))


def _repair_notes(ctx: BuildContext) -> list[str]:
    fleet = ctx.fleet
    if fleet.health.auto_repair != "Enabled":
        return ["- EKS node auto repair: disabled (health.autoRepair)."]
    agent = node_monitoring.pinned_release(fleet) or "unpinned"
    actions = dict(node_monitoring.repair_actions(fleet, fleet.node_groups[0]))
    named = {r: a for r, a in actions.items() if not r.startswith("DCGMHealthCode")}
    codes = {int(r.removeprefix("DCGMHealthCode")): a for r, a in actions.items() if r.startswith("DCGMHealthCode")}
    by_action = {
        a: ", ".join(f"`{r}`" for r, b in named.items() if b == a)
        for a in (node_monitoring.REBOOT, node_monitoring.REPLACE, node_monitoring.NO_ACTION)
    }
    eks_codes = ", ".join(f"{c} {a}" for c, a in codes.items() if a != node_monitoring.NO_ACTION)
    lines = [
        (
            "- EKS node auto repair on every managed GPU node group, condition"
            f" `{health.ACCELERATED_HARDWARE_READY}` (EKS node monitoring agent {agent}; XID reasons are that agent's"
            f" well-known XIDs). Reboot: {by_action['Reboot']}."
            f" Replace: {by_action['Replace']}. NoAction: {by_action['NoAction']} (the agent lost its DCGM host engine:"
            " software, not the GPUs)."
        ),
        (
            f"- One owner per DCGM fault class: DCGM health incidents (`DCGMHealthCode<N>`, {len(codes)} codes of the"
            " DCGM the GPU Operator runs) are the remediation controller's (NoAction for EKS: its class-aware drain is"
            " not cut short by a reboot), except where the GPU is gone or must be reset, which EKS repairs"
            f" (DCGMHealthCode {eks_codes}). No `DCGMDiagnosticFailure` override: the agent never runs active"
            " diagnostics on EKS (no DCGM_DIAG_LEVEL in the add-on); the health stage's `dcgmi diag` does."
        ),
        "",
        "| node group | class | repaired by | repair wait (min) | repairs stop above N unhealthy nodes | parallel"
        " repairs |",
        "|---|---|---|---|---|---|",
    ]
    for group in fleet.node_groups:
        if health.repair_owner(fleet, group) == health.KARPENTER:
            lines.append(
                f"| {group.name} | {group.workload_class.value} | Karpenter node repair (replace) |"
                f" {health.KARPENTER_REPAIR_TOLERATION_SECONDS // 60} |"
                f" {health.KARPENTER_UNHEALTHY_PERCENT}% of the pool's nodes, rounded up | no limit |"
            )
            continue
        t = health.repair_thresholds(group)
        lines.append(
            f"| {group.name} | {group.workload_class.value} | EKS node auto repair |"
            f" {health.REPAIR_WAIT_MINUTES[group.workload_class]} |"
            f" {t['maxUnhealthyNodeThresholdCount']} | {t['maxParallelNodesRepairedCount']} |"
        )
    pools = [g.name for g in fleet.node_groups if health.repair_owner(fleet, g) == health.KARPENTER]
    if pools:
        lines += [
            "",
            (
                f"- Karpenter pools ({', '.join(f'`{p}`' for p in pools)}): Karpenter's node repair owns"
                f" `{health.ACCELERATED_HARDWARE_READY}` whatever its reason: no per-reason override and no reboot;"
                f" {health.KARPENTER_REPAIR_TOLERATION_SECONDS // 60} minutes after the condition turned False it"
                " deletes the NodeClaim with its termination time set to now (the pods go without waiting for their"
                " disruption budgets), and a new node comes for the pods still pending. So the remediator's"
                " class-aware drains there run only within those minutes: an Interactive node's one-hour grace and an"
                " Inference node's one-replica-at-a-time drain are cut short, DCGM health codes included; the"
                " remediator still cordons and drains first."
            ),
        ]
    return lines + [""]


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    h = fleet.health
    warnings: list[str] = []
    version = fleet.versions.node_problem_detector
    npd = helm(
        "nodeProblemDetector",
        version,
        fleet=fleet,
        release=NPD_RELEASE,
        namespace=NS_HEALTH,
        values=health.npd_values(fleet),
    )
    # The release creates the namespace; everything else in it waits for the release.
    after = (npd.id,)
    scripts = k8s(health.scripts_configmap(), depends_on=after)
    resources: list[Resource] = [npd, scripts]
    if h.remediation != "None":
        resources += [k8s(obj, depends_on=after) for obj in health.remediator_objects(fleet)]
    ns = telemetry.monitoring_namespace(fleet)
    resources.append(
        k8s(
            rules_promql.prometheus_rule("gpufleet-health", ns, rules_promql.health_groups()),
            depends_on=prometheus_dependency(ctx),
        )
    )
    resources.append(k8s(telemetry.training_step_pod_monitor(fleet), depends_on=prometheus_dependency(ctx)))
    fault = [k8s(obj, depends_on=after) for obj in health.planted_fault_objects(fleet)]
    job = fault[-1]
    # The Job runs only once the detector, the scripts and the controller are in place.
    job = replace(
        job,
        depends_on=tuple(r.id for r in resources if r.id.startswith(("helm-", "configmap-", "deployment-")))
        + tuple(r.id for r in fault[:-1]),
    )
    resources += [*fault[:-1], job]

    group = health.gate_group(fleet)
    wclass = group.workload_class.value
    drains = h.remediation == "CordonAndDrain" and wclass in ("Training", "Batch")
    hold = health.repair_hold_seconds(fleet, group)
    steps = [
        f"on one `{group.name}` node the Job injects a row-remap failure into the node's DCGM host engine (`dcgmi test"
        " --inject`, field 395 on GPU 0; only the engine's cached value, nothing reaches the GPU), DCGM's own health"
        f" watch fails and Node Problem Detector sets `{rules_promql.DCGM_CONDITION}=True`"
    ]
    if h.remediation != "None":
        steps.append("the remediation controller cordons the node")
    if drains:
        # Kueue is installed only with teams and a pinned version (stages/admission.py); without it the pods'
        # own controllers (Job, JobSet, Deployment) recreate them, and nothing requeues.
        kueue = ctx.includes("admission") and bool(fleet.teams) and fleet.versions.kueue is not None
        steps.append(
            "its GPU pods are evicted and their jobs requeued by Kueue onto other nodes (no GPU pod left on the node)"
            if kueue
            else (
                "its GPU pods are evicted and their controllers recreate them on other nodes (no GPU pod left on the"
                " node)"
            )
        )
    elif h.remediation == "CordonAndDrain" and wclass == "Interactive":
        steps.append("the node's GPU pods stay (the Interactive grace period)")
    if hold and health.repair_owner(fleet, group) == health.KARPENTER:
        steps.append(
            f"the node monitoring agent reports `{health.ACCELERATED_HARDWARE_READY}=False` with `DCGMHealthCode80`,"
            f" and for {hold // 60} minutes from that transition Karpenter's node repair leaves the node alone (the"
            f" same node object and boot); the fault ends {health.KARPENTER_HOLD_MARGIN_SECONDS // 60} minutes before"
            f" Karpenter's {health.KARPENTER_REPAIR_TOLERATION_SECONDS // 60}-minute toleration would delete the"
            " NodeClaim"
        )
    elif hold:
        steps.append(
            f"the node monitoring agent reports `{health.ACCELERATED_HARDWARE_READY}=False` with `DCGMHealthCode80`,"
            f" and for {hold // 60} minutes (the repair wait and five more) EKS node auto repair leaves the node"
            " alone (the same node object and boot: the override hands the fault to the remediator)"
        )
    steps.append(
        "after the injection stops the condition returns to False"
        + (" and the node is uncordoned" if h.remediation != "None" else "")
    )
    gate = Gate(
        name="planted-fault",
        resource=job.id,
        expectation="; ".join(steps) + ". The Job exits 0 only if every step is seen in time.",
    )
    not_proven = [
        "a fault DCGM sees but cannot report (a hung GPU that stalls the host engine: the condition goes Unknown, which"
        " the remediator holds)",
        "EKS's own repairs (the gate leaves the codes EKS owns alone: an XID or a fallen-off GPU would reboot or"
        " replace the node)",
    ]
    if not drains:
        not_proven.append(
            f"the drain of a Training or Batch node (the gate node is {wclass}"
            + (", whose GPU pods wait out the one-hour grace" if wclass == "Interactive" else "")
            + (", drained one replica at a time as capacity allows" if wclass == "Inference" else "")
            + ")"
        )
    gate_notes = [
        # What it proves is the gate's expectation, which plan.md prints under the stage: said once.
        "- Planted-fault gate: what it proves, step by step, is under **Gate `planted-fault`** below. What it does"
        " not prove: " + "; ".join(not_proven) + ". It runs on a live node at rollout: run it at a quiet time."
    ]

    # The Job's pending pod gets its node from the Cluster Autoscaler, or from Karpenter on a Karpenter pool.
    if group.min_size < 1 and scaled_by(fleet, group) is None:
        warnings.append(
            f"planted-fault gate: no node group has minSize >= 1; the verification Job waits for a `{group.name}` node"
            " to exist"
        )
    # In mode Create gpufleet always installs the agent (builders/cluster.py REQUIRED_ADDONS; an unpinned one gets
    # EKS's default version, warned there); only on an existing cluster can it be missing.
    if h.auto_repair == "Enabled" and fleet.cluster.mode == "Existing":
        warnings.append(
            "health.autoRepair is Enabled on an existing cluster, where gpufleet manages no EKS add-ons: the"
            " eks-node-monitoring-agent add-on must be installed (EKS repairs GPU faults only from the conditions that"
            " agent reports)"
        )
    if h.dcgm_diag_level >= 2:
        warnings.append(
            f"health.dcgmDiagLevel {h.dcgm_diag_level} runs active stress tests every {h.check_interval_seconds}s on"
            " GPUs that may be running jobs; NVIDIA intends level 1 for periodic checks"
        )

    notes = (
        _repair_notes(ctx)
        + gate_notes
        + [
            (
                f"- DCGM health: every {h.check_interval_seconds}s a sidecar of Node Problem Detector runs `dcgmi"
                f" health -c` and `dcgmi diag -r {h.dcgm_diag_level}` against the node's standalone DCGM hostengine; a"
                " failure"
                f" sets the node condition `{rules_promql.DCGM_CONDITION}` (a stale or missing result sets it Unknown)."
            ),
            f"- Remediation ({h.remediation}): "
            + (
                "cordon, then Training and Batch nodes are drained at once, Inference nodes one replica at a time"
                " (broken ones first) once every other replica of its workload is ready, Interactive nodes after a"
                " one-hour grace period; the node is uncordoned when the check passes again."
                if h.remediation == "CordonAndDrain"
                else (
                    "cordon only; draining is left to operators."
                    if h.remediation == "CordonOnly"
                    else "none; the condition and the alert only."
                )
            ),
            (
                f"- Stragglers: training jobs export `{rules_promql.TRAINING_STEP_METRIC}` (labels `training_job`,"
                " `rank`; the rank's compute time per step, before the gradient collective) on a container port named"
                f" `{telemetry.TRAINING_METRICS_PORT}` of pods labelled `{telemetry.TRAINING_METRICS_LABEL}=true`;"
                " PodMonitor `gpufleet-training-step` scrapes them"
                + (" in the team namespaces" if fleet.teams else " in every namespace")
                + f". TrainingStragglerRank fires when a rank's step time exceeds {rules_promql.STRAGGLER_RATIO:g}x the"
                " job's fastest quartile of ranks for 10 minutes (robust in a 2-node job, where the median sits between"
                " the nodes)."
            ),
        ]
    )
    return StageContent(resources=tuple(resources), gates=(gate,), warnings=tuple(warnings), notes=tuple(notes))
