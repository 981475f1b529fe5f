"""The admission policies authored as package data (gpufleet/data/admission, gpufleet.plan.manifests.admission_data):
every expression compiles (cel-python, as tests/admission/vap.py runs them) and is short enough to review in a pull
request; the fleet's data goes only where the policy says FLEET."""

from __future__ import annotations

from importlib import resources

import pytest

from gpufleet.plan.manifests import admission_data

celpy = pytest.importorskip("celpy", reason="cel-python (test extra) compiles CEL")

# The longest expression a reviewer reads in one piece, in characters (the longest today: `selected` of
# gpufleet-serving-readiness, 998).
EXPRESSION_LIMIT = 1000
AUTHORED = sorted(
    p.name.removesuffix(".yaml")
    for p in resources.files("gpufleet").joinpath(admission_data.DIRECTORY).iterdir()
    if p.name.endswith(".yaml")
)


def _expressions(name: str) -> list[tuple[str, str]]:
    spec = admission_data.authored(name)["spec"]
    out = [(f"variables.{v['name']}", v["expression"]) for v in spec.get("variables", [])]
    out += [(f"matchConditions.{c['name']}", c["expression"]) for c in spec.get("matchConditions", [])]
    for i, v in enumerate(spec["validations"]):
        out.append((f"validations[{i}].expression", v["expression"]))
        if "messageExpression" in v:
            out.append((f"validations[{i}].messageExpression", v["messageExpression"]))
    return [(where, e) for where, e in out if e != admission_data.PLACEHOLDER]


def test_the_policies_are_found() -> None:
    assert "gpufleet-serving-readiness" in AUTHORED


@pytest.mark.parametrize("name", AUTHORED)
def test_every_expression_compiles_and_is_reviewable(name: str) -> None:
    env = celpy.Environment()
    for where, expression in _expressions(name):
        env.compile(expression)  # raises CELParseError on a syntax error
        assert len(expression) <= EXPRESSION_LIMIT, f"{name} {where}: {len(expression)} characters"


def test_the_fleet_data_fills_exactly_the_placeholders() -> None:
    data = {"inferenceGroups": ["serve"], "inferenceTaints": [], "inferenceOnlyNamespaces": []}
    policy = admission_data.policy("gpufleet-serving-readiness", data)
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["inferenceGroups"] == '["serve"]'
    assert admission_data.PLACEHOLDER not in variables.values()
    assert policy["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpufleet"}
    with pytest.raises(AssertionError, match="the policy names"):
        admission_data.policy("gpufleet-serving-readiness", {"inferenceGroups": []})
