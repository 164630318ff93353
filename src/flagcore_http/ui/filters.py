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
    "pretty_json": pretty_json,
    "percent": percent,
}


@jinja2.pass_context
def csrf_field(context: jinja2.runtime.Context) -> Markup:
    """The hidden CSRF field every form carries (the viewer's per-session token)."""
    viewer = context.get("viewer")
    token = viewer.csrf if viewer is not None else ""
    return Markup('<input type="hidden" name="_csrf" value="{}">').format(escape(token))
