"""`gpufleet diagnose --pull-log`: a node's image pulls read from what kubelet, containerd and the soci-snapshotter
write, each pull's size, time and rate, parallel or not, against the disk (`--disk-mibps`).

The fixtures are shaped as upstream writes them:
- fixtures/pull/describe_vllm_sequential.txt: `kubectl describe pod` Events with kubelet's Pulled event, the
  format string of kubernetes pkg/kubelet/images/image_manager.go (EnsureImageExists, `"Successfully pulled image %q
  in %v (%v including waiting). Image size: %v bytes."`); the figures are aws-samples/karpenter-blueprints
  blueprints/soci-snapshotter/README.md @ 48a2104 ("Results": 1m52.33s, 10778400361 bytes, containerd's pull);
- fixtures/pull/events_vllm_soci_br.json: `kubectl get events -o json` (a v1 List of core/v1 Events, `message`),
  the blueprint's Bottlerocket parallel pull (44.974s);
- fixtures/pull/journal_vllm_soci_al2023.log: the node's journal: the soci-snapshotter's logrus JSON lines
  (cmd/soci-snapshotter-grpc/main.go JSONFormatter; `Parallel image pull enabled` with its fields, fs/
  adaptive_fetch_image_layers.go newUnpackJobs; `preparing snapshot with parallel pull/unpack` per layer,
  snapshot/snapshot.go, v0.11.0 on), containerd's CRI line (internal/cri/server/images/image_pull.go, `"Pulled image
  %q with image id %q, repo tag %q, repo digest %q, size %q in %s"`, logrus text format) and kubelet's event as
  client-go's StartStructuredLogging writes it (tools/record/event.go, `"Event occurred" ... message=...`); the
  blueprint's AL2023 parallel pull (59.813s).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gpufleet.commands.diagnose import add_arguments, diagnose, run
from gpufleet.diagnose import pull
from gpufleet.diagnose.findings import LogFinding

FIXTURES = Path(__file__).parent / "fixtures" / "pull"
VLLM = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.9-gpu-py312-ec2"
SIZE = "10.04 GiB (10778400361 bytes)"
NO_SOCI = "parallel or not unknown (no soci-snapshotter lines)"
AL2023_PARALLEL = (
    "parallel (soci-snapshotter parallel pull/unpack: 3 layers, 20 downloads and 12 unpacks per image, 16 MiB chunks)"
)


def fx(name: str) -> str:
    return (FIXTURES / name).read_text()


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet diagnose")
    add_arguments(parser)
    return run(parser.parse_args(list(argv)))


def test_the_blueprints_sequential_pull_from_kubectl_describe_pod() -> None:
    findings = pull.check({"pod.txt": fx("describe_vllm_sequential.txt")}, 1000)
    assert findings == [
        LogFinding(
            "info",
            "pod.txt:35",
            VLLM,
            f"pulled {SIZE} in 1m52.33s: 91.5 MiB/s (0.096 GB/s), {NO_SOCI}; 9% of the disk's 1000 MiB/s",
            "",
            "pull.image",
        ),
        LogFinding(
            "warning",
            "pod.txt:35",
            VLLM,
            "pulled at 91.5 MiB/s, 9% of the disk's 1000 MiB/s: far below it (under 10%)",
            pull.UNKNOWN_MODE_HINT,
            "pull.below-disk",
        ),
    ]


def test_the_blueprints_bottlerocket_parallel_pull_from_get_events_json() -> None:
    findings = pull.check({"events.json": fx("events_vllm_soci_br.json")}, 1000)
    assert [(f.severity, f.source, f.message) for f in findings] == [
        (
            "info",
            "events.json: items[1]",
            f"pulled {SIZE} in 44.974s: 228.6 MiB/s (0.240 GB/s), {NO_SOCI}; 23% of the disk's 1000 MiB/s",
        )
    ]


def test_the_journal_shows_soci_parallel_mode_and_one_pull_counted_once() -> None:
    # containerd's line and kubelet's event are the same pull: the event is reported, containerd's adds nothing.
    findings = pull.check({"node.log": fx("journal_vllm_soci_al2023.log")}, 1000)
    assert findings == [
        LogFinding(
            "info",
            "node.log:8",
            VLLM,
            f"pulled {SIZE} in 59.813s: 171.9 MiB/s (0.180 GB/s), {AL2023_PARALLEL}; 17% of the disk's 1000 MiB/s",
            "",
            "pull.image",
        )
    ]


def test_soci_parallel_mode_on_a_disk_below_600_mibps() -> None:
    findings = pull.check({"node.log": fx("journal_vllm_soci_al2023.log")}, 250)
    assert findings[-1] == LogFinding(
        "warning",
        "node.log",
        "node",
        "soci-snapshotter's parallel pull/unpack runs on a 250 MiB/s disk: below 600 MiB/s it pulls slower than"
        " containerd's own pull (nodeadm doc/examples.md; aws-samples/karpenter-blueprints soci-snapshotter)",
        pull.SLOW_DISK_HINT,
        "pull.soci-slow-disk",
    )
    assert [f.check for f in findings] == ["pull.image", "pull.soci-slow-disk"]  # 171.9 of 250 is not far below
    assert findings[0].message.endswith("; 69% of the disk's 250 MiB/s")


def test_the_startup_line_alone_says_parallel() -> None:
    startup = fx("journal_vllm_soci_al2023.log").splitlines()[1]
    event = (
        f'  Normal  Pulled  7m2s  kubelet  Successfully pulled image "{VLLM}" in 59.813s (59.813s including waiting).'
    )
    findings = pull.check({"node.log": startup + "\n" + event + " Image size: 10778400361 bytes.\n"}, None)
    assert [f.message for f in findings] == [
        f"pulled {SIZE} in 59.813s: 171.9 MiB/s (0.180 GB/s), parallel (soci-snapshotter parallel pull/unpack: 20 downloads and"
        " 12 unpacks per image, 16 MiB chunks)"
    ]


def _local_layers(n: int) -> str:
    line = (
        'Aug 26 09:19:31 ip-10-0-52-9 soci-snapshotter-grpc[2187]: {"layerDigest":"sha256:%064x","level":"info",'
        '"msg":"preparing snapshot as local snapshot","time":"2025-08-26T09:19:31.402918344Z"}'
    )
    return "".join(line % i + "\n" for i in range(n))


def _event(duration: str, size: str | None = "10778400361", waiting: str | None = None) -> str:
    tail = f" ({waiting or duration} including waiting)."
    sized = f" Image size: {size} bytes." if size is not None else ""
    return f'  Normal  Pulled  7m2s  kubelet  Successfully pulled image "{VLLM}" in {duration}{tail}{sized}\n'


def test_soci_without_parallel_mode_is_not_parallel_and_the_fix_is_parallel_pull() -> None:
    findings = pull.check({"n.log": _local_layers(2) + _event("1m52.33s")}, 1000)
    assert [(f.check, f.message, f.hint) for f in findings] == [
        (
            "pull.image",
            f"pulled {SIZE} in 1m52.33s: 91.5 MiB/s (0.096 GB/s), not parallel (soci-snapshotter prepared 2 layers as local"
            " snapshots); 9% of the disk's 1000 MiB/s",
            "",
        ),
        (
            "pull.below-disk",
            "pulled one layer after another at 91.5 MiB/s, 9% of the disk's 1000 MiB/s: far below it (under 10%)",
            pull.PARALLEL_HINT,
        ),
    ]
    slow = pull.check({"n.log": _local_layers(1) + _event("4m")}, 500)  # 42.8 MiB/s on 500 MiB/s
    assert slow[-1].hint == f"raise nodeGroups[].diskThroughputMiBps to at least 600, then {pull.PARALLEL_HINT}"


def test_a_parallel_pull_far_below_the_disk_is_limited_elsewhere() -> None:
    startup = fx("journal_vllm_soci_al2023.log").splitlines()[1]
    findings = pull.check({"n.log": startup + "\n" + _event("3m30s")}, 1000)  # 48.9 MiB/s
    assert [(f.check, f.message, f.hint) for f in findings][-1] == (
        "pull.below-disk",
        "pulled in parallel at 48.9 MiB/s, 5% of the disk's 1000 MiB/s: far below it (under 10%)",
        pull.LIMITED_ELSEWHERE_HINT,
    )


def test_waiting_behind_other_pulls_is_shown() -> None:
    (finding,) = pull.check({"p.txt": _event("44.974s", waiting="1m30.2s")}, None)
    assert finding.message == (
        f"pulled {SIZE} in 44.974s (1m30.2s including waiting behind other pulls): 228.6 MiB/s (0.240 GB/s), {NO_SOCI}"
    )


def test_an_older_kubelet_without_the_size() -> None:
    old = f'  Normal  Pulled  7m2s  kubelet  Successfully pulled image "{VLLM}" in 1m52.33s (1m52.33s including waiting)\n'
    oldest = f'  Normal  Pulled  7m2s  kubelet  Successfully pulled image "{VLLM}" in 1m52.33s\n'
    for text in (old, oldest):
        (finding,) = pull.check({"p.txt": text}, 1000)
        assert (
            finding.message
            == f"pulled in 1m52.33s; size not given (an older kubelet writes none), so no rate; {NO_SOCI}"
        )
    # containerd's line in the journal gives the size the event does not.
    crio = fx("journal_vllm_soci_al2023.log").splitlines()[6]
    (finding,) = pull.check({"p.txt": old, "j.log": crio}, None)
    assert (finding.source, finding.message) == (
        "p.txt:1",
        f"pulled {SIZE} in 1m52.33s: 91.5 MiB/s (0.096 GB/s), {NO_SOCI}",
    )


def test_containerd_alone() -> None:
    crio = fx("journal_vllm_soci_al2023.log").splitlines()[6]
    (finding,) = pull.check({"j.log": crio}, None)
    assert (finding.source, finding.message) == (
        "j.log:1",
        f"pulled {SIZE} in 59.813804451s: 171.9 MiB/s (0.180 GB/s), {NO_SOCI}",
    )


def test_the_event_wrapped_before_in_as_the_blueprint_prints_it() -> None:
    wrapped = (
        f'  Normal   Pulled            7m2s   kubelet            Successfully pulled image "{VLLM}"\n'
        "  in 1m52.33s (1m52.33s including waiting). Image size: 10778400361 bytes.\n"
    )
    (finding,) = pull.check({"p.txt": wrapped}, None)
    assert (finding.source, finding.message) == (
        "p.txt:1",
        f"pulled {SIZE} in 1m52.33s: 91.5 MiB/s (0.096 GB/s), {NO_SOCI}",
    )


def test_one_pull_in_several_inputs_counts_once() -> None:
    texts = {"pod.txt": fx("describe_vllm_sequential.txt"), "again.txt": _event("1m52.33s")}
    assert [f.source for f in pull.check(texts, None)] == ["pod.txt:35"]


# Bad inputs, each with its exact message.


def test_no_pull_events_found() -> None:
    present = f'  Normal  Pulled  3s  kubelet  Container image "{VLLM}" already present on machine\n'
    for text, tail in (
        ("Events:  <none>\n", ""),
        (present, " (1 images already present on the node, not pulled)"),
    ):
        assert pull.check({"a.txt": text, "b.log": ""}, 1000) == [
            LogFinding(
                "warning",
                "a.txt, b.log",
                "input",
                'no pull events found: no kubelet "Successfully pulled image" event and no containerd "Pulled image"'
                f" line{tail}",
                "pass kubectl describe pod POD (its Events), kubectl get events -o json, or the node's journal"
                " (journalctl -u kubelet -u containerd -u soci-snapshotter) from a pod that pulled its images",
                "input.no-pull-events",
            )
        ]


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            _event("1m52.33s", size="10.8GB"),
            'malformed image size "10.8GB" in a Pulled event (kubelet writes "Image size: N bytes.")',
        ),
        (
            _event("1m52.33s", size="-5"),
            'malformed image size "-5" in a Pulled event (kubelet writes "Image size: N bytes.")',
        ),
        (
            _event("1m52.33s", size="10778400361").replace(" bytes.", ""),
            'malformed image size "10778400361" in a Pulled event (kubelet writes "Image size: N bytes.")',
        ),
        (_event("1m52.3x3s"), 'malformed pull time "1m52.3x3s" in a Pulled event (kubelet writes a Go duration)'),
    ],
)
def test_a_malformed_event_is_named_by_file_and_line(event: str, message: str) -> None:
    findings = pull.check({"p.txt": "Events:\n" + event}, None)
    assert findings[0] == LogFinding(
        "warning",
        "p.txt:2",
        VLLM,
        message,
        "pass the events and journal lines as kubectl and journalctl print them (an edited or cut line is not read)",
        "input.malformed-pull-event",
    )
    assert [f.check for f in findings] == ["input.malformed-pull-event", "input.no-pull-events"]


def test_a_malformed_containerd_size_and_a_malformed_json_event() -> None:
    crio = fx("journal_vllm_soci_al2023.log").splitlines()[6].replace('size \\"10778400361\\"', 'size \\"1e10\\"')
    (bad, _) = pull.check({"j.log": crio}, None)
    assert (bad.source, bad.message) == ("j.log:1", 'malformed image size "1e10" in containerd\'s Pulled image line')
    events = fx("events_vllm_soci_br.json").replace("Image size: 10778400361 bytes.", "Image size: ten bytes.")
    (bad, _) = pull.check({"e.json": events}, None)
    assert (bad.source, bad.message) == (
        "e.json: items[1]",
        'malformed image size "ten" in a Pulled event (kubelet writes "Image size: N bytes.")',
    )


def test_cli_pull_log_and_disk(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "journal_vllm_soci_al2023.log")
    assert run_cli("--pull-log", path, "--disk-mibps", "1000") == 0
    assert capsys.readouterr().out.startswith(f"[info] {path}:8: {VLLM}: pulled {SIZE} in 59.813s: 171.9 MiB/s")
    assert run_cli("--pull-log", path, "--disk-mibps", "250") == 1
    assert capsys.readouterr().out.startswith(f"[warning] {path}: node: soci-snapshotter's parallel pull/unpack runs")


def test_cli_unreadable_pull_log(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "events.txt"
    assert run_cli("--pull-log", str(missing)) == 2
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", f"gpufleet diagnose: error: cannot read {missing}: No such file or directory\n")


@pytest.mark.parametrize("value", ["0", "-1", "600.5", "fast", "100001", "６００"])
def test_cli_disk_mibps_not_a_throughput(capsys: pytest.CaptureFixture[str], value: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_cli("--pull-log", "-", "--disk-mibps", value)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"gpufleet diagnose: error: argument --disk-mibps: {value!r} is not a throughput: a whole number of MiB/s from"
        " 1 to 100000 (the gp3 volume's diskThroughputMiBps, 125 at its baseline)\n"
    )


def test_cli_disk_mibps_needs_a_pull_log(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("--node-describe", "-", "--disk-mibps", "600") == 2
    assert capsys.readouterr().err == "gpufleet diagnose: error: --disk-mibps is read with --pull-log FILE\n"


def test_diagnose_ranks_pull_findings_with_the_rest() -> None:
    findings = diagnose({}, {}, None, {"n.log": fx("journal_vllm_soci_al2023.log")}, 250)
    assert [f.check for f in findings] == ["pull.soci-slow-disk", "pull.image"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1m52.33s", 112.33), ("59.813s", 59.813), ("850ms", 0.85), ("1h2m3s", 3723.0), ("0s", 0.0), ("1.5µs", 1.5e-6)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert pull.go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1m52.33", "s", "1x", "1m 2s", "-1s"])
def test_not_go_durations(text: str) -> None:
    assert pull.go_duration(text) is None


def test_json_nested_deeper_than_the_decoder_recurses_is_not_a_crash() -> None:
    # json's decoder recurses once per level: RecursionError, not ValueError, from a line of brackets.
    for text in ('{"msg":' + "[" * 16_000, '{"items":' + "[" * 200_000):
        assert [f.check for f in pull.check({"x.log": text}, None)] == ["input.no-pull-events"]
