"""What SDKs post: registrations and metrics reports, read from one table of rows each.

Real SDKs send these bodies with more than Unleash's schema names (``platformName``,
``yggdrasilVersion``, ``connectionId``, a bucket's ``stop``...) and in several dialects
(``started`` as a time or as milliseconds, ``interval`` as a float, times with
nanoseconds): the readers here are lenient where SDKs differ and strict where a value
would be stored. Each row gives an attribute its JSON key, the check, the words its
error uses and its JSON Schema, so the reader, the messages and the published contract
(`REGISTRATION_SCHEMA`, `METRICS_SCHEMA`) cannot part; the Python client writes what it
posts from the same rows (`write_registration`, `write_metrics_body`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import attrs

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.wire.converter import INT32_MAX
from flagcore.wire.impact_metrics import IMPACT_METRICS_SCHEMA

__all__ = [
    "FRONTEND_METRICS_SCHEMA",
    "FRONTEND_REGISTRATION_SCHEMA",
    "METRICS_SCHEMA",
    "REGISTRATION_SCHEMA",
    "MetricsBody",
    "Registration",
    "read_metrics_body",
    "read_registration",
    "read_time",
    "registration_started",
    "write_metrics_body",
    "write_registration",
]

_STRING_OR_NULL: Mapping[str, Any] = {"type": ["string", "null"]}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@attrs.frozen
class BodyRow:
    """One key of an SDK body: the attribute it fills, its check (None: any string or
    null), what the check wants in words, and the key's JSON Schema."""

    attribute: str
    key: str
    required: bool
    schema: Mapping[str, Any]
    check: Callable[[Any], bool] | None = None
    what: str = "a string"


@attrs.frozen
class Registration:
    """Unleash's ``clientApplicationSchema``, as an SDK registers (keys it does not
    name are ignored, as Unleash ignores them)."""

    app_name: str
    interval: float
    started: str | float
    strategies: list[str]
    instance_id: str | None = None
    sdk_version: str | None = None
    environment: str | None = None


_REGISTRATION_ROWS = (
    BodyRow(
        "app_name",
        "appName",
        True,
        {"type": "string", "minLength": 1},
        lambda v: isinstance(v, str) and bool(v),
        "a non-empty string",
    ),
    # Kept in an SQL integer column (32-bit in PostgreSQL): 2^31-1 ms is over 24 days.
    BodyRow(
        "interval",
        "interval",
        True,
        {"type": "number", "minimum": 0, "maximum": INT32_MAX},
        lambda v: _is_number(v) and 0 <= v <= INT32_MAX,
        f"a number from 0 to {INT32_MAX}",
    ),
    BodyRow(
        "started",
        "started",
        True,
        {"type": ["string", "number"]},
        lambda v: isinstance(v, str) or _is_number(v),
        "an RFC 3339 time or a number",
    ),
    BodyRow(
        "strategies",
        "strategies",
        True,
        {"type": "array", "items": {"type": "string"}},
        lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
        "a list of strings",
    ),
    BodyRow("instance_id", "instanceId", False, _STRING_OR_NULL),
    BodyRow("sdk_version", "sdkVersion", False, _STRING_OR_NULL),
    BodyRow("environment", "environment", False, _STRING_OR_NULL),
)


def _registration_problems(body: Mapping[str, Any]) -> list[ErrorDetail]:
    """Every missing or mistyped key, each with its JSON path: required keys first."""
    problems = []
    for row in _REGISTRATION_ROWS:
        value = body.get(row.key)
        if not row.required:
            continue
        if value is None:
            problems.append(ErrorDetail(f"{row.key} is required: {row.what}", f"$.{row.key}"))
        elif row.check is not None and not row.check(value):
            problems.append(ErrorDetail(f"{row.key} must be {row.what}", f"$.{row.key}"))
    problems.extend(
        ErrorDetail(f"{row.key} must be {row.what}", f"$.{row.key}")
        for row in _REGISTRATION_ROWS
        if not row.required
        and (value := body.get(row.key)) is not None
        and not isinstance(value, str)
    )
    return problems


def read_registration(body: Mapping[str, Any], message: str) -> Registration:
    """The registration in ``body`` (a JSON object), or `InvalidInput` with ``message``
    naming every problem at once (an SDK developer fixes them in one go)."""
    problems = _registration_problems(body)
    if problems:
        raise InvalidInput(message, problems)
    values: dict[str, Any] = {row.attribute: body.get(row.key) for row in _REGISTRATION_ROWS}
    return Registration(**values)


def write_registration(registration: Registration) -> dict[str, Any]:
    """A registration as an SDK posts it (the Python client's), written from the rows it
    is read by: a value left None is left out."""
    return {
        row.key: value
        for row in _REGISTRATION_ROWS
        if (value := getattr(registration, row.attribute)) is not None
    }


class MetricsBody(NamedTuple):
    """Unleash's ``clientMetricsSchema`` as far as the HTTP side reads it: the bucket's
    counts stay as sent (the service checks each, `Metrics.check_report`), and so do
    ``appName`` and ``sdkVersion``, whose rules are the service's too; and Unleash 8's
    ``impactMetrics`` as sent (None when missing: `read_impact_metrics` reads it where
    its caller takes them). A named tuple, not a frozen attrs class: it is made once per
    metrics post, and costs a third as much."""

    app_name: Any
    instance_id: str | None
    sdk_version: Any
    start: dt.datetime | None
    toggles: dict[str, Any]
    impact_metrics: Any = None


# The bucket and its keys as Unleash's schema names them; other keys pass unread.
_BUCKET_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "required": [],
    "properties": {
        "start": {"type": ["string", "null"], "format": "date-time"},
        "stop": {"type": ["string", "null"], "format": "date-time"},
        "toggles": {"type": "object"},
    },
}
_METRICS_ROWS = (
    BodyRow("bucket", "bucket", True, _BUCKET_SCHEMA),
    BodyRow("app_name", "appName", False, _STRING_OR_NULL),
    BodyRow("instance_id", "instanceId", False, _STRING_OR_NULL),
    BodyRow("sdk_version", "sdkVersion", False, _STRING_OR_NULL),
    # Unleash 8's impact metrics (issue 32): server SDKs' only, read by the client route
    # (`read_impact_metrics`); null is none, as for the other keys.
    BodyRow(
        "impact_metrics",
        "impactMetrics",
        False,
        {**IMPACT_METRICS_SCHEMA, "type": ["array", "null"]},
    ),
)
# Each key once, bound at import (the reader runs once per metrics post).
_BUCKET, _APP_NAME, _INSTANCE_ID, _SDK_VERSION, _IMPACT_METRICS = (row.key for row in _METRICS_ROWS)


def read_metrics_body(body: Mapping[str, Any]) -> MetricsBody:
    """The report in ``body`` (a JSON object); the first problem is an `InvalidInput`
    naming its path. A missing ``toggles`` is none; a missing ``start`` is None."""
    bucket = body.get(_BUCKET)
    if not isinstance(bucket, dict):
        raise InvalidInput("bucket is required", [ErrorDetail("an object", "$.bucket")])
    toggles = bucket.get("toggles", {})
    if not isinstance(toggles, dict):
        raise InvalidInput(
            "bucket.toggles must be an object", [ErrorDetail("an object", "$.bucket.toggles")]
        )
    instance_id = body.get(_INSTANCE_ID)
    if instance_id is not None and not isinstance(instance_id, str):
        raise InvalidInput("instanceId must be a string", [ErrorDetail("a string", "$.instanceId")])
    return MetricsBody(
        body.get(_APP_NAME),
        instance_id,
        body.get(_SDK_VERSION),
        read_time(bucket.get("start"), "$.bucket.start"),
        toggles,
        body.get(_IMPACT_METRICS),
    )


def write_metrics_body(
    app_name: str,
    instance_id: str | None,
    bucket: Mapping[str, Any],
    *,
    sdk_version: str | None = None,
    impact_metrics: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A metrics report as an SDK posts it (the Python client's): ``bucket`` is
    ``{"start", "stop", "toggles"}``; written from the rows it is read by, a value left
    None left out."""
    values = {
        "bucket": bucket,
        "app_name": app_name,
        "instance_id": instance_id,
        "sdk_version": sdk_version,
        "impact_metrics": impact_metrics,
    }
    return {
        row.key: values[row.attribute] for row in _METRICS_ROWS if values[row.attribute] is not None
    }


def read_time(value: Any, path: str) -> dt.datetime | None:
    """An RFC 3339 time as SDKs send it (``Z`` or an offset; none is UTC; nanoseconds, as
    the Python SDK sends, kept to microseconds), None for null, or `InvalidInput` at ``path``."""
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 64:
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
        head, dot, tail = value.partition(".")
        digits = tail.rstrip("Zz")
        if dot and len(digits) > 6:  # shorter each time: the retry ends
            zone = tail[len(digits) :]
            return read_time(f"{head}.{digits[:6]}{zone}", path)
    raise InvalidInput(f"{path} must be an RFC 3339 time", [ErrorDetail("not a time", path)])


def registration_started(value: Any) -> dt.datetime:
    """Unleash's ``started``: an RFC 3339 time, or a number of milliseconds since 1970."""
    if _is_number(value):
        try:
            return dt.datetime.fromtimestamp(value / 1000, dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise InvalidInput(
                "$.started is out of range", [ErrorDetail("a time in range", "$.started")]
            ) from None
    started = read_time(value, "$.started")
    assert started is not None  # a missing value is reported before
    return started


def _schema(rows: tuple[BodyRow, ...], required: tuple[str, ...] | None = None) -> dict[str, Any]:
    """An open object (SDKs send more than the rows name; the readers ignore it)."""
    return {
        "type": "object",
        "required": [row.key for row in rows if row.required] if required is None else [*required],
        "properties": {row.key: dict(row.schema) for row in rows},
    }


REGISTRATION_SCHEMA = _schema(_REGISTRATION_ROWS)
# Browser SDKs send less: a missing interval, started or strategies is 0, now and none.
FRONTEND_REGISTRATION_SCHEMA = _schema(_REGISTRATION_ROWS, required=("appName",))
METRICS_SCHEMA = _schema(_METRICS_ROWS)
# Browser SDKs report no impact metrics (the Frontend API reads none).
FRONTEND_METRICS_SCHEMA = _schema(_METRICS_ROWS[:-1])
