"""The one way in: file -> parse with positions -> schema -> typed Fleet -> rules, for the base spec and for
each environment's merged spec. Raises SpecError with every issue; returns frozen Fleets and warnings.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from gpufleet.base.errors import Issue, Path, SourceFile, SpecError, UsageError, closest, did_you_mean, sort_issues
from gpufleet.rules import clusters as multikueue_rules
from gpufleet.rules import cross_field
from gpufleet.spec import clusters, defaults
from gpufleet.spec.environments import merge_environment
from gpufleet.spec.fields import model_fields
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.load import Loaded, load_file, load_text
from gpufleet.spec.schema import fleet_schema, with_defaults
from gpufleet.spec.schema_errors import schema_issues


@dataclass(frozen=True, slots=True)
class Validated:
    """A valid spec: the base fleet, each environment's merged fleet, and non-blocking warnings."""

    source: SourceFile
    base: Fleet
    environments: Mapping[str, Fleet]
    warnings: tuple[Issue, ...]

    def fleet(self, env: str) -> Fleet:
        """The fleet of one stack: the environment's, or with clusters[] one cluster's (`<env>.<cluster>`)."""
        if env in self.environments:
            return self.environments[env]
        raise UsageError(
            f"--env {env}: a spec with clusters[] has one stack per cluster and environment; name one of"
            f" {', '.join(sorted(self.environments))}"
        )

    def clusters(self, env: str) -> Mapping[str, Fleet]:
        """With clusters[]: the stack of each cluster of environment `env` (empty for a spec of one cluster)."""
        return {
            stack: fleet
            for stack, fleet in self.environments.items()
            if fleet.multikueue is not None and clusters.split_stack(stack)[0] == env
        }


def _check(
    data: Any, source: SourceFile, valid_sections: frozenset[str] = frozenset()
) -> tuple[Fleet | None, list[Issue]]:
    issues = schema_issues(data, source.plain, valid_sections)
    if issues:
        return None, issues + rules_beside_schema_errors(data, issues)
    if clusters.is_multi(data):
        fleets, found = _check_clusters(data, None)
        return (next(iter(fleets.values())) if fleets else None), found
    found = multikueue_rules.spec_issues(data)
    fleet = fleet_from(data)
    return fleet, found + cross_field.check(fleet)


def _check_clusters(data: dict[str, Any], environment: str | None) -> tuple[dict[str, Fleet], list[Issue]]:
    """A schema-valid spec with clusters[]: its own rules, then each cluster's projection through every rule of a
    single-cluster fleet, paths mapped back to the spec.

    Why: docs/architecture.md, "Design notes", pipeline._check_clusters."""
    issues = multikueue_rules.spec_issues(data)
    if any(i.severity == "error" for i in issues):
        return {}, issues
    projections = clusters.project(data)
    envs = [environment] if environment is not None else sorted(data["environments"])
    fleets: dict[str, Fleet] = {}
    seen: set[tuple[Path, str]] = set()
    # The Manager first: its projection holds every worker's node groups, which each worker's fleet is told of.
    dispatched = None
    for projection in sorted(projections, key=lambda p: p.role != "Manager"):
        stacks = {env: clusters.stack_name(env, projection.name) for env in envs}
        fleet = clusters.fleet_of(projection, fleet_from(projection.data), data, stacks, dispatched)
        if fleet.multikueue is not None and dispatched is None:
            dispatched = fleet.multikueue.dispatched
        for issue in cross_field.check(fleet):
            mapped = replace(issue, path=projection.source_path(issue.path))
            if (mapped.path, mapped.message) not in seen:
                seen.add((mapped.path, mapped.message))
                issues.append(mapped)
        key = stacks[environment] if environment is not None else projection.name
        fleets[key] = fleet
    if any(i.severity == "error" for i in issues):
        return {}, issues
    return fleets, issues


# What each attribute of a Fleet is made of, by top-level spec section: the YAML key each field reads
# (gpufleet.spec.fields), and what gpufleet.spec.defaults.fill fills from other sections (systemNodes from the
# cluster, pins into versions, namespaces into teams).
FLEET_SECTIONS: Mapping[str, frozenset[str]] = {
    **{f.name: frozenset({f.path[0]}) for f in model_fields(Fleet) if f.path},
    "node_group": frozenset({"nodeGroups"}),
    "environment": frozenset({"environments"}),
    "paths": frozenset({"nodeGroups", "teams", "imageSets"}),
    "defaulted": frozenset({"cluster", "versions", "teams"}),
    # gpufleet.spec.clusters.fleet_of: the clusters[] entries and admission.multiKueue; the manager's mirror (`queued`)
    # is made of every section a fleet's queues are
    "multikueue": frozenset({"clusters", "admission"}),
    "queued": frozenset({"clusters", "admission", "nodeGroups", "teams", "cluster", "versions", "workloads"}),
}

# A schema-valid value for each required section, standing in for one that does not conform so that the rules that
# read none of the failing sections can run. What a rule reads of a stand-in is never reported (see below).
_STAND_INS: Mapping[str, Any] = {
    "apiVersion": "gpufleet/v1alpha1",
    "kind": "Fleet",
    "metadata": {"name": "stand-in"},
    "cluster": {
        "name": "stand-in",
        "region": "us-east-1",
        "kubernetesVersion": "1.35",
        "network": {"vpcId": "vpc-0a1b2c3d", "subnetIds": ["subnet-0aa", "subnet-0bb"]},
    },
    "nodeGroups": [
        {
            "name": "stand-in",
            "instanceType": "g6.xlarge",
            "workloadClass": "Batch",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.35.6-20260714"},
            "scaling": {"maxSize": 1},
        }
    ],
    "environments": {"stand-in": {"rollout": {"through": "foundation"}}},
}


class _Reads:
    """A Fleet that records which of its attributes a rule reads (rules are pure functions of the Fleet)."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.read.add(name)
        return getattr(self._fleet, name)


def _sections_read(read: set[str]) -> frozenset[str] | None:
    """The spec sections behind the attributes read; None when one is not in FLEET_SECTIONS (it may be anything)."""
    sections: set[str] = set()
    for name in read:
        if name not in FLEET_SECTIONS:
            return None
        sections |= FLEET_SECTIONS[name]
    return frozenset(sections)


def rules_beside_schema_errors(data: Any, schema_errors: list[Issue]) -> list[Issue]:
    """The cross-field issues of a spec that does not conform, from the rules that read no failing section: so a
    spec's rule errors are reported in the same run as its schema errors, not after they are fixed.

    Why: docs/architecture.md, "Design notes", pipeline.rules_beside_schema_errors."""
    if not isinstance(data, dict):
        return []
    schema = fleet_schema()
    candidate = {key: data[key] for key in schema["properties"] if key in data}  # unknown keys left out
    failing = {key for key in schema["required"] if key not in candidate}
    failing |= {str(i.path[0]) for i in schema_errors if i.path and i.path[0] in candidate}
    for key in failing:
        if key in _STAND_INS:
            candidate[key] = copy.deepcopy(_STAND_INS[key])
        else:
            candidate.pop(key, None)
    if not failing or schema_issues(candidate, {}):
        return []
    fleet = fleet_from(candidate)
    issues: list[Issue] = []
    for rule in cross_field.RULES.values():
        reads = _Reads(fleet)
        found = list(rule(cast(Fleet, reads)))
        sections = _sections_read(reads.read)
        if sections is not None and not sections & failing:
            issues += found
    return issues


def fleet_from(data: Any) -> Fleet:
    """The model of schema-valid data: static defaults (gpufleet.spec.schema), then computed ones
    (gpufleet.spec.defaults)."""
    return Fleet.create(*defaults.fill(with_defaults(data)))


def unchanged_sections(merged: dict[str, Any], base: dict[str, Any]) -> frozenset[str]:
    """The top-level sections an environment's merged spec leaves as they are in the base spec: where the base
    is schema-valid, they are valid in the merged spec too (gpufleet.spec.schema.conforms need not look again)."""
    return frozenset(key for key, value in merged.items() if key in base and base[key] == value)


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path[: len(root)] == root for root in roots)


def _not_a_fleet(data: dict[str, Any], name: str) -> Issue | None:
    """One error for a file that is another kind of document (a Kubernetes manifest given to validate), instead of
    a schema error per missing section; None for a spec, or one whose kind is a typo of Fleet."""
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or kind.lower() == "fleet" or closest(kind, ["Fleet"]) is not None:
        return None
    if isinstance(api_version, str) and api_version.startswith("gpufleet/"):
        return None
    of = f"kind {kind}" + (f", apiVersion {api_version}" if isinstance(api_version, str) else "")
    return Issue(
        path=("kind",),
        message=f"this is not a Fleet spec ({of})",
        hint=(
            "gpufleet reads a fleet spec (apiVersion: gpufleet/v1alpha1, kind: Fleet; `gpufleet init` writes one);"
            f" whether this {kind} would run on a fleet: gpufleet explain SPEC --env ENV {name}"
        ),
    )


def validate_loaded(loaded: Loaded, env: str | None = None) -> Validated:
    """Every issue of the file in one run: loader, schema and rules of the base spec, then of each environment."""
    source = loaded.source
    if loaded.fatal or not isinstance(loaded.data, dict):
        found = loaded.issues or [
            Issue(path=(), message="the spec must be a mapping (apiVersion, kind, metadata, ...)")
        ]
        raise SpecError(source, sort_issues(source, found))
    foreign = _not_a_fleet(loaded.data, source.name)
    if foreign is not None:
        raise SpecError(source, [foreign])
    # What the loader reported (a duplicate key, a YAML 1.1 key, a bad tag) is not reported again by the schema.
    reported = [i.path for i in loaded.issues]
    issues: list[Issue] = list(loaded.issues)
    base, base_issues = _check(loaded.data, source)
    issues += [i for i in base_issues if not _under(i.path, reported)]
    known = {(i.path, i.message) for i in issues}
    declared = loaded.data.get("environments")
    environments = sorted(declared) if isinstance(declared, dict) else []
    # Environments are merged only when their own section is well formed (else the base issues say why).
    mergeable = isinstance(declared, dict) and not any(i.path[:1] == ("environments",) for i in issues)
    stack = env
    env, cluster = clusters.split_stack(env) if env is not None else (None, None)
    if env is not None and mergeable and env not in environments:
        issues.append(
            Issue(
                path=("environments",),
                at_key=True,
                message=f'no environment "{env}" in the spec',
                hint=did_you_mean(env, environments),
            )
        )
    wanted = [e for e in environments if env is None or e == env] if mergeable else []
    merged: dict[str, Fleet] = {}
    for name in wanted:
        data, view, merge_issues = merge_environment(loaded.data, name, source)
        fleet: Fleet | None
        stacks: dict[str, Fleet] = {}
        if clusters.is_multi(data):
            # One fleet per cluster: each environment is a stack per cluster (gpufleet.spec.clusters).
            valid = unchanged_sections(data, loaded.data) if base is not None else frozenset()
            env_issues = schema_issues(data, view.plain, valid)
            if env_issues:
                env_issues += rules_beside_schema_errors(data, env_issues)
            else:
                stacks, env_issues = _check_clusters(data, name)
            fleet = None
        elif base is not None and data == loaded.data:
            # Nothing overridden: the same data makes the same fleet with the same issues (fleet_from and the
            # rules read only the data), so they are not made again.
            fleet, env_issues = base, base_issues
        else:
            fleet, env_issues = _check(
                data, view, unchanged_sections(data, loaded.data) if base is not None else frozenset()
            )
        for issue in merge_issues + env_issues:
            if (issue.path, issue.message) in known or _under(issue.path, reported):
                continue
            # Positions of merged paths live in the environment's view; pin them now so the base file renders them.
            pinned = issue.position or view.position(issue.path, issue.at_key)
            issues.append(
                Issue(
                    path=issue.path,
                    message=issue.message,
                    hint=issue.hint,
                    at_key=issue.at_key,
                    severity=issue.severity,
                    context=f"environment {name}",
                    position=pinned,
                )
            )
        if fleet is not None:
            merged[name] = fleet
        merged.update(stacks)
    if cluster is not None and mergeable and not any(i.severity == "error" for i in issues) and stack not in merged:
        names = [clusters.split_stack(s)[1] or "" for s in merged]
        issues.append(
            Issue(
                path=("clusters",),
                at_key=True,
                message=f'no cluster "{cluster}" in clusters[] (stack {stack})',
                hint=did_you_mean(cluster, names),
            )
        )
    if stack is not None and stack != env:
        merged = {k: v for k, v in merged.items() if k == stack}
    errors = [i for i in issues if i.severity == "error"]
    if errors or base is None:
        raise SpecError(source, sort_issues(source, issues))
    return Validated(source=source, base=base, environments=merged, warnings=tuple(sort_issues(source, issues)))


def load_fleet(path: str, env: str | None = None) -> Validated:
    """Load and validate a spec file (every environment, or only `env`)."""
    return validate_loaded(load_file(path), env)


def open_spec(path: str, env: str | None = None) -> Validated:
    """`load_fleet` for a command: an unreadable file is a usage error (exit 2), a wrong spec a SpecError (exit 1)."""
    try:
        return load_fleet(path, env)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def load_fleet_text(text: str, name: str = "fleet.yaml", env: str | None = None) -> Validated:
    return validate_loaded(load_text(text, name), env)
