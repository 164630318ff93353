"""The client's impact metrics (issue 32): Unleash 8's ``impactMetrics`` shape, and a
report whose send failed given back whole, so nothing recorded is lost."""

from __future__ import annotations

from flagcore.wire import read_impact_metrics
from flagcore_client import ImpactMetrics


def test_a_report_is_in_unleashs_shape_and_read_back_by_the_servers_reader() -> None:
    impact = ImpactMetrics()
    impact.increment_counter("errors", flag="checkout")
    impact.increment_counter("errors", 2, flag="checkout")
    impact.set_gauge("queue", 7)
    impact.observe("latency", 0.3, flag="checkout", buckets=(0.1, 0.5))
    report = impact.take()
    assert report is not None
    read = {m.name: m for m in read_impact_metrics(report)}
    assert read["errors"].samples[0].value == 3
    assert dict(read["errors"].samples[0].labels) == {"featureName": "checkout"}
    assert dict(read["queue"].samples[0].labels) == {}
    assert read["latency"].samples[0].buckets == (("0.1", 0), ("0.5", 1), ("+Inf", 1))
    assert impact.take() is None


def test_a_report_given_back_is_sent_with_what_was_recorded_since() -> None:
    impact = ImpactMetrics()
    impact.increment_counter("errors", 3, flag="checkout")
    impact.set_gauge("queue", 7)
    impact.observe("latency", 0.3, buckets=(0.1, 0.5))
    unsent = impact.take()
    assert unsent is not None
    impact.increment_counter("errors", 2, flag="checkout")
    impact.set_gauge("queue", 9)  # newer than the unsent value: kept
    impact.observe("latency", 0.05, buckets=(0.1, 0.5))
    impact.give_back(unsent)
    report = impact.take()
    assert report is not None
    by_name = {m["name"]: m["samples"][0] for m in report}
    assert by_name["errors"]["value"] == 5
    assert by_name["queue"]["value"] == 9
    assert by_name["latency"]["count"] == 2
    assert by_name["latency"]["buckets"] == [
        {"le": 0.1, "count": 1},
        {"le": 0.5, "count": 2},
        {"le": "+Inf", "count": 2},
    ]
