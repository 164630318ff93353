"""`flagcore edge` in front of a real Unleash 8.2: the documented longer run of issue 33.

Run by hand: ``.venv/bin/python benchmarks/edge_unleash.py [--flags 50] [--seconds 4]
[--rounds 3] [--changes 20] [--no-load]`` (about 2 minutes with the defaults); the
change-propagation figures in docs/edge.md: ``--changes 100 --no-load`` (about 6 minutes;
``--no-load`` skips the wrk runs, so wrk is not needed). Needs node and npm (the first
run installs ``unleash-server@8.2.0``, see ``benchmarks/unleash_peer.py``) and ``wrk``.
Everything runs on 127.0.0.1.

1. Starts Unleash 8.2 (over a private PostgreSQL) and seeds ``--flags`` flags (constraints,
   strategy variants with payloads, some off), then `flagcore edge` following it with the
   client token.
2. Checks what SDKs see: the format-2 payload and its ETag byte for byte; format 1 (an
   SDK that sends no spec) flag for flag; the Frontend API's toggles for 40 users (edge
   evaluates with flagcore's engine, Unleash with its own); an unknown token refused;
   an SDK metrics report accepted upstream through the edge.
3. A change in Unleash until an SDK polling Unleash itself gets it (the baseline: Unleash
   answers SDKs from a cache it refreshes), then until an SDK polling the edge gets it
   (Unleash 8.2 OSS does not stream, so the edge polls every second here), ``--changes``
   times each: median, p90, p99 (nearest rank: of 100 changes, the 99th slowest) and max.
4. ``wrk`` 200s and 304s on /api/client/features: edge beside Unleash.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from edge_bench import _start_edge_for  # the sibling benchmarks, found through sys.path
from http_bench import _free_port, _request, _stop, _wait_up, _wrk
from unleash_peer import admin_request, seed_flags, start_unleash, wait_for_frontend

SPEC = {"Unleash-Client-Spec": "5.2.0"}


def _get(url: str, headers: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def _toggles(base: str, token: str) -> list[object]:
    seen = []
    for user in range(40):
        query = f"userId=u{user}&properties%5Bplan%5D=pro"
        body = json.loads(_get(f"{base}/api/frontend?{query}", {"Authorization": token})[1])
        seen.append(
            sorted(
                (t["name"], t["enabled"], t["variant"]["name"], t["variant"]["enabled"])
                for t in body["toggles"]
            )
        )
    return seen


def _check(unleash: str, edge: str, client: str, frontend: str) -> None:
    sdk = {"Authorization": client, **SPEC}
    at_unleash = _get(unleash + "/api/client/features", sdk)
    at_edge = _get(edge + "/api/client/features", sdk)
    same = at_edge[1] == at_unleash[1] and at_edge[2]["ETag"] == at_unleash[2]["ETag"]
    print(f"format 2, the upstream's bytes and ETag: {'same' if same else 'DIFFERENT'}")
    old = {"Authorization": client}
    by_name = [
        {f["name"]: f for f in json.loads(_get(url + "/api/client/features", old)[1])["features"]}
        for url in (unleash, edge)
    ]
    differing = [name for name in by_name[0] if by_name[0][name] != by_name[1].get(name)]
    print(
        f"format 1, flag for flag: {len(by_name[0]) - len(differing)} of {len(by_name[0])} "
        f"the same{'' if not differing else '; differing: ' + ', '.join(differing[:5])}"
    )
    toggles = _toggles(unleash, frontend) == _toggles(edge, frontend)
    print(f"Frontend API, 40 users: {'same toggles' if toggles else 'DIFFERENT'}")
    refused = _get(edge + "/api/client/features", {"Authorization": "default:development.nope"})
    print(f"unknown token at the edge: {refused[0]}")


def _post(url: str, token: str, body: object) -> int:
    request = urllib.request.Request(
        url,
        json.dumps(body).encode(),
        {"Authorization": token, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(response.status)


def _usage(edge: str, client: str) -> None:
    """A registration and a metrics report through the edge: how Unleash took them."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    registration = {
        "appName": "edge-check",
        "instanceId": "edge-check-1",
        "sdkVersion": "unleash-client-python:6.0.0",
        "strategies": ["default", "flexibleRollout"],
        "started": now,
        "interval": 10000,
    }
    report = {
        "appName": "edge-check",
        "instanceId": "edge-check-1",
        "bucket": {
            "start": now,
            "stop": now,
            "toggles": {"bench.flag-001": {"yes": 3, "no": 1, "variants": {"blue": 2}}},
        },
    }
    statuses = (
        _post(edge + "/api/client/register", client, registration),
        _post(edge + "/api/client/metrics", client, report),
    )
    deadline = time.monotonic() + 30
    while True:
        text = _get(edge + "/internal-backstage/prometheus", {})[1].decode()
        counts = dict(
            line.split(" ", 1)
            for line in text.splitlines()
            if line.startswith("flagcore_edge_usage")
        )
        if counts["flagcore_edge_usage_held"] == "0" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(
        f"usage through the edge: answered {statuses}; sent to Unleash: "
        f"{counts['flagcore_edge_usage_forwarded_total']} taken, "
        f"{counts.get('flagcore_edge_usage_refused_total', '?')} refused, "
        f"{counts['flagcore_edge_usage_bulk_posts_total']} bulk posts, "
        f"held {counts['flagcore_edge_usage_held']}"
    )


def _percentile(sorted_values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (p99 of 100 values is the 99th)."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _propagation(
    unleash: str, admin: str, edge: str, client: str, changes: int, where: str, state: bool
) -> bool:
    """``changes`` switches of one flag in Unleash (now on if ``state``), each timed from
    Unleash's answer to the admin write until an SDK polling ``edge`` (the edge, or Unleash
    itself for the baseline) every 10 ms gets a payload with it; the flag's last state."""
    sdk = {"Authorization": client, **SPEC}
    env = "/api/admin/projects/default/features/bench.flag-000/environments/development"

    def enabled() -> bool:
        body = _get(edge + "/api/client/features", sdk)[1]
        flag = next(f for f in json.loads(body)["features"] if f["name"] == "bench.flag-000")
        return bool(flag["enabled"])

    moments = random.Random(changes)
    took = []
    for _index in range(changes):
        on = state = not state
        while enabled() is on:  # the last change reaches this SDK first
            time.sleep(0.01)
        # At a moment of its own: not in step with the polls and Unleash's cache refresh.
        time.sleep(moments.uniform(0.0, 1.0))
        admin_request(unleash, admin, "POST", f"{env}/{'on' if on else 'off'}")
        started = time.perf_counter()
        while enabled() is not on:
            time.sleep(0.01)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    print(
        f"a change in Unleash seen at {where} ({changes} changes): median "
        f"{statistics.median(took):.0f} ms, p90 {_percentile(took, 0.9):.0f} ms, p99 "
        f"{_percentile(took, 0.99):.0f} ms, max {took[-1]:.0f} ms"
    )
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--no-load", action="store_true", help="skip the wrk runs (no wrk needed)")
    args = parser.parse_args()
    if shutil.which("wrk") is None and not args.no_load:
        sys.exit("wrk is needed (apt-get install wrk), or run with --no-load")
    unleash, admin, frontend, client, stop_unleash = start_unleash()
    folder = Path(tempfile.mkdtemp())
    edge_process: subprocess.Popen[bytes] | None = None
    try:
        names = seed_flags(unleash, admin, args.flags)
        wait_for_frontend(unleash, frontend, names)
        port = _free_port()
        edge = f"http://127.0.0.1:{port}"
        edge_process = _start_edge_for(
            folder, unleash, client, port, "--interval", "1", "--metrics-interval", "1"
        )
        _wait_up(edge + "/ready")
        _check(unleash, edge, client, frontend)
        _usage(edge, client)
        state = _propagation(unleash, admin, unleash, client, args.changes, "Unleash", True)
        _propagation(unleash, admin, edge, client, args.changes, "the edge (--interval 1)", state)
        if args.no_load:
            return
        sdk = {"Authorization": client, **SPEC}
        etag = _request(edge + "/api/client/features", headers=sdk)[1]["ETag"]
        pids = {"unleash": stop_unleash.pids[0], "edge": edge_process.pid}
        urls = {"unleash": unleash, "edge": edge}
        rounds: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _round in range(args.rounds):
            for label, extra in (("200", {}), ("304", {"If-None-Match": etag})):
                for name in ("unleash", "edge"):
                    url = urls[name] + "/api/client/features"
                    run = _wrk(url, {**sdk, **extra}, args.seconds, args.connections, pids[name])
                    rounds.setdefault((name, label), []).append(run)
        print(
            f"\n{'server':8} {'resp':5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}"
        )
        for (name, label), runs in sorted(rounds.items(), key=lambda item: item[0][1]):
            rps, p50, p99, cpu = (
                statistics.median(run[key] for run in runs) for key in ("rps", "p50", "p99", "cpu")
            )
            print(f"{name:8} {label:5} {rps:9.0f} {p50:8.2f} {p99:8.2f} {cpu:11.1f}")
    finally:
        _stop(edge_process)
        stop_unleash()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
