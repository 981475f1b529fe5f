"""The gate's two pods wait for each other up to the Job's deadline (issue 29 item 13).

The script runs under bash with the commands it calls stubbed on PATH: the peer answers only after N tries, as when
the second node of an autoscaled group joins long after the first. Before, each side gave up after 120 x 5 s (10
minutes) inside a 30-minute Job with backoffLimit 0, so a healthy gate failed whenever the second node was late.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from gpufleet.plan.manifests import network as net
from tests.network.fleets import fleet, group

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")

# Each stub counts its calls in $STUBS/<name>.calls; curl and ssh fail until call $PEER_AFTER.
STUBS = {
    "sleep": "exit 0",
    "ssh-keygen": 'if [ "$1" = -q ]; then : > "$7"; : > "$7.pub"; fi',
    "python3": "exit 0",
    "curl": '[ "$n" -ge "$PEER_AFTER" ] || exit 7; : > "$STUBS/served"; echo key > "${@: -1}"',
    "ssh": '[ "$n" -ge "$PEER_AFTER" ] || exit 255; : > "$STUBS/reached"',
    # mpirun works only once the worker's sshd was reached, as the real one does.
    "mpirun": '[ -e "$STUBS/reached" ] || exit 1; echo "mpirun $*"; echo "NCCL INFO Using network AWS Libfabric"',
    "sshd": 'echo "sshd serving"',
}


def _script(wait_seconds: int | None = None) -> str:
    f = fleet([group("g", "p5.48xlarge", "EFA")])
    _, job = net.gate_objects(f, f.node_groups[0])
    script: str = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    if wait_seconds is not None:
        script = script.replace(f"-ge {job['spec']['activeDeadlineSeconds']} ]", f"-ge {wait_seconds} ]")
    return script


def _run(
    tmp: Path, index: int, peer_after: int, wait_seconds: int | None = None, script: str | None = None
) -> subprocess.CompletedProcess[str]:
    stubs = tmp / "bin"
    stubs.mkdir()
    for name, body in STUBS.items():
        path = stubs / name
        path.write_text(
            f'#!/bin/bash\nf="$STUBS/{name}.calls"; n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 )); echo $n > "$f"\n'
            f"{body}\n"
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    # The script's absolute paths, moved under tmp (it writes root's ~/.ssh and runs /usr/sbin/sshd).
    script = (
        (script if script is not None else _script(wait_seconds))
        .replace("/root/", f"{tmp}/root/")
        .replace("/run/sshd", f"{tmp}/run/sshd")
        .replace("/tmp/", f"{tmp}/t/")
        .replace("/usr/sbin/sshd", str(stubs / "sshd"))
    )
    env = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "STUBS": str(stubs),
        "PEER_AFTER": str(peer_after),
        "JOB_COMPLETION_INDEX": str(index),
        "NCCL_TESTS_MIN_BW": "449",
        "HOME": str(tmp),
    }
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_wait_is_the_jobs_deadline() -> None:
    f = fleet([group("g", "p5.48xlarge", "EFA")])
    _, job = net.gate_objects(f, f.node_groups[0])
    deadline = job["spec"]["activeDeadlineSeconds"]
    assert deadline == 30 * 60
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert script.count(f'if [ "$SECONDS" -ge {deadline} ]') == 2
    assert "seq 120" not in script


def test_a_worker_whose_launcher_comes_late_still_serves(tmp_path: Path) -> None:
    # 150 tries x 5 s = 12.5 minutes: past the old 120-try limit, within the 30-minute deadline.
    result = _run(tmp_path, index=1, peer_after=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sshd serving" in result.stdout
    assert (tmp_path / "bin" / "curl.calls").read_text().strip() == "150"


def test_a_launcher_whose_worker_comes_late_still_runs(tmp_path: Path) -> None:
    result = _run(tmp_path, index=0, peer_after=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Using network AWS Libfabric" in result.stdout


@pytest.mark.parametrize(("index", "message"), [
    (0, "gate FAILED: the worker (index 1) never accepted SSH"),
    (1, "gate FAILED: the launcher (index 0) never served its key"),
])  # fmt: skip
def test_past_the_deadline_each_side_says_which_peer_never_came(tmp_path: Path, index: int, message: str) -> None:
    result = _run(tmp_path, index=index, peer_after=10**6, wait_seconds=0)
    assert result.returncode == 1
    assert message in result.stdout
    assert not (tmp_path / "bin" / "mpirun.calls").exists()


def test_a_launcher_with_one_pod_per_numa_node_reaches_every_worker(tmp_path: Path) -> None:
    """topology.podShape OneNumaNode (issue 29 item 17): four pods, the launcher SSHes to each of the three workers
    before it runs mpirun over all 16 ranks."""
    text = group("g", "p5.48xlarge", "EFA") + "    topology: {policy: single-numa-node}\n"
    f = fleet([text])
    _, job = net.gate_objects(f, f.node_groups[0])
    result = _run(
        tmp_path, index=0, peer_after=1, script=job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "bin" / "ssh.calls").read_text().strip() == "3"
    hosts = "nccl-gate-g-1.nccl-gate-g:4,nccl-gate-g-2.nccl-gate-g:4,nccl-gate-g-3.nccl-gate-g:4"
    assert f"-np 16 -H {socket.gethostname()}:4,{hosts} " in result.stdout
