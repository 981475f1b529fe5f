"""The CrossGuard pack: importing the rules starts nothing; __main__.py builds one policy per rule with the rule's
enforcement level; the adapter turns CrossGuard's proxied props (with unknowns) into the predicates' dicts."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpufleet.policies.rules import RULES
from tests.policies.objects import gpu_operator, launch_template, mime, node_group

ROOT = Path(__file__).resolve().parents[2]
pulumi_policy = pytest.importorskip("pulumi_policy", reason="pulumi-policy is a test extra")
from pulumi_policy import proxy  # noqa: E402
from pulumi_policy.policy import (  # noqa: E402
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)


def test_importing_the_rules_loads_no_pulumi() -> None:
    code = (
        "import sys, gpufleet.policies.rules, gpufleet.policies.adapter, gpufleet.commands.check, gpufleet.commands.diff\nprint(sorted(m"
        " for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_policy', 'grpc')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def pack() -> dict[str, Any]:
    captured: dict[str, Any] = {}

    class FakePack:  # stands in for PolicyPack, whose constructor starts the gRPC server and blocks
        def __init__(self, name: str, policies: list[Any], **_: Any) -> None:
            captured.update(name=name, policies={p.name: p for p in policies})

    real = pulumi_policy.PolicyPack
    pulumi_policy.PolicyPack = FakePack
    try:
        runpy.run_path(str(ROOT / "policies" / "__main__.py"), run_name="__main__")
    finally:
        pulumi_policy.PolicyPack = real
    return captured


def test_one_policy_per_rule_with_its_level_and_scope(pack: dict[str, Any]) -> None:
    assert pack["name"] == "gpufleet"
    assert list(pack["policies"]) == [r.name for r in RULES]
    for rule in RULES:
        policy = pack["policies"][rule.name]
        assert policy.enforcement_level.value == rule.severity
        assert type(policy).__name__ == (
            "ResourceValidationPolicy" if rule.scope == "resource" else "StackValidationPolicy"
        )
        assert policy.remediation_steps == rule.hint


def _opts(ignore: list[str]) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, ignore, None, [], PolicyCustomTimeouts(0, 0, 0), [])


def test_resource_policy_reports_on_proxied_props(pack: dict[str, Any]) -> None:
    props = dict(
        node_group()["inputs"],
        taints=[],
        launchTemplate={"id": proxy.UNKNOWN_STRING_VALUE, "version": proxy.UNKNOWN_STRING_VALUE},
    )
    args = ResourceValidationArgs(
        "aws:eks/nodeGroup:NodeGroup",
        proxy.unknown_checking_proxy(props),
        "urn:ng",
        "h100-node-group",
        _opts(["scalingConfig.desiredSize"]),
        None,
    )
    reported: list[tuple[str, Any]] = []
    for name in ("gpu-node-group-tainted", "node-image-pinned", "desired-size-ignored"):
        pack["policies"][name].validate(args, lambda message, urn=None, name=name: reported.append((name, message)))
    # The unknown launch template version is not a violation; the missing taint is, with its fix.
    assert [name for name, _ in reported] == ["gpu-node-group-tainted"]
    assert "Fix: add the taint" in reported[0][1]


def _stack(
    resources: list[dict[str, Any]], unknown_lt_id: bool
) -> tuple[StackValidationArgs, dict[str, PolicyResource]]:
    by_name = {}
    for r in resources:
        props = dict(r["inputs"])
        if unknown_lt_id and r["type"] == "aws:eks/nodeGroup:NodeGroup":
            props["launchTemplate"] = {"id": proxy.UNKNOWN_STRING_VALUE, "version": proxy.UNKNOWN_STRING_VALUE}
        by_name[r["id"]] = PolicyResource(
            r["type"],
            proxy.unknown_checking_proxy(props),
            f"urn:{r['id']}",
            r["id"],
            _opts(r["ignoreChanges"]),
            None,
            None,
            [],
            {},
        )
    return StackValidationArgs(list(by_name.values())), by_name


def test_stack_policy_follows_unknown_refs_through_property_dependencies(pack: dict[str, Any]) -> None:
    bad = launch_template("h100", mime("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"))
    args, by_name = _stack([node_group(), bad, gpu_operator()], unknown_lt_id=True)
    policy = pack["policies"]["training-topology-aligned"]
    reported: list[tuple[str, Any]] = []
    policy.validate(args, lambda message, urn=None: reported.append((message, urn)))
    assert reported == [], "without property dependencies the template cannot be resolved: no verdict at preview"
    by_name["h100-node-group"].property_dependencies = {"launchTemplate": [by_name["h100-launch-template"]]}
    policy.validate(args, lambda message, urn=None: reported.append((message, urn)))
    assert len(reported) == 1 and reported[0][1] == "urn:h100-launch-template"
    assert "topologyManagerPolicy none" in reported[0][0]
