"""`flagcore_client` end to end against a real `flagcore serve` process."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flagcore.service import Service
from flagcore_client import AsyncFlagClient, FlagClient
from flagcore_store_sqlite import SqliteStore
from tests.http.test_streaming_sdks import CLIENT, FLAGS, Server

USERS = [{"userId": str(i)} for i in range(20)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path)
    server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            server.stop()


def _wait_for(condition: Callable[[], bool], timeout: float) -> float:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.005)
    return time.monotonic() - start


def _flag(server: Server, name: str, rollout: str = "100") -> None:
    server.admin("POST", FLAGS, {"name": name})
    server.admin(
        "POST",
        f"{FLAGS}/{name}/environments/development/strategies",
        {"name": "flexibleRollout", "parameters": {"rollout": rollout, "stickiness": "default"}},
    )
    server.admin("POST", f"{FLAGS}/{name}/environments/development/on")


def test_the_client_streams_every_change_and_tells_the_callback(server: Server) -> None:
    _flag(server, "checkout", rollout="50")
    changes: list[frozenset[str]] = []
    seen = threading.Event()

    def on_change(names: frozenset[str]) -> None:
        changes.append(names)
        seen.set()

    with FlagClient(server.url + "/api", CLIENT, app_name="shop", on_change=on_change) as flags:
        assert flags.ready
        assert flags.mode == "streaming"
        on = [flags.is_enabled("checkout", user) for user in USERS]
        assert 0 < sum(on) < len(USERS)  # a real 50 % rollout, evaluated here
        seen.clear()
        server.admin("POST", f"{FLAGS}/checkout/environments/development/off")
        took = _wait_for(lambda: not any(flags.is_enabled("checkout", u) for u in USERS), 1.0)
        assert took < 1.0
        assert seen.wait(1.0)
        assert changes[-1] == frozenset({"checkout"})
        server.admin(
            "PUT",
            f"{FLAGS}/checkout/environments/development/variants",
            [{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "userId"}],
        )
        server.admin("POST", f"{FLAGS}/checkout/environments/development/on")
        # Back on, with its variant: every user in the rollout gets "blue", the rest none.
        expected = ["blue" if was_on else "disabled" for was_on in on]
        _wait_for(lambda: [flags.get_variant("checkout", u).name for u in USERS] == expected, 1.0)
        assert flags.flag_names == ["checkout"]


def test_the_client_keeps_its_state_while_the_server_is_down_and_catches_up(
    server: Server,
) -> None:
    _flag(server, "checkout")
    with FlagClient(server.url + "/api", CLIENT, app_name="shop") as flags:
        assert flags.is_enabled("checkout")
        server.stop()
        time.sleep(0.5)
        assert flags.is_enabled("checkout")  # answered from the last state
        server.start()  # same port, same database
        server.admin("POST", f"{FLAGS}/checkout/environments/development/off")
        _wait_for(lambda: not flags.is_enabled("checkout"), 15)


def test_a_backup_file_serves_the_flags_when_the_server_is_unreachable_at_start(
    server: Server, tmp_path: Path
) -> None:
    _flag(server, "checkout")
    backup = tmp_path / "backup" / "flags.json"
    with FlagClient(server.url + "/api", CLIENT, app_name="shop", backup_path=backup) as flags:
        assert flags.is_enabled("checkout")
        _wait_for(backup.exists, 2)
    url = server.url
    server.stop()
    with FlagClient(url + "/api", CLIENT, app_name="shop", backup_path=backup, wait=1) as flags:
        assert flags.ready
        assert flags.is_enabled("checkout")
    without = FlagClient(url + "/api", CLIENT, app_name="shop", wait=0.5)
    try:
        assert not without.ready
        assert not without.is_enabled("checkout")
    finally:
        without.close()


def test_usage_is_counted_and_the_client_registers(server: Server, tmp_path: Path) -> None:
    _flag(server, "checkout")
    with FlagClient(
        server.url + "/api", CLIENT, app_name="metrics-app", instance_id="m-1"
    ) as flags:
        for _ in range(3):
            assert flags.is_enabled("checkout")
        flags.get_variant("checkout")
        assert not flags.is_enabled("unknown-flag")
    # close() sent the last bucket.
    store = SqliteStore(tmp_path / "flags.db")
    try:
        service = Service(store)
        _wait_for(lambda: bool(service.metrics.flag_metrics("checkout")), 5)
        rows = service.metrics.flag_metrics("checkout")
        assert sum(row.yes for row in rows) == 4
        assert sum(row.no for row in rows) == 0
        # The variant asked for is counted by name (no variants defined: "disabled").
        assert sum(row.variants.get("disabled", 0) for row in rows) == 1
        _wait_for(
            lambda: any(i.instance_id == "m-1" for i in service.instances.client_instances()), 10
        )
    finally:
        store.close()


async def test_the_async_client_falls_back_to_delta_when_streams_are_refused(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path, FLAGCORE_STREAMING_MAX_CONNECTIONS="0")
    server.start()
    try:
        _flag(server, "checkout")
        async with AsyncFlagClient(
            server.url + "/api", CLIENT, app_name="shop", refresh_interval=0.1
        ) as flags:
            assert flags.is_enabled("checkout")
            assert flags.mode == "delta"
            await _asleep(0.3)  # a few polls with nothing new: 304s
            server.admin("POST", f"{FLAGS}/checkout/environments/development/off")
            deadline = time.monotonic() + 2
            while flags.is_enabled("checkout"):
                assert time.monotonic() < deadline
                await _asleep(0.02)
        log = server.log.read_text()
        assert '"GET /api/client/delta" 200' in log
        assert '"GET /api/client/delta" 304' in log
    finally:
        server.stop()


async def test_a_polling_client_is_moved_to_streaming_when_the_server_says_so(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path, FLAGCORE_SDK_FETCH_MODE="streaming")
    server.start()
    try:
        _flag(server, "checkout")
        async with AsyncFlagClient(
            server.url + "/api", CLIENT, app_name="shop", mode="polling", refresh_interval=0.1
        ) as flags:
            assert flags.is_enabled("checkout")
            deadline = time.monotonic() + 2
            while flags.mode != "streaming":
                assert time.monotonic() < deadline
                await _asleep(0.02)
            server.admin("POST", f"{FLAGS}/checkout/environments/development/off")
            while flags.is_enabled("checkout"):
                assert time.monotonic() < deadline + 1
                await _asleep(0.02)
    finally:
        server.stop()


async def _asleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def test_a_write_by_another_process_reaches_the_client_within_a_second(
    server: Server, tmp_path: Path
) -> None:
    _flag(server, "checkout")
    with FlagClient(server.url + "/api", CLIENT, app_name="shop") as flags:
        assert flags.is_enabled("checkout")
        # Another writer on the same database file: the server learns of it only through
        # the store revision.
        store = SqliteStore(tmp_path / "flags.db")
        try:
            Service(store).environments.set_environment_enabled(
                "default", "checkout", "development", False
            )
            written = time.monotonic()
        finally:
            store.close()
        _wait_for(lambda: not flags.is_enabled("checkout"), 1.0)
        assert time.monotonic() - written < 1.0


def test_impact_metrics_the_client_records_pause_a_release_plan_through_a_safeguard(
    server: Server,
) -> None:
    """Issue 32: an application's counters and histograms, sent with its usage, reach the
    flag's series, and the server's runner pauses the plan their error rate trips."""
    server.admin("POST", FLAGS, {"name": "checkout"})
    milestones = [
        {
            "name": f"{p}%",
            "sortOrder": i,
            "strategies": [{"name": "flexibleRollout", "parameters": {"rollout": str(p)}}],
            "transitionCondition": {"intervalMinutes": 60},
        }
        for i, p in enumerate((10, 100))
    ]
    template = server.admin(
        "POST", "/api/admin/release-plan-templates", {"name": "T", "milestones": milestones}
    )
    plans = f"{FLAGS}/checkout/environments/development/release-plans"
    plan = server.admin("POST", plans, {"templateId": template["id"]})
    server.admin("POST", f"{plans}/{plan['id']}/milestones/{plan['milestones'][0]['id']}/start")
    guard = {
        "impactMetric": {
            "metricName": "errors",
            "aggregationMode": "sum",
            "windowMinutes": 5,
            "ratioOf": "requests",
        },
        "triggerCondition": {"operator": ">", "threshold": 0.02},
    }
    server.admin("PUT", f"{plans}/{plan['id']}/safeguards", guard)
    with FlagClient(server.url + "/api", CLIENT, app_name="shop", metrics_interval=3600) as flags:
        for i in range(50):
            flags.impact_metrics.increment_counter("requests", flag="checkout")
            flags.impact_metrics.observe("latency", 0.02 * i, flag="checkout")
        flags.impact_metrics.increment_counter("errors", 5, flag="checkout")
    # close() sent the last report: 5 errors in 50 requests trip the safeguard.
    _wait_for(lambda: "pausedReason" in server.admin("GET", plans)[0], 10)
    assert "was 0.1, above 0.02" in server.admin("GET", plans)[0]["pausedReason"]
    (latency,) = server.admin(
        "GET",
        "/api/admin/projects/default/features/checkout/environments/development"
        "/impact-metrics/latency",
    )
    assert latency["count"] == 50
    assert latency["buckets"]["+Inf"] == 50
    assert latency["buckets"]["0.1"] == 6  # at most 0.1: 0.00, 0.02, … 0.10
