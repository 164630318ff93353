"""Edge benchmark: `flagcore edge`'s /api/client/features 200s and 304s beside the same
on the `flagcore serve` it follows, and the edge's memory with many tokens.

Run by hand: ``.venv/bin/python benchmarks/edge_bench.py [--seconds 5] [--rounds 3]
[--connections 32] [--flags 100] [--tokens 1000]``. Needs ``wrk``. Everything runs on
127.0.0.1. Sits beside ``benchmarks/http_bench.py`` and uses its seeding and wrk runner.

1. Starts ``flagcore serve --no-access-log`` on a SQLite file seeded with ``--flags``
   flags (http_bench's payload: two strategies with constraints each), and
   ``flagcore edge`` following it with the client token.
2. Loads both with ``wrk``: full 200s, then 304s (If-None-Match), alternating servers per
   round; prints the median req/s, p50, p99 and CPU µs per request of each, and edge's
   share of serve.
3. With ``--changes N`` (default 20): switches a flag upstream N times and times how long
   each change takes to show in the edge's answer (polled every 5 ms; the edge runs
   with its default interval, so changes arrive through the upstream's stream).
4. With ``--tokens N``: creates N client tokens upstream, each scoped to its own project
   (one flag each), has the edge check and follow each (one request each), and reports
   the edge's resident memory before and after (VmRSS from /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from http_bench import (  # the sibling benchmark, found through sys.path
    ADMIN,
    CLIENT,
    SPEC,
    _free_port,
    _request,
    _seed,
    _start_flagcore,
    _stop,
    _wait_up,
    _wrk,
)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _start_edge_for(
    folder: Path, upstream: str, token: str, port: int, *extra: str
) -> subprocess.Popen[bytes]:
    """``flagcore edge`` following ``upstream`` with ``token``; its log in ``folder``."""
    command = [
        sys.executable,
        "-m",
        "flagcore_cli",
        "edge",
        "--upstream",
        upstream + "/api",
        "--upstream-token",
        token,
        "--port",
        str(port),
        "--data-dir",
        str(folder / "edge-data"),
        "--max-tokens",
        "100000",
        *extra,
    ]
    with (folder / "edge.log").open("ab") as stderr:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)


def _start_edge(folder: Path, upstream: str, port: int) -> subprocess.Popen[bytes]:
    return _start_edge_for(folder, upstream, CLIENT, port)


def _tokens(upstream: str, edge: str, count: int) -> None:
    """``count`` client tokens upstream, each of its own project, each checked by the edge."""
    admin = {"Authorization": ADMIN, "Content-Type": "application/json"}
    for index in range(count):
        project = f"p{index:05d}"
        _request(f"{upstream}/api/admin/projects", "POST", {"id": project, "name": project}, admin)
        _request(
            f"{upstream}/api/admin/projects/{project}/features",
            "POST",
            {"name": f"flag-{project}"},
            admin,
        )
        created, _headers = _request(
            f"{upstream}/api/admin/api-tokens",
            "POST",
            {
                "tokenName": project,
                "type": "client",
                "environment": "development",
                "projects": [project],
            },
            admin,
        )
        secret = json.loads(created)["secret"]
        _request(f"{edge}/api/client/features", headers={"Authorization": secret, **SPEC})


def _propagation(upstream: str, edge: str, changes: int) -> None:
    """How long a change upstream takes to show at the edge, ``changes`` times."""
    admin = {"Authorization": ADMIN, "Content-Type": "application/json"}
    client = {"Authorization": CLIENT, **SPEC}
    flag = f"{upstream}/api/admin/projects/default/features/bench.flag-000/environments/development"
    took = []
    for index in range(changes):
        _body, headers = _request(edge + "/api/client/features", headers=client)
        _request(f"{flag}/{'off' if index % 2 == 0 else 'on'}", "POST", None, admin)
        started = time.perf_counter()
        while True:
            _body, now = _request(edge + "/api/client/features", headers=client)
            if now["ETag"] != headers["ETag"]:
                break
            time.sleep(0.005)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    p99 = took[min(len(took) - 1, round(0.99 * (len(took) - 1)))]
    print(
        f"\na change upstream seen at the edge, {changes} changes: median "
        f"{statistics.median(took):.0f} ms, p99 {p99:.0f} ms, max {took[-1]:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--flags", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=0, help="measure memory with N tokens")
    parser.add_argument("--changes", type=int, default=20, help="changes timed upstream → edge")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")
    folder = Path(tempfile.mkdtemp())
    servers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        upstream_port, edge_port = _free_port(), _free_port()
        upstream = f"http://127.0.0.1:{upstream_port}"
        edge = f"http://127.0.0.1:{edge_port}"
        servers["serve"] = _start_flagcore(folder, upstream_port, sys.executable, "--no-access-log")
        _wait_up(upstream + "/health")
        _seed(upstream, args.flags)
        servers["edge"] = _start_edge(folder, upstream, edge_port)
        _wait_up(edge + "/ready")
        client = {"Authorization": CLIENT, **SPEC}
        body, headers = _request(edge + "/api/client/features", headers=client)
        served, _ = _request(upstream + "/api/client/features", headers=client)
        assert body == served, "the edge answers the upstream's bytes"
        etag = headers["ETag"]
        urls = {"serve": upstream, "edge": edge}
        print(f"payload: {args.flags} flags, {len(body) / 1000:.1f} kB, ETag {etag}")
        print(
            f"load: wrk -t2 -c{args.connections} -d{args.seconds}s --latency, 127.0.0.1, "
            f"{args.rounds} rounds; machine load average before: {os.getloadavg()[0]:.2f}\n"
        )
        rounds: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _round in range(args.rounds):
            for label, extra in (("200", {}), ("304", {"If-None-Match": etag})):
                for name, server in servers.items():
                    url = urls[name] + "/api/client/features"
                    run = _wrk(url, {**client, **extra}, args.seconds, args.connections, server.pid)
                    rounds.setdefault((name, label), []).append(run)
        print(
            f"{'server':8} {'resp':5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}"
        )
        medians: dict[tuple[str, str], float] = {}
        for (name, label), runs in sorted(rounds.items(), key=lambda item: item[0][1]):
            rps, p50, p99, cpu = (
                statistics.median(run[key] for run in runs) for key in ("rps", "p50", "p99", "cpu")
            )
            medians[(name, label)] = rps
            print(f"{name:8} {label:5} {rps:9.0f} {p50:8.2f} {p99:8.2f} {cpu:11.1f}")
        for label in ("200", "304"):
            share = medians[("edge", label)] / medians[("serve", label)]
            print(f"edge / serve, {label}s: {share:.0%} by req/s")
        print(f"machine load average after: {os.getloadavg()[0]:.2f}")
        if args.changes:
            _propagation(upstream, edge, args.changes)
        if args.tokens:
            before = _rss_kib(servers["edge"].pid)
            started = time.monotonic()
            _tokens(upstream, edge, args.tokens)
            after = _rss_kib(servers["edge"].pid)
            print(
                f"\nedge memory: {before / 1024:.1f} MiB with 1 token, {after / 1024:.1f} MiB "
                f"with {args.tokens + 1} tokens of distinct scopes "
                f"({(after - before) / args.tokens:.1f} KiB a token; "
                f"made in {time.monotonic() - started:.0f} s)"
            )
    except urllib.error.HTTPError as error:
        sys.exit(f"{error.code} {error.read()[:300]!r}")
    finally:
        for server in servers.values():
            _stop(server)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
