"""One ComponentResource per included stage; its children are the stage's planned resources and its readiness.

The next stage waits for the readiness (a `pulumi.Stash`, a built-in resource that only lives in the stack's
state), not for the component: a dependency on a component is expanded by the SDK to every one of its children,
for every dependent, and each such edge is checked for cycles by walking everything behind it
(pulumi/runtime/rpc.py `_add_dependency`, resource_cycle_breaker.py), which grows with the square of the fleet.
The readiness depends on the stage's gates and on the resources nothing else of the stage waits for
(`plan.readiness`), so it is created only after the whole stage, and the engine orders deletes the same way.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pulumi

from gpufleet.components.factory import Registry, create
from gpufleet.plan import StagePlan, readiness


class Stage(pulumi.ComponentResource):
    """`gpufleet:stage:<Name>`: registers the resources of one stage after `after` (the previous stage's readiness);
    `outputs` names, per resource id, the outputs that Refs read (`gpufleet.plan.outputs_read`)."""

    def __init__(
        self,
        stage: StagePlan,
        registry: Registry,
        after: Sequence[pulumi.Resource],
        outputs: Mapping[str, frozenset[str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"gpufleet:stage:{stage.name.capitalize()}", stage.directory, None, opts)
        for res in stage.content.resources:
            child_opts = pulumi.ResourceOptions(
                parent=self,
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
        self.ready = pulumi.Stash(
            f"{stage.directory}-ready",
            input={"stage": stage.name, "gates": [g.name for g in stage.content.gates]},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[registry[r] for r in readiness(stage)]),
        )
        self.register_outputs({"resources": len(stage.content.resources)})
