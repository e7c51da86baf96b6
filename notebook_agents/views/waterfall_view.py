"""WaterfallView: where a wait went, one turn or handoff at a time, as a waterfall of its phases
(``phases.breakdowns``): each phase's bar from the wait's start, the network's share of it and
the client's, livekit's own figure beside it, and what no phase explains.

What it shows is computed in the kernel (``_waterfall_layout``); the browser
(``waterfall_view.js``) and the matplotlib figure (``to_figure``) only draw it.
"""

from __future__ import annotations

from typing import Any, Literal

import traitlets
from matplotlib.figure import Figure

from ..analysis import Breakdown, breakdowns
from ..analysis.network_truth import network
from ..emulator.latency import LatencyModel
from ..runner import AgentRunner
from ..trace import Trace, TraceEvent
from ._assets import asset
from ._stream import SpanWatch, TraceFedView
from ._waterfall_figure import waterfall_figure
from ._waterfall_layout import WATERFALL_COLORS, choice, wait_layout
from .errors import ViewArgumentError, ViewSourceError


class WaterfallView(TraceFedView):
    """The waits of a runner (``NotebookRunner`` or ``AgentProcess``) or of a ``Trace``, live
    or loaded (``Trace.load``): pick one (the newest unless another is picked, as
    ``selected=`` its id in time order) to see it phase by phase.
    """

    flush_hz = 5.0
    """a live view splits the whole trace again at most this often: a wait is whole once
    answered, so more often shows nothing sooner"""

    _esm = asset("waterfall_view.js")
    _css = asset("views.css")

    waits = traitlets.List(traitlets.Dict()).tag(sync=True)
    """each wait's ``id`` (its place in time order) and line, as the picker lists them: the
    newest first while live, in time order after"""
    selected = traitlets.Int(None, allow_none=True).tag(sync=True)
    """the ``id`` of the wait picked; None: the newest"""
    shown = traitlets.Dict().tag(sync=True)
    """the wait on show as ``wait_layout`` lays it out; empty while there is none"""
    empty = traitlets.Unicode("").tag(sync=True)
    """what the view says while it has no wait to show"""
    live = traitlets.Bool(True).tag(sync=True)
    """False for a loaded trace or once the session closed"""
    colors = traitlets.Dict().tag(sync=True)
    """``WATERFALL_COLORS``, for the browser"""

    _spans: SpanWatch | None = None
    """looks for spans that ended after the last event, while live (on the class: a view
    refused at its start has none to cancel when it is collected)"""

    def __init__(
        self, source: AgentRunner | Trace, latency: LatencyModel | None = None, **kwargs: Any
    ) -> None:
        """``latency``: the emulator's network the agents' models asked for (their
        ``base_url``), for each handoff phase's truth (``handoff_phases``)."""
        if not isinstance(source, AgentRunner | Trace):
            raise ViewSourceError(
                "WaterfallView takes a runner (NotebookRunner, AgentProcess) or a Trace "
                f"(Trace.load(path) for a saved one), not {type(source).__name__}"
            )
        trace = source.trace if isinstance(source, AgentRunner) else source
        # a wait picked here is checked against the waits, once the trace is split
        selected = kwargs.pop("selected", None)
        super().__init__(live=not trace.loaded, colors=WATERFALL_COLORS, **kwargs)
        self.trace = trace
        self._latency = network(latency)
        self._breakdowns: list[Breakdown] = []
        self._closed = trace.loaded
        self.observe(self._show, names="selected")
        if not trace.loaded:
            self._spans = SpanWatch(trace, self._throttle.request, lambda: self._closed)
        self._follow(trace)
        if selected is not None:
            try:
                self.selected = selected
            except traitlets.TraitError:
                self.close()  # no view left following the trace
                raise

    @property
    def breakdowns(self) -> list[Breakdown]:
        """The waits the view shows, in time order, as last split."""
        return list(self._breakdowns)

    @traitlets.validate("selected")
    def _valid_choice(self, proposal: dict[str, Any]) -> int | None:
        chosen: int | None = proposal["value"]
        if chosen is not None and not 0 <= chosen < len(self._breakdowns):
            raise traitlets.TraitError(
                f"no wait {chosen}: the view has {len(self._breakdowns)} (ids 0 to "
                f"{len(self._breakdowns) - 1}, in time order); None shows the newest"
            )
        return chosen

    def _take(self, event: TraceEvent) -> bool:
        if event.kind == "closed":
            self._closed = True
        return True  # any event may end a wait or add to one

    def _flush(self) -> None:
        if self._spans is not None:
            self._spans.read()
        self._breakdowns = breakdowns(self.trace, self._latency)
        live = not self._closed
        order = range(len(self._breakdowns))
        with self.hold_sync():  # one comm message per refresh, not one per trait
            self.live = live
            self.waits = [
                choice(self._breakdowns[i], i) for i in (reversed(order) if live else order)
            ]
            self.empty = "" if self._breakdowns else _nothing_yet(live)
            if self.selected is not None and self.selected >= len(self._breakdowns):
                self.selected = None  # the wait picked is split no more: the newest (shown)
            self._show()

    def _show(self, _: Any = None) -> None:
        index = self._index(self.selected)
        self.shown = {} if index is None else wait_layout(self._breakdowns[index], index)

    def _index(self, wait: int | None) -> int | None:
        """The place in time order of ``wait`` (an id, or negative from the newest); None:
        the newest. None too while there are no waits."""
        count = len(self._breakdowns)
        if not count:
            return None
        return count - 1 if wait is None else range(count)[wait]

    def close(self) -> None:
        if self._spans is not None:
            self._spans.cancel()
        super().close()

    def to_figure(self, wait: int | Literal["all"] | None = None) -> Figure:
        """The wait on show as a static picture; ``wait``: another (its id, in time order;
        -1 the newest), or ``"all"``: every wait, one under another."""
        self._flush()  # as the trace is now, not as last refreshed
        if wait == "all":
            shown = [wait_layout(b, i) for i, b in enumerate(self._breakdowns)]
        else:
            index = self._index(self.selected if wait is None else self._checked(wait))
            shown = [] if index is None else [wait_layout(self._breakdowns[index], index)]
        return waterfall_figure(shown, self.empty)

    def _checked(self, wait: object) -> int:
        count = len(self._breakdowns)
        if not isinstance(wait, int) or isinstance(wait, bool) or not -count <= wait < count:
            raise ViewArgumentError(
                f"no wait {wait!r}: the view has {count} (ids 0 to {count - 1} in time order, "
                "-1 the newest), or pass wait='all'"
            )
        return wait


def _nothing_yet(live: bool) -> str:
    if live:
        return "No turn or handoff yet: each shows here, phase by phase, once it is answered."
    return "No turn or handoff in this trace to split into phases."
