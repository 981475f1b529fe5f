"""Hypothesis strategies that damage fleet specs: values, keys, types and YAML shapes of the valid specs."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests import fastyaml

ROOT = Path(__file__).resolve().parents[2]
SEEDS = {
    p.relative_to(ROOT).as_posix(): p.read_text()
    for p in [
        ROOT / "fleet.yaml",
        *sorted((ROOT / "tests/specs/valid").glob("*.yaml")),
        *sorted((ROOT / "tests/golden/cases").glob("*/fleet.yaml")),
    ]
}
SEED_DATA = {name: fastyaml.load(text) for name, text in SEEDS.items()}
SMALL_SEEDS = tuple(
    name for name in sorted(SEEDS) if name.startswith("tests/specs/valid/")
)  # synth them in a fraction of a second

Path_ = tuple[str | int, ...]


def _walk(node: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, (*path, index))


def _scalars_and_keys() -> tuple[list[Any], list[str]]:
    scalars: set[Any] = set()
    keys: set[str] = set()
    for data in SEED_DATA.values():
        for path, node in _walk(data):
            if path and isinstance(path[-1], str):
                keys.add(path[-1])
            if not isinstance(node, (dict, list)):
                scalars.add(node)
    return sorted(scalars, key=repr), sorted(keys)


SCALARS, KEYS = _scalars_and_keys()

# Values a spec's author (or a fuzzer) might write where another was expected.
EDGE_NUMBERS = [0, -1, 1, 2**31, 2**63, 10**400, 1.5, -0.0, 1e308, 1e-308, math.inf, -math.inf, math.nan]
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
tricky_text = st.sampled_from(
    [
        "",
        " ",
        "vision\n",
        "a" * 300,
        "-",
        "~",
        "null",
        "yes",
        "1.30",
        "0x10",
        "1_000",
        "ü",
        "a/b",
        "../x",
        "${x}",
        "{{x}}",
        "\t",
        "\x00",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(EDGE_NUMBERS),
    text,
    tricky_text,
    st.sampled_from(SCALARS),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS) | text, inner, max_size=3),
    max_leaves=8,
)


def _perturb(value: Any) -> st.SearchStrategy[Any]:
    """Values near the original: numbers moved, strings changed a little, types swapped."""
    if isinstance(value, bool):
        return st.sampled_from([not value, str(value).lower(), int(value)])
    if isinstance(value, (int, float)):
        as_float = (
            float(value) if abs(value) < 1e308 else math.inf
        )  # an int beyond floats (10**400) stays out of float()
        return st.sampled_from([value + 1, value - 1, -value, value * 1000, as_float, str(value), 0, *EDGE_NUMBERS])
    if isinstance(value, str):
        return st.sampled_from(
            [
                value + "\n",
                value.upper(),
                value[:-1],
                value + value,
                " " + value,
                value + "-x",
                "",
                value.replace("-", "_"),
            ]
        )
    if isinstance(value, list):
        return st.sampled_from([[], value + value, value[:1], [value]])
    if isinstance(value, dict):
        return st.sampled_from([{}, [value], {**value, **{k: None for k in list(value)[:1]}}])
    return values


def _get(root: Any, path: Path_) -> Any:
    for part in path:
        root = root[part]
    return root


ALL_OPS = ("replace", "perturb", "plausible", "delete", "insert", "duplicate")
# Changes that keep the shape and mostly the types: more of these specs pass the schema and reach the rules,
# the rollout and synth.
SUBTLE_OPS = ("perturb", "plausible", "delete", "duplicate")


def mutate(draw: st.DrawFn, data: Any, changes: int, ops: tuple[str, ...] = ALL_OPS) -> Any:
    """`data` (plain YAML/JSON data, changed in place) with `changes` random edits: a value replaced by a random
    one, by one near it or by one from another spec; a key or list entry deleted, inserted or duplicated."""
    for _ in range(changes):
        path = draw(st.sampled_from([p for p, _ in _walk(data)]))
        node = _get(data, path)
        parent = _get(data, path[:-1]) if path else None
        op = draw(st.sampled_from(ops))
        if op == "insert" and isinstance(node, dict):
            node[draw(st.sampled_from(KEYS) | text)] = draw(values)
        elif op == "insert" and isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(values))
        elif op == "duplicate" and isinstance(node, list) and node:
            node.append(yaml.safe_load(yaml.safe_dump(draw(st.sampled_from(node)))))
        elif parent is None:
            data = draw(values) if op == "replace" else data  # the document root itself
        elif op == "delete":
            del parent[path[-1]]
        else:
            strategy = {"replace": values, "perturb": _perturb(node), "plausible": st.sampled_from(SCALARS)}.get(
                op, values
            )
            parent[path[-1]] = draw(strategy)
    return data


@st.composite
def mutated_spec(
    draw: st.DrawFn, most: int = 4, ops: tuple[str, ...] = ALL_OPS, seeds: tuple[str, ...] = tuple(sorted(SEEDS))
) -> str:
    """One of the valid specs with one to `most` random changes, written back as YAML in a random style."""
    data = mutate(draw, copy.deepcopy(SEED_DATA[draw(st.sampled_from(seeds))]), draw(st.integers(1, most)), ops)
    return yaml.safe_dump(
        data,
        sort_keys=False,
        allow_unicode=draw(st.booleans()),
        default_flow_style=draw(st.sampled_from([False, None])),
    )


# Pieces of YAML syntax, for documents that are shaped wrong rather than valued wrong.
FRAGMENTS = [
    "apiVersion: gpufleet/v1alpha1\n",
    "kind: Fleet\n",
    "metadata: {name: x}\n",
    "environments:\n",
    "  dev: {}\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "- ",
    ": ",
    "{",
    "}",
    "[",
    "]",
    ", ",
    "!!str ",
    "!!int ",
    "!!binary ",
    "!!python/object/apply:os.system ",
    "!custom ",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "---\n",
    "...\n",
    "|\n",
    ">-\n",
    "  ",
    "\n",
    "\t",
    "'",
    '"',
    "# c\n",
    "? ",
    "@",
    "`",
    "\\",
    "\ufeff",
    "\x00",
    "\x85",
    "\u2028",
    "1e309",
    ".nan",
    "-.inf",
    "~",
    "0o17",
    "0x1F",
    "1:30",
    "2026-01-01",
    "yes",
    "x",
    "name",
    "1.33",
    "é",
]
fragments = st.lists(st.sampled_from(FRAGMENTS) | text, max_size=30).map("".join)


@st.composite
def yaml_document(draw: st.DrawFn) -> str:
    """A YAML document of any shape: random data in any style (several documents, canonical, flow), a string of YAML
    syntax, or a valid spec with a slice of its lines replaced (indentation and structure broken mid-file)."""
    kind = draw(st.sampled_from(["data", "syntax", "splice"]))
    if kind == "data":
        documents = draw(st.lists(values, min_size=1, max_size=3))
        return yaml.safe_dump_all(
            documents,
            canonical=draw(st.booleans()),
            default_flow_style=draw(st.sampled_from([False, True, None])),
            explicit_start=draw(st.booleans()),
        )
    if kind == "syntax":
        return draw(fragments)
    lines = SEEDS[draw(st.sampled_from(sorted(SEEDS)))].splitlines(keepends=True)
    start = draw(st.integers(0, len(lines)))
    end = draw(st.integers(start, min(len(lines), start + 4)))
    lines[start:end] = [
        draw(fragments),
        *(draw(st.sampled_from(["", " ", "  ", "\t"])) + line for line in lines[start:end][:1]),
    ]
    return "".join(lines)


def environments(spec_text: str) -> list[str]:
    """The environment names a (possibly damaged) spec declares, for `plan --env` and `synth --env`."""
    try:
        data = yaml.safe_load(spec_text)
    except yaml.YAMLError:
        return ["dev"]
    envs = data.get("environments") if isinstance(data, dict) else None
    names = [name for name in envs if isinstance(name, str)] if isinstance(envs, dict) else []
    return names or ["dev"]


# Nesting past every bound (gpufleet's 64 levels, LibYAML's 1,000 flow levels, Python's stack): runs of flow openers
# (LibYAML looks ahead through "[[[" or "{{{" for a simple key and fails at its limit before the first 64 events are
# read), flow maps with keys, block maps, mixed (issue 47 item 8).
_OPEN = {"[": "]", "{": "}", "{a: ": "}", "[{a: ": "}]", "- ": ""}


@st.composite
def deep_yaml(draw: st.DrawFn) -> str:
    """A YAML value nested 60 to 4,000 levels deep, in flow or block style, valid YAML or cut before its end."""
    depth = draw(st.integers(60, 4000))
    shape = draw(st.sampled_from(["[", "{", "[", "mixed", "block"]))
    if shape == "block":  # a level is one more space of indent (a few hundred KB at most)
        depth = min(depth, 1400)
        body = "".join(" " * i + "a:\n" for i in range(depth)) + " " * depth + "x\n"
    else:
        openers = (
            draw(st.lists(st.sampled_from(sorted(_OPEN)), min_size=1, max_size=3)) if shape == "mixed" else [shape]
        )
        levels = [openers[i % len(openers)] for i in range(depth)]
        body = "".join(levels) + draw(st.sampled_from(["", "x", "1"])) + "".join(_OPEN[o] for o in reversed(levels))
        body += "\n"
    if draw(st.integers(0, 3)) == 0:
        body = body[: draw(st.integers(0, len(body)))]
    return body
