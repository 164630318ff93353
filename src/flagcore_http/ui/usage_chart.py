"""The flag page's usage history (issue 32): a server-rendered SVG bar chart per
environment of yes/no (and of variants) over time, and when each application last
reported the flag.

No script and no chart library: the page's CSP allows none, and bars need none. This
module computes the geometry; the template (``flag_usage.html``) writes the SVG, so every
name (environment, variant, application) goes through Jinja's escaping. Colours are CSS
classes (``style-src 'self'``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import attrs

from flagcore.entities import FlagMetrics
from flagcore.service import AppLastSeen, UsageSeries

__all__ = [
    "CHART_HEIGHT",
    "CHART_WIDTH",
    "RANGES",
    "Bar",
    "Chart",
    "Piece",
    "UsageRange",
    "UsageView",
    "usage_view",
]

CHART_WIDTH = 720
CHART_HEIGHT = 120
MAX_VARIANT_SERIES = 8
"""Variants drawn by name per chart; the rest are one "other" piece."""


@attrs.frozen
class UsageRange:
    """A span the page offers: its code in the address (``?usage=``), its words, how many
    hours back, and whether each bar is a day."""

    code: str
    label: str
    hours_back: int
    by_day: bool


RANGES = (
    UsageRange("48h", "48 hours", 48, False),
    UsageRange("30d", "30 days", 30 * 24, True),
    UsageRange("365d", "a year", 365 * 24, True),
)


@attrs.frozen
class Piece:
    """One stacked piece of a bar: its series (a CSS class), y, height, and the words of
    its tooltip."""

    css: str
    y: float
    height: float
    title: str


@attrs.frozen
class Bar:
    x: float
    width: float
    pieces: tuple[Piece, ...]


@attrs.frozen
class Chart:
    """One environment's chart: its bars, the legend (name, CSS class, total), the
    largest bar's value (the top of the scale) and the first and last bar's times."""

    environment: str
    kind: str  # "yes/no" or "variants"
    bars: tuple[Bar, ...]
    legend: tuple[tuple[str, str, int], ...]
    peak: int
    first: str
    last: str


@attrs.frozen
class UsageView:
    """What the template shows: the range chosen, the charts (yes/no then variants, per
    environment), and the applications with when each last reported the flag."""

    chosen: UsageRange
    ranges: tuple[UsageRange, ...]
    charts: tuple[Chart, ...]
    last_seen: tuple[AppLastSeen, ...]


def chosen_range(code: str | None) -> UsageRange:
    """The range the address asks for, by code; anything else is the first (the code is
    matched, never echoed)."""
    return next((r for r in RANGES if r.code == code), RANGES[0])


def _when(time: dt.datetime, by_day: bool) -> str:
    return time.strftime("%Y-%m-%d" if by_day else "%Y-%m-%d %H:00 UTC")


def _bars(
    starts: Sequence[dt.datetime],
    stacks: dict[dt.datetime, list[tuple[str, str, int]]],
    peak: int,
    by_day: bool,
) -> tuple[Bar, ...]:
    width = CHART_WIDTH / max(1, len(starts))
    bars = []
    for index, start in enumerate(starts):
        base = float(CHART_HEIGHT)
        pieces = []
        for name, css, value in stacks.get(start, []):
            if value <= 0:
                continue
            height = CHART_HEIGHT * value / peak
            base -= height
            title = f"{_when(start, by_day)}: {value:,} {name}"
            pieces.append(Piece(css, round(base, 2), round(height, 2), title))
        bars.append(Bar(round(index * width, 2), round(max(width - 1, 1), 2), tuple(pieces)))
    return tuple(bars)


def _chart(
    environment: str,
    kind: str,
    starts: Sequence[dt.datetime],
    stacks: dict[dt.datetime, list[tuple[str, str, int]]],
    legend: tuple[tuple[str, str, int], ...],
    by_day: bool,
) -> Chart:
    peak = max((sum(v for _n, _c, v in stack) for stack in stacks.values()), default=0)
    return Chart(
        environment,
        kind,
        _bars(starts, stacks, max(peak, 1), by_day),
        legend,
        peak,
        _when(starts[0], by_day) if starts else "",
        _when(starts[-1], by_day) if starts else "",
    )


def _environment_charts(
    environment: str, points: list[FlagMetrics], starts: Sequence[dt.datetime], by_day: bool
) -> list[Chart]:
    yes_no: dict[dt.datetime, list[tuple[str, str, int]]] = {}
    variant_totals: dict[str, int] = {}
    per_start: dict[dt.datetime, dict[str, int]] = {}
    for point in points:
        stack = yes_no.setdefault(point.hour, [("yes", "yes", 0), ("no", "no", 0)])
        yes_no[point.hour] = [
            ("yes", "yes", stack[0][2] + point.yes),
            ("no", "no", stack[1][2] + point.no),
        ]
        counts = per_start.setdefault(point.hour, {})
        for name, count in point.variants.items():
            counts[name] = counts.get(name, 0) + count
            variant_totals[name] = variant_totals.get(name, 0) + count
    yes = sum(stack[0][2] for stack in yes_no.values())
    no = sum(stack[1][2] for stack in yes_no.values())
    charts = [
        _chart(
            environment, "yes/no", starts, yes_no, (("yes", "yes", yes), ("no", "no", no)), by_day
        )
    ]
    if any(variant_totals.values()):
        ranked = sorted(variant_totals, key=lambda n: (-variant_totals[n], n))
        named = ranked[:MAX_VARIANT_SERIES]
        css = {name: f"v{index}" for index, name in enumerate(named)}
        stacks: dict[dt.datetime, list[tuple[str, str, int]]] = {}
        for start, counts in per_start.items():
            stack = [(name, css[name], counts.get(name, 0)) for name in named]
            other = sum(c for n, c in counts.items() if n not in css)
            stacks[start] = [*stack, ("other variants", "vother", other)]
        legend = [(name, css[name], variant_totals[name]) for name in named]
        rest = sum(variant_totals[n] for n in ranked[MAX_VARIANT_SERIES:])
        if rest:
            legend.append(("other variants", "vother", rest))
        charts.append(_chart(environment, "variants", starts, stacks, tuple(legend), by_day))
    return charts


def usage_view(
    series: UsageSeries, last_seen: Sequence[AppLastSeen], chosen: UsageRange
) -> UsageView:
    """The charts of ``series`` (applications added up per environment)."""
    starts = sorted({p.hour for p in series.points})
    by_environment: dict[str, list[FlagMetrics]] = {}
    for point in series.points:
        by_environment.setdefault(point.environment, []).append(point)
    charts = [
        chart
        for environment in sorted(by_environment)
        for chart in _environment_charts(
            environment, by_environment[environment], starts, series.daily
        )
    ]
    return UsageView(chosen, RANGES, tuple(charts), tuple(last_seen))
