"""Every race case, in the order the notebook runs them."""

from __future__ import annotations

from .case import RaceCase
from .closing_session import CLOSING_SESSION
from .late_ack import LATE_TOOL_ACK
from .paused_handback import PAUSED_HANDBACK
from .run_vs_task import RUN_VS_TASK
from .tool_batch import DUPLICATE_HANDOFF, PARALLEL_BATCH
from .tool_reply import TOOL_REPLY_RACE

RACES: dict[str, RaceCase] = {
    case.name: case
    for case in (
        CLOSING_SESSION,
        PAUSED_HANDBACK,
        TOOL_REPLY_RACE,
        LATE_TOOL_ACK,
        PARALLEL_BATCH,
        DUPLICATE_HANDOFF,
        RUN_VS_TASK,
    )
}
"""the cases by name"""
