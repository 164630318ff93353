"""Hostile-load benchmark (issue #12): replays the security probes against ``flagcore serve``.

Run by hand: ``.venv/bin/python benchmarks/hostile.py [--flags 300] [--seconds 4]
[--scale 1.0]``. Everything runs on 127.0.0.1; each probe is bounded in count
(its issue figure × ``--scale``) and in time (``--seconds``).

1. Starts ``flagcore serve`` (SQLite, a temporary database, retention every 2 s) and seeds
   ``--flags`` flags with long descriptions (a large payload), one tagged ``simple:core``.
2. For each probe — junk filter values, made-up SDK instances with 4 kB ids, metrics with
   made-up flag names, unknown 8 kB and 200-character tokens, 100 kB signals, 200 UI
   sign-in forms sent a byte a second, gzip bodies that inflate to 1 GB, wrong tokens
   through the UI's sign-in form, a frontend token's new-appName metrics flood,
   buckets dated 2999, streams that never read — measures a
   legitimate SDK (``wrk`` when installed, else an aiohttp client: 4 connections polling
   with ``If-None-Match``) quiet
   before, while the probe runs, and after it; and the server's RSS (peak while sampling),
   database size (with its WAL) and the machine's kernel TCP memory (``/proc/net/sockstat``,
   peak while sampling; client and server sockets alike, both being on this machine).
3. Prints one row per phase and the verdicts against the targets: RSS under 150 MB, the
   legitimate 304 rate within 20% of its quiet value, database growth bounded. Each
   "during" row also shows the probe's own achieved rate (``probe/s``) and how many of
   its requests were refused (429) or answered only after the auth-failure delay; the
   probes are not paced.
4. When the 304 target is missed, prints why in numbers: the server's total answer rate
   during the probe (legit + probe) against the legit rate before it. A probe whose
   requests cost what a legitimate poll costs (same token, same address, a 304 each)
   takes its share of the same CPU: the server, the legit client and the probe all run
   on this machine's cores, and no server can out-compute a flood that is
   indistinguishable from a legitimate SDK; it can only rate-limit it per token/address,
   which here would limit the legit SDK too (it shares both). The ``CPU%`` columns are
   each process's share of one core over the phase (server, this process with the probe,
   the legit client), from which the "cost" line derives the server's CPU per probe
   request.

The legitimate client and the probe share the machine's cores with the server, so the
rates are lower than under ``wrk``; compare phases of one run, not runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import re
import resource
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

ADMIN = "*:*.hostile-admin-secret"
CLIENT = "default:development.hostile-client-secret"
SPEC = {"Unleash-Client-Spec": "5.1.9"}
RSS_TARGET_MB = 150
RATE_TOLERANCE = 0.20
# The legit SDK's client: wrk when installed (cheap, so its rate measures the server), else
# (or with --python-legit) an aiohttp client.
PYTHON_LEGIT = False
# The client ETag, once seeded: the instance probes poll with it, as the did (304s).
_ETAG: list[str] = []
# A frontend token's secret and the seeded flag names, once seeded (the frontend probes).
_FRONTEND: list[str] = []
_FLAG_NAMES: list[str] = []
# How long the idle-stream probe holds its streams (set from --stream-hold).
_STREAM_HOLD: list[float] = [15.0]


def _request(
    url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None
) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null"), dict(response.headers)


def _seed(base: str, flags: int) -> str:
    """Flags with long descriptions; returns a signal endpoint token's secret."""
    admin = {"Authorization": ADMIN, "Content-Type": "application/json"}
    features = f"{base}/api/admin/projects/default/features"
    for index in range(flags):
        name = f"bench.flag-{index:04d}"
        _request(features, "POST", {"name": name, "description": "d" * 2000}, admin)
    _request(
        f"{base}/api/admin/features/bench.flag-0000/tags",
        "POST",
        {"type": "simple", "value": "core"},
        admin,
    )
    _FLAG_NAMES.extend(f"bench.flag-{index:04d}" for index in range(flags))
    frontend, _ = _request(
        f"{base}/api/admin/api-tokens",
        "POST",
        {"tokenName": "web", "type": "frontend", "environment": "development", "projects": ["*"]},
        admin,
    )
    _FRONTEND.append(str(frontend["secret"]))
    endpoint, _ = _request(f"{base}/api/admin/signal-endpoints", "POST", {"name": "probe"}, admin)
    token, _ = _request(
        f"{base}/api/admin/signal-endpoints/{endpoint['id']}/tokens", "POST", {"name": "t"}, admin
    )
    return str(token["token"])


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _db_mb(db: Path) -> float:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6


def _tcp_mb() -> float:
    """The kernel's TCP socket memory, all sockets of the machine (``/proc/net/sockstat``
    counts it in pages)."""
    with open("/proc/net/sockstat", encoding="ascii") as sockstat:
        for line in sockstat:
            if line.startswith("TCP:"):
                fields = line.split()
                pages = int(fields[fields.index("mem") + 1])
                return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    return 0.0


# --- the legitimate SDK: a separate process, 4 keep-alive connections polling with ETag ---


def _legit_wrk(url: str, seconds: float) -> dict[str, float]:
    """The legit SDK's polls driven by ``wrk`` (one thread, 4 keep-alive connections): a
    client that costs little CPU, so the rate measures the server, not a Python client
    starved of its core by the probe's client (what the aiohttp client measured here)."""
    request = urllib.request.Request(url, headers={"Authorization": CLIENT, **SPEC})
    with urllib.request.urlopen(request, timeout=30) as first:
        etag = first.headers["ETag"]
        first.read()
    command = ["wrk", "-t1", "-c4", f"-d{max(1, round(seconds))}s", "--latency"]
    for key, value in {"Authorization": CLIENT, **SPEC, "If-None-Match": etag}.items():
        command += ["-H", f"{key}: {value}"]
    output = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)", output, re.M)
    assert rate, output
    assert p99, output
    value, unit = float(p99.group(1)), p99.group(2)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "legit_cpu": children.ru_utime + children.ru_stime,  # wrk's CPU seconds
        "rate": float(rate.group(1)),
        "p99_ms": value * scale,
    }


async def _legit(url: str, seconds: float) -> dict[str, float]:
    headers = {"Authorization": CLIENT, **SPEC}
    latencies: list[float] = []
    async with aiohttp.ClientSession() as session:
        async with session.get(url, headers=headers) as first:
            etag = first.headers["ETag"]
            await first.read()
        polled = {**headers, "If-None-Match": etag}
        deadline = time.perf_counter() + seconds

        async def poll() -> None:
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                async with session.get(url, headers=polled) as response:
                    await response.read()
                latencies.append(time.perf_counter() - start)

        await asyncio.gather(*(poll() for _ in range(4)))
    latencies.sort()
    return {
        "legit_cpu": time.process_time(),  # this process's CPU seconds, all of them here
        "rate": len(latencies) / seconds,
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99) - 1] if latencies else 0.0,
    }


# --- the probes: each sends at most ``count`` requests within ``seconds`` ---

Probe = Callable[[aiohttp.ClientSession, str, int], Awaitable[Any]]


async def _run_probe(probe: Probe, base: str, count: int, seconds: float) -> dict[int, int]:
    statuses: dict[int, int] = {}
    deadline = time.perf_counter() + seconds
    counter = iter(range(count))
    async with aiohttp.ClientSession() as session:

        async def worker() -> None:
            for i in counter:
                if time.perf_counter() > deadline:
                    return
                try:
                    status = await probe(session, base, i)
                except aiohttp.ClientError:
                    status = -1
                statuses[status] = statuses.get(status, 0) + 1

        await asyncio.gather(*(worker() for _ in range(8)))
    return statuses


def _as_attack(probe: Probe) -> Callable[[str, int, float], Awaitable[dict[int, int]]]:
    return lambda base, count, seconds: _run_probe(probe, base, count, seconds)


async def _status(response: Any) -> int:
    async with response as answered:
        await answered.read()
        return int(answered.status)


def _junk_filters(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    url = f"{base}/api/client/features?tag=simple:core&tag=junk:{i}"
    return _status(session.get(url, headers={"Authorization": CLIENT, "Accept-Encoding": "gzip"}))


def _instances(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    headers = {
        "Authorization": CLIENT,
        "UNLEASH-APPNAME": "probe",
        "UNLEASH-INSTANCEID": f"{i}-" + secrets.token_hex(2000),
        "If-None-Match": _ETAG[0],
        **SPEC,
    }
    return _status(session.get(f"{base}/api/client/features", headers=headers))


def _short_instances(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    headers = {
        "Authorization": CLIENT,
        "UNLEASH-APPNAME": "probe",
        "UNLEASH-INSTANCEID": f"i-{i}",
        "If-None-Match": _ETAG[0],
        **SPEC,
    }
    return _status(session.get(f"{base}/api/client/features", headers=headers))


_MADE_UP = {f"made-up-{n}": {"yes": 1, "no": 1} for n in range(9_000)}


def _now(minutes: float = 0.0) -> str:
    at = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=minutes)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _metrics(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    body = {
        "appName": "probe",
        "instanceId": f"i-{i}",
        "bucket": {"start": _now(-1), "stop": _now(), "toggles": _MADE_UP},
    }
    return _status(
        session.post(f"{base}/api/client/metrics", json=body, headers={"Authorization": CLIENT})
    )


def _unknown_tokens(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    secret = secrets.token_hex(4000) if i % 2 else f"default:development.{secrets.token_hex(90)}"
    return _status(session.get(f"{base}/api/client/features", headers={"Authorization": secret}))


def _signals(secret: str) -> Probe:
    payload = {"blob": "x" * 99_000}

    def send(session: aiohttp.ClientSession, base: str, _i: int) -> Awaitable[int]:
        return _status(
            session.post(
                f"{base}/api/signal-endpoint/probe", json=payload, headers={"Authorization": secret}
            )
        )

    return send


# --- compressed bodies (issue 24 #3): 1 GB of zeros in under 1 MB of gzip ---


def _gzip_bomb() -> bytes:
    """About 1 MB of gzip that inflates to 1 GB (made once, in 64 MB steps)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    zeros = bytes(64 * 1024 * 1024)
    parts = [packer.compress(zeros) for _ in range(16)]
    return b"".join([*parts, packer.flush()])


_BOMB: list[bytes] = []


def _compressed_bodies(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    """No token, half to a path that does not exist: before the fix each cost 0.57 s of
    server CPU inflating it; now each is a 415 decided from the headers."""
    path = "/api/client/metrics" if i % 2 else "/no/such/path"
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    return _status(session.post(f"{base}{path}", data=_BOMB[0], headers=headers))


# --- UI sign-in guesses (issue 24 #7): wrong tokens through the sign-in form ---


class _SignInGuesses:
    """Wrong admin tokens posted to ``/ui/sign-in`` from one address, each with the
    form's CSRF token from a session of its own (one cookie jar for the probe: aiohttp's
    default jar keeps no cookies for an IP address). Tarpitted like wrong API tokens."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.csrf = ""
        self._ready = asyncio.Lock()

    async def __call__(self, _unused: aiohttp.ClientSession, base: str, _i: int) -> int:
        async with self._ready:  # the probe's 8 workers share one session and form token
            if self.session is None:
                session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
                async with session.get(f"{base}/ui/sign-in") as page:
                    found = re.search(r'name="_csrf" value="([^"]+)"', await page.text())
                    self.csrf = found.group(1) if found else ""
                self.session = session
        form = {"_csrf": self.csrf, "token": f"*:*.{secrets.token_hex(16)}", "next": "/"}
        return await _status(
            self.session.post(f"{base}/ui/sign-in", data=form, allow_redirects=False)
        )


# --- slow UI forms (issue 24 #4): connections held open by forms sent a byte at a time ---

SLOW_FORM_CONNECTIONS = 25  # per probe request: 8 requests at scale 1 hold 200 connections


def _slow_forms(seconds: float) -> Probe:
    """Each request opens `SLOW_FORM_CONNECTIONS` connections that post the sign-in form
    (declared 1,000 bytes) one byte a second, for at most the phase; it answers 408 when
    the server dropped every one of them (the body timeout), else 0 (some still open when
    the phase ended: the default 30 s timeout is longer than a phase, so pass
    ``--env FLAGCORE_BODY_TIMEOUT=2`` to see them dropped). The legit SDK's 304 rate
    meanwhile shows what 200 held connections cost it."""
    form = b"_csrf=0&token=" + b"a" * 986
    head = (
        b"POST /ui/sign-in HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        + f"Content-Length: {len(form)}\r\n\r\n".encode()
    )

    async def trickle(host: str, port: int, deadline: float) -> bool:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(head)
            for byte in form:
                writer.write(bytes([byte]))
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    # The server's answer, or its close (b""), ends the trickle.
                    await asyncio.wait_for(reader.read(65536), 1.0)
                    return True
                if time.perf_counter() > deadline:
                    return False
            return False
        except OSError:
            return True
        finally:
            writer.close()

    async def send(_session: aiohttp.ClientSession, base: str, _i: int) -> int:
        host, port = base.removeprefix("http://").rsplit(":", 1)
        deadline = time.perf_counter() + seconds
        dropped = await asyncio.gather(
            *(trickle(host, int(port), deadline) for _ in range(SLOW_FORM_CONNECTIONS))
        )
        return 408 if all(dropped) else 0

    return send


def _every_flag(variants: int) -> dict[str, Any]:
    """Counts for every seeded flag, each with ``variants`` made-up variant names."""
    names = {f"variant-{n:03d}-{'v' * 12}": 1 for n in range(variants)}
    return {name: {"yes": 1, "no": 1, "variants": names} for name in _FLAG_NAMES}


def _frontend_app_flood(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    """Issue 24 #1: the public frontend token, a new appName each post, every flag named
    with 100 variants (about 770 kB a post at 300 flags; serialised once, the appName
    swapped in, so the probe's client is not what limits its rate)."""
    body = _FLOOD_BODY[0].replace(b"flood-00000000", f"flood-{i:08d}".encode())
    headers = {"Authorization": _FRONTEND[0], "Content-Type": "application/json"}
    return _status(session.post(f"{base}/api/frontend/client/metrics", data=body, headers=headers))


def _frontend_app_flood_in_limit(
    session: aiohttp.ClientSession, base: str, i: int
) -> Awaitable[int]:
    """Issue 24 #1 again, each post under the 256 kB usage-body limit (every flag named
    with 20 variants, about 210 kB at 300 flags): these are read and counted, so what
    bounds the rows is the per-token and per-address row budgets, not the 413."""
    body = _FLOOD_BODY[1].replace(b"flood-00000000", f"flood-{i:08d}".encode())
    headers = {"Authorization": _FRONTEND[0], "Content-Type": "application/json"}
    return _status(session.post(f"{base}/api/frontend/client/metrics", data=body, headers=headers))


def _flood_body(variants: int) -> bytes:
    body = {
        "appName": "flood-00000000",
        "instanceId": "browser-1",
        "bucket": {"start": _now(-1), "stop": _now(), "toggles": _every_flag(variants)},
    }
    return json.dumps(body).encode()


_FLOOD_BODY: list[bytes] = []


def _future_buckets(session: aiohttp.ClientSession, base: str, i: int) -> Awaitable[int]:
    """Issue 24 #2: buckets dated 2999 and 9999 with client and frontend tokens, every flag
    named, a new app each post (before the window they outlived retention)."""
    year = "2999" if i % 2 else "9999"
    body = {
        "appName": f"future-{i}",
        "instanceId": "i-1",
        "bucket": {
            "start": f"{year}-01-01T00:00:00Z",
            "stop": f"{year}-01-01T00:01:00Z",
            "toggles": _FUTURE_TOGGLES[0],
        },
    }
    path, token = (
        ("/api/frontend/client/metrics", _FRONTEND[0])
        if i % 4 < 2
        else ("/api/client/metrics", CLIENT)
    )
    return _status(session.post(f"{base}{path}", json=body, headers={"Authorization": token}))


_FUTURE_TOGGLES: list[dict[str, Any]] = []


async def _idle_streams(base: str, count: int, seconds: float) -> dict[Any, Any]:
    """Issue 24 #5: ``count`` streams from one client token and one address, each socket
    with a 4 kB receive buffer, never read past the status line. Held for --stream-hold
    seconds (the issue saw them open after 40 s); reports the answers, the kernel TCP
    memory at its peak, and how many the server still held open at the end (by its own
    ``flagcore_streaming_clients``)."""
    host, port = base.removeprefix("http://").split(":")
    request = (
        f"GET /api/client/streaming HTTP/1.1\r\nHost: {host}\r\nAuthorization: {CLIENT}\r\n\r\n"
    ).encode()
    loop = asyncio.get_running_loop()
    opened: list[socket.socket] = []
    statuses: dict[Any, Any] = {}

    async def open_one() -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (host, int(port)))
            await loop.sock_sendall(sock, request)
            head = await asyncio.wait_for(loop.sock_recv(sock, 12), 10)
            status = int(head[9:12]) if head.startswith(b"HTTP/1.1 ") else -1
        except (OSError, TimeoutError, ValueError):
            status = -1
        statuses[status] = statuses.get(status, 0) + 1
        opened.append(sock)

    deadline = time.perf_counter() + max(seconds, _STREAM_HOLD[0])
    for start in range(0, count, 50):
        await asyncio.gather(*(open_one() for _ in range(min(50, count - start))))
    peak = _tcp_mb()
    while time.perf_counter() < deadline:
        peak = max(peak, _tcp_mb())
        await asyncio.sleep(0.2)
    still_open = await loop.run_in_executor(None, _streams_open, base)
    for sock in opened:
        sock.close()
    statuses[f"open after {_STREAM_HOLD[0]:g} s"] = still_open
    statuses["peak TCP MB"] = round(peak, 1)
    return statuses


def _streams_open(base: str) -> int:
    """The streams the server holds open now, from its ``flagcore_streaming_clients``."""
    request = urllib.request.Request(
        f"{base}/internal-backstage/prometheus", headers={"Authorization": ADMIN}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("flagcore_streaming_clients "):
                return int(float(line.split()[1]))
    return -1


async def _phase(
    base: str, pid: int, db: Path, seconds: float, attack: Awaitable[Any] | None
) -> dict[str, Any]:
    legit = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--legit",
        f"{base}/api/client/features",
        str(seconds),
        *(["--python-legit"] if PYTHON_LEGIT else []),
        stdout=subprocess.PIPE,
    )
    peak, tcp_peak = _rss_mb(pid), _tcp_mb()
    server_cpu, own_cpu, started = _cpu_seconds(pid), time.process_time(), time.perf_counter()
    attacked = asyncio.ensure_future(attack) if attack is not None else None
    while legit.returncode is None:
        peak, tcp_peak = max(peak, _rss_mb(pid)), max(tcp_peak, _tcp_mb())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(legit.wait(), 0.2)
    out, _ = await legit.communicate()
    statuses = await attacked if attacked is not None else {}
    peak = max(peak, _rss_mb(pid))
    elapsed = time.perf_counter() - started
    result = json.loads(out)
    shares = {  # of one core, over the phase: the server, this process (probe and
        # sampling), the legit client's process
        "server_cpu": (_cpu_seconds(pid) - server_cpu) / elapsed,
        "probe_cpu": (time.process_time() - own_cpu) / elapsed,
        "legit_cpu": result.pop("legit_cpu") / elapsed,
    }
    return {
        **result,
        **shares,
        **{key.replace("cpu", "pct"): 100 * value for key, value in shares.items()},
        "rss_mb": peak,
        "db_mb": _db_mb(db),
        "tcp_mb": tcp_peak,
        "statuses": statuses,
        "probe_rate": sum(n for key, n in statuses.items() if isinstance(key, int)) / seconds,
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _probe_cost(before: dict[str, Any], during: dict[str, Any]) -> str:
    """What the probe cost, printed for every probe: the server's CPU per probe request
    (its CPU during, less what the legit polls cost at the rate measured before) against
    a legit 304, and how the probe's requests were answered."""
    per_poll = before["server_cpu"] / before["rate"] if before["rate"] else 0.0
    left = during["server_cpu"] - during["rate"] * per_poll
    per_request = 1000 * left / during["probe_rate"] if during["probe_rate"] else 0.0
    return (
        f"    cost: the probe sent {during['probe_rate']:.0f} req/s; each cost the server "
        f"about {per_request:.2f} ms of CPU (a legit 304: {1000 * per_poll:.2f} ms); "
        f"answers {during['statuses']}"
    )


def _why_missed(name: str, before: dict[str, Any], during: dict[str, Any]) -> str:
    """The numbers behind a missed 304 target: how much of the server's answer rate the
    probe took, and whether it was refused or could only be served."""
    served = sum(
        n
        for status, n in during["statuses"].items()
        if isinstance(status, int) and status not in (429, -1)
    )
    refused = during["statuses"].get(429, 0)
    total = during["rate"] + during["probe_rate"]
    share = during["probe_rate"] / total if total else 0.0
    lines = [
        f"    why: during '{name}' the server answered {total:.0f} req/s in all "
        f"(legit {during['rate']:.0f} + probe {during['probe_rate']:.0f}) against "
        f"{before['rate']:.0f} legit req/s before; the probe took {100 * share:.0f}% "
        f"of the answers ({served} served, {refused} refused with 429).",
        "         Server, legit client and probe share this machine's "
        f"{os.cpu_count()} cores (load average {os.getloadavg()[0]:.2f}): during the probe "
        f"the server used {100 * during['server_cpu']:.0f}% of a core "
        f"({100 * before['server_cpu']:.0f}% before), the probe client "
        f"{100 * during['probe_cpu']:.0f}%, the legit client {100 * during['legit_cpu']:.0f}% "
        f"({100 * before['legit_cpu']:.0f}% before).",
    ]
    if during["server_cpu"] < 0.5 and os.getloadavg()[0] > (os.cpu_count() or 1):
        lines.append(
            f"         The server was not CPU-bound ({100 * during['server_cpu']:.0f}% of a "
            "core): with more runnable processes than cores, the legit rate followed the "
            "scheduler's share, not the server's work; rerun on a quiet machine to judge."
        )
    if name.startswith(("instances", "junk")):
        lines.append(
            "         Each probe request is a GET with the legit SDK's own token from the same "
            "address: it costs what a legit poll costs, so it can only be rate-limited per "
            "token/address, which would refuse the legit SDK as well. Tracking new instances "
            "is capped (FLAGCORE_NEW_INSTANCES_RATE_LIMIT_PER_MINUTE); the 304s are not."
        )
    elif name.startswith("metrics"):
        lines.append(
            "         Each report is a 330 kB body parsed in one piece (json.loads holds the "
            "event loop and the GIL for its milliseconds, so polls queue behind it) and "
            "the probe's own client spends as much again serialising it on the same cores. "
            "Past one second's worth of reports (FLAGCORE_SDK_WRITE_BURST_SECONDS, 100 at "
            "Unleash's default 6,000 a minute) a (token, address) is refused before its "
            "body is read; what is served is the 100 a second that average allows."
        )
    elif refused:
        lines.append(
            "         The probe's refused requests cost a header parse and a 429 each; what "
            "remains is the probe client's and the connection churn's CPU on shared cores."
        )
    return "\n".join(lines)


async def _main(args: argparse.Namespace) -> int:
    folder = Path(tempfile.mkdtemp())
    db = folder / "hostile.db"
    env = {
        **os.environ,
        "FLAGCORE_DB": str(db),
        "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
        "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
        "FLAGCORE_RETENTION_INTERVAL_SECONDS": "2",
        **dict(setting.split("=", 1) for setting in args.env or ()),
    }
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "flagcore_http", "serve", "--port", str(port), "--no-access-log"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    failed = False
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(base + "/health", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        signal_secret = _seed(base, args.flags)
        body, headers = _request(
            base + "/api/client/features", headers={"Authorization": CLIENT, **SPEC}
        )
        _ETAG.append(headers["ETag"])
        size = len(json.dumps(body))
        print(
            f"flagcore hostile-load probes: {args.flags} flags, payload {size / 1000:.0f} kB, "
            f"{args.seconds:g} s a phase, scale {args.scale:g}, "
            f"load average {os.getloadavg()[0]:.2f}"
            + (f", settings {' '.join(args.env)}" if args.env else "")
        )
        probes: list[tuple[str, Probe, int]] = [
            ("junk filter values", _junk_filters, 800),
            ("instances, 4 kB ids", _instances, 8_000),
            ("instances, short ids", _short_instances, 20_000),
            ("metrics, 9,000 made-up flags", _metrics, 200),
            ("unknown tokens", _unknown_tokens, 10_500),
            ("signals, 100 kB", _signals(signal_secret), 5_000),
            ("slow UI forms, 200 connections", _slow_forms(args.seconds), 8),
            ("compressed bodies, 1 GB inflated", _compressed_bodies, 400),
            ("UI sign-in guesses", _SignInGuesses(), 10_500),
            # issue 24 #1, #2, #5: what one token and one address can store or hold open
            ("frontend metrics, new appNames", _frontend_app_flood, 400),
            ("frontend metrics, new appNames, 210 kB", _frontend_app_flood_in_limit, 1_000),
            ("metrics, buckets dated 2999", _future_buckets, 2_000),
        ]
        _FLOOD_BODY.extend((_flood_body(100), _flood_body(20)))
        _FUTURE_TOGGLES.append(_every_flag(3))
        attacks: list[tuple[str, Callable[[str, int, float], Awaitable[Any]], int]] = [
            ("streams never read", _idle_streams, 800),
        ]
        if args.only:  # a subset, to compare servers probe by probe (each probe unchanged)
            probes = [p for p in probes if any(word in p[0] for word in args.only)]
            attacks = [a for a in attacks if any(word in a[0] for word in args.only)]
        if any("compressed" in p[0] for p in probes):
            _BOMB.append(_gzip_bomb())
        runs: list[tuple[str, Callable[[str, int, float], Awaitable[Any]], int]] = [
            *((name, _as_attack(probe), count) for name, probe, count in probes),
            *attacks,
        ]
        quiet = await _phase(base, server.pid, db, args.seconds, None)
        print(
            f"{'phase':<32} {'304/s':>8} {'p99 ms':>7} {'RSS MB':>7} {'DB MB':>7} {'TCP MB':>7} "
            f"{'probe/s':>8} {'CPU%: server':>12} {'probe':>5} {'legit':>5}  statuses"
        )
        row = (
            "{:<32} {rate:>8.0f} {p99_ms:>7.1f} {rss_mb:>7.1f} {db_mb:>7.2f} {tcp_mb:>7.1f} "
            "{probe_rate:>8.0f} {server_pct:>12.0f} {probe_pct:>5.0f} {legit_pct:>5.0f}  "
            "{statuses}"
        )
        print(row.format("quiet", **quiet))
        for name, attack, count in runs:
            count = max(1, int(count * args.scale))
            before = await _phase(base, server.pid, db, args.seconds, None)
            during = await _phase(
                base, server.pid, db, args.seconds, attack(base, count, args.seconds)
            )
            await asyncio.sleep(2.5)  # one retention run
            after = await _phase(base, server.pid, db, args.seconds, None)
            for label, result in (("before", before), ("during", during), ("after", after)):
                print(row.format(f"{name}: {label}", **result))
            slowest = min(during["rate"], after["rate"]) / before["rate"]
            verdicts = {
                f"RSS < {RSS_TARGET_MB} MB": max(r["rss_mb"] for r in (before, during, after))
                < RSS_TARGET_MB,
                "304 rate within 20%": slowest >= 1 - RATE_TOLERANCE,
            }
            failed |= not all(verdicts.values())
            print(
                "    "
                + ", ".join(f"{k}: {'ok' if v else 'MISSED'}" for k, v in verdicts.items())
                + f" (lowest rate {100 * slowest:.0f}% of before)"
            )
            print(_probe_cost(before, during))
            if not verdicts["304 rate within 20%"]:
                print(_why_missed(name, before, during))
        final = await _phase(base, server.pid, db, args.seconds, None)
        print(row.format("end", **final))
        for _name, probe, _count in probes:
            if isinstance(probe, _SignInGuesses) and probe.session is not None:
                await probe.session.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument(
        "--env",
        action="append",
        metavar="NAME=VALUE",
        help="a server setting (repeatable), e.g. FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE=600; "
        "the defaults otherwise",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="WORD",
        help="run only the probes whose name holds WORD (repeatable), e.g. --only metrics",
    )
    parser.add_argument(
        "--stream-hold",
        type=float,
        default=15.0,
        help="seconds the idle-stream probe holds its streams (default 15: past the 10 s "
        "drain timeout)",
    )
    parser.add_argument("--legit", nargs=2, metavar=("URL", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--python-legit",
        action="store_true",
        help="drive the legit SDK with a Python aiohttp client instead of wrk (the default "
        "when wrk is installed); that client is CPU-bound itself, so the probe's client "
        "competing for the cores lowers its rate whatever the server does",
    )
    args = parser.parse_args()
    if args.legit:
        url, seconds = args.legit[0], float(args.legit[1])
        if shutil.which("wrk") and not args.python_legit:
            print(json.dumps(_legit_wrk(url, seconds)))
        else:
            print(json.dumps(asyncio.run(_legit(url, seconds))))
        return
    _STREAM_HOLD[0] = args.stream_hold
    global PYTHON_LEGIT
    PYTHON_LEGIT = args.python_legit or shutil.which("wrk") is None
    print(
        "legit SDK client: "
        + ("aiohttp (Python)" if PYTHON_LEGIT else "wrk -t1 -c4 (polls with If-None-Match)")
    )
    sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
