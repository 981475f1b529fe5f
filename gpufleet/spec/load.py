"""YAML bytes -> plain data plus the position of every key and value.

Why, with sources: docs/spec.md, "Design notes", gpufleet/spec/load.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpufleet.base.errors import Issue, Path, Position, SourceFile
from gpufleet.base.inputs import beyond_bounds, read_bounded

_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(slots=True)
class Loaded:
    """The parsed document, where it came from, and what the YAML 1.1 resolver did to plain scalars.

    Why: docs/spec.md, "Design notes", load.Loaded."""

    data: Any
    source: SourceFile
    issues: list[Issue] = field(default_factory=list)
    fatal: bool = False


def _pos(mark: yaml.Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_NULL_TAG = "tag:yaml.org,2002:null"
_INT_TAG = "tag:yaml.org,2002:int"
_STANDARD_TAG = "tag:yaml.org,2002:"
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$")
_LEGACY_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")
# Where LibYAML reads a text differently from PyYAML's pure-Python parser (found by running both over mutated specs): it
# accepts a tab after a colon, `?` inside a flow plain scalar and `|#`, which PyYAML rejects; a BOM inside the text
# shifts its columns; it does not check for non-printable characters.
_PURE_ONLY = re.compile(r"[\t\ufeff?]|[|>][-+0-9]*#")


def _compose(text: str) -> tuple[Issue | None, list[yaml.Node]]:
    """The bounds issue, or the text's documents as nodes with marks; through LibYAML (PyYAML's C extension) where
    that reads the text exactly as the pure-Python parser does: same events, nodes, tags, values and positions
    (tests/unit/test_yaml_c.py)."""
    if _libyaml_reads(text):
        try:
            return _read(text, yaml.CSafeLoader)
        except yaml.YAMLError:
            pass  # reported by the pure-Python parser, in its words
    return _read(text, yaml.SafeLoader)


def _libyaml_reads(text: str) -> bool:
    return yaml.__with_libyaml__ and not _PURE_ONLY.search(text) and not yaml.reader.Reader.NON_PRINTABLE.search(text)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through LibYAML where it reads the text as the pure-Python parser does (`_compose`)."""
    if _libyaml_reads(text):
        try:
            return yaml.load(text, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            pass  # raised by the pure-Python parser, in its words
    return yaml.safe_load(text)


def _read(text: str, loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader]) -> tuple[Issue | None, list[yaml.Node]]:
    too_big = beyond_bounds(text, loader)
    return (too_big, []) if too_big is not None else (None, list(yaml.compose_all(text, Loader=loader)))


class _Walker:
    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.constructor = yaml.SafeLoader("")
        self.active: set[int] = set()  # nodes on the current path (an alias to an ancestor is a cycle)

    def _issue(self, path: Path, message: str, mark: yaml.Mark, hint: str = "") -> None:
        self.loaded.issues.append(Issue(path=path, message=message, hint=hint, position=_pos(mark)))

    def walk(self, node: yaml.Node, path: Path) -> Any:
        self.loaded.source.values[path] = _pos(node.start_mark)
        if id(node) in self.active:
            self._issue(
                path,
                "an alias refers to a mapping or list that contains it (a cycle)",
                node.start_mark,
                "YAML anchors here must not be recursive",
            )
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            if isinstance(node, yaml.SequenceNode):
                return [self.walk(child, path + (i,)) for i, child in enumerate(node.value)]
            assert isinstance(node, yaml.ScalarNode)
            return self._scalar(node, path)
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode, path: Path) -> Any:
        if not node.tag.startswith(_STANDARD_TAG):
            self._issue(
                path, f"unknown YAML tag {node.tag}", node.start_mark, "remove the tag: the spec uses plain YAML values"
            )
            return node.value
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            self._not_valid(node, path, f" ({problem})")
            return node.value
        except (IndexError, KeyError, AttributeError):
            # An explicit tag (`!!int`, `!!bool x`, `!!timestamp x`) skips YAML's resolver, and PyYAML's constructors
            # assume the resolver matched the text: on anything else they fail inside their parsing code.
            self._not_valid(node, path, "")
            return node.value
        # A plain scalar has style None from PyYAML and "" from LibYAML.
        if node.tag != _STR_TAG and not node.style and value is not None:
            self.loaded.source.plain[path] = node.value
            if node.tag == _INT_TAG and _SEXAGESIMAL.match(node.value):
                self._issue(
                    path,
                    f"{node.value} is read by YAML 1.1 as the base-60 number {value}",
                    node.start_mark,
                    f"write the number you mean (e.g. {value}), or quote it if a string is meant",
                )
            elif node.tag == _INT_TAG and _LEGACY_OCTAL.match(node.value):
                self._issue(
                    path,
                    f"{node.value} is read by YAML 1.1 as the octal number {value}",
                    node.start_mark,
                    "drop the leading zero, or quote it if a string is meant",
                )
        return value

    def _not_valid(self, node: yaml.ScalarNode, path: Path, detail: str) -> None:
        what = node.tag.removeprefix(_STANDARD_TAG)
        article = "an" if what[:1] in "aeiou" else "a"
        if not node.value:
            self._issue(
                path,
                f"an empty value tagged !!{what} is not a valid {what}",
                node.start_mark,
                f"write {article} {what} after the tag",
            )
            return
        self._issue(
            path,
            f"{node.value} is read by YAML 1.1 as {article} {what}, but it is not a valid one{detail}",
            node.start_mark,
            f'quote it if a string is meant: "{node.value}"',
        )

    def _merged_pairs(self, node: yaml.Node, path: Path) -> list[tuple[yaml.Node, yaml.Node]]:
        """The key/value pairs a `<<` merge key brings in, earlier sources first (YAML merge-key semantics)."""
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                self._issue(
                    path,
                    "a merge key (<<) needs a mapping or a list of mappings",
                    source.start_mark,
                    "merge an anchored mapping, e.g. <<: *defaults",
                )
                continue
            if id(source) in self.active:
                self._issue(path, "a merge key (<<) refers to a mapping that contains it (a cycle)", source.start_mark)
                continue
            self.active.add(id(source))
            try:
                own, merged = self._split(source, path)
            finally:
                self.active.discard(id(source))
            pairs.extend(own + merged)
        return pairs

    def _split(
        self, node: yaml.MappingNode, path: Path
    ) -> tuple[list[tuple[yaml.Node, yaml.Node]], list[tuple[yaml.Node, yaml.Node]]]:
        """(pairs written in this mapping, pairs brought in by its merge keys)."""
        own: list[tuple[yaml.Node, yaml.Node]] = []
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.extend(self._merged_pairs(value_node, path))
            else:
                own.append((key_node, value_node))
        return own, merged

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        own, merged = self._split(node, path)
        out: dict[str, Any] = {}
        for key_node, value_node in own:
            if not isinstance(key_node, yaml.ScalarNode):
                self._issue(path, "a mapping key must be a plain string", key_node.start_mark)
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
            if key_node.tag != _STR_TAG and not key_node.style:
                try:
                    resolved: object = self.constructor.construct_object(key_node)
                except (yaml.YAMLError, ValueError, TypeError, OverflowError):
                    resolved = key_node.value
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
        # Merged keys never override keys written here, and the first source wins among merged ones.
        for key_node, value_node in merged:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = str(key_node.value)
            if key in out:
                continue
            child = path + (key,)
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
    return f"{raw} is read by YAML 1.1 as {_describe(value)}"


def _is_empty(node: yaml.Node) -> bool:
    """A document with nothing in it (`---` alone, or only comments) composes to an empty null scalar."""
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG and node.value == ""


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return _describe(value)


# A large fleet spec is tens of KB; depth and values are bounded as for every YAML input (gpufleet.base.inputs).
MAX_SPEC_BYTES = 1024 * 1024


def load_text(text: str, name: str) -> Loaded:
    source = SourceFile(name=name, text=text)
    loaded = Loaded(data=None, source=source)

    def fatal(message: str, position: Position | None = None, hint: str = "") -> Loaded:
        loaded.issues.append(Issue(path=(), message=message, hint=hint, position=position))
        loaded.fatal = True
        return loaded

    try:
        too_big, documents = _compose(text)
        if too_big is not None:
            loaded.issues.append(too_big)
            loaded.fatal = True
            return loaded
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot parse"
        context = ""
        if exc.problem and exc.context:
            where = f" at line {exc.context_mark.line + 1}" if exc.context_mark and exc.context_mark != mark else ""
            context = f" ({exc.context}{where})"
        return fatal(f"invalid YAML: {problem}{context}", _pos(mark) if mark else Position(1, 1))
    except yaml.YAMLError as exc:  # e.g. a reader error on a control character
        return fatal(f"invalid YAML: {exc}", Position(1, 1))
    documents = [d for d in documents if d is not None and not _is_empty(d)]
    if not documents:
        return fatal("the file is empty", Position(1, 1), "start from the example fleet.yaml")
    if len(documents) > 1:
        return fatal(
            f"expected one YAML document, found {len(documents)}",
            _pos(documents[1].start_mark),
            "put one Fleet in each file (remove the second `---` and what follows)",
        )
    loaded.data = _Walker(loaded).walk(documents[0], ())
    if not isinstance(loaded.data, dict):
        return fatal(
            f"the spec must be a mapping (apiVersion, kind, metadata, ...), not {_kind(loaded.data)}",
            _pos(documents[0].start_mark),
            "start from the example fleet.yaml",
        )
    return loaded


def positions(node: yaml.Node, name: str, text: str) -> SourceFile:
    """Where every key and value of one composed document of `text` is, and the plain scalars YAML 1.1 read as
    something else: what load_text records of a spec, for another document (a manifest `gpufleet explain` reads)
    whose errors are rendered as a spec's.

    Why: docs/spec.md, "Design notes", load.positions."""
    loaded = Loaded(data=None, source=SourceFile(name=name, text=text))
    _Walker(loaded).walk(node, ())
    return loaded.source


def load_file(path: str) -> Loaded:
    """Read and parse a spec file. An unreadable or oversized file raises OSError; the CLI reports it."""
    raw = read_bounded(path, MAX_SPEC_BYTES, "no fleet spec needs")  # a regular file: a FIFO would block forever
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start].decode("utf-8")
        position = Position(before.count("\n") + 1, len(before.rsplit("\n", 1)[-1]) + 1)
        loaded = Loaded(data=None, source=SourceFile(name=path, text=raw.decode("utf-8", "replace")), fatal=True)
        loaded.issues.append(
            Issue(
                path=(),
                message=f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                hint="save the file as UTF-8",
                position=position,
            )
        )
        return loaded
    return load_text(text, path)
