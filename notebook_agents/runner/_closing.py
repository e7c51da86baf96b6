"""Closing a session without livekit's wait for a transcript that cannot come.

As it closes, livekit commits the caller's last words: it pushes silence into the STT and
waits up to ``session_close_transcript_timeout`` (an ``AgentSession`` option, 2 s) for a final
transcript, unless one came in the last 0.5 s (``AudioRecognition._commit_user_turn``). With
no speech heard and awaiting its transcript none comes, so every stop of a session with an STT
took the whole 2 s. ``PendingWords`` knows whether words are on their way; the runner's stop
sets the wait to 0 when none are (through the public ``session.options``, as livekit's own
answering-machine detector sets ``ivr_detection``) and leaves the user's wait otherwise.
"""

from __future__ import annotations

from typing import Any

from livekit.agents import AgentSession, UserInputTranscribedEvent, UserStateChangedEvent


class PendingWords:
    """Whether ``session`` is hearing the caller, or heard speech whose final transcript has
    not come yet."""

    def __init__(self, session: AgentSession[Any]) -> None:
        self.session = session
        self._untranscribed = False
        session.on("user_state_changed", self._on_user_state)
        session.on("user_input_transcribed", self._on_transcribed)

    @property
    def pending(self) -> bool:
        return self.session.user_state == "speaking" or self._untranscribed

    def _on_user_state(self, event: UserStateChangedEvent) -> None:
        if event.old_state == "speaking":
            self._untranscribed = True

    def _on_transcribed(self, event: UserInputTranscribedEvent) -> None:
        if event.is_final:
            self._untranscribed = False

    def forget(self) -> None:
        """What was heard was cleared (a turn withdrawn): no transcript of it will come."""
        self._untranscribed = False

    def close_without_waiting(self) -> None:
        """Before the session closes (on its loop): no wait for a transcript unless one is on
        its way."""
        if not self.pending:
            self.session.options.session_close_transcript_timeout = 0.0
