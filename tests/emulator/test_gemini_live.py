"""Gemini Live on the emulator: livekit's unmodified google plugin (google-genai under it)
over real TLS loopback sockets, switched over in one line (``emu.gemini_http_options()``)."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import certifi
import pytest
from google.genai import errors, types
from livekit.agents import NOT_GIVEN, Agent, AgentSession, RunContext, RunResult, function_tool, llm
from livekit.plugins import google

from notebook_agents import Trace
from notebook_agents.analysis import handoff_label
from notebook_agents.bench import BenchmarkConfig
from notebook_agents.bench.run import run_benchmark
from notebook_agents.emulator import (
    Emulator,
    EmulatorError,
    GeminiEndpoint,
    LatencyModel,
    ParameterError,
)
from notebook_agents.emulator.gemini_live.tls import CA_FILE_PREFIX
from notebook_agents.races import RACES, run_race
from notebook_agents.views._timeline_layout import describe
from tests.doc_examples import DOCS, python_block, run
from tests.kernel import Kernel

KEY = "not-a-secret"


def gemini(emulator: Emulator, **overrides: Any) -> google.realtime.RealtimeModel:
    return google.realtime.RealtimeModel(
        api_key=KEY,
        http_options=emulator.gemini_http_options(**overrides),
        modalities=[types.Modality.TEXT],
    )


@function_tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Specialist(Agent):
    def __init__(
        self, tools: list[llm.Tool | llm.Toolset], model: llm.RealtimeModel | None = None
    ) -> None:
        super().__init__(
            instructions="You are the specialist. You answer.",
            tools=tools,
            llm=model if model is not None else NOT_GIVEN,
        )

    async def on_enter(self) -> None:
        self.session.generate_reply()


class Receptionist(Agent):
    """Hands over to a specialist that gets the same tool objects (livekit then keeps the
    Gemini session), or its own model (a fresh session)."""

    def __init__(self, specialist_model: llm.RealtimeModel | None = None) -> None:
        self.specialist_model = specialist_model
        super().__init__(
            instructions="You are the receptionist. You route callers.",
            tools=[get_weather, transfer_to_the_specialist],
        )


@function_tool
async def transfer_to_the_specialist(context: RunContext[None]) -> Agent:
    """Hand the caller to the specialist."""
    current = context.session.current_agent
    assert isinstance(current, Receptionist)
    return Specialist(list(current.tools), current.specialist_model)


@pytest.fixture
async def sessions() -> AsyncIterator[list[AgentSession[None]]]:
    made: list[AgentSession[None]] = []
    yield made
    for session in made:
        await session.aclose()


async def started(
    sessions: list[AgentSession[None]], model: llm.RealtimeModel, agent: Agent
) -> tuple[AgentSession[None], Trace]:
    session: AgentSession[None] = AgentSession(llm=model)
    sessions.append(session)
    trace = Trace(session)
    await session.start(agent)
    return session, trace


def said(result: Any) -> list[tuple[str, Any]]:
    """A run's events as (type, text or tool name)."""
    return [
        (e.type, e.item.text_content if e.type == "message" else e.item.name)
        for e in result.events
        if e.type != "agent_handoff"
    ]


async def test_a_text_turn_and_a_tool_call_through_the_unmodified_plugin(
    emulator: Emulator, sessions: list[AgentSession[None]]
) -> None:
    session, _ = await started(sessions, gemini(emulator), Receptionist())
    answer: RunResult[None] = await session.run(user_input="Hello there")
    assert said(answer) == [("message", 'You are the receptionist. You said: "Hello there".')]
    called: RunResult[None] = await session.run(user_input="get weather city=Paris")
    assert said(called) == [
        ("function_call", "get_weather"),
        ("function_call_output", "get_weather"),
        ("message", "You are the receptionist. The tool returned: sunny in Paris"),
    ]
    (log,) = emulator.connections
    assert log.kind == "gemini_live" and log.types("in")[0] == "setup"
    assert log.types("out")[0] == "setupComplete"
    # the model's side of the conversation, as the emulator holds it
    (conversation,) = emulator.conversations()
    assert [(i["type"], i.get("text")) for i in conversation][-3:] == [
        ("function_call", '{"city":"Paris"}'),
        ("function_call_output", "sunny in Paris"),
        ("message", "You are the receptionist. The tool returned: sunny in Paris"),
    ]


async def test_a_handoff_with_the_same_tools_keeps_the_gemini_session(
    emulator: Emulator, sessions: list[AgentSession[None]]
) -> None:
    # NON_BLOCKING, as livekit advises: the handoff tool's result goes SILENT, so Gemini makes
    # no answer of its own that would race the specialist's (the races' tool_reply_race)
    model = gemini(emulator)
    model.update_options(tool_behavior=types.Behavior.NON_BLOCKING)
    session, trace = await started(sessions, model, Receptionist())
    result: RunResult[None] = await session.run(user_input="Please transfer to the specialist.")
    await result
    (handoff,) = [h for h in trace.of_kind("handoff") if h.data["from"]]
    assert (handoff.data["to"], handoff.data["session"]) == ("Specialist", "reused")
    assert len(emulator.connections) == 1  # one Live session throughout
    # a kept session keeps the model's history, and its system instruction: livekit sends
    # the specialist's instructions as a model turn (realtime_api.py update_instructions)
    (conversation,) = emulator.conversations()
    texts = [i.get("text") for i in conversation]
    assert "You are the specialist. You answer." in texts
    assert str(texts[-1]).startswith("You are the receptionist.")


async def test_a_reused_gemini_session_is_read_as_copied_the_model_kept_as_history(
    emulator: Emulator, sessions: list[AgentSession[None]]
) -> None:
    """livekit's context for the specialist is empty, but the Live API cannot remove a turn:
    the model answers from the receptionist's whole conversation, and the trace says so."""
    session, trace = await started(sessions, gemini(emulator), Receptionist())
    await session.run(user_input="Hello there")
    result: RunResult[None] = await session.run(user_input="Please transfer to the specialist.")
    await result
    (handoff,) = [h for h in trace.of_kind("handoff") if h.data["from"]]
    data = handoff.data
    assert (data["session"], data["context"], data["livekit_context"]) == (
        "reused",
        "copied",
        "empty",
    )
    assert data["items_to"] == 0  # livekit's view of what the specialist starts from
    # the model held A's turns and its handoff call when B's context was synced: all kept
    (conversation,) = emulator.conversations()
    texts = [i.get("text") for i in conversation]
    assert "Hello there" in texts and "Please transfer to the specialist." in texts
    assert data["kept_items"] >= 3
    assert handoff_label(data) == "reused · copied"  # the views' chip
    assert "livekit_context: empty" in describe(handoff)  # and its hover


async def test_a_handoff_to_an_agent_with_its_own_model_opens_a_fresh_session(
    emulator: Emulator, sessions: list[AgentSession[None]]
) -> None:
    session, trace = await started(sessions, gemini(emulator), Receptionist(gemini(emulator)))
    reply = asyncio.Event()
    session.on(
        "conversation_item_added",
        lambda ev: (
            reply.set() if "specialist" in (getattr(ev.item, "text_content", None) or "") else None
        ),
    )
    await session.run(user_input="Please transfer to the specialist.")
    await asyncio.wait_for(reply.wait(), 10)
    (handoff,) = [h for h in trace.of_kind("handoff") if h.data["from"]]
    assert (handoff.data["to"], handoff.data["session"]) == ("Specialist", "fresh")
    _, fresh = emulator.connections
    assert fresh.types("in")[0] == "setup" and fresh.types("out")[0] == "setupComplete"
    # the fresh session's system instruction is the specialist's, who answers
    assert str(emulator.conversations()[1][-1]["text"]).startswith("You are the specialist.")


async def test_the_round_trip_delays_every_exchange(emulator: Emulator) -> None:
    """Connect (3 round trips + the setup's) and a reply (one round trip) at rtt 100 ms."""
    model = gemini(emulator, rtt_ms=100)
    rt = model.session()
    try:
        started = time.perf_counter()
        await rt.generate_reply()  # sent once connected: connect + setup + the request
        elapsed = time.perf_counter() - started
    finally:
        await rt.aclose()
    net = LatencyModel(rtt_ms=100)
    assert elapsed >= net.connect_s() + 2 * net.round_trip_s()


async def test_a_fault_reaches_the_client_as_the_service_closes(emulator: Emulator) -> None:
    endpoint = emulator.gemini
    client_ssl = endpoint.ssl_context()
    from google import genai

    client = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(
            base_url=endpoint.url,
            headers={"x-emulator-settings": "fail_first=1"},
            async_client_args={"ssl": client_ssl},
        ),
    )
    async with client.aio.live.connect(
        model="gemini-2.5-flash-native-audio-preview-12-2025",
        config=types.LiveConnectConfig(response_modalities=[types.Modality.TEXT]),
    ) as live:
        await live.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="hi")])
        )
        with pytest.raises(errors.APIError, match="1011"):
            async for _ in live.receive():
                pass
    await client.aio.aclose()


async def test_per_connection_settings_travel_in_a_header(emulator: Emulator) -> None:
    options = emulator.gemini_http_options(rtt_ms=20, drop_after=5)
    assert options.headers == {"x-emulator-settings": "rtt_ms=20&drop_after=5"}
    with pytest.raises(ParameterError, match="unknown parameter 'rtt'"):
        emulator.gemini_http_options(rtt=20)
    model = gemini(emulator, rtt_ms=20)
    rt = model.session()
    try:
        await rt.generate_reply()
    finally:
        await rt.aclose()
    (log,) = emulator.connections
    assert log.latency.rtt_ms == 20


async def test_an_unchanged_model_reaches_the_emulator_through_the_environment(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``google.realtime.RealtimeModel()`` as a user's script builds it (no key, no
    http_options), in a kernel set up for Google: the environment alone points it here."""
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-the-users-real-key")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    environment = emulator.gemini.environment(rtt_ms=20)
    assert "AIza-the-users-real-key" not in environment.values()  # a placeholder, never a key
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    rt = google.realtime.RealtimeModel(modalities=[types.Modality.TEXT]).session()
    try:
        generation = await rt.generate_reply()
        texts = [t async for m in generation.message_stream async for t in m.text_stream]
    finally:
        await rt.aclose()
    assert "".join(texts) == "How can I help you?"
    (log,) = emulator.connections
    assert log.kind == "gemini_live" and log.latency.rtt_ms == 20


async def test_the_guides_environment_example_runs_as_written(emulator: Emulator) -> None:
    page = DOCS / "guides" / "gemini.md"
    saved = dict(os.environ)
    namespace: dict[str, Any] = {"emu": emulator}
    try:
        await run(python_block(page, "emu.gemini.environment("), namespace, page)
        rt = namespace["model"].session()
        try:
            await rt.generate_reply()
        finally:
            await rt.aclose()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    (log,) = emulator.connections
    assert log.kind == "gemini_live" and log.latency.rtt_ms == 20


async def test_per_connection_settings_travel_in_a_path_prefix_too(emulator: Emulator) -> None:
    """An environment variable carries no header: the base URL's path does, read by the same
    parser (the SDK keeps a base URL's path, and drops its query)."""
    from google import genai

    endpoint = emulator.gemini
    url = endpoint.environment(rtt_ms=20, drop_after=5)["GOOGLE_GEMINI_BASE_URL"]
    assert url == f"{endpoint.url}/settings/rtt_ms=20&drop_after=5"
    assert endpoint.environment()["GOOGLE_GEMINI_BASE_URL"] == endpoint.url
    with pytest.raises(ParameterError, match="unknown parameter 'rtt'"):
        endpoint.environment(rtt=20)
    refused = types.HttpOptions(
        base_url=f"{endpoint.url}/settings/rtt=20",
        async_client_args={"ssl": endpoint.ssl_context()},
    )
    client = genai.Client(api_key=KEY, http_options=refused)
    with pytest.raises(errors.APIError, match="unknown parameter 'rtt'"):
        async with client.aio.live.connect(model="gemini-2.5-flash-native-audio-preview-12-2025"):
            pass
    await client.aio.aclose()


def test_the_ca_file_holds_the_emulators_authority_and_certifis_until_it_stops() -> None:
    """SSL_CERT_FILE replaces a process's trust store: the file keeps certifi's authorities
    (google-genai's own default) beside the emulator's, so the script's other TLS still works."""
    with Emulator() as emu:
        endpoint = emu.gemini
        path = Path(endpoint.environment()["SSL_CERT_FILE"])
        bundle = path.read_text()
        assert endpoint.ca_pem in bundle and Path(certifi.where()).read_text() in bundle
        trusted = ssl.create_default_context(cafile=path).get_ca_certs()
        certifis = ssl.create_default_context(cafile=certifi.where()).get_ca_certs()
        assert len(trusted) == len(certifis) + 1
    assert not path.exists()


def test_a_kernel_shut_down_with_its_emulator_running_leaves_no_ca_file(tmp_path: Path) -> None:
    """Shutting a kernel down or restarting it stops no emulator its cells started: their CA
    file goes with the kernel's process all the same."""
    with Kernel(env={**os.environ, "TMPDIR": str(tmp_path)}) as kernel:
        kernel.run_ok("from notebook_agents.emulator import Emulator\nemu = Emulator().start()")
        assert Path(kernel.eval("emu.gemini.ca_file")).is_file()
    assert list(tmp_path.glob("*.pem")) == []


DIES_WITH_ITS_EMULATOR = """
import os
from notebook_agents.emulator import Emulator
print(Emulator().start().gemini.ca_file, flush=True)
os._exit(0)  # as a kernel ends when its server is gone (ipykernel's parent poller), or killed
"""


def test_the_ca_file_of_a_process_that_died_goes_when_the_next_emulator_writes_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    died = subprocess.run(
        [sys.executable, "-c", DIES_WITH_ITS_EMULATOR],
        env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    left = Path(died.stdout.strip())
    assert left.parent == tmp_path and left.is_file(), died.stderr  # nothing of it could run
    living = tmp_path / f"{CA_FILE_PREFIX}{os.getpid()}-of-a-running-emulator.pem"
    living.touch()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with Emulator() as emulator:
        own = emulator.gemini.ca_file
        assert own is not None and Path(own).is_file()
        assert not left.exists() and living.exists()
    assert list(tmp_path.glob("*.pem")) == [living]


IN_THE_BACKGROUND_OF_A_SCRIPT = ["sh", "-c", 'trap "" INT; exec "$0" "$@"', sys.executable, "-c"]
"""runs Python as a job that a script starts with ``&`` does: SIGINT ignored, and so in every
process it starts (``make test`` from CI's script, say)"""

CA_FILE_OF_AN_EMULATOR_PROCESS = """
import asyncio
from notebook_agents.emulator import GeminiEndpoint
from notebook_agents.emulator.process import emulator_process

async def main() -> None:
    async with emulator_process() as url:
        print((await asyncio.to_thread(GeminiEndpoint.of, url)).ca_file, flush=True)

asyncio.run(main())
"""


@pytest.mark.slow  # two processes, each importing the package
def test_the_emulator_process_leaves_no_ca_file_where_interrupts_are_ignored(
    tmp_path: Path,
) -> None:
    ran = subprocess.run(
        [*IN_THE_BACKGROUND_OF_A_SCRIPT, CA_FILE_OF_AN_EMULATOR_PROCESS],
        env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert Path(ran.stdout.strip()).parent == tmp_path  # it had one, there
    assert list(tmp_path.glob("*.pem")) == []


def test_an_endpoint_without_its_ca_file_names_where_to_get_one() -> None:
    endpoint = GeminiEndpoint(url="https://127.0.0.1:9", ca_pem="")
    with pytest.raises(EmulatorError, match=r"GeminiEndpoint\.of\(emulator_url\)"):
        endpoint.environment()


async def test_the_tls_site_refuses_a_client_that_does_not_trust_its_authority(
    emulator: Emulator,
) -> None:
    endpoint = emulator.gemini
    port = int(endpoint.url.rsplit(":", 1)[1])
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context())
    # the emulator's own CA is trusted, and only its: another emulator's is refused
    with Emulator() as other:
        stranger = GeminiEndpoint(url=endpoint.url, ca_pem=other.gemini.ca_pem)
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection("127.0.0.1", port, ssl=stranger.ssl_context())
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=endpoint.ssl_context())
    writer.close()
    await writer.wait_closed()


@pytest.mark.slow  # the emulator process
async def test_the_emulator_process_tells_its_gemini_endpoint() -> None:
    from notebook_agents.emulator.process import emulator_process

    async with emulator_process() as url:
        endpoint = await asyncio.to_thread(GeminiEndpoint.of, url)
        model = endpoint.realtime_model(overrides={"rtt_ms": 10}, modalities=[types.Modality.TEXT])
        rt = model.session()
        try:
            generation = await rt.generate_reply()
            texts = [t async for m in generation.message_stream async for t in m.text_stream]
        finally:
            await rt.aclose()
        assert endpoint.ca_file is not None
        assert await asyncio.to_thread(os.path.isfile, endpoint.ca_file)
    assert "".join(texts) == "How can I help you?"
    # the stopped process left nothing behind
    assert not await asyncio.to_thread(os.path.exists, endpoint.ca_file)


async def test_an_openai_only_fault_is_refused_with_the_reason(emulator: Emulator) -> None:
    """Gemini acknowledges no item: a held ack cannot apply, and saying nothing would let a
    race test pass for the wrong reason."""
    from google import genai

    client = genai.Client(api_key=KEY, http_options=emulator.gemini_http_options(ack_delay_ms=100))
    with pytest.raises(errors.APIError, match="ack_delay_ms has no meaning on Gemini Live"):
        async with client.aio.live.connect(model="gemini-2.5-flash-native-audio-preview-12-2025"):
            pass
    await client.aio.aclose()


def test_a_missing_google_plugin_names_the_extra(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "livekit.plugins.google", None)
    with pytest.raises(EmulatorError, match=r"pip install 'notebook-agents\[gemini\]'"):
        emulator.gemini.realtime_model()


@pytest.mark.parametrize("module", ["google.genai", "livekit.plugins.google"])
async def test_a_run_on_gemini_without_the_extra_names_it_before_any_trial(
    monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    """The bench refuses the run up front (not one bare ModuleNotFoundError per trial), and a
    race asked for Gemini says the same, as ``gemini_http_options`` does."""
    monkeypatch.setitem(sys.modules, module, None)
    config = BenchmarkConfig(providers=["gemini"], rtts_ms=[0.0], trials=1, warmup=0)
    with pytest.raises(ValueError, match=r"'gemini'.*pip install 'notebook-agents\[gemini\]'"):
        await run_benchmark(config)
    with pytest.raises(EmulatorError, match=r"pip install 'notebook-agents\[gemini\]'"):
        await run_race(RACES["closing_session"], provider="gemini")


def test_asking_a_url_where_no_emulator_answers_names_the_fix() -> None:
    with socket.socket() as free:  # a port nobody listens on once this closes
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(EmulatorError, match=r"no emulator answers at .*: start one"):
        GeminiEndpoint.of(f"http://127.0.0.1:{port}", timeout=2.0)
