"""Jinja filters the UI's templates use (each returns text; autoescaping still applies)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from markupsafe import Markup, escape

__all__ = ["FILTERS", "csrf_field"]


def when(value: dt.datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _count(amount: int, unit: str) -> str:
    return f"{amount} {unit}" if amount == 1 else f"{amount} {unit}s"


def duration(value: dt.timedelta) -> str:
    """A span as a person reads it, to its two largest units: "3 days 4 hours",
    "2 hours 5 minutes", "40 seconds"."""
    seconds = max(int(value.total_seconds()), 0)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return _count(days, "day") + (f" {_count(hours, 'hour')}" if hours else "")
    if hours:
        return _count(hours, "hour") + (f" {_count(minutes, 'minute')}" if minutes else "")
    if minutes:
        return _count(minutes, "minute")
    return _count(seconds, "second")


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def percent(weight: int) -> str:
    """A variant weight (per mille) as a percentage."""
    return f"{weight / 10:g}%"


def dom_id(key: str) -> str:
    """A form key as an HTML id (``aria-describedby`` lists ids split on spaces): any
    character other than a letter, digit, ``-`` or ``_`` becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", key)


FILTERS: Mapping[str, Callable[..., str]] = {
    "dom_id": dom_id,
    "when": when,
    "duration": duration,
    "pretty_json": pretty_json,
    "percent": percent,
}


@jinja2.pass_context
def csrf_field(context: jinja2.runtime.Context) -> Markup:
    """The hidden CSRF field every form carries (the viewer's per-session token)."""
    viewer = context.get("viewer")
    token = viewer.csrf if viewer is not None else ""
    return Markup('<input type="hidden" name="_csrf" value="{}">').format(escape(token))
