"""HTTP benchmark: /api/client/features under load, against a bare aiohttp ceiling.

Run by hand: ``.venv/bin/python benchmarks/http_bench.py [--seconds 5] [--rounds 3]
[--connections 32] [--workers N] [--loop auto|asyncio|uvloop] [--server-python PATH]
[--all-row]``.
Needs ``wrk`` (Debian package ``wrk``). Everything runs on 127.0.0.1.

1. Starts ``flagcore serve`` exactly as the README's first command does (no flag but the
   port: the default request log, written to a file as a service manager would keep it;
   the event loop ``auto`` picks), and a second one with ``--no-access-log``. Both use one
   SQLite database, seeded with 100 flags with two strategies with constraints each (a
   typical SDK payload, ~90 kB). ``--server-python`` runs them with another interpreter,
   such as a venv made by the README's ``pip install -e '.[server]'``, to measure exactly
   what that install gets. ``--all-row`` adds a third, ``--access-log all`` (a line per
   request).
2. Starts a bare aiohttp server in another process that answers the same bytes (200) or
   a 304 for the same ETag: the ceiling of this stack, measured in the same run, on the
   fastest event loop this interpreter has (uvloop when installed) unless ``--loop`` names
   one for all three servers.
3. Loads each with ``wrk -t2 -cN -dS --latency``: full 200s, then 304s (If-None-Match),
   in ``--rounds`` rounds (the servers alternating, S seconds each), so a burst of load on
   the machine skews one round, not the whole comparison.
4. Prints, per response kind, the median over rounds of req/s, p50 and p99 for each
   server, the server's CPU time per request (read from /proc: unlike req/s it barely moves
   when other processes load the machine), the median of the per-round shares of the
   ceiling for both flagcore rows (targets of issues 18 and 26: >= 80%), and the default
   row's share of the ``--no-access-log`` row (issue 26: within 10%).
5. With ``--workers N``: 304s from ``flagcore serve --workers w`` for w = 1..N (scaling).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

ADMIN = "*:*.bench-admin-secret"
CLIENT = "default:development.bench-client-secret"
SPEC = {"Unleash-Client-Spec": "5.1.9"}

_BARE_SERVER = textwrap.dedent(
    """
    import sys
    from aiohttp import web

    body = open(sys.argv[1], "rb").read()
    etag = sys.argv[2]
    if sys.argv[4] == "uvloop":  # the same event loop as flagcore's, for a fair ceiling
        import uvloop

        uvloop.install()

    async def features(request):
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(body=body, headers={"ETag": etag, "Content-Type": "application/json"})

    app = web.Application()
    app.router.add_get("/api/client/features", features)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[3]), print=None, access_log=None)
    """
)


def _request(
    url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None
) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read(), dict(response.headers)


def _seed(base: str, flags: int) -> None:
    admin = {"Authorization": ADMIN, "Content-Type": "application/json"}
    features = f"{base}/api/admin/projects/default/features"
    for index in range(flags):
        name = f"bench.flag-{index:03d}"
        _request(features, "POST", {"name": name, "description": "a benchmark flag"}, admin)
        strategies = f"{features}/{name}/environments/development/strategies"
        _request(
            strategies,
            "POST",
            {
                "name": "flexibleRollout",
                "parameters": {"rollout": str(index % 101), "stickiness": "userId"},
                "constraints": [
                    {
                        "contextName": "appName",
                        "operator": "IN",
                        "values": ["web", "ios", "android"],
                    },
                    {"contextName": "country", "operator": "NOT_IN", "values": ["XX", "YY"]},
                ],
            },
            admin,
        )
        _request(
            strategies,
            "POST",
            {
                "name": "userWithId",
                "parameters": {"userIds": ",".join(f"user-{index}-{n}" for n in range(8))},
                "constraints": [
                    {"contextName": "appVersion", "operator": "SEMVER_GTE", "value": "2.0.0"},
                ],
            },
            admin,
        )
        _request(f"{features}/{name}/environments/development/on", "POST", None, admin)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of ``pid`` and its child processes (the workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _wrk(
    url: str, headers: dict[str, str], seconds: int, connections: int, pid: int | None = None
) -> dict[str, float]:
    """One wrk run: req/s, p50 and p99 (ms), and µs of server CPU per request (``pid``'s)."""
    cpu_before = _cpu_seconds(pid) if pid is not None else 0.0
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for key, value in headers.items():
        command += ["-H", f"{key}: {value}"]
    output = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    statuses = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    assert statuses is None, output

    def latency(percent: str) -> float:
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)", output, re.M)
        assert match, output
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    assert rate, output
    total = re.search(r"(\d+) requests in", output)
    assert total, output
    cpu = (_cpu_seconds(pid) - cpu_before) / int(total.group(1)) * 1e6 if pid is not None else 0.0
    return {"rps": float(rate.group(1)), "p50": latency("50"), "p99": latency("99"), "cpu": cpu}


def _start_flagcore(
    folder: Path, port: int, python: str, *extra: str, log: str = "server"
) -> subprocess.Popen[bytes]:
    """``flagcore serve`` on ``port`` with only ``extra`` flags; its stderr (the log) goes
    to a file in ``folder``, as a service manager keeps it."""
    env = {
        **os.environ,
        "FLAGCORE_DB": str(folder / "bench.db"),
        "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
        "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
    }
    command = [python, "-m", "flagcore_http", "serve", "--port", str(port), *extra]
    with (folder / f"{log}.log").open("ab") as stderr:
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def _scaling(folder: Path, args: argparse.Namespace, headers: dict[str, str]) -> None:
    """304s from 1 to ``args.workers`` worker processes (same database, same wrk load)."""
    print(f"\nworkers: 304s, wrk -t2 -c{args.connections} -d{args.seconds}s, median of rounds")
    print(f"{'workers':>7} {'req/s':>9} {'p99 ms':>8} {'CPU us/req':>11} {'vs 1':>6}")
    first = None
    for count in range(1, args.workers + 1):
        port = _free_port()
        server = _start_flagcore(
            folder,
            port,
            args.server_python,
            "--workers",
            str(count),
            "--no-access-log",
            *_loop(args),
            log=f"workers-{count}",
        )
        try:
            url = f"http://127.0.0.1:{port}/api/client/features"
            _wait_up(f"http://127.0.0.1:{port}/health")
            runs = [
                _wrk(url, headers, args.seconds, args.connections, server.pid)
                for _ in range(args.rounds)
            ]
        finally:
            _stop(server)
        rps = statistics.median(run["rps"] for run in runs)
        first = first or rps
        p99 = statistics.median(run["p99"] for run in runs)
        cpu = statistics.median(run["cpu"] for run in runs)
        print(f"{count:7d} {rps:9.0f} {p99:8.2f} {cpu:11.1f} {rps / first:5.2f}x")


def _loop(args: argparse.Namespace) -> list[str]:
    """No flag for ``auto``: the server as a user starts it picks its own loop."""
    return [] if args.loop == "auto" else ["--loop", args.loop]


def _shares(
    rounds: dict[tuple[str, str], list[dict[str, float]]], name: str, of: str, label: str
) -> list[float]:
    """``name``'s req/s as a share of ``of``'s, round by round."""
    return [
        ours["rps"] / theirs["rps"]
        for ours, theirs in zip(rounds[(name, label)], rounds[(of, label)], strict=True)
    ]


DEFAULT = "flagcore"
QUIET = "--no-access-log"
ALL = "--access-log all"
BARE = "bare aiohttp"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="per server and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--flags", type=int, default=100)
    parser.add_argument("--workers", type=int, default=0, help="also measure 1..N workers")
    parser.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="every server's event loop (default: flagcore's own choice, as a user starts "
        "it; the ceiling on uvloop when installed)",
    )
    parser.add_argument(
        "--server-python",
        default=sys.executable,
        help="the interpreter that runs flagcore serve (a venv of the README's install)",
    )
    parser.add_argument(
        "--all-row", action="store_true", help="also measure --access-log all (a line a request)"
    )
    args = parser.parse_args()
    bare_loop = args.loop
    if bare_loop == "auto":
        bare_loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")
    folder = Path(tempfile.mkdtemp())
    servers: dict[str, subprocess.Popen[bytes]] = {}
    urls: dict[str, str] = {}
    try:
        # Seeded through a server of its own, so the measured ones start alike (the 400
        # admin requests leave no state in any of them).
        port = _free_port()
        seeder = servers["seed"] = _start_flagcore(folder, port, args.server_python, QUIET)
        _wait_up(f"http://127.0.0.1:{port}/health")
        _seed(f"http://127.0.0.1:{port}", args.flags)
        _stop(seeder)
        del servers["seed"]
        rows = {DEFAULT: [], QUIET: [QUIET], **({ALL: ALL.split()} if args.all_row else {})}
        for name, flags in rows.items():
            port = _free_port()
            servers[name] = _start_flagcore(
                folder,
                port,
                args.server_python,
                *flags,
                *_loop(args),
                log=name.strip("-"),
            )
            urls[name] = f"http://127.0.0.1:{port}"
            _wait_up(urls[name] + "/health")
        client = {"Authorization": CLIENT, **SPEC}
        body, headers = _request(urls[DEFAULT] + "/api/client/features", headers=client)
        etag = headers["ETag"]
        payload = folder / "payload.json"
        payload.write_bytes(body)
        port = _free_port()
        bare_script = folder / "bare.py"
        bare_script.write_text(_BARE_SERVER)
        servers[BARE] = subprocess.Popen(
            [sys.executable, str(bare_script), str(payload), etag, str(port), bare_loop]
        )
        urls[BARE] = f"http://127.0.0.1:{port}"
        _wait_up(urls[BARE] + "/api/client/features")
        flagcore_loop = _loop_of(args.server_python) if args.loop == "auto" else args.loop
        print(f"payload: {args.flags} flags, {len(body) / 1000:.1f} kB, ETag {etag}")
        print(
            f"load: wrk -t2 -c{args.connections} -d{args.seconds}s --latency, 127.0.0.1, "
            f"{args.rounds} rounds; event loop: flagcore {flagcore_loop}, ceiling {bare_loop}; "
            f"machine load average before: {os.getloadavg()[0]:.2f}"
        )
        print(f"flagcore: {args.server_python} -m flagcore_http serve --port N (log to a file)\n")
        rounds: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _round in range(args.rounds):
            for label, extra in (("200", {}), ("304", {"If-None-Match": etag})):
                for name, server in servers.items():
                    sent = extra if name == BARE else {**client, **extra}
                    url = urls[name] + "/api/client/features"
                    run = _wrk(url, sent, args.seconds, args.connections, server.pid)
                    rounds.setdefault((name, label), []).append(run)
        _report(rounds)
        print(f"machine load average after: {os.getloadavg()[0]:.2f}")
        if args.workers:
            for server in servers.values():
                _stop(server)
            servers.clear()
            _scaling(folder, args, {**client, "If-None-Match": etag})
    finally:
        for server in servers.values():
            _stop(server)
        shutil.rmtree(folder, ignore_errors=True)


def _loop_of(python: str) -> str:
    """The loop ``flagcore serve --loop auto`` picks under ``python``."""
    probe = "try:\n import uvloop\n print('uvloop')\nexcept ImportError:\n print('asyncio')"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.strip()


def _report(rounds: dict[tuple[str, str], list[dict[str, float]]]) -> None:
    print(
        f"{'server':16} {'resp':5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'CPU us/req':>11}   median of rounds"
    )
    cpu: dict[tuple[str, str], float] = {}
    for (name, label), runs in sorted(rounds.items(), key=lambda item: item[0][1]):
        rps, p50, p99, cpu[(name, label)] = (
            statistics.median(run[key] for run in runs) for key in ("rps", "p50", "p99", "cpu")
        )
        print(f"{name:16} {label:5} {rps:9.0f} {p50:8.2f} {p99:8.2f} {cpu[(name, label)]:11.1f}")
    print()
    names = [name for name in (DEFAULT, QUIET, ALL) if (name, "200") in rounds]
    for name in names:
        for label in ("200", "304"):
            shares = _shares(rounds, name, BARE, label)
            each = " ".join(f"{share:.0%}" for share in shares)
            by_cpu = cpu[(BARE, label)] / cpu[(name, label)]
            print(
                f"{name:16} / ceiling: {label}s {statistics.median(shares):.0%} by req/s "
                f"(target >= 80%; rounds {each}), {by_cpu:.0%} by CPU per request"
            )
    for name in (n for n in names if n != QUIET):
        for label in ("200", "304"):
            shares = _shares(rounds, name, QUIET, label)
            each = " ".join(f"{share:.0%}" for share in shares)
            by_cpu = cpu[(QUIET, label)] / cpu[(name, label)]
            target = " (target >= 90%; " if name == DEFAULT else " ("
            print(
                f"{'default' if name == DEFAULT else name} / {QUIET}: {label}s "
                f"{statistics.median(shares):.0%} by req/s{target}rounds {each}), "
                f"{by_cpu:.0%} by CPU per request"
            )
    p99 = max(
        statistics.median(run["p99"] for run in rounds[(DEFAULT, label)])
        for label in ("200", "304")
    )
    print(f"flagcore p99 (default): {p99:.2f} ms (target <= 10 ms)")
    print("Unleash 8.2.0 (reference/, same wrk settings): 200s ~840 req/s, 304s ~1,840 req/s")


if __name__ == "__main__":
    main()
