"""What the Python client posts is read back by the server's own readers: the register and
metrics bodies are written from the rows the server reads them by
(`flagcore.wire.sdk_bodies`), so the two cannot part (issue 27)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from flagcore import BUILTIN_STRATEGIES, Context
from flagcore.wire import (
    METRICS_SCHEMA,
    REGISTRATION_SCHEMA,
    read_impact_metrics,
    read_metrics_body,
    read_registration,
    registration_started,
)
from flagcore_client import AsyncFlagClient
from flagcore_client.asyncio_client import SDK_NAME


def _always(_parameters: Mapping[str, str], _context: Context) -> bool:
    return True


def _client() -> AsyncFlagClient:
    # Never started: no request is made, only bodies are written.
    return AsyncFlagClient(
        "http://127.0.0.1:9/api",
        "default:development.secret",
        app_name="shop",
        instance_id="shop-1",
        metrics_interval=15.5,
        custom_strategies={"always": _always},
    )


def _as_sent(body: dict[str, Any]) -> Any:
    """The body as the server receives it: JSON text, parsed."""
    return json.loads(json.dumps(body))


def test_the_registration_the_client_posts_is_read_back_by_the_servers_reader() -> None:
    client = _client()

    body = _as_sent(client._registration_body())
    registration = read_registration(body, "refused")

    assert (registration.app_name, registration.instance_id) == ("shop", "shop-1")
    assert registration.sdk_version == SDK_NAME
    assert registration.interval == 15_500
    assert registration.strategies == sorted({*BUILTIN_STRATEGIES, "always"})
    assert registration_started(registration.started) == client._started
    assert set(body) <= set(REGISTRATION_SCHEMA["properties"])


def test_the_metrics_the_client_posts_are_read_back_by_the_servers_readers() -> None:
    client = _client()
    for _ in range(3):
        client._counts.count("checkout", True, "blue")
    client._counts.count("checkout", False)
    client.impact_metrics.increment_counter("requests", 2, flag="checkout")
    client.impact_metrics.set_gauge("queue", 7)

    body = _as_sent(client._metrics_body(client._counts.take(), client.impact_metrics.take()))
    report = read_metrics_body(body)

    assert (report.app_name, report.instance_id) == ("shop", "shop-1")
    assert report.toggles == {"checkout": {"yes": 3, "no": 1, "variants": {"blue": 3}}}
    assert report.start is not None
    assert report.start <= dt.datetime.now(dt.UTC)
    impact = {metric.name: metric for metric in read_impact_metrics(report.impact_metrics)}
    assert impact["requests"].kind == "counter"
    assert [(s.labels, s.value) for s in impact["requests"].samples] == [
        ({"featureName": "checkout"}, 2.0)
    ]
    assert [s.value for s in impact["queue"].samples] == [7.0]
    assert set(body) <= set(METRICS_SCHEMA["properties"])


def test_impact_metrics_alone_go_with_an_empty_bucket_the_server_reads() -> None:
    client = _client()
    client.impact_metrics.increment_counter("requests")

    report = read_metrics_body(_as_sent(client._metrics_body(None, client.impact_metrics.take())))

    assert report.toggles == {}
    assert [metric.name for metric in read_impact_metrics(report.impact_metrics)] == ["requests"]
    without = read_metrics_body(_as_sent(client._metrics_body(None, None)))
    assert without.impact_metrics is None  # none recorded: the key is left out
