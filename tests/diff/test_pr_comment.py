"""The pull request comment a fleet repository's workflow posts (gpufleet.review.comment, issue 47 item 6): GitHub
refuses a body over 65,536 characters, and the example fleet with 13 teams made a first pull request's diff of
78,127. A diff that fits is posted whole; a larger one keeps each environment's summary and says where the resource
tables are."""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.review import comment

ROOT = Path(__file__).resolve().parents[2]


def _thirteen_teams() -> str:
    """The example fleet (fleet.yaml) with its three teams repeated to 13, each new one asking one GPU per quota."""
    spec = yaml.safe_load((ROOT / "fleet.yaml").read_text(encoding="utf-8"))
    teams = spec["teams"]
    for i in range(len(teams), 13):
        team = copy.deepcopy(teams[i % 3])
        team["name"] = f"{team['name']}{i}"
        team.pop("namespace", None)
        for member in team.get("members", []):
            member["principalArn"] += str(i)
        for quota in team.get("quotas", []):
            quota["gpus"] = 1
            quota.pop("lendingLimit", None)
            quota.pop("borrowingLimit", None)
        teams.append(team)
    return yaml.safe_dump(spec, sort_keys=False)


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(argv)) == 0, argv
    return out.getvalue()


@pytest.fixture(scope="module")
def first_pull_request(tmp_path_factory: pytest.TempPathFactory) -> str:
    """diff.md as the workflow's Diff step writes it for the first pull request of the 13-team example fleet."""
    root = tmp_path_factory.mktemp("fleet-repo")
    (root / "fleet.yaml").write_text(_thirteen_teams(), encoding="utf-8")
    parts = [comment.MARKER + "\n"]
    for env in ("dev", "prod"):
        _cli("synth", str(root / "fleet.yaml"), "--env", env, "--out", str(root / "out" / "head" / env))
        parts.append(
            _cli("diff", str(root / "out" / "base" / env), str(root / "out" / "head" / env), "--format", "markdown")
        )
    return "".join(parts)


def test_the_first_pull_request_of_a_large_fleet_fits_in_one_comment(first_pull_request: str) -> None:
    assert comment.length(first_pull_request) > comment.LIMIT  # the reproducer: GitHub refused this body
    body = comment.fit(first_pull_request, "https://example.invalid/artifact")
    assert comment.length(body) <= comment.LIMIT
    assert body.startswith(f"{comment.MARKER}\n> [!NOTE]\n> The whole diff is {len(first_pull_request):,} characters")
    assert "[gpufleet-diff](https://example.invalid/artifact)" in body
    for env in ("dev", "prod"):  # each environment's summary stays: what changes, quotas, cost
        section = body.split(f"<!-- gpufleet-diff:{env} -->\n", 1)[1].split("<!-- gpufleet-diff:", 1)[0]
        assert section.startswith(f"### gpufleet diff: `{env}`")
        assert "Changed stages: foundation (" in section and "**GPU quota per team**" in section
        assert "<details>" not in section


def test_a_diff_that_fits_is_posted_whole(first_pull_request: str) -> None:
    small = first_pull_request.split("<!-- gpufleet-diff:prod -->", 1)[0]
    assert comment.fit(small) == small
    assert comment.fit(first_pull_request, limit=len(first_pull_request)) == first_pull_request


def test_environments_that_still_do_not_fit_are_named(first_pull_request: str) -> None:
    dev = first_pull_request.split("<!-- gpufleet-diff:prod -->", 1)[0]
    limit = len(comment.fit(dev, limit=len(dev) - 1)) + 500
    body = comment.fit(first_pull_request, limit=limit)
    assert len(body) <= limit and "<!-- gpufleet-diff:dev -->" in body and "<!-- gpufleet-diff:prod -->" not in body
    assert body.endswith(
        "\n**Not shown here** (no room): `prod`: their diff is in the job summary of this run and the workflow artifact"
        " gpufleet-diff.\n"
    )


def test_a_summary_too_long_for_any_comment_is_cut_at_a_line(first_pull_request: str) -> None:
    body = comment.fit(first_pull_request, limit=2_000)
    assert comment.length(body) <= 2_000 and "### gpufleet diff: `dev`" in body
    assert body.endswith(
        "\n\n**Cut here** (no room): the rest is in the job summary of this run and the workflow artifact"
        " gpufleet-diff.\n"
    )
    wide = "<!-- gpufleet-diff:x -->\n" + "\U0001f600" * 40_000 + "\n"  # two UTF-16 units each, as GitHub counts
    assert comment.length(comment.fit(wide)) <= comment.LIMIT


def test_the_module_prints_the_comment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "diff.md").write_text(f"{comment.MARKER}\nsmall\n", encoding="utf-8")
    assert comment.main([str(tmp_path / "diff.md"), "https://example.invalid/a"]) == 0
    assert capsys.readouterr().out == f"{comment.MARKER}\nsmall\n"
    assert comment.main([]) == 2
