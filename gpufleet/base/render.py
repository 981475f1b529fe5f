"""Text gpufleet writes from templates: the shell scripts it puts on nodes and in pods, plan.md and the pull
request comment of `gpufleet diff`. The templates are package data in gpufleet/templates/ (docs/architecture.md,
"Layout", says how to change one); this module is the only place that loads them.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/base/render.py.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import jinja2

# PackageLoader reads through the package's import machinery, so it finds the templates in a checkout and in an
# installed wheel alike (pyproject's package-data ships gpufleet/templates/).
ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("gpufleet", "templates"),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
)

# The characters shlex.quote leaves unquoted: a value made only of these means the same inside and outside quotes.
_SAFE_WORD = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def shell_quote(value: Any) -> str:
    """A value as one complete shell word (the `q` filter)."""
    return shlex.quote(str(value))


def shell_word(value: Any) -> str:
    """A value spliced into a longer shell word or a quoted string (the `word` filter): it must need no quoting."""
    text = str(value)
    if not _SAFE_WORD.fullmatch(text):
        raise ValueError(
            f"{text!r} needs shell quoting and cannot be spliced into a word; pass it through the q filter as a word of"
            " its own"
        )
    return text


def markdown_cell(value: Any) -> str:
    """A value in a Markdown table cell (the `cell` filter): a `|` would end the cell and a line break the row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


ENV.filters["q"] = shell_quote
ENV.filters["word"] = shell_word
ENV.filters["cell"] = markdown_cell


def render(template: str, /, **values: Any) -> str:
    """`template` (a path under gpufleet/templates/) rendered with `values`."""
    return ENV.get_template(template).render(**values)
