"""YAML bytes -> plain data plus the position of every key and value.

We compose nodes ourselves instead of calling `yaml.safe_load` so that:
- every value and every mapping key keeps its line and column (errors point at the offending line);
- duplicate keys are errors (PyYAML silently keeps the last one);
- YAML 1.1 surprises are recorded: a plain `on`/`no`/`yes` becomes a bool and `1.30` the float 1.3. They are
  kept as constructed here and rejected by the schema check wherever a string is expected, never coerced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from gpufleet.errors import Issue, Path, Position, SourceFile

_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(slots=True)
class Loaded:
    """The parsed document, where it came from, and what the YAML 1.1 resolver did to plain scalars."""

    data: Any
    source: SourceFile
    issues: list[Issue] = field(default_factory=list)


def _pos(mark: yaml.Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


class _Walker:
    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.constructor = yaml.SafeLoader("")

    def walk(self, node: yaml.Node, path: Path) -> Any:
        self.loaded.source.values[path] = _pos(node.start_mark)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(child, path + (i,)) for i, child in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        value = self.constructor.construct_object(node, deep=True)
        if node.tag != _STR_TAG and node.style is None and value is not None:
            self.loaded.source.plain[path] = node.value
        return value

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        self.constructor.flatten_mapping(node)  # resolves `<<` merge keys the way PyYAML would
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.loaded.issues.append(
                    Issue(path=path, message="a mapping key must be a plain string", position=_pos(key_node.start_mark))
                )
                continue
            key = str(key_node.value)
            child = path + (key,)
            if key in out:
                first = self.loaded.source.keys[child]
                self.loaded.issues.append(
                    Issue(
                        path=child,
                        message=f'duplicate key "{key}" (first defined at line {first.line})',
                        hint="YAML keeps only the last value; remove one of them",
                        position=_pos(key_node.start_mark),
                    )
                )
                continue
            if key_node.tag != _STR_TAG and key_node.style is None:
                resolved = self.constructor.construct_object(key_node)
                self.loaded.issues.append(
                    Issue(
                        path=child,
                        message=f'key "{key}" is read by YAML 1.1 as {_describe(resolved)}, not a string',
                        hint=f'quote it: "{key}"',
                        position=_pos(key_node.start_mark),
                    )
                )
            self.loaded.source.keys[child] = _pos(key_node.start_mark)
            out[key] = self.walk(value_node, child)
        return out


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def describe_plain(raw: str, value: object) -> str:
    """Message fragment for a plain scalar that YAML did not read as a string."""
    return f'{raw} is read by YAML 1.1 as {_describe(value)}'


def load_text(text: str, name: str) -> Loaded:
    source = SourceFile(name=name, text=text)
    loaded = Loaded(data=None, source=source)
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        position = _pos(mark) if mark else Position(1, 1)
        loaded.issues.append(Issue(path=(), message=f"invalid YAML: {exc.problem or exc.context}", position=position))
        return loaded
    except yaml.YAMLError as exc:  # e.g. a reader error on non-UTF-8 input
        loaded.issues.append(Issue(path=(), message=f"invalid YAML: {exc}", position=Position(1, 1)))
        return loaded
    documents = [d for d in documents if d is not None]
    if not documents:
        loaded.issues.append(Issue(path=(), message="the file is empty", hint="start from the example fleet.yaml"))
        return loaded
    if len(documents) > 1:
        loaded.issues.append(
            Issue(
                path=(),
                message=f"expected one YAML document, found {len(documents)}",
                hint="put one Fleet in each file",
                position=_pos(documents[1].start_mark),
            )
        )
    loaded.data = _Walker(loaded).walk(documents[0], ())
    return loaded


def load_file(path: str) -> Loaded:
    """Read and parse a spec file. An unreadable file raises OSError; the CLI reports it."""
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        loaded = Loaded(data=None, source=SourceFile(name=path, text=""))
        loaded.issues.append(Issue(path=(), message=f"the file is not UTF-8 text (byte {exc.start})"))
        return loaded
    return load_text(text, path)
