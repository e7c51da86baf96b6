"""TimelineView: a lane per agent with state spans, message and tool marks, handoff arrows
labelled and coloured by mode, each new agent's bring-up (from the arrow to its first words),
each handoff's phases (from livekit's spans, ``handoff_phases``), where an agent's chat context
and its model's conversation parted, idle stretches shortened, and a race's marks (where its
verdict says it went wrong: ``marks=run.verdict.marks``). Timelines shown side by side can
share one time scale (``like=``), so the same time is drawn the same length in each.

What it shows is computed in the kernel, once (``TimelineLayout``): the browser
(``timeline_view.js``) and the matplotlib figure (``to_figure``) only draw it.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import traitlets
from matplotlib.figure import Figure

from ..analysis import IDLE_AFTER, TraceAnalysis, handoff_phases
from ..analysis.network_truth import network
from ..emulator.latency import LatencyModel
from ..trace import Trace, TraceEvent
from ..trace.contexts import compared, item_key
from ..trace.marks import TimelineMark
from ._assets import asset
from ._stream import SpanWatch, TraceStreamView
from ._text import cut
from ._timeline_figure import timeline_figure
from ._timeline_layout import MARK_STYLES, Extent, TimelineLayout, widest
from ._timeline_phases import handoff_strips
from .errors import ViewSourceError


class TimelineView(TraceStreamView):
    """Live from a ``Trace``, or a replay of a loaded one.

    Each event crosses to the browser once, as the parts of the layout it made, in batches at
    most 30 times a second; the history is sent once per rendering, never again. Scrubbing asks
    the kernel for each agent's chat context at that moment (``Trace.contexts_at``).
    """

    _esm = asset("timeline_view.js")
    _css = asset("views.css")

    lanes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """the agents, one lane each, in order of first appearance"""
    legend = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``TimelineLayout.legend``"""
    gaps = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``TimelineLayout.gaps``"""
    first_t = traitlets.Float(None, allow_none=True).tag(sync=True)
    """the first event's time: where the view starts"""
    last_t = traitlets.Float(None, allow_none=True).tag(sync=True)
    """``TimelineLayout.last_t``: where a view of the whole trace ends"""
    idle_after = traitlets.Float(IDLE_AFTER).tag(sync=True)
    """seconds without events that make an idle gap: a live view waiting on the caller shows
    at most this much past its last event"""
    mark_styles = traitlets.Dict().tag(sync=True)
    """``MARK_STYLES``, for the browser"""
    scrub_t = traitlets.Float(None, allow_none=True).tag(sync=True)
    """set by the browser's scrubber: the trace time to show the chat contexts of"""
    scrub_contexts = traitlets.Dict().tag(sync=True)
    """each agent's chat context at ``scrub_t``; an item its model lacked is marked"""
    scrub_models = traitlets.Dict().tag(sync=True)
    """the model's side of each agent apart from it at ``scrub_t``: ``title``, ``items``"""
    phases = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``TimelineLayout.phases``: each handoff's phases once livekit's spans of it ended"""
    race_marks = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``TimelineLayout.race_marks``: the moments a race's verdict rests on"""
    fit_extent = traitlets.Dict().tag(sync=True)
    """sharing a time scale (``like=``): the ``Extent`` the whole-trace view fits, the widest
    of the timelines sharing it (as far as each trace got, a live one's edge aside); empty:
    its own"""

    _spans: SpanWatch | None = None
    """looks for spans that ended after the last event (on the class: the base's __init__
    flushes before this one's sets it)"""
    _scale: SharedScale | None = None
    """the timelines it shares a time scale with, itself included (on the class: as
    ``_spans``)"""

    def __init__(
        self,
        trace: Trace,
        latency: LatencyModel | None = None,
        *,
        marks: Iterable[TimelineMark] = (),
        like: TimelineView | None = None,
        **kwargs: Any,
    ) -> None:
        """``latency``: the emulator's network the agents' models asked for, for each handoff
        phase's truth (as ``WaterfallView`` takes it). ``marks``: a race's moments
        (``run.verdict.marks``), each drawn in its agent's lane, which must be on show.
        ``like``: a timeline to share one time scale with (and with those it shares one
        with): shown whole, each fits the most activity and the most idle gaps among them,
        so at the same width the same time is drawn the same length in each."""
        if not isinstance(trace, Trace):
            raise ViewSourceError(
                "TimelineView takes a Trace (runner.trace; Trace.load(path) for a saved one), "
                f"not {type(trace).__name__}"
            )
        if like is not None and not isinstance(like, TimelineView):
            raise ViewSourceError(
                "like= takes the TimelineView to share a time scale with "
                f"(TimelineView(trace, like=other)), not {type(like).__name__}"
            )
        self._latency = network(latency)
        # the history is laid out during the base's __init__: the layout must exist first
        self._timeline = TimelineLayout(started_at=trace.started_at)
        self._split_again = True
        styles = {key: asdict(style) for key, style in MARK_STYLES.items()}
        super().__init__(trace, mark_styles=styles, **kwargs)
        self._spans = SpanWatch(trace, self._throttle.request, lambda: not self.live)
        self._split()
        self._timeline.set_race_marks(marks)
        with self.hold_sync():
            self.race_marks = self._timeline.race_marks
            self.legend = self._timeline.legend
        self.observe(self._on_scrub, names="scrub_t")
        shared = like._scale if like is not None else None
        (shared or SharedScale()).join(self)

    def _record(self, event: TraceEvent) -> dict[str, Any] | None:
        record = self._timeline.add(event)
        for name in self._timeline.changed:
            setattr(self, name, getattr(self._timeline, name))
        return record

    def _take(self, event: TraceEvent) -> bool:
        super()._take(event)
        return True  # an event not drawn moves the trace's end all the same: flush it

    def _flush(self) -> None:
        # before the events, so the browser's whole-trace view already reaches them
        self.last_t = self._timeline.last_t
        super()._flush()
        self._split()
        if self._scale is not None:
            self._scale.fit()

    def _split(self) -> None:
        """Split the handoffs again once spans ended since (a handoff's come after its
        events), or a handoff split last time had no event on the timeline yet."""
        if self._spans is None or not (self._spans.read() or self._split_again):
            return
        breakdowns = handoff_phases(self.trace, self._latency)
        strips = handoff_strips(breakdowns, self._timeline)
        self._split_again = len(strips) < len(breakdowns)
        if self._timeline.set_phases(strips):
            with self.hold_sync():
                self.legend = self._timeline.legend
                self.phases = self._timeline.phases

    @property
    def analysis(self) -> TraceAnalysis:
        """What the timeline shows, as the kernel computed it: lanes, spans, bring-ups..."""
        return self._timeline.analysis

    def _on_scrub(self, change: dict[str, Any]) -> None:
        t = change["new"]
        self.scrub_models = {} if t is None else self.models_at(t)
        self.scrub_contexts = {} if t is None else self.contexts_at(t)

    def contexts_at(self, t: float) -> dict[str, list[dict[str, Any]]]:
        """Each agent's chat context at trace time ``t``, texts cut to ``MAX_TEXT``; an item
        its model lacked when they last parted is marked ``missing``."""
        parted = self.trace.divergences_at(t)
        contexts = {}
        for agent, items in self.trace.contexts_at(t).items():
            record = parted.get(agent)
            lacked = {item_key(i) for i in record.data["missing"]} if record else set()
            contexts[agent] = [
                {**_cut(item), **({"mark": "missing"} if item_key(item) in lacked else {})}
                for item in items
            ]
        return contexts

    def models_at(self, t: float) -> dict[str, dict[str, Any]]:
        """The model's side of each agent apart from it at trace time ``t``, as the trace saw
        it when they parted, each item marked against livekit's side then."""
        models = {}
        for agent, record in self.trace.divergences_at(t).items():
            sides = compared({"livekit": record.data["livekit"], "model": record.data["model"]})
            models[agent] = {
                "title": f"{agent} · model (at {record.t:.2f} s)",
                "items": [_cut(item) for item in sides["model"]],
            }
        return models

    def close(self) -> None:
        if self._spans is not None:
            self._spans.cancel()
        if self._scale is not None:
            self._scale.leave(self)
        super().close()

    def to_figure(self) -> Figure:
        """The timeline as a static picture, drawn from the same layout as the widget (at
        the time scale it shares, if it does)."""
        self._catch_up()
        self._split()  # the spans as they are now, not as last looked for
        shared = self._scale.extent() if self._scale is not None else None
        return timeline_figure(self._timeline, shared)


class SharedScale:
    """Timelines drawn at one time scale (``TimelineView(trace, like=other)``): each one's
    whole-trace view fits the widest extent among them, told again whenever one grows."""

    def __init__(self) -> None:
        self._views: weakref.WeakSet[TimelineView] = weakref.WeakSet()

    def join(self, view: TimelineView) -> None:
        view._scale = self
        self._views.add(view)
        self.fit()

    def leave(self, view: TimelineView) -> None:
        self._views.discard(view)
        self.fit()

    def extent(self) -> Extent | None:
        """The widest extent of the timelines sharing the scale; None: one alone."""
        views = list(self._views)
        return widest(view._timeline.extent for view in views) if len(views) > 1 else None

    def fit(self) -> None:
        """Tell each timeline the extent to fit (nothing new: no message)."""
        extent = self.extent()
        shared = {} if extent is None else asdict(extent)
        for view in list(self._views):
            if view.fit_extent != shared:
                view.fit_extent = shared


def _cut(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "text": cut(item.get("text") or "")}
