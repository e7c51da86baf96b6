"""Push-to-talk as livekit's own push-to-talk example does it, on a running session.

While the button is held the session's turns are committed by hand (turn detection
``"manual"``): on press the agent is interrupted and the user turn cleared, on release the audio
input is detached and the turn committed (``AgentSession.commit_user_turn``), so a pause while
the button is held never ends the turn, and letting go always does. The session's own turn
detection comes back once the committed turn is taken, so ``send_audio`` and an open microphone
go on as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from livekit.agents import (
    NOT_GIVEN,
    AgentSession,
    AgentStateChangedEvent,
    ConversationItemAddedEvent,
    NotGivenOr,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
    llm,
    utils,
)

from .errors import RunnerError

TRANSCRIPT_WAIT_S = 10.0
"""how long a release waits for the speech-to-text's last words (livekit's example's figure)"""
TAKEN_WITHIN_S = 10.0
"""how long after a release the session's own turn detection waits for the turn to be taken
(the caller's message added, the agent thinking); past it, it comes back all the same"""


class PushToTalk:
    """One session's push-to-talk button: ``start`` on press, ``end`` on release, both on the
    session's loop."""

    def __init__(self, session: AgentSession[Any]) -> None:
        self.session = session
        self._own: NotGivenOr[Any] = NOT_GIVEN
        """the session's own turn detection while push-to-talk holds it ``"manual"``"""
        self._taken: asyncio.Task[None] | None = None
        self._following = False
        self._spoke = False
        """the caller spoke since the press (livekit's VAD heard speech start)"""
        self._untranscribed = False
        """the caller spoke since the speech-to-text's last final words"""

    def check(self) -> None:
        """Refuse a session whose realtime model ends turns itself: livekit hands turn-taking
        to the client only when the session starts, never at run time."""
        session = self.session
        agent = session.current_agent
        model = agent.llm if utils.is_given(agent.llm) else session.llm
        own = agent.turn_detection if utils.is_given(agent.turn_detection) else None
        manual = (own or session.turn_detection) == "manual"
        if (
            isinstance(model, llm.RealtimeModel)
            and model.capabilities.turn_detection
            and not manual
        ):
            raise RunnerError(
                "push to talk needs turns the session ends by hand, and this realtime model ends "
                "them itself (its server VAD hears the pauses): start the session with "
                'AgentSession(..., turn_detection="manual"), or talk with the open microphone'
            )

    async def start(self) -> None:
        """Pressed: the agent stops, what the session heard of an unfinished turn is dropped,
        and nothing ends the caller's turn but ``end``."""
        session = self.session
        if self._taken is not None:
            self._taken.cancel()  # pressed again before the last turn was taken: still manual
            self._taken = None
        if not self._following:
            session.on("user_state_changed", self._on_user_state)
            session.on("user_input_transcribed", self._on_transcribed)
            self._following = True
        with contextlib.suppress(RuntimeError):  # a reply that may not be interrupted plays on
            session.interrupt()
        session.clear_user_turn()
        self._spoke = self._untranscribed = session.user_state == "speaking"
        if self._own is NOT_GIVEN:
            self._own = session.turn_detection
            if self._own != "manual":
                session.update_options(turn_detection="manual")
        session.input.set_audio_enabled(True)

    async def end(self) -> str:
        """Let go: the turn is committed with what was heard (returned) and answered; a press
        without a word is no turn."""
        session = self.session
        session.input.set_audio_enabled(False)  # livekit flushes its speech-to-text then
        try:
            if not self._spoke:
                session.clear_user_turn()
                self._give_back()
                return ""
            # words already final (the caller paused before letting go) need no waiting for
            wait = TRANSCRIPT_WAIT_S if self._untranscribed else 0.0
            heard = await session.commit_user_turn(transcript_timeout=wait)
        except BaseException:
            self._give_back()
            raise
        finally:
            session.input.set_audio_enabled(True)
        if heard:
            # switching back from "manual" drops a turn not yet taken: wait until it is
            self._taken = asyncio.create_task(self._give_back_once_taken())
        else:
            self._give_back()  # nothing heard: no turn to answer
        return heard

    async def _give_back_once_taken(self) -> None:
        taken = asyncio.Event()

        def on_item(event: ConversationItemAddedEvent) -> None:
            if isinstance(event.item, llm.ChatMessage) and event.item.role == "user":
                taken.set()

        def on_state(event: AgentStateChangedEvent) -> None:
            if event.new_state in ("thinking", "speaking"):
                taken.set()

        self.session.on("conversation_item_added", on_item)
        self.session.on("agent_state_changed", on_state)
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(taken.wait(), TAKEN_WITHIN_S)
            self._give_back()
        finally:
            self.session.off("conversation_item_added", on_item)
            self.session.off("agent_state_changed", on_state)
            if self._taken is asyncio.current_task():
                self._taken = None

    def _on_user_state(self, event: UserStateChangedEvent) -> None:
        if event.new_state == "speaking":
            self._spoke = self._untranscribed = True

    def _on_transcribed(self, event: UserInputTranscribedEvent) -> None:
        if event.is_final and self.session.user_state != "speaking":
            self._untranscribed = False

    def _give_back(self) -> None:
        """The session's own turn detection again."""
        own, self._own = self._own, NOT_GIVEN
        if utils.is_given(own) and own != "manual":
            self.session.update_options(turn_detection=own)
