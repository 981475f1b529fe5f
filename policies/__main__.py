"""The gpufleet CrossGuard policy pack: `pulumi preview --policy-pack policies`.

Builds the pack from the pure rules in policies/rules.py and serves it; nothing else. Constructing a
`PolicyPack` starts the analyzer server, so this file is only ever run by the Pulumi CLI, never imported.
"""

import os
import sys

# The pack runs from this directory; make the repository root importable so `policies.*` (and the standard-library
# leaves of gpufleet it shares names with: gpufleet.names, gpufleet.entries) resolve even where gpufleet itself is
# not installed (only policies/requirements.txt is).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy, StackValidationPolicy, proxy  # noqa: E402

from policies import adapter  # noqa: E402
from policies.rules import MANDATORY, RULES, Rule  # noqa: E402

SENTINELS = frozenset(v for k, v in vars(proxy).items() if k.startswith("UNKNOWN_") and k.endswith("_VALUE"))


def policy(rule: Rule) -> ResourceValidationPolicy | StackValidationPolicy:
    level = EnforcementLevel.MANDATORY if rule.level == MANDATORY else EnforcementLevel.ADVISORY
    if rule.scope == "resource":
        return ResourceValidationPolicy(
            name=rule.name, description=rule.description, enforcement_level=level, remediation_steps=rule.fix,
            validate=adapter.resource_validator(rule, SENTINELS),
        )
    return StackValidationPolicy(
        name=rule.name, description=rule.description, enforcement_level=level, remediation_steps=rule.fix,
        validate=adapter.stack_validator(rule, SENTINELS),
    )


PolicyPack(name="gpufleet", policies=[policy(rule) for rule in RULES])
