"""What downstream edges (Unleash Edge, `flagcore edge`) post to the edge in front of
them, and the one answer made only for them.

- ``POST /api/client/metrics/bulk``: Unleash's ``bulkMetricsSchema`` (registrations as
  ``applications``, counts as ``metrics`` rows, optionally ``impactMetrics`` and
  ``seenTokens``): `read_bulk_metrics`.
- ``POST /edge/validate``: ``{"tokens": [...]}`` (Unleash's ``tokenStringListSchema``,
  `read_token_strings`), answered with the valid ones, each with its type, environment
  and projects (``validatedEdgeTokensSchema``: `ValidatedEdgeTokens`).

Read strictly: every key is one the schema (or Unleash Edge's serialisation of it) names,
every value has its type, counts are whole numbers from 0, and every list is bounded. A
problem is an `InvalidInput` (or `LimitExceeded`) naming its JSON path. Unleash 8.2
accepts ``"yes": "1"`` and silently drops rows of another environment than the token's;
here both are refused, so what a caller sent is either forwarded whole or not at all.
The checked body is kept as sent (its keys are Unleash's), for forwarding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from flagcore.errors import ErrorDetail, InvalidInput, LimitExceeded
from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.converter import INT32_MAX
from flagcore.wire.impact_metrics import read_impact_metrics
from flagcore.wire.sdk_bodies import read_time

__all__ = [
    "MAX_BULK_APPLICATIONS",
    "MAX_BULK_METRICS",
    "MAX_BULK_SEEN_TOKENS",
    "MAX_VALIDATE_TOKENS",
    "BulkMetrics",
    "ValidatedEdgeToken",
    "ValidatedEdgeTokens",
    "read_bulk_metrics",
    "read_token_strings",
]

MAX_BULK_APPLICATIONS = 1_000
MAX_BULK_METRICS = 10_000  # rows; Unleash Edge posts at most 100 kB a request
MAX_BULK_SEEN_TOKENS = 1_000
_MAX_VARIANTS = 100  # per row
_MAX_CONNECT_VIA = 20
_MAX_TEXT = 1_000
_MAX_LIST = 1_000  # strategies, projects of one application
MAX_VALIDATE_TOKENS = 100  # per /edge/validate request; each unknown one is asked upstream


@attrs.frozen
class BulkMetrics:
    """A checked bulk body: each part as sent (Unleash's keys), ready to forward."""

    applications: tuple[Mapping[str, Any], ...]
    metrics: tuple[Mapping[str, Any], ...]
    impact_metrics: tuple[Any, ...] = ()
    seen_tokens: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        """The bulk body to post upstream (the optional parts only when there are some)."""
        written: dict[str, Any] = {
            "applications": list(self.applications),
            "metrics": list(self.metrics),
        }
        if self.impact_metrics:
            written["impactMetrics"] = list(self.impact_metrics)
        if self.seen_tokens:
            written["seenTokens"] = list(self.seen_tokens)
        return written


def _refused(message: str, path: str) -> InvalidInput:
    return InvalidInput(f"{path}: {message}", [ErrorDetail(message, path)])


def _text(value: Any, path: str) -> str:
    if type(value) is not str or len(value) > _MAX_TEXT:
        raise _refused(f"a string of at most {_MAX_TEXT} characters", path)
    return value


def _name(value: Any, path: str) -> str:
    if not _text(value, path).strip():
        raise _refused("a non-empty string", path)
    return str(value)


def _count(value: Any, path: str) -> int:
    if type(value) is not int or not 0 <= value <= INT32_MAX:
        raise _refused(f"a whole number from 0 to {INT32_MAX}", path)
    return value


def _list(value: Any, path: str, bound: int, what: str) -> list[Any]:
    if type(value) is not list:
        raise _refused("a list", path)
    if len(value) > bound:
        raise LimitExceeded(f"{path}: at most {bound} {what}", f"bulk {what}", bound, path)
    return value


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if type(value) is not dict:
        raise _refused("an object", path)
    return value


def _texts(value: Any, path: str) -> None:
    for index, item in enumerate(_list(value, path, _MAX_LIST, "strings")):
        _text(item, f"{path}[{index}]")


def _time(value: Any, path: str) -> None:
    # dateSchema: an RFC 3339 string or a whole UNIX time.
    if type(value) is int:
        return
    if type(value) is not str or read_time(value, path) is None:
        raise _refused("an RFC 3339 time or a whole UNIX time", path)


def _sdk_type(value: Any, path: str) -> None:
    if value not in ("frontend", "backend"):
        raise _refused('"frontend" or "backend"', path)


def _connect_via(value: Any, path: str) -> None:
    for index, item in enumerate(_list(value, path, _MAX_CONNECT_VIA, "connectVia entries")):
        at = f"{path}[{index}]"
        hop = _object(item, at)
        for key in hop:
            if key not in ("appName", "instanceId"):
                raise _refused("not a key of a connectVia entry (appName, instanceId)", at)
        _name(hop.get("appName"), f"{at}.appName")
        _text(hop.get("instanceId"), f"{at}.instanceId")


def _variants(value: Any, path: str) -> None:
    variants = _object(value, path)
    if len(variants) > _MAX_VARIANTS:
        raise LimitExceeded(
            f"{path}: at most {_MAX_VARIANTS} variants", "bulk variants", _MAX_VARIANTS, path
        )
    for name, count in variants.items():
        _text(name, path)
        _count(count, f"{path}.{name}")


def _bounded_text(bound: int) -> Callable[[Any, str], None]:
    def check(value: Any, path: str) -> None:
        if type(value) is not str or len(value) > bound:
            raise _refused(f"a string of at most {bound} characters", path)

    return check


_Check = Callable[[Any, str], Any]
# Optional keys: null is taken as not given (Unleash Edge writes its unset ones as null).
_METADATA: dict[str, _Check] = {
    "sdkVersion": _text,
    "sdkType": _sdk_type,
    "yggdrasilVersion": _text,
    "platformName": _text,
    "platformVersion": _text,
}
_APPLICATION_OPTIONAL: dict[str, _Check] = {
    **_METADATA,
    "connectVia": _connect_via,
    "connectionId": _text,
    "interval": lambda v, p: _count(v, p),
    "started": _time,
    "strategies": _texts,
    "projects": _texts,
    "sdkFlavor": _bounded_text(256),
    "sdkFlavorVersion": _bounded_text(32),
}
_METRIC_OPTIONAL: dict[str, _Check] = {
    **_METADATA,
    "timestamp": _time,
    "yes": _count,
    "no": _count,
    "variants": _variants,
}


def _environment(value: Any, path: str, environment: str) -> None:
    if _name(value, path) != environment:
        raise _refused(
            f"the token's environment, {environment!r}: a token reports usage of its own "
            "environment only",
            path,
        )


def _keys(item: Mapping[str, Any], path: str, required: tuple[str, ...], optional: Any) -> None:
    for key in item:
        if key not in required and key not in optional:
            raise _refused("not a key of this schema", f"{path}.{str(key)[:100]}")
    for key, check in optional.items():
        value = item.get(key)
        if value is not None:
            check(value, f"{path}.{key}")


def _application(value: Any, path: str, environment: str) -> Mapping[str, Any]:
    application = _object(value, path)
    _keys(application, path, ("appName", "instanceId", "environment"), _APPLICATION_OPTIONAL)
    _name(application.get("appName"), f"{path}.appName")
    _text(application.get("instanceId"), f"{path}.instanceId")
    _environment(application.get("environment"), f"{path}.environment", environment)
    return application


def _metric(value: Any, path: str, environment: str) -> Mapping[str, Any]:
    metric = _object(value, path)
    _keys(metric, path, ("featureName", "appName", "environment"), _METRIC_OPTIONAL)
    _name(metric.get("featureName"), f"{path}.featureName")
    _name(metric.get("appName"), f"{path}.appName")
    _environment(metric.get("environment"), f"{path}.environment", environment)
    return metric


_TOP_KEYS = ("applications", "metrics", "impactMetrics", "seenTokens")


def read_bulk_metrics(body: Mapping[str, Any], environment: str) -> BulkMetrics:
    """The bulk body ``body`` (a JSON object) sent with a token of ``environment``."""
    for key in body:
        if key not in _TOP_KEYS:
            raise _refused(
                "not a key of bulkMetricsSchema (applications, metrics, impactMetrics, seenTokens)",
                f"$.{str(key)[:100]}",
            )
    for key in ("applications", "metrics"):
        if key not in body:
            raise _refused("required: a list", f"$.{key}")
    applications = _list(
        body["applications"], "$.applications", MAX_BULK_APPLICATIONS, "applications"
    )
    metrics = _list(body["metrics"], "$.metrics", MAX_BULK_METRICS, "metrics rows")
    impact: tuple[Any, ...] = ()
    if body.get("impactMetrics") is not None:
        read_impact_metrics(body["impactMetrics"], "$.impactMetrics")
        impact = tuple(body["impactMetrics"])
    seen: tuple[str, ...] = ()
    if body.get("seenTokens") is not None:
        tokens = _list(body["seenTokens"], "$.seenTokens", MAX_BULK_SEEN_TOKENS, "seen tokens")
        seen = tuple(_text(token, f"$.seenTokens[{i}]") for i, token in enumerate(tokens))
    return BulkMetrics(
        tuple(
            _application(item, f"$.applications[{i}]", environment)
            for i, item in enumerate(applications)
        ),
        tuple(_metric(item, f"$.metrics[{i}]", environment) for i, item in enumerate(metrics)),
        impact,
        seen,
    )


def read_token_strings(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The tokens of an ``/edge/validate`` body: ``{"tokens": [string, ...]}`` and nothing
    else (Unleash 8.2 answers ``{"tokens": [1]}`` with an empty list; here it is a 400)."""
    for key in body:
        if key != "tokens":
            raise _refused("not a key of this body (tokens)", f"$.{str(key)[:100]}")
    if "tokens" not in body:
        raise _refused("required: a list of tokens", "$.tokens")
    tokens = _list(body["tokens"], "$.tokens", MAX_VALIDATE_TOKENS, "tokens")
    return tuple(_name(token, f"$.tokens[{i}]") for i, token in enumerate(tokens))


@answer(
    AnswerField("token", "token"),
    AnswerField("type", "type"),
    AnswerField("projects", "projects"),
    AnswerField("environment", "environment"),
)
@attrs.frozen
class ValidatedEdgeToken:
    """A token the upstream accepts: ``type`` ``client`` or ``frontend``, ``projects``
    ``["*"]`` for every project (Unleash's ``edgeTokenSchema``)."""

    token: str
    type: str
    projects: tuple[str, ...]
    environment: str


@answer(AnswerField("tokens", "tokens"))
@attrs.frozen
class ValidatedEdgeTokens:
    tokens: tuple[ValidatedEdgeToken, ...]
