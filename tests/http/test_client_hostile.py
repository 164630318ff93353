"""The client path under hostile load (issue #12): memory, disk and store time stay bounded
whatever a client sends, and legitimate SDKs keep being served."""

from __future__ import annotations

import asyncio
import gzip
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import Tag
from flagcore.service import RetentionSettings, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.keys import CACHE, WORKER
from tests.http.conftest import ADMIN, ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

FEATURES = "/api/client/features"


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def _cache(api: Api) -> Any:
    return api.client.server.app[CACHE]


async def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


# --- 1. the client-features payload cache ---


async def test_filter_values_that_match_nothing_share_one_cached_payload(
    service: Service,
) -> None:
    service.flags.create_flag("default", "checkout")
    service.flags.create_flag("default", "search")
    service.tags.add_flag_tag("checkout", Tag("simple", "core"))
    async with serving(service) as api:
        wanted = await api.json("GET", f"{FEATURES}?tag=simple:core", token=CLIENT)
        assert [f["name"] for f in wanted["features"]] == ["checkout"]
        for i in range(300):
            junk = await api.json(
                "GET", f"{FEATURES}?tag=simple:core&tag=junk:{i}&tag=nonsense{i}", token=CLIENT
            )
            assert junk["features"] == wanted["features"]
            assert junk["meta"]["etag"] == wanted["meta"]["etag"]
        nothing = [
            await api.json("GET", f"{FEATURES}?tag=junk:{i}&namePrefix=zz{i}", token=CLIENT)
            for i in range(100)
        ]
        assert all(body["features"] == [] for body in nothing)
        assert len({body["meta"]["etag"] for body in nothing}) == 1
        # The two answers above, the first miss of each: nothing per junk value.
        assert len(_cache(api).payloads) <= 3


async def test_payload_cache_stays_within_its_byte_budget_and_gzip_is_the_body(
    service: Service,
) -> None:
    for i in range(60):
        service.flags.create_flag("default", f"flag-{i:02d}", description="d" * 400)
    async with serving(service, payload_cache_bytes=40_000) as api:
        cache = _cache(api)
        for i in range(60):  # 60 real, distinct selections
            response = await api.request("GET", f"{FEATURES}?namePrefix=flag-{i:02d}", token=CLIENT)
            assert response.status == 200
            assert cache.payloads.bytes <= 40_000
        plain = await api.request(
            "GET", FEATURES, token=CLIENT, headers={"Accept-Encoding": "identity"}
        )
        body = await plain.read()
        assert len(body) > 24_000  # one payload near the budget: kept, others evicted
        zipped = await api.request(
            "GET",
            FEATURES,
            token=CLIENT,
            headers={"Accept-Encoding": "gzip"},
            auto_decompress=False,
        )
        assert zipped.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(await zipped.read()) == body
        assert cache.payloads.bytes <= 40_000


# --- 2. SDK instance tracking ---


async def test_polling_instances_are_written_in_batches_and_over_long_ids_ignored(
    service: Service,
) -> None:
    async with serving(service, instance_write_interval=0.05) as api:
        sdk = {"UNLEASH-APPNAME": "shop", "UNLEASH-SDK": "py:6"}
        await api.json("GET", FEATURES, token=CLIENT, headers=sdk)
        await _wait_for(
            lambda: [i.app_name for i in service.instances.client_instances()] == ["shop"]
        )
        (instance,) = service.instances.client_instances()
        assert (instance.instance_id, instance.sdk_version) == ("unknown", "py:6")
        long_id = {"UNLEASH-APPNAME": "shop", "UNLEASH-INSTANCEID": "x" * 4000}
        assert (await api.request("GET", FEATURES, token=CLIENT, headers=long_id)).status == 200
        await asyncio.sleep(0.3)
    assert len(service.instances.client_instances()) == 1


async def test_a_burst_of_made_up_instances_queues_bounded_writes(service: Service) -> None:
    async with serving(service, instance_write_interval=3600) as api:
        cache = _cache(api)
        cache.sizes = attrs.evolve(cache.sizes, pending_instances=50)
        cache.seen_instances.capacity = 100
        for i in range(400):
            probe = {"UNLEASH-APPNAME": "probe", "UNLEASH-INSTANCEID": f"i-{i}"}
            assert (await api.request("GET", FEATURES, token=CLIENT, headers=probe)).status == 200
        assert len(cache.pending_instances) == 50
        assert len(cache.seen_instances) <= 100
        assert cache.dropped_instances == 350
        assert api.client.server.app[WORKER].pending == 0  # no write was queued per request
    # The pending batch is written at shutdown, in one transaction.
    assert len(service.instances.client_instances()) == 50


# --- 3. client metrics ---


def _metrics(toggles: dict[str, Any], app: str = "shop") -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": "i-1",
        "bucket": {
            "start": bucket_time(2),
            "stop": bucket_time(),
            "toggles": toggles,
        },
    }


async def test_metrics_keep_only_flags_in_the_tokens_projects(
    service: Service, api: Api, tmp_path: Path
) -> None:
    service.projects.create_project("web", "Web")
    service.flags.create_flag("default", "mine")
    service.flags.create_flag("web", "theirs")
    made_up = {f"made-up-{i}": {"yes": 1, "no": 1} for i in range(5000)}
    toggles = {"mine": {"yes": 2}, "theirs": {"yes": 3}, **made_up}
    await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_metrics(toggles))
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("mine")] == [2]
    assert service.metrics.flag_metrics("theirs") == []  # CLIENT is scoped to "default"
    assert service.metrics.flag_metrics("made-up-1") == []
    await api.json(
        "POST", "/api/client/metrics", 202, token=ALL_PROJECTS_CLIENT, json=_metrics(toggles)
    )
    await api.usage_written()
    assert [row.yes for row in service.metrics.flag_metrics("theirs")] == [3]
    # Repeated posts add into one row per flag, app, environment and hour.
    for _ in range(5):
        await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_metrics(toggles))
    await api.usage_written()
    by_environment = {row.environment: row.yes for row in service.metrics.flag_metrics("mine")}
    assert by_environment == {"development": 12, "production": 2}
    rows = sqlite3.connect(tmp_path / "flags.db").execute("SELECT count(*) FROM flag_metrics")
    assert rows.fetchone()[0] == 3


async def test_metrics_refuse_bad_counts_and_oversized_reports_with_the_path(
    service: Service, api: Api
) -> None:
    service.flags.create_flag("default", "mine")
    for bad in (-1, 2**63, 1.5, True, "2"):
        error = await api.json(
            "POST", "/api/client/metrics", 400, token=CLIENT, json=_metrics({"mine": {"yes": bad}})
        )
        assert error["name"] == "BadDataError"
        assert error["details"][0]["path"] == "$.bucket.toggles.mine.yes"
    error = await api.json(
        "POST",
        "/api/client/metrics",
        400,
        token=CLIENT,
        json=_metrics({"mine": {"variants": {"blue": -3}}}),
    )
    assert error["details"][0]["path"] == "$.bucket.toggles.mine.variants.blue"
    too_many = {f"f{i}": {"yes": 1} for i in range(10_001)}
    error = await api.json(
        "POST", "/api/client/metrics", 400, token=CLIENT, json=_metrics(too_many)
    )
    assert error["name"] == "ExceedsLimitError"
    error = await api.json(
        "POST", "/api/client/metrics", 400, token=CLIENT, json=_metrics({}, app="a" * 256)
    )
    assert error["details"][0]["path"] == "$.appName"
    await api.usage_written()
    assert service.metrics.flag_metrics("mine") == []  # nothing half-written


# --- 4. the unknown-token cache ---


async def test_unknown_tokens_never_push_known_ones_out_of_the_cache(service: Service) -> None:
    # 300 guesses from one address: the tarpit (test_rate_limits.py) would delay them.
    async with serving(service, auth_failures_free_per_minute=0) as api:
        cache = _cache(api)
        cache.unknown_tokens.capacity = 50
        await api.json("GET", FEATURES, token=CLIENT)
        assert CLIENT in cache.known_tokens
        for i in range(300):
            response = await api.request("GET", FEATURES, token=f"default:development.junk-{i}")
            assert response.status == 401
            assert len(cache.unknown_tokens) <= 50
        assert CLIENT in cache.known_tokens
        response = await api.request("GET", FEATURES, token="x" * 8000)
        assert response.status == 401
        assert len(cache.unknown_tokens) <= 50
        # A token that becomes valid later is not refused from the cache: a new token
        # moves the revision, which empties both caches.
        secret = "*:development.created-later-with-a-long-secret"
        assert (await api.request("GET", FEATURES, token=secret)).status == 401
        service.tokens.create_token("late", "client", environment="development", secret=secret)
        assert (await api.request("GET", FEATURES, token=secret)).status == 200
        # Admin calls still work.
        await api.json("GET", "/api/admin/projects", token=ADMIN)


# --- 5. the store queue ---


async def test_a_full_store_queue_answers_503_while_sdk_polls_keep_working(
    service: Service,
) -> None:
    async with serving(service, store_queue_limit=2) as api:
        warm = await api.request("GET", FEATURES, token=CLIENT)
        etag = warm.headers["ETag"]
        release = threading.Event()
        worker = api.client.server.app[WORKER]
        blocked = [worker.submit(release.wait, 10) for _ in range(2)]
        try:
            response = await api.request("GET", "/api/admin/projects", token=ADMIN)
            assert response.status == 503
            assert response.headers["Retry-After"] == "1"
            body = await response.json()
            assert body["name"] == "ServiceUnavailable"
            assert body["details"][0]["message"]
            response = await api.request(
                "POST", "/api/client/metrics", token=CLIENT, json=_metrics({})
            )
            assert response.status == 202  # SDK usage is held, never refused (issue 25)
            polled = await api.request(
                "GET", FEATURES, token=CLIENT, headers={"If-None-Match": etag}
            )
            assert polled.status == 304
            assert (await api.request("GET", FEATURES, token=CLIENT)).status == 200
        finally:
            release.set()
        for future in blocked:
            future.result(timeout=10)
        await api.json("GET", "/api/admin/projects", token=ADMIN)


# --- retention, run by the server ---


async def test_the_server_prunes_old_data_periodically(service: Service) -> None:
    service.flags.create_flag("default", "f")
    retention = RetentionSettings(client_instance_days=1 / 86400)  # one second
    async with serving(service, retention=retention, retention_interval=0.1) as api:
        await api.json(
            "POST",
            "/api/client/register",
            202,
            token=CLIENT,
            json={"appName": "shop", "interval": 1, "started": 0, "strategies": []},
        )
        await api.usage_written()
        assert len(service.instances.client_instances()) == 1
        await _wait_for(lambda: service.instances.client_instances() == [], timeout=10)


# --- POST /api/client/register (issue #11) ---


async def test_register_without_unleash_required_fields_names_each_path(api: Api) -> None:
    error = await api.json("POST", "/api/client/register", 400, token=CLIENT, json={})
    paths = {detail["path"] for detail in error["details"]}
    assert paths == {"$.appName", "$.interval", "$.started", "$.strategies"}
    wrong = {
        "appName": 3,
        "interval": "15000",
        "started": [],
        "strategies": ["default", 2],
        "instanceId": 7,
    }
    error = await api.json("POST", "/api/client/register", 400, token=CLIENT, json=wrong)
    paths = {detail["path"] for detail in error["details"]}
    assert paths == {"$.appName", "$.interval", "$.started", "$.strategies", "$.instanceId"}
    error = await api.json(
        "POST",
        "/api/client/register",
        400,
        token=CLIENT,
        json={"appName": "a", "interval": 1, "started": "yesterday", "strategies": []},
    )
    assert error["details"][0]["path"] == "$.started"


async def test_register_accepts_what_unleash_accepts(api: Api, service: Service) -> None:
    for started in ("2026-11-22T08:23:08.951132123Z", 1_763_800_000_000):
        await api.json(
            "POST",
            "/api/client/register",
            202,
            token=CLIENT,
            json={"appName": "shop", "interval": 15000, "started": started, "strategies": []},
        )
    await api.usage_written()
    (instance,) = service.instances.client_instances()
    assert (instance.instance_id, instance.interval) == ("unknown", 15000)
    assert instance.started is not None
    assert instance.started.year == 2025


async def test_a_burst_of_polls_after_a_change_queues_one_store_call_at_a_time(
    service: Service,
) -> None:
    # Only the polls use the store worker here: no upkeep look falls in the window.
    quiet = {"integration_sweep_interval": 3600.0, "schedule_check_interval": 60.0}
    async with serving(service, **quiet) as api:
        await api.json("GET", FEATURES, token=CLIENT)
        service.flags.create_flag("default", "new")  # moves the revision: every cache is cold
        worker = api.client.server.app[WORKER]
        release = threading.Event()
        blocker = worker.submit(release.wait, 10)
        polls = [asyncio.ensure_future(api.json("GET", FEATURES, token=CLIENT)) for _ in range(50)]
        try:
            # The first poll's lookup is queued behind the blocker (on a loaded machine the
            # polls take longer than a fixed pause to arrive), then the rest arrive and wait.
            deadline = asyncio.get_running_loop().time() + 10
            while worker.pending < 2 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            assert worker.pending == 2  # the blocker and one token lookup for all 50
        finally:
            release.set()
        blocker.result(timeout=10)
        bodies = await asyncio.gather(*polls)
        assert {body["meta"]["etag"] for body in bodies} == {bodies[0]["meta"]["etag"]}
        assert [f["name"] for f in bodies[0]["features"]] == ["new"]
