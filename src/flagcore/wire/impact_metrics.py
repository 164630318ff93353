"""Impact metrics as Unleash 8's SDKs send them (``impactMetrics`` in a client metrics
report; Unleash's ``impactMetricsSchema``): counters and gauges with numeric samples,
histograms with cumulative buckets, each sample with optional labels. Read strictly, each
problem named by its JSON path, and bounded (issue 32, docs/release-plans.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.errors import ErrorDetail, InvalidInput, LimitExceeded

__all__ = [
    "IMPACT_KINDS",
    "IMPACT_METRICS_SCHEMA",
    "MAX_IMPACT_BUCKETS",
    "MAX_IMPACT_METRICS",
    "MAX_IMPACT_SAMPLES",
    "ImpactMetric",
    "ImpactSample",
    "read_impact_metrics",
]

IMPACT_KINDS = ("counter", "gauge", "histogram")
MAX_IMPACT_METRICS = 50  # per report
MAX_IMPACT_SAMPLES = 100  # per metric
MAX_IMPACT_BUCKETS = 30  # per histogram sample
MAX_IMPACT_LABELS = 10
_MAX_TEXT = 255


@attrs.frozen
class ImpactSample:
    """One sample: ``value`` for a counter (an increment) or a gauge; ``count``, ``sum``
    and cumulative ``buckets`` (upper bound as text, ``+Inf`` last) for a histogram."""

    labels: Mapping[str, str] = attrs.field(factory=dict)
    value: float = 0.0
    count: int = 0
    sum: float = 0.0
    buckets: tuple[tuple[str, int], ...] = ()


@attrs.frozen
class ImpactMetric:
    name: str
    kind: str
    samples: tuple[ImpactSample, ...]


def _refused(message: str, path: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(message, path)])


def _text(value: Any, path: str) -> str:
    if type(value) is not str or not value.strip() or len(value) > _MAX_TEXT:
        raise _refused(f"a non-empty string of at most {_MAX_TEXT} characters", path)
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _refused("a number", path)
    number = float(value)
    if not math.isfinite(number):
        raise _refused("a finite number", path)
    return number


def _count(value: Any, path: str) -> int:
    if type(value) is not int or not 0 <= value <= 2**53:
        raise _refused("a whole number from 0", path)
    return value


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _refused("an object", path)
    return value


def _list(value: Any, path: str, bound: int, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _refused("a list", path)
    if len(value) > bound:
        raise LimitExceeded(f"at most {bound} {what}", what, bound, path)
    return value


def _labels(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    labels = _object(value, path)
    if len(labels) > MAX_IMPACT_LABELS:
        raise LimitExceeded(
            f"at most {MAX_IMPACT_LABELS} labels", "impact labels", MAX_IMPACT_LABELS, path
        )
    read = {}
    for key, label in labels.items():
        if isinstance(label, bool) or not isinstance(label, (str, int, float)):
            raise _refused("a string or a number", f"{path}.{key}")
        read[_text(key, path)] = _text(str(label), f"{path}.{key}")
    return read


def _bucket(value: Any, path: str) -> tuple[str, int]:
    bucket = _object(value, path)
    le = bucket.get("le")
    if le != "+Inf":
        le = repr(_number(le, f"{path}.le"))
    return le, _count(bucket.get("count"), f"{path}.count")


def _sample(value: Any, kind: str, path: str) -> ImpactSample:
    sample = _object(value, path)
    labels = _labels(sample.get("labels"), f"{path}.labels")
    if kind != "histogram":
        return ImpactSample(labels, value=_number(sample.get("value"), f"{path}.value"))
    buckets = _list(sample.get("buckets"), f"{path}.buckets", MAX_IMPACT_BUCKETS, "buckets")
    return ImpactSample(
        labels,
        count=_count(sample.get("count"), f"{path}.count"),
        sum=_number(sample.get("sum"), f"{path}.sum"),
        buckets=tuple(_bucket(b, f"{path}.buckets[{i}]") for i, b in enumerate(buckets)),
    )


def read_impact_metrics(value: Any, path: str = "$.impactMetrics") -> tuple[ImpactMetric, ...]:
    """The metrics of a report's ``impactMetrics`` (``InvalidInput`` at the first problem's
    path; ``help`` is read and not kept)."""
    metrics = _list(value, path, MAX_IMPACT_METRICS, "impact metrics")
    read = []
    for i, item in enumerate(metrics):
        at = f"{path}[{i}]"
        metric = _object(item, at)
        name = _text(metric.get("name"), f"{at}.name")
        kind = metric.get("type")
        if kind not in IMPACT_KINDS:
            raise _refused(f"one of {', '.join(IMPACT_KINDS)}", f"{at}.type")
        if "help" in metric and type(metric["help"]) is not str:
            raise _refused("a string", f"{at}.help")
        samples = _list(metric.get("samples"), f"{at}.samples", MAX_IMPACT_SAMPLES, "samples")
        read.append(
            ImpactMetric(
                name,
                kind,
                tuple(_sample(s, kind, f"{at}.samples[{j}]") for j, s in enumerate(samples)),
            )
        )
    return tuple(read)


_SAMPLE = {
    "type": "object",
    "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
        "value": {"type": "number"},
        "count": {"type": "integer", "minimum": 0},
        "sum": {"type": "number"},
        "buckets": {
            "type": "array",
            "maxItems": MAX_IMPACT_BUCKETS,
            "items": {
                "type": "object",
                "required": ["le", "count"],
                "properties": {
                    "le": {"anyOf": [{"type": "number"}, {"const": "+Inf"}]},
                    "count": {"type": "integer", "minimum": 0},
                },
            },
        },
    },
}
IMPACT_METRICS_SCHEMA = {
    "type": "array",
    "maxItems": MAX_IMPACT_METRICS,
    "items": {
        "type": "object",
        "required": ["name", "type", "samples"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": _MAX_TEXT},
            "help": {"type": "string"},
            "type": {"enum": list(IMPACT_KINDS)},
            "samples": {"type": "array", "maxItems": MAX_IMPACT_SAMPLES, "items": _SAMPLE},
        },
    },
}
"""Unleash's ``impactMetricsSchema`` as a list, for the API contract."""
