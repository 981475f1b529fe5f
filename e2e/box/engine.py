"""The fleet's Kubernetes stages through a real Pulumi engine: the CLI and the kubernetes provider built from their
modules (e2e.box.build.ENGINE), the program gpufleet's own (gpufleet.components.deploy), run inline by the
Automation API with a local file backend.

What the box cannot hold is taken out of the plan before the program runs (`boxed`), the rest is the plan as `pulumi
up` receives it: AWS resources (stage 1 and the roles, buckets and parameters of later stages) need AWS, and Helm
releases need their charts' repositories; the box applies the releases itself before the engine runs
(e2e.box.fleet.up(releases_only=True)), as their place in stage order has them before the objects that use their
kinds. A reference to an AWS resource's output becomes the value the box's own apply gives it (e2e.box.apply), and
the kubernetes provider is pointed at the box's kubeconfig instead of the EKS cluster's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from e2e.box import apply, build
from gpufleet.plan.parts import LEAVES, Concat, Ref, Resource, RolloutPlan, StageContent

PROVIDER_TYPE = "pulumi:providers:kubernetes"
PROJECT = "gpufleet-box"


def kept(res: Resource) -> bool:
    """A resource the box can hold: a Kubernetes object (not a Helm release) or the kubernetes provider."""
    return res.type == PROVIDER_TYPE or (res.type.startswith("kubernetes:") and res.type != apply.RELEASE)


def _outside(value: Any, ids: frozenset[str]) -> Any:
    """`value` with each Ref to a resource not in `ids` (and each Concat holding one) replaced by the string the
    box's apply puts there."""
    kind = type(value)
    if kind in LEAVES:
        return value
    if isinstance(value, Mapping):
        return {k: _outside(v, ids) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_outside(v, ids) for v in value]
    if isinstance(value, Ref):
        return value if value.resource in ids else apply.resolve_outputs(str(value))
    if isinstance(value, Concat):
        if all(not isinstance(p, Ref) or p.resource in ids for p in value.parts):
            return value
        return Concat(*(_outside(p, ids) for p in value.parts))
    return value


def _wired(res: Resource, ids: frozenset[str], kubeconfig: str) -> Resource:
    if res.type == PROVIDER_TYPE:
        return dataclasses.replace(res, args={**res.args, "kubeconfig": kubeconfig}, depends_on=())
    return dataclasses.replace(
        res, args=_outside(res.args, ids), depends_on=tuple(d for d in res.depends_on if d in ids)
    )


def boxed(plan: RolloutPlan, kubeconfig: Path) -> RolloutPlan:
    """The plan's Kubernetes objects and provider, the provider on the box's kubeconfig (see the module doc)."""
    ids = frozenset(r.id for s in plan.stages for r in s.content.resources if kept(r))
    text = kubeconfig.read_text()
    stages = []
    for stage in plan.stages:
        content = stage.content
        resources = tuple(_wired(r, ids, text) for r in content.resources if r.id in ids)
        gates = tuple(g for g in content.gates if g.resource in ids)
        stages.append(
            dataclasses.replace(stage, content=StageContent(resources=resources, gates=gates, notes=content.notes))
        )
    return dataclasses.replace(plan, stages=tuple(stages))


def objects(plan: RolloutPlan, *, patches: bool = True) -> list[Mapping[str, Any]]:
    """The Kubernetes objects of the plan's included stages, as the engine sends them; without the patches (a
    `...Patch` resource owns fields of an object it did not create, so its delete gives the fields up and the
    object stays) if not `patches`."""
    return [
        r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if "object" in r.args and (patches or not r.type.endswith("Patch"))
    ]


def command(root: Path) -> auto.PulumiCommand:
    """The built CLI, in the layout PulumiCommand expects (root/bin/pulumi)."""
    cli = build.build(build.PULUMI) / "pulumi"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    link = root / "bin" / "pulumi"
    if not link.exists():
        link.symlink_to(cli)
    return auto.PulumiCommand(root=str(root), skip_version_check=True)


def stack(plan: RolloutPlan, root: Path) -> auto.Stack:
    """A stack of the boxed plan's program, with a local file backend and a Pulumi home of its own under `root`.
    The provider is an ambient plugin: the engine takes pulumi-resource-kubernetes from PATH, before any plugin
    it would install (https://www.pulumi.com/docs/iac/concepts/plugins/#ambient-plugins)."""
    from gpufleet.components.deploy import deploy

    provider = build.build(build.PULUMI_KUBERNETES)
    state = root / "state"
    state.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{provider}{os.pathsep}{os.environ.get('PATH', '')}",
        "PULUMI_CONFIG_PASSPHRASE": "box",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
    }
    os.environ.pop("PULUMI_IGNORE_AMBIENT_PLUGINS", None)
    workspace = auto.LocalWorkspaceOptions(
        work_dir=str(root),
        pulumi_home=str(root / "home"),
        pulumi_command=command(root / "cli"),
        env_vars=env,
        project_settings=auto.ProjectSettings(
            name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=state.as_uri())
        ),
    )
    return auto.create_or_select_stack(
        stack_name=plan.environment, project_name=PROJECT, program=lambda: deploy(plan), opts=workspace
    )
