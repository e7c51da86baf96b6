"""Emulators in a REAL ipykernel: re-running a cell replaces the emulator that cell started.

Run All on notebook 01 used to leave one running emulator (a thread and a listening socket)
behind per run. Checked from outside the kernel: its threads (through a cell), its listening
sockets (psutil on the kernel's pid) and the old port refusing connections.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import nbformat
import psutil
import pytest

from notebook_agents import Emulator

from .kernel import REPO, Kernel

SETUP = """
import threading
from notebook_agents import Emulator

def emulator_threads():
    return sum(t.name == "notebook-agents-emulator" for t in threading.enumerate())
"""


def notebook_01_emulator_cell() -> str:
    """Notebook 01's cell that starts its emulator, as shipped."""
    notebook = nbformat.read(REPO / "notebooks" / "01_prototype.ipynb", as_version=4)
    (cell,) = [c for c in notebook.cells if "Emulator().start()" in c.source]
    return str(cell.source)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    with Kernel() as kernel:
        kernel.run_ok(SETUP)
        yield kernel


def listening_ports(kernel: Kernel) -> set[int]:
    connections = psutil.Process(kernel.pid).net_connections(kind="tcp")
    return {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_rerunning_a_cell_replaces_its_emulator(kernel: Kernel) -> None:
    threads = kernel.eval("emulator_threads()")
    cell = notebook_01_emulator_cell()
    kernel.run_ok(cell)
    first = kernel.eval("emulator.port")
    kernel.run_ok(cell)
    second = kernel.eval("emulator.port")

    assert kernel.eval("emulator_threads()") == threads + 1
    assert listening_ports(kernel) & {first, second} == {second}
    if first != second:  # port 0 could, rarely, hand out the freed port again
        assert refuses(first)
    kernel.run_ok("emulator.stop()")


def test_rerunning_a_cell_on_a_fixed_port_restarts_on_it(kernel: Kernel) -> None:
    threads = kernel.eval("emulator_threads()")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cell = f"fixed = Emulator(port={port}).start()"
    kernel.run_ok(cell)
    kernel.run_ok(cell)  # the old one must go first, or its port would be taken
    assert kernel.eval("fixed.port") == port
    assert kernel.eval("emulator_threads()") == threads + 1
    kernel.run_ok("fixed.stop()")


def test_emulators_a_cell_starts_in_a_loop_all_live_and_are_all_replaced(kernel: Kernel) -> None:
    threads = kernel.eval("emulator_threads()")
    cell = "emus = []\nfor _ in range(3):\n    emus.append(Emulator().start())"
    kernel.run_ok(cell)
    first = kernel.eval("[e.port for e in emus]")
    assert kernel.eval("emulator_threads()") == threads + 3
    kernel.run_ok(cell)
    assert kernel.eval("emulator_threads()") == threads + 3
    assert kernel.eval("[e.running for e in emus]") == [True, True, True]
    assert all(refuses(port) for port in set(first) - set(kernel.eval("[e.port for e in emus]")))
    kernel.run_ok("for e in emus: e.stop()")


def test_other_cells_and_functions_keep_their_emulators(kernel: Kernel) -> None:
    threads = kernel.eval("emulator_threads()")
    kernel.run_ok("a = Emulator().start()")
    kernel.run_ok("b = Emulator().start()")  # another cell: both live
    kernel.run_ok("def make():\n    return Emulator().start()")
    kernel.run_ok("c, d = make(), make()")  # one line in a function: both live
    kernel.run_ok("e, f = make(), make()")
    assert kernel.eval("[x.running for x in (a, b, c, d, e, f)]") == [True] * 6
    assert kernel.eval("emulator_threads()") == threads + 6
    kernel.run_ok("for x in (a, b, c, d, e, f): x.stop()")
    assert kernel.eval("emulator_threads()") == threads


def test_emulators_started_in_a_function_coexist() -> None:
    emulators = []
    for _ in range(2):
        emulators.append(Emulator().start())  # one line, twice: a function is never replaced
    try:
        assert [emu.running for emu in emulators] == [True, True]
    finally:
        for emu in emulators:
            emu.stop()


def test_replacing_an_emulator_in_use_warns_in_the_cell(kernel: Kernel) -> None:
    cell = "used = Emulator().start()"
    kernel.run_ok(cell)
    # an agent's model connected to it (a realtime websocket, as the plugin opens one)
    kernel.run_ok(
        "import aiohttp\n"
        "client = aiohttp.ClientSession()\n"
        "ws = await client.ws_connect(used.url.replace('http', 'ws') + "
        "'/v1/realtime?model=gpt-realtime', headers={'Authorization': 'Bearer offline'})\n"
        "assert (await ws.receive_json())['type'] == 'session.created'\n"
        "assert used.open_connections == 1"
    )
    rerun = kernel.run_ok(cell)
    assert "EmulatorReplaced" in rerun.stderr and "lost its model" in rerun.stderr
    quiet = kernel.run_ok(cell)  # nobody used the one it replaces now: nothing to say
    assert "EmulatorReplaced" not in quiet.stderr
    kernel.run_ok("await client.close()\nused.stop()")
