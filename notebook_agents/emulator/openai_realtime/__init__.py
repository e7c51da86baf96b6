"""OpenAI's Realtime API (``/v1/realtime``) on the emulator, for livekit's unmodified openai
plugin: the route and refused connections (endpoint.py), one client's session and its events
(connection.py), the session's settings (session.py), its input audio heard by server VAD and
the recognizer (audio_input.py), responses (responses.py), and the wire format, checked
against the ``openai`` package's own types (protocol.py).

Audio out: a reply in the ``audio`` modality is eSpeak's voice, sent as fast as the latency
model says its text would be (a token's words and their audio together, ``token_ms`` apart),
faster than it plays, as the service sends it; the client's speaker plays it in real time and
truncates what it did not play: a truncate cuts the words to the share of the audio heard
(and stops a reply still being sent).

A transcription session (``?intent=transcription`` with the beta protocol's ``OpenAI-Beta:
realtime=v1`` header, as VideoSDK's ``OpenAISTT`` opens it) hears the same way and never
answers: ``transcription_session.created``, ``transcription_session.update`` (``.updated``),
then per turn speech_started, speech_stopped, ``input_audio_buffer.committed``,
``conversation.item.created`` and the transcript, in the beta protocol's events.
"""

from .connection import RealtimeConnection
from .endpoint import realtime_websocket

__all__ = ["RealtimeConnection", "realtime_websocket"]
