"""PR #5229's Greeter/Weather agents (``greeter_weather``, unchanged) as the script a LiveKit
developer runs with ``python -m livekit.agents console``: its realtime model is configured by the
environment (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, which livekit's OpenAI plugin reads), text
replies as a typed console session wants."""

from livekit.plugins import openai

from .greeter_weather import make_server

server = make_server(openai.realtime.RealtimeModel(modalities=["text"]))
