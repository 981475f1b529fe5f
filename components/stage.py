"""One ComponentResource per included stage; its children are exactly the stage's planned resources."""

from __future__ import annotations

from typing import Sequence

import pulumi

from components.factory import Registry, create
from gpufleet.plan import StagePlan


class Stage(pulumi.ComponentResource):
    """`gpufleet:stage:<Name>`: registers the resources of one stage, after the previous stage."""

    def __init__(self, stage: StagePlan, registry: Registry, after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"gpufleet:stage:{stage.name.capitalize()}", stage.directory, None, opts)
        for res in stage.content.resources:
            child_opts = pulumi.ResourceOptions(
                parent=self,
                # Order between stages comes from depends_on on the previous stage (not from parentage).
                depends_on=[*after, *(registry[d] for d in res.depends_on)],
                protect=res.protect,
                retain_on_delete=res.retain_on_delete,
                ignore_changes=list(res.ignore_changes) or None,
                provider=registry[res.provider] if res.provider else None,
            )
            registry[res.id] = create(res, registry, child_opts)
        self.register_outputs({"resources": len(stage.content.resources)})
