"""PR #5229's Greeter/Weather agents (``greeter_weather``, unchanged) on Gemini Live, as the
script a LiveKit developer runs with ``python -m livekit.agents console``: the google plugin's
``RealtimeModel()`` with no key, endpoint or CA (google-genai reads them from the
environment), text replies as a typed console session wants."""

from google.genai import types
from livekit.plugins import google

from .greeter_weather import make_server

server = make_server(google.realtime.RealtimeModel(modalities=[types.Modality.TEXT]))
