"""Preflight against endpoints that misbehave (issue 14 item 5): a 200 whose body is not an AWS response, a
server that never answers, one that drips a byte at a time. Each is one blocking finding within a bounded time,
never a traceback. The servers are local loopback sockets; each test takes about a second."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.preflight import clients as aws
from gpufleet.preflight.core import DEADLINE_FIX
from tests.preflight.support import scrub_aws_env

SPEC = (Path(__file__).resolve().parents[2] / "fleet.yaml").read_text()
Behaviour = Callable[[socket.socket, threading.Event], None]


def not_xml(conn: socket.socket, stop: threading.Event) -> None:
    conn.recv(65536)
    body = b"<html>captive portal</html"
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def silent(conn: socket.socket, stop: threading.Event) -> None:
    conn.recv(65536)
    stop.wait(30)


def dripping(conn: socket.socket, stop: threading.Event) -> None:
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    while not stop.wait(0.05):
        conn.sendall(b"X")  # one more byte of a header line that never ends


@pytest.fixture
def endpoint(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A loopback server with the behaviour of the test's parameter, and AWS_ENDPOINT_URL pointing at it."""
    behaviour: Behaviour = request.param
    stop = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=lambda c=conn: (behaviour(c, stop), c.close()), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    scrub_aws_env(monkeypatch, str(tmp_path), credentials=True)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
    yield
    stop.set()
    thread.join(5)
    server.close()


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, float]:
    spec = tmp_path / "fleet.yaml"
    spec.write_text(SPEC)
    start = time.monotonic()
    code = main(["preflight", str(spec), "--env", "dev", *extra])
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    assert err == ""
    return code, out, elapsed


def summary(endpoint_url: str) -> str:
    return f"preflight research/dev in us-east-1 via AWS_ENDPOINT_URL={endpoint_url}: 1 error(s), 0 warning(s)\n"


@pytest.mark.parametrize("endpoint", [not_xml], indirect=True)
@pytest.mark.usefixtures("endpoint")
def test_a_body_that_is_not_an_aws_response_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, elapsed = run(tmp_path, capsys)
    head, fix, last = out.splitlines(keepends=True)
    assert code == 1
    assert head.startswith(
        "error: aws: ec2:DescribeInstanceTypes failed: ResponseParserError: Unable to parse response"
    )
    assert "\\n" not in head and len(head) < 400  # the body is not pasted into the report
    assert fix == f"  fix: the endpoint answered with something that is not an AWS API response: {aws.CONNECTION_FIX}\n"
    assert last == summary(os.environ["AWS_ENDPOINT_URL"])
    assert elapsed < 10


@pytest.mark.parametrize("endpoint", [silent], indirect=True)
@pytest.mark.usefixtures("endpoint")
def test_a_silent_endpoint_times_out_quickly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aws, "READ_TIMEOUT_S", 0.3)  # the shipped 10 s, scaled down to keep the suite fast
    code, out, elapsed = run(tmp_path, capsys)
    assert code == 1
    assert out.startswith(
        "error: aws: ec2:DescribeInstanceTypes failed: ReadTimeoutError: Read timeout on endpoint URL: "
    )
    assert f"  fix: {aws.CONNECTION_FIX}\n" in out
    assert (
        elapsed < 10
    )  # two attempts of 0.3 s with the retry back-off (122 s before the timeouts were set); room for a loaded machine


@pytest.mark.parametrize("endpoint", [dripping], indirect=True)
@pytest.mark.usefixtures("endpoint")
def test_a_dripping_endpoint_is_stopped_by_the_deadline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, elapsed = run(tmp_path, capsys, "--deadline", "1")
    assert code == 1
    assert out.splitlines(keepends=True)[:2] == [
        (
            "error: aws: preflight stopped after 1 s (--deadline) in the instance types and GPUs check: the AWS API did"
            " not answer in time\n"
        ),
        f"  fix: {DEADLINE_FIX}\n",
    ]
    # The read timeout alone would never fire (a byte arrives every 50 ms): without the deadline this runs for
    # minutes. The bound leaves room for a loaded CI machine.
    assert 1 <= elapsed < 15


def test_the_shipped_timeouts_are_short() -> None:
    assert (aws.CONNECT_TIMEOUT_S, aws.READ_TIMEOUT_S, aws.MAX_ATTEMPTS) == (3.0, 10.0, 2)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "0 is not between 0 and 3600 seconds"),
        ("soon", "'soon' is not a number of seconds"),
        ("7200", "7200 is not between 0 and 3600 seconds"),
    ],
)
def test_a_bad_deadline_is_a_usage_error(capsys: pytest.CaptureFixture[str], value: str, message: str) -> None:
    assert main(["preflight", "fleet.yaml", "--env", "dev", "--deadline", value]) == 2
    assert capsys.readouterr().err.endswith(f"gpufleet preflight: error: argument --deadline: {message}\n")
