"""`notebook-agents emulator` as its own process, and a taken port as a clear error."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
import threading
import urllib.request
from collections.abc import Iterator

import psutil
import pytest

from notebook_agents.__main__ import main
from notebook_agents.emulator import Emulator, EmulatorError
from tests.conftest import API_KEY

EMULATOR = [sys.executable, "-m", "notebook_agents", "emulator"]


def command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``notebook-agents emulator ARGS`` in this process, as far as it refuses them: its exit
    status, standard output and error. A process would take seconds to import the package
    for what ``main`` decides alone (the tests above and below start the real process)."""
    status = main(["emulator", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_process_prints_its_url_first_and_serves() -> None:
    proc = subprocess.Popen(
        [*EMULATOR, "--port", "0", "--rtt-ms", "4"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        request = urllib.request.Request(
            f"{url}/v1/models", headers={"Authorization": f"Bearer {API_KEY}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert "gpt-realtime" in {m["id"] for m in json.load(response)["data"]}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_process_exits_when_its_parent_dies() -> None:
    # The parent starts the emulator, reports its pid, and exits without stopping it.
    parent_code = textwrap.dedent(
        f"""
        import subprocess, sys
        child = subprocess.Popen({EMULATOR!r} + ["--port", "0"], stdout=subprocess.PIPE, text=True)
        print(child.pid, child.stdout.readline().strip(), flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", parent_code], capture_output=True, text=True, timeout=30, check=True
    ).stdout.split()
    child = psutil.Process(int(out[0]))
    assert out[1].startswith("http://127.0.0.1:")
    try:
        child.wait(timeout=10)
    except psutil.TimeoutExpired:
        child.kill()
        pytest.fail("the orphaned emulator kept running")


def test_taken_port_is_a_clear_error(taken_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(EmulatorError, match=f"port {taken_port} on 127.0.0.1 is in use.*port=0"):
        Emulator(port=taken_port).start()

    status, out, err = command(capsys, "--port", str(taken_port))
    assert status == 1
    assert f"port {taken_port} on 127.0.0.1 is in use" in err
    assert out == ""


def test_bad_arguments_name_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = command(capsys, "--fault", "explode=1")
    assert status == 2
    assert "NAME=VALUE" in err and "drop_after" in err


@pytest.mark.parametrize(("value", "shown"), [("inf", "inf"), ("1e12", "1e+12"), ("-1", "-1")])
def test_a_delay_out_of_range_is_refused_at_once(
    capsys: pytest.CaptureFixture[str], value: str, shown: str
) -> None:
    # before: inf and 1e12 were accepted, and every connection then hung
    status, out, err = command(capsys, "--port", "0", f"--rtt-ms={value}")
    assert status == 2
    assert err.strip() == (
        f"notebook-agents emulator: rtt_ms={shown} must be between 0 and 60000 ms (e.g. rtt_ms=20)"
    )
    assert out == ""


def open_connections(port: int, count: int = 3) -> list[socket.socket]:
    """Keep-alive HTTP connections that have each been answered once."""
    connections = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        request = f"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n\r\n"
        conn.sendall(request.encode())
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")
        connections.append(conn)
    return connections


def start_process(port: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([*EMULATOR, "--port", str(port)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.mark.slow
def test_same_port_right_after_a_crash_with_connections_open() -> None:
    crashed, url = start_process(0)
    port = int(url.rsplit(":", 1)[1])
    connections = open_connections(port)
    crashed.kill()  # by its pid: the process this test started
    crashed.wait(timeout=10)
    for conn in connections:
        conn.close()  # the dead server's side of each connection is now in TIME-WAIT

    emu = Emulator(port=port).start()
    assert emu.port == port
    with pytest.raises(EmulatorError, match=f"port {port} on 127.0.0.1 is in use"):
        Emulator(port=port).start()  # a live emulator still holds its port alone
    emu.stop()
    proc, again = start_process(port)
    try:
        assert again == url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_same_port_right_after_stop_with_connections_open() -> None:
    emu = Emulator().start()
    port = emu.port
    connections = open_connections(port)
    emu.stop()
    for conn in connections:
        conn.close()
    with Emulator(port=port) as again:
        assert again.port == port


def test_stop_returns_only_when_the_server_thread_is_gone() -> None:
    before = set(threading.enumerate())
    emu = Emulator().start()
    (thread,) = set(threading.enumerate()) - before
    # a reply the server is in the middle of: its first word is out, the next a minute away
    busy = socket.create_connection(("127.0.0.1", emu.port), timeout=10)
    body = json.dumps(
        {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    busy.sendall(
        (
            "POST /v1/chat/completions?token_ms=60000 HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {API_KEY}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
    )
    assert busy.recv(65536).startswith(b"HTTP/1.1 200")
    try:
        emu.stop()
        assert not thread.is_alive()
        assert not emu.running
    finally:
        busy.close()


@pytest.mark.parametrize("port", [70000, -1])
def test_a_port_outside_the_tcp_range_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], port: int
) -> None:
    message = f"port {port} is not a TCP port: use 0 to 65535 (0 picks a free port)"
    with pytest.raises(EmulatorError, match=re.escape(message)):
        Emulator(port=port)
    assert command(capsys, "--port", str(port)) == (2, "", f"notebook-agents emulator: {message}\n")


def test_emulator_binds_loopback_only_and_stops_twice() -> None:
    emu = Emulator().start()
    try:
        listening = [
            c.laddr
            for c in psutil.Process().net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == emu.port
        ]
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening)
    finally:
        emu.stop()
        emu.stop()
    assert not emu.running
    with pytest.raises(EmulatorError, match="not running"):
        _ = emu.url
