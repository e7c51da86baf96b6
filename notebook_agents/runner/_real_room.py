"""Real-room mode: LiveKit credentials, the room, and short-lived room-scoped tokens.

Used only when ``LIVEKIT_URL``, ``LIVEKIT_API_KEY`` and ``LIVEKIT_API_SECRET`` are all set (or
passed); offline needs none of this. Secrets stay in memory: only a short-lived user token for
this one room is ever shown (in the join widget).
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from livekit import api

from ._environment import user_value
from .errors import RunnerError

TOKEN_TTL = datetime.timedelta(minutes=10)
CREATE_TIMEOUT_S = 10.0
"""how long creating the room may take before the start fails"""
_ENV = {"url": "LIVEKIT_URL", "api_key": "LIVEKIT_API_KEY", "api_secret": "LIVEKIT_API_SECRET"}


@dataclass(frozen=True)
class LiveKitCredentials:
    url: str
    api_key: str
    api_secret: str = field(repr=False)
    from_arguments: bool = False
    """given as ``livekit_url=``/``api_key=``/``api_secret=`` rather than the environment"""

    @property
    def url_setting(self) -> str:
        """Where the URL came from, as the user set it: what an error tells them to check."""
        return "livekit_url=" if self.from_arguments else "LIVEKIT_URL"

    @property
    def offline_hint(self) -> str:
        if self.from_arguments:
            return "leave out livekit_url=, api_key= and api_secret= to run offline"
        return "unset LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET to run offline"

    @classmethod
    def resolve(
        cls, url: str | None = None, api_key: str | None = None, api_secret: str | None = None
    ) -> LiveKitCredentials | None:
        """Arguments first, then the user's environment; None when nothing is set (offline)."""
        given = {"url": url, "api_key": api_key, "api_secret": api_secret}
        values = {name: value or user_value(_ENV[name]) for name, value in given.items()}
        missing = [_ENV[name] for name, value in values.items() if not value]
        if len(missing) == len(values):
            return None
        if missing:
            raise RunnerError(
                "incomplete LiveKit credentials: set "
                + ", ".join(missing)
                + " as well (or pass livekit_url=, api_key=, api_secret=), or unset all "
                "three to run offline"
            )
        return cls(values["url"], values["api_key"], values["api_secret"], any(given.values()))

    def token(self, identity: str, grants: api.VideoGrants, *, agent: bool = False) -> str:
        token = api.AccessToken(self.api_key, self.api_secret).with_identity(identity)
        if agent:
            token = token.with_kind("agent")
        return token.with_grants(grants).with_ttl(TOKEN_TTL).to_jwt()


class RealRoom:
    """One LiveKit room for one runner: created on the server, joined by agent and browser."""

    def __init__(self, credentials: LiveKitCredentials, name: str) -> None:
        self.credentials = credentials
        self.name = name
        self.agent_identity = f"agent-{name}"
        self.user_token = credentials.token(
            f"user-{name}",
            api.VideoGrants(room_join=True, room=name, can_publish=True, can_subscribe=True),
        )

    async def create(self) -> dict[str, Any]:
        """Create the room; returns ``simulate_job`` arguments for the agent to join it."""
        creds = self.credentials
        timeout = aiohttp.ClientTimeout(total=CREATE_TIMEOUT_S)
        try:
            async with api.LiveKitAPI(
                creds.url, creds.api_key, creds.api_secret, timeout=timeout
            ) as lkapi:
                room = await lkapi.room.create_room(api.CreateRoomRequest(name=self.name))
        except api.TwirpError as e:
            keys = (
                "api_key= and api_secret="
                if creds.from_arguments
                else "LIVEKIT_API_KEY and LIVEKIT_API_SECRET"
            )
            raise RunnerError(
                f"LiveKit at {creds.url} refused to create room {self.name!r} ({e.code}: "
                f"{e.message}): check {keys}"
            ) from None
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
            # the message says it all: the chain of connection errors would bury it
            raise RunnerError(
                f"cannot reach LiveKit at {creds.url} ({type(e).__name__}: {e}): check "
                f"{creds.url_setting}, or {creds.offline_hint}"
            ) from None
        agent_token = creds.token(
            self.agent_identity,
            api.VideoGrants(
                room_join=True,
                room=self.name,
                agent=True,
                can_publish=True,
                can_subscribe=True,
                can_update_own_metadata=True,
            ),
            agent=True,
        )
        return {"room_info": room, "token": agent_token, "agent_identity": self.agent_identity}

    def display(self) -> None:
        """The browser join widget (mic + speaker) for this room, with the user's token."""
        from livekit.rtc.jupyter import display_room

        display_room(self.credentials.url, self.user_token)
