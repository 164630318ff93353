"""``GET /internal-backstage/prometheus``: what an operator's Prometheus scrapes.

Counters by route template and status, latency histograms, the client cache's hits and
misses, store calls, streaming clients, signals and actions, flag counts, process metrics;
and ``--metrics-port``, which moves the metrics off the main port.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
import urllib.error
import urllib.request
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.config import ConfigError
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import CLIENT, Api
from tests.http.serving import command, env, start

__all__ = ["start"]  # the fixture, imported to be used here

PATH = "/internal-backstage/prometheus"
FLAGS = "/api/admin/projects/default/features"
ADMIN = "*:*.prometheus-test-admin-secret"


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape by name and labels (parsed as Prometheus would)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(samples: dict[Any, float], name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def _scrape(api: Api) -> dict[Any, float]:
    response = await api.request("GET", PATH, token=None)
    assert response.status == 200
    # Prometheus's text format, which every Prometheus version reads.
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return _samples(await response.text())


async def test_requests_are_counted_and_timed_by_route_template_and_status(api: Api) -> None:
    for name in ("checkout", "search"):
        await api.json("POST", FLAGS, 201, json={"name": name})
    await api.json("GET", f"{FLAGS}/checkout")
    await api.json("GET", f"{FLAGS}/missing", 404)
    samples = await _scrape(api)
    flags = "/api/admin/projects/{project}/features"
    flag = flags + "/{name}"
    counted = "flagcore_http_requests_total"
    assert _value(samples, counted, method="POST", route=flags, status="201") == 2
    assert _value(samples, counted, method="GET", route=flag, status="200") == 1
    assert _value(samples, counted, method="GET", route=flag, status="404") == 1
    histogram = "flagcore_http_request_duration_seconds"
    labels = {"method": "GET", "route": flag, "status": "200"}
    assert _value(samples, histogram + "_count", **labels) == 1
    assert _value(samples, histogram + "_bucket", **labels, le="+Inf") == 1
    assert _value(samples, histogram + "_bucket", **labels, le="5.0") == 1
    assert 0 < (_value(samples, histogram + "_sum", **labels) or 0) < 5
    # The raw paths are not labels: a client cannot grow the series with made-up names.
    assert not any("missing" in str(key) or "checkout" in str(key) for key in samples)


async def test_a_secret_in_a_path_never_becomes_a_label(api: Api) -> None:
    secret = "default:development.a-secret-that-must-not-be-scraped"
    await api.request("DELETE", f"/api/admin/api-tokens/{secret}")
    await api.request("GET", f"/api/no-such-path/{secret}?token={secret}")
    response = await api.request("GET", PATH, token=None)
    text = await response.text()
    assert secret not in text
    assert 'route="/api/admin/api-tokens/{token}"' in text


async def test_client_cache_hits_and_misses_move_and_renders_are_timed(api: Api) -> None:
    await api.json("POST", FLAGS, 201, json={"name": "checkout"})
    before = await _scrape(api)
    first = await api.request("GET", "/api/client/features", token=CLIENT)
    assert first.status == 200
    etag = first.headers["ETag"]
    again = await api.request(
        "GET", "/api/client/features", token=CLIENT, headers={"If-None-Match": etag}
    )
    assert again.status == 304
    after = await _scrape(api)
    lookups = "flagcore_client_features_cache_lookups_total"

    def moved(name: str, **labels: str) -> float:
        return (_value(after, name, **labels) or 0) - (_value(before, name, **labels) or 0)

    assert moved(lookups, result="miss") >= 1
    assert moved(lookups, result="hit") == 1  # the 304 found the rendered payload
    assert moved("flagcore_client_features_render_seconds_count") == 1
    # The store calls the miss needed are timed by operation.
    timed = "flagcore_store_call_duration_seconds_count"
    assert (_value(after, timed, operation="render") or 0) == 1


async def test_flag_counts_per_project_and_environment(api: Api) -> None:
    for name in ("a", "b", "c"):
        await api.json("POST", FLAGS, 201, json={"name": name})
    await api.json("POST", f"{FLAGS}/a/environments/development/on", 200)
    samples = await _scrape(api)
    assert _value(samples, "flagcore_flags", project="default") == 3
    enabled = "flagcore_flags_enabled"
    assert _value(samples, enabled, project="default", environment="development") == 1
    assert _value(samples, enabled, project="default", environment="production") == 0


async def test_streaming_clients_signals_actions_and_process_metrics(api: Api) -> None:
    samples = await _scrape(api)
    assert _value(samples, "flagcore_streaming_clients") == 0
    assert (_value(samples, "process_cpu_seconds_total") or 0) > 0
    stream = await api.request(
        "GET", "/api/client/streaming", token=CLIENT, headers={"X-Request-Id": "stream-1"}
    )
    assert stream.status == 200
    assert stream.headers["X-Request-Id"] == "stream-1"  # set before the stream's headers
    assert _value(await _scrape(api), "flagcore_streaming_clients") == 1
    stream.close()

    created = await api.json(
        "POST", "/api/admin/signal-endpoints", 201, json={"name": "alerts", "description": "ci"}
    )
    token = await api.json(
        "POST", f"/api/admin/signal-endpoints/{created['id']}/tokens", 201, json={"name": "t"}
    )
    await api.json("POST", FLAGS, 201, json={"name": "kill"})
    await api.json(
        "POST",
        "/api/admin/projects/default/actions",
        201,
        json={
            "name": "page",
            "enabled": True,
            "actorId": 1,
            "match": {"source": "signal-endpoint", "sourceId": created["id"], "payload": {}},
            "actions": [
                {
                    "action": "TOGGLE_FEATURE_ON",
                    "sortOrder": 1,
                    "executionParams": {
                        "project": "default",
                        "featureName": "kill",
                        "environment": "development",
                    },
                }
            ],
        },
    )
    signal = "/api/signal-endpoint/alerts"
    sent = await api.request(
        "POST", signal, token=None, headers={"Authorization": f"Bearer {token['token']}"}, json={}
    )
    assert sent.status == 202
    refused = await api.request(
        "POST", signal, token=None, headers={"Authorization": "Bearer wrong"}, json={}
    )
    assert refused.status == 401
    for _ in range(100):
        samples = await _scrape(api)
        if _value(samples, "flagcore_action_executions_total", result="success"):
            break
        await asyncio.sleep(0.05)
    assert _value(samples, "flagcore_action_executions_total", result="success") == 1
    assert _value(samples, "flagcore_signals_received_total") == 1
    assert _value(samples, "flagcore_signals_refused_total", reason="Unauthenticated") == 1


async def test_signal_refusals_are_labelled_by_the_names_the_docs_give(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    frozen = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
    service = Service(store, clock=lambda: frozen)  # every signal in the same instant
    endpoint = service.signals.create_signal_endpoint("alerts")
    secret = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
    second = service.signals.create_signal_endpoint("alerts-too")
    other = service.signals.create_signal_endpoint_token(second.id, "t").secret
    signal = "/api/signal-endpoint/alerts"
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        async with TestClient(TestServer(create_app(service), host="127.0.0.1")) as client:
            assert (await client.post(signal, headers=headers, json={})).status == 202
            # Inside the interval: the 429 answered before the body is read.
            assert (await client.post(signal, headers=headers, json={})).status == 429
            plain = {"Authorization": f"Bearer {other}", "Content-Type": "text/plain"}
            assert (await client.post(f"{signal}-too", headers=plain, data="x")).status == 415
            wrong = {"Authorization": "Bearer wrong"}
            assert (await client.post(signal, headers=wrong, json={})).status == 401
            samples = _samples(await (await client.get(PATH)).text())
    finally:
        store.close()
    refused = {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "flagcore_signals_refused_total"
    }
    assert refused == {"RateLimited": 1, "UnsupportedMediaType": 1, "Unauthenticated": 1}


async def test_each_app_counts_only_its_own_requests(api: Api, service: Service) -> None:
    other = create_app(service, ServerConfig())
    async with TestClient(TestServer(other, host="127.0.0.1")) as client:
        for _ in range(3):
            assert (await client.get("/health")).status == 200
        await api.request("GET", "/health")
        mine = await _scrape(api)
        theirs = _samples(await (await client.get(PATH)).text())
    counted = "flagcore_http_requests_total"
    assert _value(mine, counted, method="GET", route="/health", status="200") == 1
    assert _value(theirs, counted, method="GET", route="/health", status="200") == 3


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_metrics_port_serves_the_metrics_and_the_main_port_no_longer_does(start: Any) -> None:
    server = start("--metrics-port", "0", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    line = server.next_line()
    assert line.startswith("metrics on http://127.0.0.1:"), line
    metrics_url = line.split()[2]
    assert _get(server.url + "/health")[0] == 200
    status, text = _get(metrics_url)
    assert status == 200
    assert 'route="/health",status="200"' in text
    assert _get(server.url + PATH)[0] == 404
    # Only the metrics live there.
    assert _get(metrics_url.replace(PATH, "/health"))[0] == 404
    server.stop()


def test_the_metrics_port_comes_from_the_environment_too(start: Any) -> None:
    server = start(FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN, FLAGCORE_METRICS_PORT="0")
    assert server.next_line().startswith("metrics on http://127.0.0.1:")
    assert _get(server.url + PATH)[0] == 404
    server.stop()


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"FLAGCORE_METRICS_PORT": "http"}, "FLAGCORE_METRICS_PORT='http'"),
        ({"FLAGCORE_METRICS_PORT": "70000"}, "FLAGCORE_METRICS_PORT='70000'"),
        ({"FLAGCORE_METRICS_PORT": "4242"}, "the same as the main port"),
        ({"FLAGCORE_PORT": "9000", "FLAGCORE_METRICS_PORT": "9000"}, "the same as the main port"),
    ],
)
def test_a_bad_metrics_port_is_refused_naming_it(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        ServerConfig.from_env(environ)


def test_serve_refuses_a_bad_metrics_port_flag_before_starting() -> None:
    done = subprocess.run(
        command("serve", "--metrics-port", "-1", "--db", ":memory:"),
        capture_output=True,
        text=True,
        env=env(),
        timeout=30,
    )
    assert done.returncode == 2
    assert "--metrics-port='-1'" in done.stderr
