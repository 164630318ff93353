"""SDK usage through the edge: never lost on a clean stop (sent before the edge exits, or
kept on disk while the upstream is away and sent after the next start), bounded (past the
bound a 503, counted in /ready and the metrics), and what a downstream edge forwards
(``/api/client/metrics/bulk``, read strictly) reaching the upstream through a chain.
The Prometheus series docs/edge.md promises are read here too: upstream lag, cache age,
requests per token."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flagcore.service import Service
from flagcore_cli import edge_command
from flagcore_cli.main import build_parser
from flagcore_store_sqlite import SqliteStore
from tests.edge.processes import (
    CLIENT,
    SPEC,
    EdgeProcess,
    UpstreamServer,
    get,
    post,
    send,
    wait_for,
)


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _report(app: str, flag: str, yes: int) -> dict[str, Any]:
    """A metrics report of the last minute (the upstream keeps buckets near now only)."""
    stop = dt.datetime.now(dt.UTC).replace(microsecond=0)
    start = stop - dt.timedelta(minutes=1)
    return {
        "appName": app,
        "instanceId": f"{app}-1",
        "bucket": {
            "start": start.isoformat().replace("+00:00", "Z"),
            "stop": stop.isoformat().replace("+00:00", "Z"),
            "toggles": {flag: {"yes": yes, "no": 1, "variants": {}}},
        },
    }


def _registration(app: str) -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": f"{app}-1",
        "sdkVersion": "unleash-client-python:6.9.1",
        "strategies": ["default"],
        "started": _now(),
        "interval": 15000,
    }


def _at_upstream(upstream: UpstreamServer, read: Callable[[Service], Any]) -> Any:
    """What ``read`` finds in the upstream's database once it is there (waited for)."""
    store = SqliteStore(upstream.db)
    try:
        service = Service(store)
        return wait_for(lambda: read(service))
    finally:
        store.close()


def _yes(upstream: UpstreamServer, flag: str, at_least: int) -> int:
    """The upstream's count of ``yes`` for ``flag`` once it reaches ``at_least``."""
    return int(
        _at_upstream(
            upstream,
            lambda s: (
                (total := sum(row.yes for row in s.metrics.flag_metrics(flag))) >= at_least
                and total
            ),
        )
    )


def _apps(upstream: UpstreamServer) -> set[str]:
    store = SqliteStore(upstream.db)
    try:
        return {i.app_name for i in Service(store).instances.client_instances()}
    finally:
        store.close()


def _label(secret: str, scope: str) -> str:
    return f"{scope}#{hashlib.sha256(secret.encode()).hexdigest()[:8]}"


def _edge(tmp_path: Path, upstream: UpstreamServer, *args: str) -> EdgeProcess:
    edge = EdgeProcess(tmp_path).start(
        "--upstream", upstream.url + "/api", "--upstream-token", CLIENT, "--interval", "0.2", *args
    )
    wait_for(lambda: edge.ready()["status"] == 200)
    return edge


def test_usage_posted_just_before_a_clean_stop_reaches_the_upstream(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    # An hour between sends: only the stop itself can send what the SDK posts.
    edge = _edge(tmp_path, upstream, "--metrics-interval", "3600")
    edges.append(edge)
    assert post(edge.url + "/api/client/register", CLIENT, _registration("stopping-app")) == 202
    assert (
        post(edge.url + "/api/client/metrics", CLIENT, _report("stopping-app", "checkout", 7))
        == 202
    )
    assert edge.ready()["usageHeld"] == 2
    edge.stop()  # SIGTERM; the process exits 0 once what it held is sent
    assert _yes(upstream, "checkout", 7) == 7
    assert "stopping-app" in _apps(upstream)
    assert not list(edge.data_dir.glob("edge-usage-*.json"))  # nothing left to keep


def test_usage_held_at_a_clean_stop_while_the_upstream_is_away_is_sent_after_the_next_start(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    sdk_token = upstream.client_token("sdk", ["default"])
    args = ("--metrics-interval", "0.3")
    edge = _edge(tmp_path, upstream, *args)
    edges.append(edge)
    assert get(edge.url + "/api/client/features", sdk_token)[0] == 200  # checked, followed
    upstream.stop()
    wait_for(lambda: edge.ready()["upstream"] == "unreachable")
    assert post(edge.url + "/api/client/metrics", CLIENT, _report("kept-app", "checkout", 4)) == 202
    assert (
        post(edge.url + "/api/client/metrics", sdk_token, _report("sdk-app", "checkout", 9)) == 202
    )
    edge.stop()  # the upstream is away: what is held goes to the data directory

    kept = list(edge.data_dir.glob("edge-usage-*.json"))
    assert len(kept) == 1
    text = kept[0].read_text()
    assert "kept-app" in text
    assert "sdk-app" in text
    assert CLIENT not in text  # tokens by digest only
    assert sdk_token not in text

    edge.start(
        "--upstream", upstream.url + "/api", "--upstream-token", CLIENT, "--interval", "0.2", *args
    )
    assert not list(edge.data_dir.glob("edge-usage-*.json"))  # claimed by the new start
    assert edge.ready()["usageHeld"] == 2
    upstream.start()
    # The --upstream-token's report goes as soon as the upstream answers; the SDK token's
    # waits until the edge knows its secret again: the SDK's next request.
    assert _yes(upstream, "checkout", 4) == 4
    assert edge.ready()["usageHeld"] == 1
    assert get(edge.url + "/api/client/features", sdk_token)[0] == 200
    assert _yes(upstream, "checkout", 13) == 13
    wait_for(lambda: edge.ready()["usageHeld"] == 0)


def test_past_its_bound_usage_gets_503_counted_in_ready_and_metrics_with_lag_age_and_requests(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    frontend = upstream.frontend_token()
    edge = _edge(tmp_path, upstream, "--max-held-usage", "3", "--metrics-interval", "0.3")
    edges.append(edge)
    label = _label(CLIENT, "default:development")
    for _ in range(2):
        assert get(edge.url + "/api/frontend?userId=1", frontend)[0] == 200
    seen = edge.metrics()
    assert seen["flagcore_edge_upstream_up"] == 1
    assert 0 <= seen["flagcore_edge_upstream_lag_seconds"] < 5
    assert 0 <= seen[f'flagcore_edge_cache_age_seconds{{token="{label}"}}'] < 5
    requests = f'flagcore_edge_token_requests_total{{token="{label}",kind="client"}}'
    assert seen[requests] == 0  # the edge's own polls are not an SDK's requests
    browser = _label(frontend, "default:development")
    assert seen[f'flagcore_edge_token_requests_total{{token="{browser}",kind="frontend"}}'] == 2

    upstream.stop()
    wait_for(lambda: edge.ready()["upstream"] == "unreachable")
    answers = [
        send(edge.url + "/api/client/metrics", CLIENT, _report("bound-app", "checkout", 10 + n))
        for n in range(5)
    ]
    assert [status for status, _body, _headers in answers] == [202, 202, 202, 503, 503]
    refused = answers[3]
    assert refused[1]["name"] == "ServiceUnavailable" or refused[1]["message"]
    assert int(refused[2]["Retry-After"]) >= 1
    ready = edge.ready()
    assert (ready["usageHeld"], ready["usageDropped"]) == (3, 2)
    for _ in range(3):
        assert get(edge.url + "/api/client/features", CLIENT, SPEC)[0] == 200

    # While the upstream is away: the lag and the data's age grow; 8 SDK requests counted.
    wait_for(lambda: edge.metrics()["flagcore_edge_upstream_lag_seconds"] > 1.0)
    seen = edge.metrics()
    assert seen["flagcore_edge_upstream_up"] == 0
    assert seen[f'flagcore_edge_cache_age_seconds{{token="{label}"}}'] > 1.0
    assert seen[requests] == 8
    assert seen["flagcore_edge_usage_held"] == 3
    assert seen["flagcore_edge_usage_dropped_total"] == 2

    upstream.start()
    wait_for(lambda: edge.ready()["usageHeld"] == 0)
    assert _yes(upstream, "checkout", 33) == 10 + 11 + 12  # the three held, not the two refused
    assert edge.metrics()["flagcore_edge_upstream_lag_seconds"] < 5


def _bulk(environment: str = "development", **row: Any) -> dict[str, Any]:
    return {
        "applications": [
            {
                "appName": "downstream-app",
                "instanceId": "downstream-1",
                "environment": environment,
                "interval": 15,
                "started": _now(),
                "strategies": ["default"],
                "sdkVersion": "unleash-client-node:6.1.0",
                "connectVia": [{"appName": "unleash-edge", "instanceId": "edge-pod-1"}],
                "platformName": None,
            }
        ],
        "metrics": [
            {
                "featureName": "checkout",
                "appName": "downstream-app",
                "environment": environment,
                "timestamp": _now(),
                "yes": 5,
                "no": 2,
                "variants": {"blue": 3},
                "sdkVersion": None,
                **row,
            },
            {
                "featureName": "search",
                "appName": "downstream-app",
                "environment": environment,
                "timestamp": _now(),
                "yes": 1,
                "no": 0,
                "variants": {},
            },
        ],
    }


def _details(answer: tuple[int, Any, dict[str, str]]) -> tuple[int, list[str]]:
    status, body, _headers = answer
    return status, [detail["path"] for detail in body["details"]]


def test_a_downstream_edges_bulk_post_is_read_strictly_and_reaches_the_upstream_through_a_chain(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    upstream.add_flag("search")
    first = _edge(tmp_path, upstream, "--metrics-interval", "0.3")
    edges.append(first)
    bulk = first.url + "/api/client/metrics/bulk"

    assert _details(send(bulk, CLIENT, {"applications": []})) == (400, ["$.metrics"])
    assert _details(send(bulk, CLIENT, _bulk(yes="5"))) == (400, ["$.metrics[0].yes"])
    assert _details(send(bulk, CLIENT, _bulk(yes=-1))) == (400, ["$.metrics[0].yes"])
    assert _details(send(bulk, CLIENT, _bulk(colour=1))) == (400, ["$.metrics[0].colour"])
    assert _details(send(bulk, CLIENT, _bulk("production"))) == (
        400,
        ["$.applications[0].environment"],
    )
    assert _details(send(bulk, CLIENT, {**_bulk(), "extra": []})) == (400, ["$.extra"])
    row = {"featureName": "s", "appName": "a", "environment": "development"}
    too_many = {"applications": [], "metrics": [row] * 10_001}
    assert _details(send(bulk, CLIENT, too_many)) == (400, ["$.metrics"])
    assert send(bulk, None, _bulk())[0] == 401
    assert first.ready()["usageHeld"] == 0  # nothing refused was kept

    # A second edge in front of the first: an SDK's report there goes to the first as a
    # bulk post, and from it (flagcore has no bulk path) to the upstream report by report.
    second = EdgeProcess(tmp_path, "second").start(
        "--upstream",
        first.url,
        "--upstream-token",
        CLIENT,
        "--interval",
        "0.2",
        "--metrics-interval",
        "0.3",
    )
    edges.append(second)
    wait_for(lambda: second.ready()["status"] == 200)
    assert post(second.url + "/api/client/register", CLIENT, _registration("chained-app")) == 202
    assert (
        post(second.url + "/api/client/metrics", CLIENT, _report("chained-app", "search", 6)) == 202
    )
    assert send(bulk, CLIENT, _bulk())[0] == 202  # a downstream Unleash Edge's post

    assert _yes(upstream, "checkout", 5) == 5
    assert _yes(upstream, "search", 7) == 7  # 1 from the bulk post, 6 through the chain
    wait_for(lambda: {"downstream-app", "chained-app"} <= _apps(upstream))
    variants = _at_upstream(
        upstream, lambda s: [row.variants for row in s.metrics.flag_metrics("checkout")]
    )
    assert {"blue": 3} in [dict(v) for v in variants]
    wait_for(lambda: second.metrics()["flagcore_edge_usage_bulk_posts_total"] >= 1)
    assert second.metrics()["flagcore_edge_usage_refused_total"] == 0
    assert first.metrics()["flagcore_edge_usage_refused_total"] == 0


def _validate(edge: EdgeProcess, body: Any) -> tuple[int, Any]:
    status, answer, _headers = send(edge.url + "/edge/validate", None, body)
    return status, answer


def test_edge_validate_answers_which_tokens_the_upstream_accepts_with_their_scope(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    everywhere = upstream.client_token("everywhere", ["*"])
    frontend = upstream.frontend_token()
    unknown = "default:development.unknown-to-the-upstream"
    admin = "*:*.edge-admin-secret"
    edge = _edge(tmp_path, upstream)
    edges.append(edge)

    status, answer = _validate(edge, {"tokens": [CLIENT, everywhere, frontend, unknown, admin]})
    assert status == 200
    assert answer == {
        "tokens": [
            {
                "token": CLIENT,
                "type": "client",
                "projects": ["default"],
                "environment": "development",
            },
            {
                "token": everywhere,
                "type": "client",
                "projects": ["*"],
                "environment": "development",
            },
            {
                "token": frontend,
                "type": "frontend",
                "projects": ["default"],
                "environment": "development",
            },
        ]
    }
    # The unknown token was asked upstream once: asking again is answered from memory.
    assert _validate(edge, {"tokens": [unknown, unknown]}) == (200, {"tokens": []})
    assert upstream.requests_logged(r'"GET /api/client/features" 401') == 1

    assert _details(send(edge.url + "/edge/validate", None, {"tokens": [1]})) == (
        400,
        ["$.tokens[0]"],
    )
    assert _details(send(edge.url + "/edge/validate", None, {})) == (400, ["$.tokens"])
    assert _details(send(edge.url + "/edge/validate", None, {"tokens": "x"})) == (400, ["$.tokens"])
    assert _details(send(edge.url + "/edge/validate", None, {"tokens": [], "x": 1})) == (
        400,
        ["$.x"],
    )
    assert _details(send(edge.url + "/edge/validate", None, {"tokens": ["a"] * 101})) == (
        400,
        ["$.tokens"],
    )

    # The upstream away: known tokens are still answered; a new one cannot be checked (503,
    # so a downstream edge asks again rather than taking it as refused).
    upstream.stop()
    wait_for(lambda: edge.ready()["upstream"] == "unreachable")
    assert _validate(edge, {"tokens": [everywhere]})[1]["tokens"][0]["token"] == everywhere
    status, answer, headers = send(
        edge.url + "/edge/validate", None, {"tokens": ["default:development.brand-new"]}
    )
    assert status == 503
    assert "Retry-After" in headers


def test_settings_come_from_flagcore_edge_variables_and_a_flag_wins(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    env = {
        "FLAGCORE_EDGE_UPSTREAM": upstream.url,  # the server's URL: /api is added
        "FLAGCORE_EDGE_UPSTREAM_TOKENS": CLIENT,
        "FLAGCORE_EDGE_INTERVAL": "not a number",  # overridden by --interval below
        "FLAGCORE_EDGE_MAX_HELD_USAGE": "1",
        "FLAGCORE_EDGE_METRICS_INTERVAL": "3600",
        "FLAGCORE_EDGE_UPSTREAM_STREAMING": "off",
    }
    edge = EdgeProcess(tmp_path).start("--interval", "0.2", env=env)
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    features = json.loads(get(edge.url + "/api/client/features", CLIENT, SPEC)[1])["features"]
    assert [flag["name"] for flag in features] == ["checkout"]
    report = _report("env-app", "checkout", 1)
    assert post(edge.url + "/api/client/metrics", CLIENT, report) == 202
    assert post(edge.url + "/api/client/metrics", CLIENT, report) == 503  # the bound of 1


def _refusal(env: dict[str, str], *args: str) -> str:
    """What ``flagcore edge`` says of these settings without starting (read in-process)."""
    arguments = build_parser().parse_args(["edge", *args])
    try:
        edge_command.edge_settings(arguments, env)
    except ValueError as error:
        return str(error)
    raise AssertionError("accepted")


def test_a_wrong_variable_stops_the_start_with_its_name(tmp_path: Path) -> None:
    env = {"FLAGCORE_EDGE_UPSTREAM": "http://127.0.0.1:9", "FLAGCORE_EDGE_UPSTREAM_TOKENS": CLIENT}
    code, said = EdgeProcess(tmp_path).fails({**env, "FLAGCORE_EDGE_METRICS_INTERVAL": "soon"})
    assert code == 2, said
    assert "FLAGCORE_EDGE_METRICS_INTERVAL must be a number, not 'soon'" in said
    for name, value, words in (
        ("FLAGCORE_EDGE_OFFLINE", "maybe", "FLAGCORE_EDGE_OFFLINE must be on or off"),
        ("FLAGCORE_EDGE_LOG_FORMAT", "xml", "FLAGCORE_EDGE_LOG_FORMAT must be one of text, json"),
        ("FLAGCORE_EDGE_PORT", "70000", "--port must be from 0 to 65535"),
        ("FLAGCORE_EDGE_RELOAD_INTERVAL", "5", "--reload-interval is for --offline"),
    ):
        assert words in _refusal({**env, name: value}), name
    assert "--upstream URL" in _refusal({})
    # The flag wins: a wrong variable under a given flag is never read.
    assert "--interval" in _refusal({**env, "FLAGCORE_EDGE_INTERVAL": "x"}, "--interval", "0")
