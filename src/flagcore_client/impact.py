"""Impact metrics an application records about a flag's effect (issue 32): counters,
gauges and histograms, sent with its usage metrics in Unleash 8's ``impactMetrics``
shape. A sample names its flag with the ``featureName`` label, which the server's
release plan safeguards read (docs/release-plans.md)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_BUCKETS", "ImpactMetrics"]

DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds of a histogram's buckets (Prometheus's defaults, in seconds)."""

_Key = tuple[str, str | None]  # the metric's name, the flag it is about


class _Histogram:
    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(sorted(bounds))
        self.counts = [0] * (len(self.bounds) + 1)  # the last: above every bound
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def buckets(self) -> list[dict[str, Any]]:
        """Cumulative counts per upper bound, ``+Inf`` last, as Prometheus reports them."""
        found, total = [], 0
        for bound, count in zip((*self.bounds, "+Inf"), self.counts, strict=True):
            total += count
            found.append({"le": bound, "count": total})
        return found


class ImpactMetrics:
    """Recorded from any thread; the client sends what was recorded since its last
    report with its next one, and keeps it for the one after if that send fails."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[_Key, float] = {}
        self._gauges: dict[_Key, float] = {}
        self._histograms: dict[_Key, _Histogram] = {}

    def increment_counter(self, name: str, value: float = 1.0, *, flag: str | None = None) -> None:
        with self._lock:
            self._counters[(name, flag)] = self._counters.get((name, flag), 0.0) + value

    def set_gauge(self, name: str, value: float, *, flag: str | None = None) -> None:
        with self._lock:
            self._gauges[(name, flag)] = value

    def observe(
        self,
        name: str,
        value: float,
        *,
        flag: str | None = None,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        """One observation of a histogram (a request's duration); its buckets are fixed
        by the first observation of that name and flag."""
        with self._lock:
            histogram = self._histograms.get((name, flag))
            if histogram is None:
                histogram = self._histograms[(name, flag)] = _Histogram(buckets)
            histogram.observe(value)

    def take(self) -> list[dict[str, Any]] | None:
        """What was recorded since the last take, as ``impactMetrics`` (None: nothing)."""
        with self._lock:
            counters, self._counters = self._counters, {}
            gauges, self._gauges = self._gauges, {}
            histograms, self._histograms = self._histograms, {}
        metrics: dict[tuple[str, str], dict[str, Any]] = {}

        def metric(name: str, kind: str) -> dict[str, Any]:
            return metrics.setdefault(
                (name, kind), {"name": name, "help": name, "type": kind, "samples": []}
            )

        for (name, flag), value in counters.items():
            metric(name, "counter")["samples"].append({"labels": _labels(flag), "value": value})
        for (name, flag), value in gauges.items():
            metric(name, "gauge")["samples"].append({"labels": _labels(flag), "value": value})
        for (name, flag), histogram in histograms.items():
            metric(name, "histogram")["samples"].append(
                {
                    "labels": _labels(flag),
                    "count": histogram.count,
                    "sum": histogram.sum,
                    "buckets": histogram.buckets(),
                }
            )
        return list(metrics.values()) or None

    def give_back(self, metrics: list[dict[str, Any]]) -> None:
        """Put an unsent report back: counters add up again, a gauge set since keeps its
        newer value, a histogram's observations are kept by their counts."""
        with self._lock:
            for metric in metrics:
                for sample in metric["samples"]:
                    key = (metric["name"], sample["labels"].get("featureName"))
                    if metric["type"] == "counter":
                        self._counters[key] = self._counters.get(key, 0.0) + sample["value"]
                    elif metric["type"] == "gauge":
                        self._gauges.setdefault(key, sample["value"])
                    else:
                        self._merge_histogram(key, sample)

    def _merge_histogram(self, key: _Key, sample: dict[str, Any]) -> None:
        bounds = [b["le"] for b in sample["buckets"] if b["le"] != "+Inf"]
        histogram = self._histograms.setdefault(key, _Histogram(bounds))
        if histogram.bounds != tuple(bounds):
            return  # observed since with other buckets: the newer ones are kept
        previous = 0
        for index, bucket in enumerate(sample["buckets"]):
            histogram.counts[index] += bucket["count"] - previous
            previous = bucket["count"]
        histogram.count += sample["count"]
        histogram.sum += sample["sum"]


def _labels(flag: str | None) -> dict[str, str]:
    return {} if flag is None else {"featureName": flag}
