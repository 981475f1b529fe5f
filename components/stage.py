"""One ComponentResource per included stage; its children are the stage's planned resources and its readiness.

The next stage waits for the readiness (a `pulumi.Stash`, a built-in resource that only lives in the stack's
state), not for the component: a dependency on a component is expanded by the SDK to every one of its children,
for every dependent. The readiness depends on the stage's gates and on the resources nothing else of the stage
waits for (`plan.readiness`), so it is created only after the whole stage, and the engine orders deletes the same
way. The next stage names it through a `UrnDependency`, which keeps the SDK's cycle check within one stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi

from gpufleet.components.factory import Registry, create
from gpufleet.plan.parts import StagePlan, readiness


class UrnDependency(pulumi.CustomResource):
    """`resource` as another resource's dependency, by its URN alone: the engine is asked for the same thing, and
    the SDK's cycle check stops here.

    The request is the same as with `resource` itself: for each dependency the SDK awaits its URN, which resolves
    when its registration does, then sends the URN in the dependent's `dependencies` (pulumi/runtime/rpc.py
    `_add_dependency`). The cycle check is not: for every dependency the SDK walks everything its target depends
    on, looking for the dependent (pulumi/runtime/resource_cycle_breaker.py). Behind a stage's readiness lies every
    earlier stage, so each resource of a stage walked all stages before it, and synth grew with the square of the
    fleet. This stand-in has no dependencies of its own, so each walk ends at it and stays within one stage.
    Across stages no cycle can form: `plan.check_order` rejects a plan in which a stage waits for a later one.
    The SDK makes the same kind of stand-in for dependencies it receives as URNs
    (`pulumi.resource.DependencyResource`), but without a name; this one keeps the resource's, which synth's
    recording reads.
    """

    def __init__(self, resource: pulumi.Resource) -> None:
        super().__init__("", "", dependency=True)  # a dependency-only resource: nothing is registered
        self._name = resource._name
        self.__dict__["urn"] = resource.urn  # as DependencyResource sets it


class Stage(pulumi.ComponentResource):
    """`gpufleet:stage:<Name>`: the parent of one stage's resources and of its readiness (`stage` below)."""

    ready: pulumi.Stash

    def __init__(self, stage: StagePlan) -> None:
        super().__init__(f"gpufleet:stage:{stage.name.capitalize()}", stage.directory, None)


def stage(
    plan: StagePlan, registry: Registry, after: Sequence[pulumi.Resource], outputs: Mapping[str, frozenset[str]]
) -> Stage:
    """Register one stage: its component, its resources after `after` (the previous stage's readiness), then its
    readiness. `outputs` names, per resource id, the outputs that Refs read (`gpufleet.plan.parts.outputs_read`).

    The resources are registered here rather than in `Stage.__init__`, as a component's children usually are:
    for a resource made within a constructor the SDK turns every frame below that constructor into the source
    position it sends with the registration (pulumi/runtime/resource.py `_get_stack_trace`, for each resource), and
    for resources made by gpufleet's one factory that position would be the same line for all of them. Made here,
    they carry none."""
    component = Stage(plan)
    for res in plan.content.resources:
        child_opts = pulumi.ResourceOptions(
            parent=component,
            # Order between stages comes from depends_on on the previous stage's readiness (not from parentage).
            depends_on=[*after, *(registry[d] for d in res.depends_on)],
            protect=res.protect,
            retain_on_delete=res.retain_on_delete,
            ignore_changes=list(res.ignore_changes) or None,
            replace_on_changes=list(res.replace_on_changes) or None,
            delete_before_replace=res.delete_before_replace or None,
            provider=registry[res.provider] if res.provider else None,
        )
        registry[res.id] = create(res, registry, child_opts, outputs.get(res.id, frozenset()))
    # https://www.pulumi.com/docs/iac/concepts/stash/ (pulumi/pulumi sdk/python/lib/pulumi/stash.py)
    component.ready = pulumi.Stash(
        f"{plan.directory}-ready",
        input={"stage": plan.name, "gates": [g.name for g in plan.content.gates]},
        opts=pulumi.ResourceOptions(parent=component, depends_on=[registry[r] for r in readiness(plan)]),
    )
    component.register_outputs({"resources": len(plan.content.resources)})
    return component
