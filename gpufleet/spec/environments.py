"""Merge `environments.<env>.overrides` into the base spec, carrying source positions along.

Maps merge key by key; lists of named items (nodeGroups, teams) are addressed by name in overrides; any other
list is replaced whole. A merged value keeps the position of the override that set it, so an error in the
merged spec points at the line the user wrote for that environment.
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
        if isinstance(value, dict) and isinstance(base.get(key), dict):
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
        if not isinstance(patch, dict):
            continue  # the schema reports it
        src = base_src + (section,)
        if section in NAMED_LISTS:
            items = merged.get(section)
            if not isinstance(items, list):
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
                _merge_map(items[index], item_patch, src + (name,), (section, index), source, view)
        elif isinstance(merged.get(section), dict):
            _merge_map(merged[section], patch, src, (section,), source, view)
        else:
            merged[section] = copy.deepcopy(patch)
            _remap(source, view, src, (section,))
    return merged, view, issues
