"""Frontend API throughput: 1,000 distinct contexts against 100 flags, GET and POST.

Run by hand: ``.venv/bin/python benchmarks/frontend_bench.py [--seconds 5]
[--connections 16] [--contexts 1000] [--flags 100]``. Everything runs on 127.0.0.1.

1. Starts ``flagcore serve`` (SQLite, a temporary database), seeds ``--flags`` flags (each
   a flexible rollout with a constraint, a third with variants and payloads, a tenth off)
   and creates a frontend token through the tokens API.
2. Sends ``GET /api/frontend?userId=…&properties[plan]=…`` then ``POST /api/frontend``
   with the same contexts, round-robin over ``--contexts`` distinct ones, from
   ``--connections`` concurrent aiohttp connections for ``--seconds`` seconds each. No
   ``If-None-Match``: every answer is evaluated and rendered.
3. Prints req/s, p50 and p99 for each, and the share of the server's time spent in
   evaluation: the same contexts answered in-process by the same `FrontendView`
   (µs per answer) times the measured req/s (the server is one process on one core).

The issue's target is 3x Unleash 8.2's server on the same data, measured side by side.
Unleash (Node + PostgreSQL) is not installed here, so this prints flagcore's numbers
only; to compare, run Unleash 8.2 with ``SDK_API_RATE_LIMIT_PER_MINUTE`` and
``TOKEN_AUTHENTICATION_RATE_LIMIT_PER_MINUTE`` raised (its default limiter caps one IP at
~333 req/s), seed the same flags, and pass ``--peer http://host:4242 --peer-token …``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

ADMIN = "*:*.bench-admin-secret"


def _request(url: str, method: str = "GET", body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": ADMIN, "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server at {url} did not start")


def _seed(base: str, flags: int) -> str:
    features = f"{base}/api/admin/projects/default/features"
    for index in range(flags):
        name = f"bench.flag-{index:03d}"
        _request(features, "POST", {"name": name})
        env = f"{features}/{name}/environments/development"
        _request(
            f"{env}/strategies",
            "POST",
            {
                "name": "flexibleRollout",
                "parameters": {
                    "rollout": str(20 + index % 80),
                    "stickiness": "default",
                    "groupId": name,
                },
                "constraints": [
                    {"contextName": "plan", "operator": "IN", "values": ["free", "pro", "team"]}
                ],
            },
        )
        if index % 3 == 0:
            _request(
                f"{env}/variants",
                "PUT",
                [
                    {
                        "name": "blue",
                        "weight": 500,
                        "weightType": "variable",
                        "stickiness": "default",
                        "payload": {"type": "string", "value": "#00f"},
                    },
                    {
                        "name": "green",
                        "weight": 500,
                        "weightType": "variable",
                        "stickiness": "default",
                        "payload": {"type": "json", "value": '{"a": 1}'},
                    },
                ],
            )
        if index % 10 != 9:
            _request(f"{env}/on", "POST")
    token = _request(
        f"{base}/api/admin/api-tokens",
        "POST",
        {"tokenName": "bench", "type": "frontend", "environment": "development", "projects": ["*"]},
    )
    secret: str = token["secret"]
    return secret


def _contexts(count: int) -> list[dict[str, Any]]:
    plans = ("free", "pro", "team", "enterprise")
    return [
        {"userId": f"user-{i}", "sessionId": f"s-{i}", "properties": {"plan": plans[i % 4]}}
        for i in range(count)
    ]


async def _load(
    base: str,
    token: str,
    contexts: list[dict[str, Any]],
    method: str,
    seconds: float,
    connections: int,
) -> tuple[float, list[float], int]:
    headers = {"Authorization": token}
    queries = [
        f"userId={c['userId']}&sessionId={c['sessionId']}&properties[plan]={c['properties']['plan']}"
        for c in contexts
    ]
    bodies = [json.dumps({"context": c}).encode() for c in contexts]
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker(start: int) -> None:
            nonlocal errors
            i = start
            while time.perf_counter() < deadline:
                i = (i + connections) % len(contexts)
                began = time.perf_counter()
                if method == "GET":
                    response = await session.get(f"{base}/api/frontend?{queries[i]}")
                else:
                    response = await session.post(
                        f"{base}/api/frontend",
                        data=bodies[i],
                        headers={"Content-Type": "application/json"},
                    )
                await response.read()
                latencies.append(time.perf_counter() - began)
                if response.status != 200:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(connections)))
        elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, latencies, errors


def _evaluation_us(db: Path, contexts: list[dict[str, Any]]) -> float:
    """µs to answer one context in-process, with the server's own view of the same data."""
    from flagcore.service import Service
    from flagcore.service.frontend import build_frontend_view
    from flagcore_store_sqlite import SqliteStore

    store = SqliteStore(db)
    try:
        service = Service(store)
        view = build_frontend_view(service, "development", None, store.revision())
        prepared = [
            {**c, "environment": "development", "remoteAddress": "127.0.0.1"} for c in contexts
        ]
        for context in prepared:  # warm: variant texts written once
            view.frontend_body(context)
        rounds = []
        for _ in range(5):
            began = time.perf_counter()
            for context in prepared:
                view.frontend_body(context)
            rounds.append((time.perf_counter() - began) / len(prepared))
        return statistics.median(rounds) * 1e6
    finally:
        store.close()


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--contexts", type=int, default=1000)
    parser.add_argument("--flags", type=int, default=100)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        port = _free_port()
        env = {**os.environ, "FLAGCORE_DB": str(db), "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flagcore_http",
                "serve",
                "--port",
                str(port),
                "--no-access-log",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_up(f"{base}/health")
            token = _seed(base, args.flags)
            contexts = _contexts(args.contexts)
            print(
                f"{args.flags} flags, {len(contexts)} distinct contexts, "
                f"{args.connections} connections, {args.seconds:.0f} s per method"
            )
            rates = {}
            for method in ("GET", "POST"):
                asyncio.run(_load(base, token, contexts, method, 1.0, args.connections))  # warm
                rate, latencies, errors = asyncio.run(
                    _load(base, token, contexts, method, args.seconds, args.connections)
                )
                rates[method] = rate
                p50, p99 = _percentile(latencies, 0.5) * 1e3, _percentile(latencies, 0.99) * 1e3
                print(
                    f"{method:4} {rate:8.0f} req/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms"
                    f"   non-200: {errors}"
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
        evaluation = _evaluation_us(db, contexts)
        print(f"evaluation + rendering in-process: {evaluation:.0f} µs per answer")
        for method, rate in rates.items():
            print(f"{method:4} share of server time in evaluation: {evaluation * rate / 1e6:.0%}")
    print("Unleash 8.2 is not runnable here: no side-by-side ratio (see the docstring).")


if __name__ == "__main__":
    main()
