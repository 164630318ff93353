"""The Frontend API through the edge, an edge with no upstream (offline), and an edge
whose upstream is another edge."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from tests.edge.processes import CLIENT, SPEC, EdgeProcess, UpstreamServer, get, post, wait_for

OFFLINE = "default:development.offline-client-secret"
OFFLINE_FRONTEND = "default:development.offline-frontend-secret"


def _flags(upstream: UpstreamServer) -> None:
    upstream.add_flag("checkout", rollout=50)
    upstream.add_flag("search")
    upstream.add_flag("dark", on=False)


def test_the_frontend_api_answers_through_the_edge_as_at_the_upstream(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    _flags(upstream)
    frontend = upstream.frontend_token()
    edge = EdgeProcess(tmp_path).follows(upstream, CLIENT)
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    for user in ["1", "2", "3", "4"]:
        path = f"/api/frontend?userId={user}&properties[plan]=pro"
        at_edge = get(edge.url + path, frontend)
        at_upstream = get(upstream.url + path, frontend)
        assert at_edge[0] == 200
        assert at_edge[1] == at_upstream[1]
        assert at_edge[2]["ETag"] == at_upstream[2]["ETag"]
        assert get(edge.url + path, frontend, {"If-None-Match": at_edge[2]["ETag"]})[0] == 304
    # A client token is no frontend token, at the edge as upstream.
    assert (
        get(edge.url + "/api/frontend", CLIENT)[0] == get(upstream.url + "/api/frontend", CLIENT)[0]
    )
    bad = get(edge.url + "/api/frontend?userId=1&userId=2", frontend)
    assert bad[0] == 400
    assert json.loads(bad[1])["details"][0]["path"] == "/query/userId"
    metrics = {
        "appName": "site",
        "bucket": {"start": "2026-11-25T08:00:00Z", "stop": "2026-11-25T08:01:00Z", "toggles": {}},
    }
    assert post(edge.url + "/api/frontend/client/metrics", frontend, metrics) == 200
    upstream.switch("search", False)
    wait_for(lambda: b"search" not in get(edge.url + "/api/frontend?userId=1", frontend)[1])


def test_offline_mode_serves_a_client_features_file_to_its_tokens_only(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    _flags(upstream)
    status, body, _headers = get(upstream.url + "/api/client/features", CLIENT, SPEC)
    bootstrap = tmp_path / "features.json"
    bootstrap.write_bytes(body)
    upstream.stop()  # offline: no upstream at all
    edge = EdgeProcess(tmp_path).start(
        "--offline",
        "--bootstrap",
        str(bootstrap),
        "--tokens",
        OFFLINE,
        "--frontend-tokens",
        OFFLINE_FRONTEND,
    )
    edges.append(edge)
    ready = edge.ready()
    assert (ready["status"], ready["health"], ready["upstream"]) == (200, "GOOD", "offline")
    status, served, _headers = get(edge.url + "/api/client/features", OFFLINE, SPEC)
    assert status == 200
    assert json.loads(served)["features"] == json.loads(body)["features"]
    assert get(edge.url + "/api/client/features", CLIENT, SPEC)[0] == 401
    toggles = json.loads(get(edge.url + "/api/frontend?userId=1", OFFLINE_FRONTEND)[1])["toggles"]
    assert "search" in [t["name"] for t in toggles]
    assert "dark" not in [t["name"] for t in toggles]
    upstream.start()  # the fixture stops it again


def test_offline_mode_reads_an_unleash_export(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    _flags(upstream)
    exported = upstream.admin(
        "POST", "/api/admin/features-batch/export", {"environment": "development"}
    )
    bootstrap = tmp_path / "export.json"
    bootstrap.write_text(json.dumps(exported))
    edge = EdgeProcess(tmp_path).start(
        "--offline", "--bootstrap", str(bootstrap), "--tokens", OFFLINE
    )
    edges.append(edge)
    served = json.loads(get(edge.url + "/api/client/features", OFFLINE, SPEC)[1])
    expected = json.loads(get(upstream.url + "/api/client/features", CLIENT, SPEC)[1])
    assert [(f["name"], f["enabled"]) for f in served["features"]] == [
        (f["name"], f["enabled"]) for f in expected["features"]
    ]


def test_an_edge_follows_another_edge_and_a_change_reaches_the_last_one(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    _flags(upstream)
    frontend = upstream.frontend_token()
    first = EdgeProcess(tmp_path, "first").follows(upstream, CLIENT)
    edges.append(first)
    wait_for(lambda: first.ready()["status"] == 200)
    # Given the server URL without /api, as Unleash Edge's --upstream-url takes it.
    second = EdgeProcess(tmp_path, "second").start(
        "--upstream", first.url, "--upstream-token", CLIENT, "--interval", "0.2"
    )
    edges.append(second)
    wait_for(lambda: second.ready()["status"] == 200)
    at_upstream = get(upstream.url + "/api/client/features", CLIENT, SPEC)
    assert get(second.url + "/api/client/features", CLIENT, SPEC)[1] == at_upstream[1]
    path = "/api/frontend?userId=3"
    assert get(second.url + path, frontend)[1] == get(upstream.url + path, frontend)[1]
    made_up = "default:development.made-up"
    assert get(second.url + "/api/client/features", made_up)[0] == 401
    upstream.switch("checkout", False)
    wait_for(
        lambda: (
            get(second.url + "/api/client/features", CLIENT, SPEC)[1]
            == get(upstream.url + "/api/client/features", CLIENT, SPEC)[1]
            != at_upstream[1]
        )
    )


def _ofrep(url: str, path: str, token: str, context: dict[str, object]) -> tuple[int, object]:
    request = urllib.request.Request(
        url + path,
        json.dumps({"context": context}).encode(),
        {"X-API-Key": token, "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_ofrep_answers_through_the_edge_as_at_the_upstream_for_both_token_kinds(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    _flags(upstream)
    frontend = upstream.frontend_token()
    edge = EdgeProcess(tmp_path).follows(upstream, CLIENT)
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    for token in (CLIENT, frontend):
        for path, context in [
            ("/ofrep/v1/evaluate/flags", {"targetingKey": "3"}),
            ("/ofrep/v1/evaluate/flags/checkout", {"targetingKey": "4", "plan": 2}),
            ("/ofrep/v1/evaluate/flags/missing", {}),
            ("/ofrep/v1/evaluate/flags", {"targetingKey": ["not", "a", "string"]}),
        ]:
            assert _ofrep(edge.url, path, token, context) == _ofrep(
                upstream.url, path, token, context
            ), (token, path)


def test_tokens_revoked_upstream_are_refused_at_the_edge_after_their_next_check(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    _flags(upstream)
    frontend = upstream.frontend_token()
    sdk = upstream.client_token("sdk", ["default"])
    edge = EdgeProcess(tmp_path).start(
        "--upstream",
        upstream.url,
        "--upstream-token",
        CLIENT,
        "--interval",
        "0.2",
        "--token-ttl",
        "0.5",
    )
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    assert get(edge.url + "/api/frontend?userId=1", frontend)[0] == 200
    assert get(edge.url + "/api/client/features", sdk, SPEC)[0] == 200
    upstream.admin("DELETE", f"/api/admin/api-tokens/{frontend}")
    upstream.admin("DELETE", f"/api/admin/api-tokens/{sdk}")
    # The client token's next poll, the frontend token's next check (--token-ttl) say so.
    wait_for(lambda: get(edge.url + "/api/client/features", sdk, SPEC)[0] == 401)
    wait_for(lambda: get(edge.url + "/api/frontend?userId=1", frontend)[0] == 401)
    assert get(edge.url + "/api/client/features", CLIENT, SPEC)[0] == 200


def _payload(*names: str) -> bytes:
    flags = [
        {"name": name, "enabled": True, "strategies": [{"name": "default"}], "project": "default"}
        for name in names
    ]
    return json.dumps({"version": 2, "features": flags}).encode()


def _served(edge: EdgeProcess) -> list[str]:
    body = json.loads(get(edge.url + "/api/client/features", OFFLINE, SPEC)[1])
    return [flag["name"] for flag in body["features"]]


def _toggled(edge: EdgeProcess) -> list[str]:
    body = json.loads(get(edge.url + "/api/frontend?userId=1", OFFLINE_FRONTEND)[1])
    return [toggle["name"] for toggle in body["toggles"]]


def test_offline_reload_serves_a_changed_file_and_keeps_the_last_good_one_when_it_breaks(
    tmp_path: Path, edges: list[EdgeProcess]
) -> None:
    bootstrap = tmp_path / "features.json"
    bootstrap.write_bytes(_payload("checkout"))
    # Every setting from its FLAGCORE_EDGE_* variable, as Unleash Edge's from its own.
    edge = EdgeProcess(tmp_path).start(
        env={
            "FLAGCORE_EDGE_OFFLINE": "true",
            "FLAGCORE_EDGE_BOOTSTRAP": str(bootstrap),
            "FLAGCORE_EDGE_CLIENT_TOKENS": OFFLINE,
            "FLAGCORE_EDGE_FRONTEND_TOKENS": OFFLINE_FRONTEND,
            "FLAGCORE_EDGE_RELOAD_INTERVAL": "0.1",
        }
    )
    edges.append(edge)
    assert _served(edge) == ["checkout"]
    assert _toggled(edge) == ["checkout"]

    bootstrap.write_bytes(_payload("checkout", "search"))
    wait_for(lambda: _served(edge) == ["checkout", "search"])
    assert _toggled(edge) == ["checkout", "search"]

    bootstrap.write_bytes(b'{"features": [{"name": ')  # cut short, as by a half copy
    wait_for(lambda: "bootstrapError" in edge.ready())
    assert edge.ready()["status"] == 200
    assert _served(edge) == ["checkout", "search"]  # the last good file, still
    assert _toggled(edge) == ["checkout", "search"]
    assert edge.metrics()["flagcore_edge_bootstrap_reload_failures_total"] >= 1
    assert "could not be read again" in edge.log.read_text()

    bootstrap.write_bytes(_payload("banner"))
    wait_for(lambda: _served(edge) == ["banner"])
    assert "bootstrapError" not in edge.ready()
    assert _toggled(edge) == ["banner"]
