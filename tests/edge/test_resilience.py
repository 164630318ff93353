"""The upstream stopped and started again, and the edge restarted while it is away: SDKs
polling the edge get every answer (0 failures), /ready and the metrics say the upstream
is away, and a change made once it is back reaches them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.edge.processes import CLIENT, SPEC, EdgeProcess, Poller, UpstreamServer, get, wait_for


def test_sdks_are_served_through_upstream_outages_and_an_edge_restart(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    sdk_token = upstream.client_token("sdk", ["default"])  # checked by the edge on first use
    edge = EdgeProcess(tmp_path).follows(upstream, CLIENT)
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    follower = Poller(edge, CLIENT)
    sdk = Poller(edge, sdk_token)
    try:
        wait_for(lambda: follower.names == ["checkout"] and sdk.names == ["checkout"])
        upstream.stop()
        wait_for(lambda: edge.ready()["upstream"] == "unreachable")
        metrics = get(edge.url + "/internal-backstage/prometheus", None)[1].decode()
        assert "flagcore_edge_upstream_up 0" in metrics
        assert "flagcore_edge_cache_age_seconds{" in metrics
        served = sum(follower.statuses.values()) + sum(sdk.statuses.values())
        wait_for(lambda: sum(follower.statuses.values()) + sum(sdk.statuses.values()) > served + 20)

        # The edge restarts while the upstream is away: it serves what its snapshot kept.
        follower.pause()
        sdk.pause()
        edge.stop()
        edge.start(*_same_args(upstream))
        assert edge.ready()["status"] == 200
        assert edge.ready()["upstream"] in ("unreachable", "unknown")
        follower.resume()
        sdk.resume()
        served = sum(follower.statuses.values()) + sum(sdk.statuses.values())
        wait_for(lambda: sum(follower.statuses.values()) + sum(sdk.statuses.values()) > served + 20)

        upstream.start()  # the same port and database
        wait_for(lambda: edge.ready()["upstream"] == "reachable")
        upstream.add_flag("search")
        wait_for(lambda: follower.names == ["checkout", "search"])
        wait_for(lambda: sdk.names == ["checkout", "search"])
    finally:
        follower.close()
        sdk.close()
    assert set(follower.statuses) <= {200, 304}, follower.statuses
    assert set(sdk.statuses) <= {200, 304}, sdk.statuses
    assert follower.statuses[304] > 0


def _same_args(upstream: UpstreamServer) -> list[str]:
    return [
        "--upstream",
        upstream.url + "/api",
        "--upstream-token",
        CLIENT,
        "--interval",
        "0.2",
        "--metrics-interval",
        "0.3",
    ]


def test_json_logs_say_when_the_upstream_goes_away_and_comes_back(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    edge = EdgeProcess(tmp_path).start(*_same_args(upstream), "--log-format", "json")
    edges.append(edge)
    wait_for(lambda: edge.ready()["upstream"] == "reachable")
    upstream.stop()
    wait_for(lambda: edge.ready()["upstream"] == "unreachable")
    upstream.start()
    wait_for(lambda: edge.ready()["upstream"] == "reachable")
    edge.stop()
    records = [json.loads(line) for line in edge.log.read_text().splitlines() if line.strip()]
    messages = [record["message"] for record in records]
    assert any("the upstream is unreachable" in message for message in messages)
    assert any("the upstream is reachable again" in message for message in messages)
    assert CLIENT not in edge.log.read_text()


def test_both_formats_are_served_as_the_upstream_wrote_them_after_a_restart_while_it_is_away(
    tmp_path: Path, upstream: UpstreamServer, edges: list[EdgeProcess]
) -> None:
    upstream.add_flag("checkout")
    edge = EdgeProcess(tmp_path).start(*_same_args(upstream))
    edges.append(edge)
    wait_for(lambda: edge.ready()["status"] == 200)
    answers = {}
    for name, headers in (("format 2", SPEC), ("no spec", {})):
        answers[name] = get(upstream.url + "/api/client/features", CLIENT, headers)[1]
        assert get(edge.url + "/api/client/features", CLIENT, headers)[1] == answers[name]
    upstream.stop()
    edge.stop()
    edge.start(*_same_args(upstream))
    for name, headers in (("format 2", SPEC), ("no spec", {})):
        assert get(edge.url + "/api/client/features", CLIENT, headers)[1] == answers[name], name
    upstream.start()
