"""SDK metrics and registrations are never refused or lost while the store cannot take
them (issue 25): they are answered at once, held in a bounded buffer merged by key, and
written when the store answers again. Here over SQLite with the store worker blocked;
tests/cluster/test_usage_outage.py stops PostgreSQL under two nodes."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from flagcore.entities import ClientInstance, FlagMetrics
from flagcore.service import CheckedReport, HeldCounts, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.keys import WORKER
from flagcore_http.usage_buffer import USAGE_BUFFER, HeldUsage, UsageBuffer, flush_usage
from tests.http.conftest import CLIENT, Api, bucket_time

FRONTEND = "default:development.frontend-secret-for-usage"
PROMETHEUS = "/internal-backstage/prometheus"
HOUR = dt.datetime(2026, 11, 25, 3, tzinfo=dt.UTC)


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


@asynccontextmanager
async def blocked_worker(api: Api) -> AsyncIterator[None]:
    """The store worker busy with a call that waits until the block ends."""
    release = threading.Event()
    blocker = api.client.server.app[WORKER].submit(release.wait, 60)
    try:
        yield
    finally:
        release.set()
        blocker.result(timeout=60)


async def _wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _report(instance: str, toggles: dict[str, Any], app: str = "shop") -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": instance,
        "bucket": {"start": bucket_time(2), "stop": bucket_time(), "toggles": toggles},
    }


def _registration(instance: str) -> dict[str, Any]:
    return {
        "appName": "shop",
        "instanceId": instance,
        "sdkVersion": "unleash-client-python:6.0.0",
        "strategies": ["default", "flexibleRollout"],
        "started": "2026-11-25T01:00:00Z",
        "interval": 15000,
    }


async def _scrape(api: Api) -> dict[str, float]:
    text = await (await api.request("GET", PROMETHEUS, token=None)).text()
    return {
        sample.name + "".join(f"[{v}]" for v in sample.labels.values()): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("flagcore_usage")
    }


def _totals(service: Service, flag: str) -> tuple[int, int, dict[str, int]]:
    rows = service.metrics.flag_metrics(flag)
    variants: dict[str, int] = {}
    for row in rows:
        for name, count in row.variants.items():
            variants[name] = variants.get(name, 0) + count
    return sum(r.yes for r in rows), sum(r.no for r in rows), variants


async def test_metrics_and_registrations_are_answered_while_the_store_worker_is_blocked_and_every_count_is_written_after(  # noqa: E501
    service: Service,
) -> None:
    service.flags.create_flag("default", "checkout")
    service.flags.create_flag("default", "search")
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    async with serving(service, usage_write_wait=0.05) as api:
        # Warm: the names a report may count, and the tokens, are read while the store
        # answers.
        await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_report("w", {}))
        await api.json("GET", "/api/frontend", token=FRONTEND)
        async with blocked_worker(api):
            for i in range(20):
                toggles = {
                    "checkout": {"yes": 3, "no": 1, "variants": {"blue": 2, "red": 1}},
                    "search": {"yes": 1, "no": 0},
                    "made-up": {"yes": 100, "no": 0},
                }
                await api.json(
                    "POST",
                    "/api/client/metrics",
                    202,
                    token=CLIENT,
                    json=_report(f"i-{i % 4}", toggles),
                )
                await api.json(
                    "POST",
                    "/api/client/register",
                    202,
                    token=CLIENT,
                    json=_registration(f"i-{i % 4}"),
                )
            await api.json(
                "POST",
                "/api/frontend/client/metrics",
                200,
                token=FRONTEND,
                json=_report("browser", {"checkout": {"yes": 5, "no": 5}}, app="web"),
            )
            await api.json(
                "POST",
                "/api/frontend/client/register",
                200,
                token=FRONTEND,
                json={"appName": "web", "instanceId": "browser"},
            )
            # A bad body is still refused, with its path, while usage is held.
            bad = await api.request(
                "POST",
                "/api/client/metrics",
                token=CLIENT,
                json=_report("i-0", {"checkout": {"yes": -1}}),
            )
            assert bad.status == 400
            assert (await bad.json())["details"][0]["path"] == "$.bucket.toggles.checkout.yes"
            missing = await api.request(
                "POST", "/api/client/register", token=CLIENT, json={"appName": "shop"}
            )
            assert missing.status == 400

            # Every answer came while the worker was still blocked; the node says it holds.
            buffer = api.client.server.app[USAGE_BUFFER]
            assert buffer.holding
            # Held past the flush interval (the flush is stuck behind the worker): behind.
            await _wait_for(lambda: buffer.behind)
            held = await _scrape(api)
            assert held["flagcore_usage_buffering"] == 1
            # Every count, whether waiting or taken by a flush stuck behind the worker.
            assert held["flagcore_usage_buffer_evaluations"] == 20 * (4 + 1) + 10
            # At least: checkout (and its 2 variant names) and search for shop, checkout
            # for web; the instances i-0..i-3 and browser (a key taken by a flush under way
            # and held again since counts twice: both are this node's to lose).
            assert held["flagcore_usage_buffer_entries"] >= 5 + 5
            assert held["flagcore_usage_buffer_instances"] >= 5
            assert held["flagcore_usage_buffer_dropped_evaluations_total"] == 0
            assert service.metrics.flag_metrics("checkout") == []

        await _wait_for(lambda: not buffer.holding)
        assert await api.json("GET", "/ready", token=None) == {"health": "GOOD"}
        assert _totals(service, "checkout") == (20 * 3 + 5, 20 + 5, {"blue": 40, "red": 20})
        assert _totals(service, "search") == (20, 0, {})
        assert service.metrics.flag_metrics("made-up") == []
        instances = {i.instance_id: i for i in service.instances.client_instances()}
        assert set(instances) == {"w", "i-0", "i-1", "i-2", "i-3", "browser"}
        assert instances["i-2"].strategies == ("default", "flexibleRollout")
        assert instances["i-2"].interval == 15000
        assert instances["i-2"].sdk_version == "unleash-client-python:6.0.0"
        scraped = await _scrape(api)
        assert scraped["flagcore_usage_buffering"] == 0
        assert scraped["flagcore_usage_buffer_flushes_total[written]"] >= 1


async def test_a_full_buffer_drops_new_keys_counts_and_logs_them_and_keeps_adding_to_held_ones(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("a", "b", "c", "d"):
        service.flags.create_flag("default", name)
    async with serving(service, usage_write_wait=0.05, usage_buffer_entries=3) as api:
        await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_report("w", {}))
        await flush_usage(api.client.server.app)  # the warm-up's instance leaves the buffer
        buffer = api.client.server.app[USAGE_BUFFER]
        with caplog.at_level(logging.WARNING, logger="flagcore_http"):
            async with blocked_worker(api):
                toggles = {name: {"yes": 1, "no": 1} for name in ("a", "b", "c", "d")}
                for _ in range(3):
                    await api.json(
                        "POST", "/api/client/metrics", 202, token=CLIENT, json=_report("i", toggles)
                    )
                # The instance and two keys fit; c and d found no room, three times (a
                # flush under way, stuck behind the worker, may have taken the first post).
                assert buffer.evaluations == 3 * 2 * 2
                scraped = await _scrape(api)
                assert scraped["flagcore_usage_buffer_dropped_evaluations_total"] == 3 * 2 * 2
                await _wait_for(lambda: "usage buffer full" in caplog.text)
            await _wait_for(lambda: not buffer.holding)
    assert _totals(service, "a")[:2] == (3, 3)
    assert _totals(service, "b")[:2] == (3, 3)
    assert service.metrics.flag_metrics("c") == []
    # The first drop is logged at once, the rest at most a minute later or at the stop.
    full = [r.getMessage() for r in caplog.records if "usage buffer full" in r.getMessage()]
    assert len(full) == 2
    assert "dropped 2 evaluation counts" in full[0]  # c's, the moment it found no room
    assert "dropped 10 evaluation counts" in full[1]


def _held(buffer: UsageBuffer, flag: str, yes: int, variants: dict[str, int]) -> None:
    instance = ClientInstance("shop", "i-1", "development", last_seen=HOUR)
    report = CheckedReport(instance, "development", HOUR, ((flag, yes, 0, variants),))
    buffer.hold_report(report, None, None)


def test_counts_are_merged_by_key_so_the_buffer_grows_with_keys_not_posts() -> None:
    buffer = UsageBuffer(capacity=100)
    for _ in range(1000):
        _held(buffer, "checkout", 2, {"blue": 1})
    assert (buffer.entries, buffer.evaluations) == (3, 2000)  # key, variant, instance
    held = buffer.take()
    row = FlagMetrics("checkout", "shop", "development", HOUR, 2000, 0, {"blue": 1000})
    assert held.counts == (HeldCounts(row, None),)
    assert buffer.entries == 3  # taken by a flush, not yet written: still this node's
    buffer.written()
    assert buffer.entries == 0
    assert not buffer.holding


def test_a_failed_flush_put_back_merges_with_what_arrived_meanwhile() -> None:
    buffer = UsageBuffer(capacity=100)
    _held(buffer, "checkout", 5, {"blue": 5})
    taken = buffer.take()
    _held(buffer, "checkout", 1, {"red": 1})  # arrives while the flush is under way
    buffer.put_back(taken)  # the flush failed: nothing of it was written
    again = buffer.take()
    assert [h.row for h in again.counts] == [
        FlagMetrics("checkout", "shop", "development", HOUR, 6, 0, {"red": 1, "blue": 5})
    ]
    assert len(again.instances) == 1
    assert isinstance(again, HeldUsage)
    assert again.evaluations == 6


def test_the_latest_registration_wins_and_keeps_what_a_later_metrics_post_leaves_out() -> None:
    buffer = UsageBuffer(capacity=100)
    registered = ClientInstance(
        "shop", "i-1", "development", "sdk:1", ("default",), HOUR, 15000, HOUR
    )
    later = HOUR + dt.timedelta(minutes=1)
    buffer.hold_instance(registered, create=True)
    buffer.hold_instance(
        ClientInstance("shop", "i-1", "development", last_seen=later), create=False
    )
    ((instance, create),) = buffer.take().instances
    assert instance == ClientInstance(
        "shop", "i-1", "development", "sdk:1", ("default",), HOUR, 15000, later
    )
    assert create


async def test_a_slow_store_never_makes_an_sdk_wait_and_counts_each_post_once(
    service: Service, tmp_path: Path
) -> None:
    service.flags.create_flag("default", "checkout")
    async with serving(service, usage_write_wait=0.05) as api:
        await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_report("w", {}))
        buffer = api.client.server.app[USAGE_BUFFER]
        # Another process holds SQLite's write lock: the store's writes wait for it.
        other = sqlite3.connect(tmp_path / "flags.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            for _ in range(3):  # each held; a flush waits for the lock, merged
                toggles = {"checkout": {"yes": 2, "no": 1}}
                await api.json(
                    "POST", "/api/client/metrics", 202, token=CLIENT, json=_report("i", toggles)
                )
            # Answered, and nothing written yet (read on the lock holder's connection: the
            # store's own is busy waiting for the lock).
            assert other.execute("SELECT count(*) FROM flag_metrics").fetchone() == (0,)
        finally:
            other.execute("ROLLBACK")
            other.close()
        await _wait_for(lambda: not buffer.holding and _totals(service, "checkout")[0] == 6)
        await asyncio.sleep(0.2)  # anything counted twice would show up now
        assert _totals(service, "checkout") == (6, 3, {})


def test_a_flush_takes_at_most_its_share_and_the_flushes_together_take_everything_once() -> None:
    buffer = UsageBuffer(capacity=10_000)
    instance = ClientInstance("shop", "i-1", "development", last_seen=HOUR)
    counts = tuple((f"flag-{i}", 1, 2, {}) for i in range(2500))
    buffer.hold_report(CheckedReport(instance, "development", HOUR, counts), None, None)
    flags: list[str] = []
    while buffer.waiting:
        held = buffer.take(1000)
        assert held.entries <= 1000
        flags.extend(h.row.flag for h in held.counts)
        buffer.written()
    assert sorted(flags) == sorted(f"flag-{i}" for i in range(2500))
    assert (buffer.entries, buffer.evaluations) == (0, 0)


def test_keys_a_flush_wrote_spend_no_budget_again_and_only_so_many_are_remembered() -> None:
    instance = ClientInstance("shop", "i-1", "development", last_seen=HOUR)
    counts = tuple((flag, 1, 0, {}) for flag in ("a", "b", "c"))
    report = CheckedReport(instance, "development", HOUR, counts)
    remembering = UsageBuffer(capacity=100)
    forgetting = UsageBuffer(capacity=100, remembered=2)
    for buffer in (remembering, forgetting):
        assert buffer.hold_report(report, None, None).made == 4  # the instance, 3 buckets
        buffer.take()
        buffer.written()
    assert remembering.hold_report(report, None, 0).made == 0  # all known: no budget
    assert [h.row.yes for h in remembering.take().counts] == [1, 1, 1]
    # Two of the four keys are remembered; the other two spend the budget once more, and
    # with none left they are refused (counted for the caller, not as buffer drops).
    assert forgetting.hold_report(report, None, None).made == 2
    refused = UsageBuffer(capacity=100, remembered=2)
    refused.hold_report(report, None, None)
    refused.take()
    refused.written()
    held = refused.hold_report(report, None, 0)
    assert held.made == 0
    assert held.over_budget >= 1  # at most two buckets are remembered
    assert held.over_budget + len(refused.take().counts) == 3
    assert refused.dropped_evaluations == 0
