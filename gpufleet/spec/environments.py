"""Merge `environments.<env>.overrides` into the base spec, carrying source positions along.

Why, with sources: docs/spec.md, "Design notes", gpufleet/spec/environments.py.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from gpufleet.base.errors import Issue, Path, SourceFile, did_you_mean

NAMED_LISTS = ("nodeGroups", "teams")


T = TypeVar("T")


def _copy_under(table_from: dict[Path, T], table_to: dict[Path, T], src: Path, dst: Path) -> None:
    n = len(src)
    for path, entry in table_from.items():
        if path[:n] == src:
            table_to[dst + path[n:]] = entry


def _remap(source: SourceFile, target: SourceFile, src: Path, dst: Path) -> None:
    """Copy positions (and YAML 1.1 scalar notes) of everything under `src` in the file to `dst` in the view."""
    _copy_under(source.values, target.values, src, dst)
    _copy_under(source.keys, target.keys, src, dst)
    _copy_under(source.plain, target.plain, src, dst)


def _merge_map(
    base: dict[str, Any], patch: dict[str, Any], src: Path, dst: Path, source: SourceFile, view: SourceFile
) -> None:
    for key, value in patch.items():
        if value is None:  # removes the field: its default applies (a required one is the schema's to report)
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge_map(base[key], value, src + (key,), dst + (key,), source, view)
        else:
            base[key] = copy.deepcopy(value)
            _remap(source, view, src + (key,), dst + (key,))


def merge_environment(
    data: dict[str, Any], env: str, source: SourceFile
) -> tuple[dict[str, Any], SourceFile, list[Issue]]:
    """The spec as environment `env` sees it, a source view with positions for it, and reference issues."""
    merged = copy.deepcopy(data)
    view = SourceFile(
        name=source.name, text=source.text, values=dict(source.values), keys=dict(source.keys), plain=dict(source.plain)
    )
    issues: list[Issue] = []
    overrides = (data.get("environments", {}).get(env) or {}).get("overrides") or {}
    base_src: Path = ("environments", env, "overrides")
    for section, patch in overrides.items():
        if patch is None and section not in NAMED_LISTS:
            merged.pop(section, None)  # an optional section removed (the override's schema allows null only there)
            continue
        if not isinstance(patch, dict):
            continue  # the schema reports it
        src = base_src + (section,)
        if section in NAMED_LISTS:
            items, where = _named(merged, section)
            if items is None:
                continue  # the base spec's own issues say what is wrong with it
            # one entry per item, so an index here is an index into items (a null entry is the schema's to report)
            names = [item.get("name") if isinstance(item, dict) else None for item in items]
            for name, item_patch in patch.items():
                if name not in names:
                    kind = "node group" if section == "nodeGroups" else "team"
                    issues.append(
                        Issue(
                            path=src + (name,),
                            at_key=True,
                            message=f'overrides a {kind} "{name}" that does not exist in {section}',
                            hint=did_you_mean(name, [str(n) for n in names if n]),
                        )
                    )
                    continue
                if not isinstance(item_patch, dict):
                    continue
                index = names.index(name)
                _merge_map(items[index], item_patch, src + (name,), where[index], source, view)
        elif isinstance(merged.get(section), dict):
            _merge_map(merged[section], patch, src, (section,), source, view)
        else:
            merged[section] = copy.deepcopy(patch)
            _remap(source, view, src, (section,))
    if (data.get("environments", {}).get(env) or {}).get("quotaScaling") == "MaxSize":
        scale_quotas(data, merged, overrides)
    return merged, view, issues


def _named(data: dict[str, Any], section: str) -> tuple[list[Any] | None, list[Path]]:
    """The items of a named list and the spec path of each; a spec with clusters[] has its node groups under its
    clusters (gpufleet.spec.clusters), addressed by name as the top-level ones are. None where it is not a list."""
    entries = data.get("clusters")
    if section == "nodeGroups" and isinstance(entries, list) and "nodeGroups" not in data:
        items: list[Any] = []
        where: list[Path] = []
        for i, entry in enumerate(entries):
            groups = entry.get("nodeGroups") if isinstance(entry, dict) else None
            for j, group in enumerate(groups if isinstance(groups, list) else []):
                items.append(group)
                where.append(("clusters", i, "nodeGroups", j))
        return items, where
    found = data.get(section)
    if not isinstance(found, list):
        return None, []
    return found, [(section, i) for i in range(len(found))]


def _max_sizes(data: dict[str, Any]) -> dict[str, int]:
    groups, _ = _named(data, "nodeGroups")
    return {
        g["name"]: g["scaling"]["maxSize"]
        for g in (groups or [])
        if isinstance(g, dict)
        and isinstance(g.get("name"), str)
        and isinstance(g.get("scaling"), dict)
        and type(g["scaling"].get("maxSize")) is int
    }


def scale_quotas(base: dict[str, Any], merged: dict[str, Any], overrides: dict[str, Any]) -> None:
    """quotaScaling MaxSize: every quota (gpus, borrowingLimit, lendingLimit) on a node group whose maxSize differs
    between the base spec and the merged one becomes value * merged maxSize // base maxSize, rounded down so the
    quota never exceeds what the smaller group holds when the base quota fits the base group.

    Why: docs/spec.md, "Design notes", environments.scale_quotas."""
    before, after = _max_sizes(base), _max_sizes(merged)
    ratio = {name: (after[name], size) for name, size in before.items() if size > 0 and after.get(name, size) != size}
    patches = overrides.get("teams")
    team_patches: dict[str, Any] = patches if isinstance(patches, dict) else {}
    teams = merged.get("teams")
    for team in teams if isinstance(teams, list) else []:
        if not isinstance(team, dict) or not isinstance(team.get("quotas"), list):
            continue
        patch = team_patches.get(str(team.get("name")))
        if isinstance(patch, dict) and "quotas" in patch:
            continue
        for quota in team["quotas"]:
            if not isinstance(quota, dict) or quota.get("nodeGroup") not in ratio:
                continue
            new, old = ratio[quota["nodeGroup"]]
            for field in ("gpus", "borrowingLimit", "lendingLimit"):
                if type(quota.get(field)) is int:
                    quota[field] = quota[field] * new // old
