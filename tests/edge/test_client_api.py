"""SDKs get the same client-features answers through the edge as from the upstream, and
an unknown token is refused without the upstream being asked each time."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.edge.processes import CLIENT, SPEC, EdgeProcess, UpstreamServer, get, wait_for


def _edge(tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]) -> EdgeProcess:
    edge = EdgeProcess(tmp_path).follows(upstream, CLIENT)
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    return edge


def _without_meta(body: bytes) -> dict[str, object]:
    payload = json.loads(body)
    payload.pop("meta", None)
    return dict(payload)


def test_a_format_2_poll_gets_the_upstreams_bytes_and_etag_and_then_a_304(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout", rollout=40)
    upstream.add_flag("search")
    edge = _edge(tmp_path, upstream, edges)
    at_upstream = get(upstream.url + "/api/client/features", CLIENT, SPEC)
    at_edge = get(edge.url + "/api/client/features", CLIENT, SPEC)
    assert at_edge[0] == 200
    assert at_edge[1] == at_upstream[1]
    assert at_edge[2]["ETag"] == at_upstream[2]["ETag"]
    again = get(
        edge.url + "/api/client/features", CLIENT, {**SPEC, "If-None-Match": at_edge[2]["ETag"]}
    )
    assert again[0] == 304


def test_format_1_and_the_filters_answer_what_the_upstream_answers(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.admin(
        "POST",
        "/api/admin/segments",
        {
            "name": "testers",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["7"]}],
        },
    )
    upstream.add_flag("checkout")
    upstream.add_flag("check-in")
    upstream.add_flag("search")
    edge = _edge(tmp_path, upstream, edges)
    for query, headers in [
        ("", {}),  # format 1: segments inlined, legacy keys
        ("?namePrefix=check", SPEC),
        ("?namePrefix=check", {}),
        ("?project=default", SPEC),
        ("?project=nothing-here", SPEC),
    ]:
        path = "/api/client/features" + query
        status, body, answer_headers = get(edge.url + path, CLIENT, headers)
        expected = get(upstream.url + path, CLIENT, headers)
        assert status == 200, body
        if not query:  # the upstream's own answer for an SDK naming no spec, byte for byte
            assert body == expected[1]
        assert _without_meta(body) == _without_meta(expected[1]), query
        etag = answer_headers["ETag"]
        assert get(edge.url + path, CLIENT, {**headers, "If-None-Match": etag})[0] == 304


def test_one_flag_is_answered_as_by_the_upstream(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    edge = _edge(tmp_path, upstream, edges)
    for path in ["/api/client/features/checkout", "/api/client/features/missing"]:
        at_edge = get(edge.url + path, CLIENT)
        at_upstream = get(upstream.url + path, CLIENT)
        assert at_edge[0] == at_upstream[0]
        assert json.loads(at_edge[1]) == json.loads(at_upstream[1])


def test_an_sdk_token_is_checked_upstream_once_and_gets_its_own_scope(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.admin("POST", "/api/admin/projects", {"id": "web", "name": "Web"})
    upstream.admin("POST", "/api/admin/projects/web/features", {"name": "web-flag"})
    upstream.add_flag("checkout")
    web = upstream.client_token("web-sdk", ["web"])
    edge = _edge(tmp_path, upstream, edges)
    for _ in range(5):
        status, body, _headers = get(edge.url + "/api/client/features", web, SPEC)
        assert status == 200
        assert [f["name"] for f in json.loads(body)["features"]] == ["web-flag"]
    assert body == get(upstream.url + "/api/client/features", web, SPEC)[1]
    # The check is the edge's first fetch with it; later requests are answered from memory.
    logged = upstream.requests_logged(r'"GET /api/client/features" 200')
    assert get(edge.url + "/api/client/features", web, SPEC)[0] == 200
    assert upstream.requests_logged(r'"GET /api/client/features" 200') == logged


def test_an_unknown_token_is_refused_without_asking_the_upstream_each_time(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    edge = _edge(tmp_path, upstream, edges)
    made_up = "default:development.not-a-token-anyone-made"
    for _ in range(20):
        status, body, _headers = get(edge.url + "/api/client/features", made_up, SPEC)
        assert status == 401
        assert set(json.loads(body)) == {"name", "message", "details"}
    assert get(edge.url + "/api/client/features", None)[0] == 401
    assert upstream.requests_logged(r'"GET /api/client/features" 401') == 1


def test_a_change_arrives_through_the_upstreams_stream_long_before_the_next_poll(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    edge = EdgeProcess(tmp_path).follows(upstream, CLIENT, interval="3600")
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    # Changed before or after the stream is up: its first event triggers a poll either way.
    upstream.switch("checkout", False)
    expected = get(upstream.url + "/api/client/features", CLIENT, SPEC)[1]
    wait_for(lambda: get(edge.url + "/api/client/features", CLIENT, SPEC)[1] == expected)


def test_with_upstream_streaming_off_the_edge_polls_only(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    edge = EdgeProcess(tmp_path).start(
        "--upstream",
        upstream.url + "/api",
        "--upstream-token",
        CLIENT,
        "--interval",
        "0.2",
        "--no-upstream-streaming",
    )
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    upstream.switch("checkout", False)
    expected = get(upstream.url + "/api/client/features", CLIENT, SPEC)[1]
    wait_for(lambda: get(edge.url + "/api/client/features", CLIENT, SPEC)[1] == expected)
    edge.stop()  # a stream is logged when it ends
    assert upstream.requests_logged(r"/api/client/streaming") == 0


def test_bad_sdk_bodies_get_the_servers_error_shape_and_are_not_forwarded(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    edge = _edge(tmp_path, upstream, edges)
    cases = [
        ("text/plain", b"{}", 415, "ContentTypeError"),
        ("application/json", b"{not json", 400, "BadDataError"),
        ("application/json", b"[]", 400, "BadDataError"),
        ("application/json", b'{"appName": 5, "bucket": {}}', 400, "BadDataError"),
        ("application/json", b'{"a": "' + b"x" * 2_000_000 + b'"}', 413, "ContentTooLarge"),
    ]
    for content_type, body, status, name in cases:
        request = urllib.request.Request(
            edge.url + "/api/client/metrics",
            body,
            {"Authorization": CLIENT, "Content-Type": content_type},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answered, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            answered, text = error.code, error.read()
        assert answered == status, (body[:40], text[:200])
        error_body = json.loads(text)
        assert error_body["name"] == name
        assert set(error_body) == {"name", "message", "details"}
    assert edge.ready()["usageHeld"] == 0
    missing = get(edge.url + "/api/nothing-here", CLIENT)
    assert missing[0] == 404
    assert json.loads(missing[1])["name"] == "NotFoundError"


def test_workers_share_one_port_and_each_answers_as_the_upstream(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    edge = EdgeProcess(tmp_path).start(
        "--upstream", upstream.url + "/api", "--upstream-token", CLIENT, "--workers", "2"
    )
    edges.append(edge)
    expected = get(upstream.url + "/api/client/features", CLIENT, SPEC)[1]
    # Each request is a new connection, spread by the kernel over both workers.
    for _ in range(20):
        assert get(edge.url + "/api/client/features", CLIENT, SPEC)[1] == expected
    upstream.switch("checkout", False)
    changed = get(upstream.url + "/api/client/features", CLIENT, SPEC)[1]
    wait_for(
        lambda: all(
            get(edge.url + "/api/client/features", CLIENT, SPEC)[1] == changed for _ in range(10)
        )
    )


def test_a_report_sent_in_chunks_is_read_whole(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    edge = _edge(tmp_path, upstream, edges)
    report = json.dumps(
        {
            "appName": "chunked",
            "bucket": {
                "start": "2026-11-25T08:00:00Z",
                "stop": "2026-11-25T08:01:00Z",
                "toggles": {},
            },
        }
    ).encode()
    host, port = edge.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /api/client/metrics HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\n"
            + f"Authorization: {CLIENT}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        half = len(report) // 2
        for part in (report[:half], report[half:]):
            sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            time.sleep(0.2)  # the second half arrives after the first was read
        sock.sendall(b"0\r\n\r\n")
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    assert status_line == b"HTTP/1.1 202 Accepted", status_line
