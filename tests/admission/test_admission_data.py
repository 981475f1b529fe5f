"""The admission policies authored as package data (gpufleet/data/admission, gpufleet.plan.manifests.admission_data):
every policy gpufleet renders is authored there, every expression compiles (cel-python, as tests/admission/vap.py
runs them), as written and as rendered in every golden tree, and is short enough to review in a pull request; the
fleet's data goes only where the policy says `${name}`."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.manifests import admission_data, admission_policy, kueue

celpy = pytest.importorskip("celpy", reason="cel-python (test extra) compiles CEL")

# The longest expression a reviewer reads in one piece, in characters (docs/architecture.md; the longest today:
# `selected` of gpufleet-serving-readiness, 998). A variable that is only the fleet's data is not counted.
EXPRESSION_LIMIT = 1000
AUTHORED = sorted(
    p.name.removesuffix(".yaml")
    for p in resources.files("gpufleet").joinpath(admission_data.DIRECTORY).iterdir()
    if p.name.endswith(".yaml")
)
GOLDEN = Path(__file__).parents[1] / "golden" / "trees"
RENDERED = sorted(GOLDEN.glob("*/*/*/k8s/ValidatingAdmissionPolicy-cluster-*.yaml"))


def _expressions(spec: dict[str, Any]) -> list[tuple[str, str]]:
    out = [(f"variables.{v['name']}", v["expression"]) for v in spec.get("variables", [])]
    out += [(f"matchConditions.{c['name']}", c["expression"]) for c in spec.get("matchConditions", [])]
    for i, v in enumerate(spec["validations"]):
        out.append((f"validations[{i}].expression", v["expression"]))
        if "messageExpression" in v:
            out.append((f"validations[{i}].messageExpression", v["messageExpression"]))
    return out


def _data_only(name: str) -> set[str]:
    """The variables of policy `name` that are only a datum the module fills in."""
    spec = admission_data.authored(name)["spec"]
    return {v["name"] for v in spec.get("variables", []) if admission_data.PLACEHOLDER.fullmatch(v["expression"])}


def test_the_policies_are_found() -> None:
    assert "gpufleet-serving-readiness" in AUTHORED
    assert len(RENDERED) > 50


def test_every_rendered_policy_is_authored_as_data() -> None:
    rendered = {p.name.removeprefix("ValidatingAdmissionPolicy-cluster-").removesuffix(".yaml") for p in RENDERED}
    assert rendered == set(AUTHORED)


@pytest.mark.parametrize("name", AUTHORED)
def test_every_expression_compiles_and_is_reviewable(name: str) -> None:
    env = celpy.Environment()
    data_only = {f"variables.{v}" for v in _data_only(name)}
    for where, expression in _expressions(admission_data.authored(name)["spec"]):
        if where in data_only:
            continue
        # a datum stands where a CEL literal would: `[]` parses wherever one does
        env.compile(admission_data.PLACEHOLDER.sub("[]", expression))  # raises CELParseError on a syntax error
        assert len(expression) <= EXPRESSION_LIMIT, f"{name} {where}: {len(expression)} characters"


@pytest.mark.parametrize("path", RENDERED, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_every_rendered_expression_compiles(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    env = celpy.Environment()
    data_only = {f"variables.{v}" for v in _data_only(doc["metadata"]["name"])}
    for where, expression in _expressions(doc["spec"]):
        env.compile(expression)
        assert "${" not in expression, f"{path} {where}: unfilled"
        assert where in data_only or len(expression) <= EXPRESSION_LIMIT, f"{path} {where}: {len(expression)}"


def test_the_fleet_data_fills_exactly_the_placeholders() -> None:
    data = {"inferenceGroups": ["serve"], "inferenceTaints": [], "inferenceOnlyNamespaces": []}
    policy = admission_data.policy("gpufleet-serving-readiness", data)
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["inferenceGroups"] == '["serve"]'
    assert admission_data.named(policy) == set()
    assert policy["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpufleet"}
    with pytest.raises(AssertionError, match="the policy names"):
        admission_data.policy("gpufleet-serving-readiness", {"inferenceGroups": []})
    with pytest.raises(AssertionError, match="the policy names"):
        admission_data.policy("gpufleet-team-no-daemonsets", {"inferenceGroups": []})


def test_a_list_item_splices_and_a_message_takes_text() -> None:
    spec = admission_policy.queue_name_policy((kueue.LWS_FRAMEWORK,))["spec"]
    assert [r["resources"] for r in spec["matchConstraints"]["resourceRules"]] == [["jobs"], ["leaderworkersets"]]
    assert spec["validations"][0]["message"].startswith("Jobs and LeaderWorkerSets in team namespaces must set")
    with pytest.raises(AssertionError, match="filled with text"):
        admission_data.policy(
            admission_policy.QUEUE_NAME_POLICY, {"jobKindRules": [], "jobKinds": ["Jobs"], "managedParents": []}
        )


def test_the_queue_policy_knows_the_group_of_every_parent_kind() -> None:
    """The exemption maps each Kueue-managed parent kind to its API group, as gpufleet.plan.manifests.kueue does."""
    (condition,) = (
        c
        for c in admission_data.authored(admission_policy.QUEUE_NAME_POLICY)["spec"]["matchConditions"]
        if c["name"] == admission_policy.PARENT_CONDITION
    )
    for framework in admission_policy.PARENT_FRAMEWORKS:
        group, _, kind = kueue.RESOURCES[framework]
        assert f"'{kind}': '{group}/'" in condition["expression"]
