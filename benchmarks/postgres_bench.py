"""PostgreSQL nodes against a SQLite node, and propagation between two PostgreSQL nodes.

Run by hand: ``.venv/bin/python benchmarks/postgres_bench.py [--seconds 5]
[--connections 32] [--writes 200]``. Needs ``wrk`` (Debian package ``wrk``) and the
``test`` extra (pgserver starts a private PostgreSQL 16; or set
``FLAGCORE_BENCH_POSTGRES_URL``). Everything runs on this machine, on 127.0.0.1.

1. Starts two ``flagcore serve`` nodes (A, B) over one PostgreSQL database and one node
   on a SQLite file, and seeds each store with 100 flags (two strategies with
   constraints each, ~90 kB payload), as ``benchmarks/http_bench.py`` does.
2. ``/api/client/features``: full 200s, then 304s (If-None-Match), with ``wrk`` on node A
   and on the SQLite node in turn, ``--rounds`` alternating rounds (medians); both are
   served from memory: the target is the PostgreSQL node within 10% of SQLite.
3. Propagation (after 2, before 4, on the seeded payload): ``--writes`` flag creations on A;
   after each is acknowledged, B is polled (If-None-Match, keep-alive) until a response
   shows the new flag; p50/p99 of that delay (it includes B rendering the new payload).
4. Admin writes/s on each store: flag creations from one client, then from 4 at once.
Prints one table with everything.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from http_bench import ADMIN, CLIENT, SPEC, _seed, _wait_up, _wrk

FEATURES = "/api/admin/projects/default/features"


def _postgres_url() -> tuple[str, Any]:
    given = os.environ.get("FLAGCORE_BENCH_POSTGRES_URL")
    if given:
        return given, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    server = pgserver.get_server(
        tempfile.mkdtemp(prefix="flagcore-bench-pg-"), cleanup_mode="delete"
    )
    return str(server.get_uri()), server


def _start(db: str, log: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")}
    env |= {
        "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
        "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flagcore_http",
            "serve",
            "--port",
            "0",
            "--db",
            db,
            "--no-access-log",
        ],
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on " in line, line + log.read_text()
    url = line.split("listening on ", 1)[1].split(" ", 1)[0]
    _wait_up(url + "/health")
    return process, url


class _Connection:
    """One keep-alive HTTP connection to a node."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.http = http.client.HTTPConnection(host, int(port), timeout=30)

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        data = None if body is None else json.dumps(body).encode()
        self.http.request(
            method, path, data, {"Content-Type": "application/json", **(headers or {})}
        )
        response = self.http.getresponse()
        return response.status, dict(response.getheaders()), response.read()


def _features(connection: _Connection, etag: str | None) -> tuple[int, str | None, bytes]:
    headers = {"Authorization": CLIENT, **SPEC}
    if etag:
        headers["If-None-Match"] = etag
    status, headers_back, body = connection.call("GET", "/api/client/features", headers=headers)
    return status, headers_back.get("ETag", etag), body


def _serving(url: str, seconds: int, connections: int) -> dict[str, dict[str, float]]:
    _status, etag, _body = _features(_Connection(url), None)
    target = url + "/api/client/features"
    return {
        "200": _wrk(target, {"Authorization": CLIENT, **SPEC}, seconds, connections),
        "304": _wrk(
            target,
            {"Authorization": CLIENT, "If-None-Match": str(etag), **SPEC},
            seconds,
            connections,
        ),
    }


def _writes_per_second(url: str, prefix: str, clients: int, seconds: float) -> float:
    deadline = time.monotonic() + seconds

    def writer(worker: int) -> int:
        connection, count = _Connection(url), 0
        while time.monotonic() < deadline:
            status, _h, body = connection.call(
                "POST",
                FEATURES,
                {"name": f"{prefix}-{worker}-{count}"},
                {"Authorization": ADMIN},
            )
            assert status == 201, body
            count += 1
        return count

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        total = sum(pool.map(writer, range(clients)))
    return total / (time.monotonic() - started)


def _propagation(a: str, b: str, writes: int) -> list[float]:
    writer, reader = _Connection(a), _Connection(b)
    _status, etag, _body = _features(reader, None)
    delays = []
    for index in range(writes):
        name = f"propagation-{index}"
        status, _h, body = writer.call("POST", FEATURES, {"name": name}, {"Authorization": ADMIN})
        assert status == 201, body
        acknowledged = time.perf_counter()
        while True:
            status, etag, body = _features(reader, etag)
            if status == 200 and f'"{name}"'.encode() in body:
                break
            if time.perf_counter() - acknowledged > 10:
                raise AssertionError(f"{name} never reached node B")
        delays.append((time.perf_counter() - acknowledged) * 1000)
    return delays


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="per wrk run")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="alternating wrk rounds")
    parser.add_argument("--writes", type=int, default=200, help="propagation samples")
    parser.add_argument("--write-seconds", type=float, default=5.0)
    args = parser.parse_args()

    url, server = _postgres_url()
    directory = Path(tempfile.mkdtemp(prefix="flagcore-bench-"))
    processes = []
    try:
        node_a, a = _start(url, directory / "a.log")
        node_b, b = _start(url, directory / "b.log")
        lite, s = _start(str(directory / "flagcore.db"), directory / "s.log")
        processes = [node_a, node_b, lite]
        _seed(a, 100)
        _seed(s, 100)
        # Alternating rounds, medians: a burst of other load on the machine skews one
        # round of one store, not the comparison.
        rounds: dict[str, list[dict[str, dict[str, float]]]] = {"postgresql": [], "sqlite": []}
        for _round in range(args.rounds):
            rounds["postgresql"].append(_serving(a, args.seconds, args.connections))
            rounds["sqlite"].append(_serving(s, args.seconds, args.connections))
        serving = {
            store: {
                kind: {
                    measure: statistics.median(r[kind][measure] for r in runs)
                    for measure in ("rps", "p50", "p99")
                }
                for kind in ("200", "304")
            }
            for store, runs in rounds.items()
        }
        # Propagation next, on the seeded payload plus its own flags (the write test below
        # adds thousands, and every change makes the next poll render the whole payload).
        delays = _propagation(a, b, args.writes)
        writes = {
            (store, clients): _writes_per_second(base, f"w{clients}", clients, args.write_seconds)
            for store, base in (("postgresql", a), ("sqlite", s))
            for clients in (1, 4)
        }
    finally:
        for process in processes:
            process.terminate()
            process.communicate(timeout=30)
        if server is not None:
            server.cleanup()

    print(
        f"flagcore on PostgreSQL vs SQLite ({args.connections} connections, "
        f"{args.seconds} s per wrk run, median of {args.rounds} alternating rounds, "
        f"{os.cpu_count()} cores shared)"
    )
    print(f"{'':28} {'PostgreSQL':>12} {'SQLite':>12} {'PG/SQLite':>10}")
    for kind in ("200", "304"):
        pg, lite_r = serving["postgresql"][kind], serving["sqlite"][kind]
        print(
            f"/api/client/features {kind} req/s {pg['rps']:12.0f} {lite_r['rps']:12.0f} "
            f"{pg['rps'] / lite_r['rps']:10.0%}"
        )
        print(f"/api/client/features {kind} p99 ms {pg['p99']:11.2f} {lite_r['p99']:12.2f}")
    for clients in (1, 4):
        pg_w, lite_w = writes[("postgresql", clients)], writes[("sqlite", clients)]
        print(
            f"admin writes/s, {clients} client(s)  {pg_w:12.0f} {lite_w:12.0f} "
            f"{pg_w / lite_w:10.0%}"
        )
    print(
        f"propagation A -> B over {len(delays)} writes: p50 {statistics.median(delays):.1f} ms,"
        f" p99 {_percentile(delays, 99):.1f} ms, max {max(delays):.1f} ms"
    )


if __name__ == "__main__":
    main()
