"""SDK usage is written behind the answer, in merged batches (issue 24): a flood of
metrics posts and registrations costs one store transaction per batch, not one per post;
what an SDK posted is on this node's pages right after (read-your-writes); the row
budgets still bound what one token and address adds."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.metrics import METRICS as SERVER_METRICS
from flagcore_sql.transaction import SqlTransaction
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import ADMIN, CLIENT, Api, bucket_time

METRICS = "/api/client/metrics"
REGISTER = "/api/client/register"
# Long enough that nothing is written behind a test's back: only a full batch or a
# reader's flush writes.
NEVER = 60.0


class _CountingStore(SqliteStore):
    """The SQLite store, counting the write transactions it begins."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes = 0

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[SqlTransaction]:
        if write:
            self.writes += 1
        with super().transaction(write=write) as tx:
            yield tx


def _counting_service(tmp_path: Path, *flags: str) -> tuple[Service, _CountingStore]:
    store = _CountingStore(tmp_path / "usage.db")
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    service.tokens.create_token(
        "sdk", "client", projects=["default"], environment="development", secret=CLIENT
    )
    for flag in flags:
        service.flags.create_flag("default", flag)
    return service, store


@asynccontextmanager
async def serving(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def _report(app: str, toggles: dict[str, Any], *, start: str | None = None) -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": "i-1",
        "bucket": {"start": start or bucket_time(2), "stop": bucket_time(), "toggles": toggles},
    }


def _registration(app: str) -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": "i-1",
        "sdkVersion": "unleash-client-node:6.1.0",
        "strategies": ["default"],
        "started": "2026-11-25T01:00:00Z",
        "interval": 15000,
    }


async def _sign_in(api: Api, then: str) -> str:
    """Sign in to the admin UI as a browser would; the page ``then`` as HTML."""
    form = await (await api.request("GET", "/ui/sign-in", token=None)).text()
    csrf = re.search(r'name="_csrf" value="([^"]+)"', form)
    assert csrf, form
    page = await api.request(
        "POST",
        "/ui/sign-in",
        token=None,
        data={"token": ADMIN, "_csrf": csrf.group(1), "next": then},
    )
    assert page.status == 200
    assert page.url.path == then
    return await page.text()


async def test_a_burst_of_posts_from_many_apps_is_written_in_one_transaction(
    tmp_path: Path,
) -> None:
    service, store = _counting_service(tmp_path, "checkout", "search", "banner")
    toggles = {
        "checkout": {"yes": 2, "no": 1},
        "search": {"yes": 1, "no": 0},
        "banner": {"yes": 0, "no": 3},
    }
    # One client posting 500 at once: past the burst its rate limits allow.
    limits = {"metrics_rate_limit": 0, "register_rate_limit": 0}
    async with serving(service, usage_flush_interval=NEVER, **limits) as api:
        before = store.writes
        for index in range(200):
            app = f"app-{index}"
            await api.json("POST", METRICS, 202, token=CLIENT, json=_report(app, toggles))
            await api.json("POST", REGISTER, 202, token=CLIENT, json=_registration(app))
        # Buckets dated 2999 cost no write of their own either: their instance joins the
        # batch, their counts are dropped before they are held.
        for index in range(100):
            far = _report(f"far-{index}", toggles, start="2999-01-01T00:00:00Z")
            await api.json("POST", METRICS, 202, token=CLIENT, json=far)
        assert store.writes == before  # 500 posts answered, nothing written yet
        # Waiting for its regular flush is not being behind: /ready says nothing of it.
        assert await api.json("GET", "/ready", token=None) == {"health": "GOOD"}
        # 600 buckets and 300 instances: under one batch's 1,000 entries.
        await api.usage_written()
        assert store.writes == before + 1
    rows = [row for flag in ("checkout", "search", "banner") for row in _flag_rows(service, flag)]
    assert len(rows) == 600
    assert {row.app_name for row in rows} == {f"app-{index}" for index in range(200)}
    assert sum(row.yes for row in rows) == 200 * 3
    assert sum(row.no for row in rows) == 200 * 4
    instances = {i.app_name: i for i in service.instances.client_instances()}
    assert len(instances) == 300
    assert instances["app-7"].strategies == ("default",)  # the registration, merged in
    assert instances["app-7"].sdk_version == "unleash-client-node:6.1.0"


def _flag_rows(service: Service, flag: str) -> list[Any]:
    return list(service.metrics.flag_metrics(flag))


async def test_a_full_batch_is_written_without_waiting_for_the_interval(tmp_path: Path) -> None:
    service, store = _counting_service(tmp_path, "checkout")
    # One client posting 1,000 reports at once: past the burst its rate limit allows.
    async with serving(service, usage_flush_interval=NEVER, metrics_rate_limit=0) as api:
        before = store.writes
        # 1,000 applications' instances and buckets: 2,000 entries. Whenever 1,000 wait,
        # a flush takes them at once, long before the interval.
        for index in range(1000):
            report = _report(f"app-{index}", {"checkout": {"yes": 1, "no": 0}})
            await api.json("POST", METRICS, 202, token=CLIENT, json=report)
        await _until(lambda: store.writes >= before + 2)
        await api.usage_written()  # what arrived while a flush was under way, if any
        assert before + 2 <= store.writes <= before + 3
    assert sum(row.yes for row in _flag_rows(service, "checkout")) == 1000


async def _until(condition: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + 20
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_usage_posted_is_on_the_applications_and_flag_pages_right_after(
    tmp_path: Path,
) -> None:
    service, store = _counting_service(tmp_path, "checkout")
    async with serving(service, usage_flush_interval=NEVER) as api:
        toggles = {"checkout": {"yes": 5, "no": 2}}
        await api.json("POST", REGISTER, 202, token=CLIENT, json=_registration("shop"))
        await api.json("POST", METRICS, 202, token=CLIENT, json=_report("shop", toggles))
        page = await _sign_in(api, "/ui/applications")
        assert '<th scope="row">shop</th><td>i-1</td>' in page
        assert "unleash-client-node:6.1.0" in page
        assert '<th scope="row">checkout</th><td>5</td><td>2</td>' in page
        # More counts, then the flag's own page: added up, at once.
        await api.json("POST", METRICS, 202, token=CLIENT, json=_report("shop", toggles))
        flag_page = await (await api.request("GET", "/ui/flags/checkout", token=None)).text()
        assert "<tr><td>shop</td><td>development</td><td>10</td><td>4</td></tr>" in flag_page
    assert store.writes > 0


async def test_a_steady_sdk_spends_its_row_budget_once_not_once_a_flush(
    tmp_path: Path,
) -> None:
    """The budget (here 4 rows an hour: the instance and three buckets) bounds the rows a
    token and address add; counts for rows already written spend none of it, so an SDK
    reporting the same flags every interval is never cut off."""
    service, _store = _counting_service(tmp_path, "a", "b", "c")
    toggles = {name: {"yes": 1, "no": 0} for name in ("a", "b", "c")}
    async with serving(service, usage_flush_interval=NEVER, metrics_new_rows_per_hour=4) as api:
        for _ in range(5):
            await api.json("POST", METRICS, 202, token=CLIENT, json=_report("shop", toggles))
            await api.usage_written()
        registry = api.client.app[SERVER_METRICS].registry
        dropped = registry.get_sample_value(
            "flagcore_sdk_metrics_dropped_total", {"reason": "row_budget"}
        )
        assert not dropped
        # A new application from the same token and address finds the budget spent.
        await api.json("POST", METRICS, 202, token=CLIENT, json=_report("other", toggles))
        await api.usage_written()
        assert registry.get_sample_value(
            "flagcore_sdk_metrics_dropped_total", {"reason": "row_budget"}
        )
    for name in ("a", "b", "c"):
        assert [(r.app_name, r.yes) for r in _flag_rows(service, name)] == [("shop", 5)]


async def test_a_clean_stop_writes_what_waits_for_the_next_flush(tmp_path: Path) -> None:
    service, store = _counting_service(tmp_path, "checkout")
    async with serving(service, usage_flush_interval=NEVER) as api:
        await api.json("POST", REGISTER, 202, token=CLIENT, json=_registration("shop"))
        toggles = {"checkout": {"yes": 4, "no": 1}}
        await api.json("POST", METRICS, 202, token=CLIENT, json=_report("shop", toggles))
        before = store.writes
    assert store.writes == before + 1  # one last flush as the server stopped
    assert [(r.app_name, r.yes, r.no) for r in _flag_rows(service, "checkout")] == [("shop", 4, 1)]
    (instance,) = service.instances.client_instances()
    assert instance.sdk_version == "unleash-client-node:6.1.0"
