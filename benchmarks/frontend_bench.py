"""Frontend API throughput: 1,000 distinct contexts against 100 flags, GET and POST.

Run by hand: ``.venv/bin/python benchmarks/frontend_bench.py [--seconds 3] [--rounds 4]
[--connections 16] [--contexts 1000] [--flags 100] [--peer auto|unleash|none]``. Everything
runs on 127.0.0.1.

1. Starts ``flagcore serve`` (SQLite, a temporary database), seeds ``--flags`` flags (each
   a flexible rollout with a constraint, a third with variants and payloads, a tenth off)
   and creates a frontend token through the tokens API.
2. Sends ``GET /api/frontend?userId=…&properties[plan]=…`` then ``POST /api/frontend``
   with the same contexts, round-robin over ``--contexts`` distinct ones, from
   ``--connections`` concurrent connections for ``--seconds`` seconds each, with ``wrk
   -t2`` and a generated Lua script when wrk is on PATH (Debian's ``wrk``), else aiohttp
   (``--client``): a Python client spends more CPU per request than flagcore's server, so
   on 2 cores it, not the server, sets the pace. No ``If-None-Match``: every answer is
   evaluated and rendered. With wrk, p50/p99 are the median run's.
3. Prints req/s, p50 and p99 for each, the server's CPU time per request, and the share of
   it spent in evaluation: the same contexts answered in-process by the same
   `FrontendView` (CPU µs per answer) over the server's CPU µs per request; the rest is
   HTTP (aiohttp, parsing the context, the ETag).

The issue's target is 3x Unleash 8.2's server on the same data, measured side by side.
With ``--peer auto`` (the default: when ``node`` is on PATH) or ``--peer unleash``, the
benchmark also starts a real Unleash 8.2 (``benchmarks/unleash_peer.py``: npm's
``unleash-server@8.2.0`` over a private PostgreSQL, its per-IP rate limits raised so they
are not what is measured), seeds the SAME flags through the same admin API calls, waits
until Unleash's Frontend API cache shows them, checks that both servers give the same
toggles to a sample of the contexts, then measures the two ALTERNATELY (``--rounds``
rounds; each round runs flagcore then Unleash, or Unleash then flagcore, for GET then
POST) with the same client, and prints both servers' req/s and p99 and the ratio against
the 3x target. Each server's CPU time (user + system, from psutil: flagcore's process;
Unleash's node process plus its PostgreSQL) is read around each measurement too, and
printed per request: on a machine shared with other work, req/s moves with the load while
CPU per request mostly does not. ``--peer none`` measures flagcore alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from unleash_peer import admin_request, seed_flags, start_unleash, wait_for_frontend

ADMIN = "*:*.bench-admin-secret"
TARGET = 3.0


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


def _frontend_token(base: str) -> str:
    token = admin_request(
        base,
        ADMIN,
        "POST",
        "/api/admin/api-tokens",
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


def _query(context: dict[str, Any]) -> str:
    return urllib.parse.urlencode(
        {
            "userId": context["userId"],
            "sessionId": context["sessionId"],
            "properties[plan]": context["properties"]["plan"],
        }
    )


async def _load(
    base: str,
    token: str,
    contexts: list[dict[str, Any]],
    method: str,
    seconds: float,
    connections: int,
) -> tuple[float, list[float], int]:
    headers = {"Authorization": token}
    queries = [_query(c) for c in contexts]
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


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII text is a valid Lua string


def _wrk_script(
    folder: Path, server: int, token: str, contexts: list[dict[str, Any]], method: str
) -> Path:
    """A wrk script sending the contexts round-robin (each wrk thread from its own start),
    with ``token``: one file per server and method."""
    if method == "GET":
        items = [_lua_string("/api/frontend?" + _query(c)) for c in contexts]
        send = "wrk.format('GET', items[n], headers)"
    else:
        items = [_lua_string(json.dumps({"context": c})) for c in contexts]
        send = "wrk.format('POST', '/api/frontend', headers, items[n])"
    script = folder / f"frontend-{server}-{method}.lua"
    script.write_text(
        "local items = {" + ",\n".join(items) + "}\n"
        f"local headers = {{['Authorization'] = {_lua_string(token)},"
        " ['Content-Type'] = 'application/json'}\n"
        "local i = math.random(#items)\n"
        "request = function()\n"
        "  i = i % #items + 1\n"
        "  local n = i\n"
        f"  return {send}\n"
        "end\n"
    )
    return script


def _wrk_load(
    base: str, script: Path, seconds: float, connections: int
) -> tuple[float, float, float, int, int]:
    """wrk -t2: (req/s, p50 s, p99 s, requests, non-2xx/3xx answers)."""
    command = ["wrk", "-t2", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"]
    command += ["-s", str(script), base]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout

    def latency(percent: str) -> float:
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\b", output, re.M)
        assert match, output
        value, unit = float(match.group(1)), match.group(2)
        return value / 1e6 if unit == "us" else value / 1e3 if unit == "ms" else value

    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    done = re.search(r"(\d+) requests in", output)
    assert rate, output
    assert done, output
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = int(bad.group(1)) if bad else 0
    return float(rate.group(1)), latency("50"), latency("99"), int(done.group(1)), errors


def _answers(base: str, token: str, contexts: list[dict[str, Any]]) -> list[list[Any]]:
    """Each context's toggles as (name, variant name), for comparing two servers."""
    answers = []
    for context in contexts:
        request = urllib.request.Request(
            f"{base}/api/frontend?{_query(context)}", headers={"Authorization": token}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            toggles = json.load(response)["toggles"]
        answers.append(sorted([t["name"], t["variant"]["name"]] for t in toggles))
    return answers


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
            began = time.process_time()  # CPU time, comparable with the server's
            for context in prepared:
                view.frontend_body(context)
            rounds.append((time.process_time() - began) / len(prepared))
        return statistics.median(rounds) * 1e6
    finally:
        store.close()


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU so far of these processes and their children (PostgreSQL's
    backends are the postmaster's children)."""
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


class Measured:
    """One server's requests and latencies for one method, summed over rounds."""

    def __init__(self) -> None:
        self.requests = 0
        self.seconds = 0.0
        self.latencies: list[float] = []
        self.errors = 0
        self.cpu = 0.0
        self.wrk_p50s: list[float] = []  # per measurement, when wrk measured
        self.wrk_p99s: list[float] = []

    def add(
        self, rate: float, latencies: list[float], errors: int, seconds: float, cpu: float
    ) -> None:
        self.cpu += cpu
        self.requests += len(latencies)
        self.seconds += len(latencies) / rate if rate else seconds
        self.latencies += latencies
        self.errors += errors

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_per_request_us(self) -> float:
        return self.cpu / self.requests * 1e6 if self.requests else 0.0

    def add_wrk(
        self, rate: float, p50: float, p99: float, requests: int, errors: int, cpu: float
    ) -> None:
        self.cpu += cpu
        self.requests += requests
        self.seconds += requests / rate if rate else 0.0
        self.errors += errors
        self.wrk_p50s.append(p50)
        self.wrk_p99s.append(p99)

    def line(self, server: str, method: str) -> str:
        if self.wrk_p99s:  # wrk gives percentiles per run: the median run's
            p50 = statistics.median(self.wrk_p50s) * 1e3
            p99 = statistics.median(self.wrk_p99s) * 1e3
        else:
            p50 = _percentile(self.latencies, 0.5) * 1e3
            p99 = _percentile(self.latencies, 0.99) * 1e3
        return (
            f"{server:11} {method:4} {self.rate:8.0f} req/s   p50 {p50:7.2f} ms"
            f"   p99 {p99:7.2f} ms   server CPU {self.cpu_per_request_us:5.0f} µs/req"
            f" (busy {self.cpu / self.seconds:4.0%})   non-200: {self.errors}"
        )


def _start_flagcore(db: Path) -> tuple[str, Callable[[], None], int]:
    port = _free_port()
    env = {**os.environ, "FLAGCORE_DB": str(db), "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN}
    server = subprocess.Popen(
        [sys.executable, "-m", "flagcore_http", "serve", "--port", str(port), "--no-access-log"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        server.terminate()
        server.wait(timeout=30)

    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(f"{base}/health")
    except BaseException:
        stop()
        raise
    return base, stop, server.pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per method, server, round")
    parser.add_argument("--rounds", type=int, default=4, help="alternations (side by side)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--contexts", type=int, default=1000)
    parser.add_argument("--flags", type=int, default=100)
    parser.add_argument(
        "--peer",
        choices=("auto", "unleash", "none"),
        default="auto",
        help="also measure a real Unleash 8.2 (auto: when node is on PATH)",
    )
    parser.add_argument(
        "--client",
        choices=("auto", "wrk", "aiohttp"),
        default="auto",
        help="load generator (auto: wrk when on PATH; it needs far less CPU than aiohttp)",
    )
    args = parser.parse_args()
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk"))
    with_peer = args.peer == "unleash" or (args.peer == "auto" and shutil.which("node"))
    print(f"load average: {os.getloadavg()}")
    stops: list[Callable[[], None]] = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        contexts = _contexts(args.contexts)
        try:
            base, stop, pid = _start_flagcore(db)
            stops.append(stop)
            enabled = seed_flags(base, ADMIN, args.flags)
            servers = {"flagcore": (base, _frontend_token(base))}
            pids = {"flagcore": [pid]}
            if with_peer:
                peer, peer_admin, peer_frontend, _client, stop_peer = start_unleash()
                stops.append(stop_peer)
                seed_flags(peer, peer_admin, args.flags)
                waited = wait_for_frontend(peer, peer_frontend, enabled)
                print(f"Unleash 8.2 showed the seeded flags {waited:.1f} s after the last write")
                servers["Unleash 8.2"] = (peer, peer_frontend)
                pids["Unleash 8.2"] = stop_peer.pids
                sample = contexts[:200]
                ours = _answers(base, servers["flagcore"][1], sample)
                theirs = _answers(peer, peer_frontend, sample)
                differing = sum(a != b for a, b in zip(ours, theirs, strict=True))
                print(
                    f"same toggles and variants: {len(sample) - differing}/{len(sample)} contexts"
                )
            print(
                f"{args.flags} flags, {len(contexts)} distinct contexts, "
                f"{args.connections} connections, {args.seconds:.0f} s per method and server, "
                f"{args.rounds} round(s), servers alternating, "
                f"client {'wrk -t2' if use_wrk else 'aiohttp'}"
            )
            scripts = {
                (name, method): _wrk_script(Path(folder), index, token, contexts, method)
                for index, (name, (_url, token)) in enumerate(servers.items())
                for method in ("GET", "POST")
            }
            results = {(name, m): Measured() for name in servers for m in ("GET", "POST")}
            for name, (url, token) in servers.items():  # warm both: JIT, caches, pools
                for method in ("GET", "POST"):
                    if use_wrk:
                        _wrk_load(url, scripts[name, method], 2.0, args.connections)
                    else:
                        asyncio.run(_load(url, token, contexts, method, 2.0, args.connections))
            order = list(servers)
            for round_ in range(args.rounds):
                for method in ("GET", "POST"):
                    for name in order if round_ % 2 == 0 else order[::-1]:
                        url, token = servers[name]
                        cpu_before = _cpu_seconds(pids[name])
                        if use_wrk:
                            rate, p50, p99, requests, errors = _wrk_load(
                                url, scripts[name, method], args.seconds, args.connections
                            )
                            cpu = _cpu_seconds(pids[name]) - cpu_before
                            results[name, method].add_wrk(rate, p50, p99, requests, errors, cpu)
                            continue
                        rate, latencies, errors = asyncio.run(
                            _load(url, token, contexts, method, args.seconds, args.connections)
                        )
                        cpu = _cpu_seconds(pids[name]) - cpu_before
                        results[name, method].add(rate, latencies, errors, args.seconds, cpu)
            for method in ("GET", "POST"):
                for name in servers:
                    print(results[name, method].line(name, method))
                if with_peer:
                    ours, theirs = results["flagcore", method], results["Unleash 8.2", method]
                    ratio = ours.rate / theirs.rate
                    verdict = "meets" if ratio >= TARGET else "MISSES"
                    if ours.errors or theirs.errors:  # errors are quick: no ratio from them
                        verdict = "INVALID: non-200 answers; cannot judge"
                    print(
                        f"{method:4} flagcore / Unleash 8.2: {ratio:.1f}x req/s "
                        f"({verdict} the {TARGET:.0f}x target); "
                        f"{theirs.cpu_per_request_us / ours.cpu_per_request_us:.1f}x less "
                        "server CPU per request"
                    )
        finally:
            for stop in reversed(stops):
                stop()
        evaluation = _evaluation_us(db, contexts)
        print(f"flagcore evaluation + rendering in-process: {evaluation:.0f} µs per answer")
        for method in ("GET", "POST"):
            share = evaluation / results["flagcore", method].cpu_per_request_us
            print(f"{method:4} share of flagcore's server CPU in evaluation: {share:.0%}")
    if not with_peer:
        print("no side-by-side ratio: --peer none, or node is not on PATH")


if __name__ == "__main__":
    main()
