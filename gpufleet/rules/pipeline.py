"""The one way in: file -> parse with positions -> schema -> typed Fleet -> rules, for the base spec and for
each environment's merged spec. Raises SpecError with every issue; returns frozen Fleets and warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpufleet.base.errors import Issue, Path, SourceFile, SpecError, UsageError, did_you_mean, sort_issues
from gpufleet.rules import cross_field
from gpufleet.spec import defaults
from gpufleet.spec.environments import merge_environment
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.load import Loaded, load_file, load_text
from gpufleet.spec.schema import with_defaults
from gpufleet.spec.schema_errors import schema_issues


@dataclass(frozen=True, slots=True)
class Validated:
    """A valid spec: the base fleet, each environment's merged fleet, and non-blocking warnings."""

    source: SourceFile
    base: Fleet
    environments: Mapping[str, Fleet]
    warnings: tuple[Issue, ...]


def _check(
    data: Any, source: SourceFile, valid_sections: frozenset[str] = frozenset()
) -> tuple[Fleet | None, list[Issue]]:
    issues = schema_issues(data, source.plain, valid_sections)
    if issues:
        return None, issues
    fleet = fleet_from(data)
    return fleet, cross_field.check(fleet)


def fleet_from(data: Any) -> Fleet:
    """The model of schema-valid data: static defaults (gpufleet.spec.schema), then computed ones (gpufleet.spec.defaults)."""
    return Fleet.create(*defaults.fill(with_defaults(data)))


def unchanged_sections(merged: dict[str, Any], base: dict[str, Any]) -> frozenset[str]:
    """The top-level sections an environment's merged spec leaves as they are in the base spec: where the base
    is schema-valid, they are valid in the merged spec too (gpufleet.spec.schema.conforms need not look again)."""
    return frozenset(key for key, value in merged.items() if key in base and base[key] == value)


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path[: len(root)] == root for root in roots)


def validate_loaded(loaded: Loaded, env: str | None = None) -> Validated:
    """Every issue of the file in one run: loader, schema and rules of the base spec, then of each environment."""
    source = loaded.source
    if loaded.fatal or not isinstance(loaded.data, dict):
        found = loaded.issues or [
            Issue(path=(), message="the spec must be a mapping (apiVersion, kind, metadata, ...)")
        ]
        raise SpecError(source, sort_issues(source, found))
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
        if base is not None and data == loaded.data:
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
