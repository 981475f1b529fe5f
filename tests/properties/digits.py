"""Other scripts' digits in place of ASCII ones (issue 47 item 9): a strategy the digit properties share."""

from __future__ import annotations

from hypothesis import strategies as st

# Decimal digits of other scripts (Unicode category Nd), and digits that are not decimal (int() refuses them)
FAMILIES = ["٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९", "０１２３４５６７８９", "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗", "⁰¹²³⁴⁵⁶⁷⁸⁹", "⓪①②③④⑤⑥⑦⑧⑨"]


@st.composite
def translated(draw: st.DrawFn, value: str) -> str:
    """`value` with some of its ASCII digits (at least one) written in another script's digits."""
    family = draw(st.sampled_from(FAMILIES))
    at = [i for i, c in enumerate(value) if c in "0123456789"]
    chosen = set(draw(st.lists(st.sampled_from(at), min_size=1, unique=True)))
    return "".join(family[int(c)] if i in chosen else c for i, c in enumerate(value))
