"""Properties of `gpufleet init` over any instance-type list and --out target (issue 14 items 7 and 9): exit 0 or
2, never 3, nothing written on exit 2, and what it writes validates."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.facts import catalog
from tests.properties.cli import run, scratch
from tests.properties.mutations import text

names = (
    st.sampled_from(catalog.gpu_instance_names())
    | st.sampled_from(["p5.48xlage", "m7i.xlarge", "", " ", "G6.XLARGE", "g6.xlarge "])
    | text
)
instance_types = st.lists(names, max_size=4).map(",".join)
targets = st.sampled_from(
    [
        "fleet.yaml",
        "-",
        "mine.yaml",
        "dir",
        "dir/new.yaml",
        "missing/new.yaml",
        "mine.yaml/new.yaml",
        "",
        ".",
        "/proc/gpufleet-new.yaml",
    ]
) | text.filter(
    lambda s: not s.startswith("/") and ".." not in s and "\x00" not in s
)  # never outside the scratch directory; argv holds no NUL


@given(st.one_of(st.none(), instance_types), st.one_of(st.none(), targets))
def test_init_never_crashes_and_writes_only_a_valid_spec(types: str | None, out: str | None) -> None:
    with scratch() as root:
        (root / "mine.yaml").write_text("mine\n")
        (root / "dir").mkdir()
        argv = [
            "init",
            *(["--instance-types", types] if types is not None else []),
            *(["--out", out] if out is not None else []),
        ]
        result = run(argv, root)
        assert (root / "mine.yaml").read_text() == "mine\n"
        written = sorted(
            p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != "mine.yaml"
        )
        if result.code == 0 and out != "-":
            assert len(written) == 1 and run(["validate", written[0]], root).code == 0
        else:
            assert written == []
