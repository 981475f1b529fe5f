"""The gpufleet CrossGuard policy pack: `pulumi preview --policy-pack policies`.

Builds the pack from the pure rules in policies/rules.py (imported as gpufleet.policies.rules) and serves it;
nothing else. Constructing a `PolicyPack` starts the analyzer server, so this file is only ever run by the Pulumi
CLI, never imported.
"""

import os
import sys

# The Pulumi CLI runs the pack from this directory. In a checkout (gpufleet/policies links to this folder), make the
# repository root importable so `gpufleet.policies.*` and the standard-library leaves of gpufleet it shares names with
# (gpufleet.spec.names, gpufleet.tree.entries) resolve even where gpufleet itself is not installed (only
# policies/requirements.txt is). Installed from the wheel, this file is gpufleet/policies/__main__.py and gpufleet
# is importable already.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isdir(os.path.join(ROOT, "gpufleet")):
    sys.path.insert(0, ROOT)

from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy, StackValidationPolicy, proxy  # noqa: E402

from gpufleet.policies import adapter  # noqa: E402
from gpufleet.policies.rules import MANDATORY, RULES, Rule  # noqa: E402

SENTINELS = frozenset(v for k, v in vars(proxy).items() if k.startswith("UNKNOWN_") and k.endswith("_VALUE"))


def policy(rule: Rule) -> ResourceValidationPolicy | StackValidationPolicy:
    level = EnforcementLevel.MANDATORY if rule.severity == MANDATORY else EnforcementLevel.ADVISORY
    if rule.scope == "resource":
        return ResourceValidationPolicy(
            name=rule.name,
            description=rule.description,
            enforcement_level=level,
            remediation_steps=rule.hint,
            validate=adapter.resource_validator(rule, SENTINELS),
        )
    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        enforcement_level=level,
        remediation_steps=rule.hint,
        validate=adapter.stack_validator(rule, SENTINELS),
    )


PolicyPack(name="gpufleet", policies=[policy(rule) for rule in RULES])
