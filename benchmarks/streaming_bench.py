"""Live updates, by hand: propagation, fan-out, and the cost of idle streams.

    .venv/bin/python benchmarks/streaming_bench.py                      # the issue's scale
    .venv/bin/python benchmarks/streaming_bench.py --connections 2000   # lighter

Runs `flagcore serve` as a subprocess on a fresh SQLite file and drives it from this
process with raw asyncio sockets (an SSE client here is a socket and a line reader, so the
measuring side stays light). It prints:

1. propagation: from an admin write's response to the moment each of ``--clients``
   streaming clients has the change, p50/p99 over ``--writes`` writes; beside it the same
   figure for SDKs polling every 15 s (Unleash's default), which is a matter of when the
   next poll falls: uniform over the interval, so p50 7.5 s and p99 14.85 s at best;
2. fan-out: ``--connections`` open streams on the one node, the server's memory per
   stream, and the time one write takes to reach all of them;
3. the cost of those idle streams on ``/api/client/features`` throughput (with and
   without them, same concurrency).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ADMIN = "*:*.bench-admin"
CLIENT = "default:development.bench-client"
FLAG = "/api/admin/projects/default/features"


class Server:
    def __init__(self, directory: Path) -> None:
        env = {
            **os.environ,
            "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
            "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
            "FLAGCORE_DB": str(directory / "flags.db"),
            "FLAGCORE_STREAMING_MAX_CONNECTIONS": "100000",
            # Past the default connection limit (1,000): the fan-out phase holds 5,000 streams.
            "FLAGCORE_MAX_CONNECTIONS": "20000",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flagcore_http", "serve", "--port", "0", "--no-access-log"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        self.port = int(match.group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def rss_kib(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        return int(match.group(1)) if match else 0

    def admin(self, method: str, path: str, body: Any = None) -> None:
        request = urllib.request.Request(
            self.url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": ADMIN, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=60)


class StreamReader:
    """One SSE client: notes when each event id arrives."""

    def __init__(self) -> None:
        self.arrivals: dict[int, float] = {}
        self.connected = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def run(self, port: int) -> None:
        reader, self.writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
        self.writer.write(
            (
                "GET /api/client/streaming HTTP/1.1\r\nHost: bench\r\n"
                f"Authorization: {CLIENT}\r\nAccept: text/event-stream\r\n\r\n"
            ).encode()
        )
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.startswith(b"id: "):
                self.arrivals[int(line[4:])] = time.perf_counter()
                self.connected.set()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()


async def _open(port: int, count: int) -> list[StreamReader]:
    readers = []
    for start in range(0, count, 200):  # in waves: the listen backlog is finite
        wave = [StreamReader() for _ in range(min(200, count - start))]
        for reader in wave:
            reader.task = asyncio.create_task(reader.run(port))
        await asyncio.wait_for(asyncio.gather(*(r.connected.wait() for r in wave)), 120)
        readers.extend(wave)
    return readers


async def _write(server: Server, state: str) -> float:
    path = f"{FLAG}/live/environments/development/{state}"
    await asyncio.to_thread(server.admin, "POST", path)
    return time.perf_counter()


async def _wait_all(readers: list[StreamReader], known: set[int], timeout: float) -> int:
    """The new event id once every reader has it."""
    deadline = time.perf_counter() + timeout
    while True:
        ids = set(readers[0].arrivals) - known
        if ids:
            event_id = max(ids)
            if all(event_id in r.arrivals for r in readers):
                return event_id
        if time.perf_counter() > deadline:
            raise TimeoutError("a change did not reach every client")
        await asyncio.sleep(0.001)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def propagation(server: Server, clients: int, writes: int) -> None:
    readers = await _open(server.port, clients)
    samples: list[float] = []
    known = set(readers[0].arrivals)
    for turn in range(writes):
        done = await _write(server, "off" if turn % 2 == 0 else "on")
        event_id = await _wait_all(readers, known, 10)
        known.add(event_id)
        samples.extend(r.arrivals[event_id] - done for r in readers)
    for reader in readers:
        reader.close()
    p50, p99 = _percentile(samples, 0.5) * 1000, _percentile(samples, 0.99) * 1000
    print(
        f"propagation, {clients} streaming clients x {writes} writes: "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(samples) * 1000:.1f} ms "
        f"(negative: the event arrived before the write's response)"
    )
    print("propagation, polling every 15 s (Unleash's default): p50 7500 ms, p99 14850 ms")


async def _features_throughput(server: Server, seconds: float, concurrency: int) -> float:
    request = (
        f"GET /api/client/features HTTP/1.1\r\nHost: bench\r\nAuthorization: {CLIENT}\r\n\r\n"
    ).encode()
    count = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal count
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        while time.perf_counter() < stop:
            writer.write(request)
            length = 0
            while True:
                line = await reader.readline()
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line == b"\r\n":
                    break
            await reader.readexactly(length)
            count += 1
        writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / seconds


async def fan_out_and_idle_cost(server: Server, connections: int) -> None:
    baseline = await _features_throughput(server, 5, 16)
    before = server.rss_kib()
    readers = await _open(server.port, connections)
    await asyncio.sleep(1)
    after = server.rss_kib()
    per_connection = (after - before) * 1024 / connections
    print(
        f"fan-out: {connections} open streams on one node; server RSS {before // 1024} MiB -> "
        f"{after // 1024} MiB, {per_connection / 1024:.1f} KiB per stream"
    )
    times = []
    known = set(readers[0].arrivals)
    for turn in range(5):
        done = await _write(server, "off" if turn % 2 == 0 else "on")
        event_id = await _wait_all(readers, known, 60)
        known.add(event_id)
        times.append(max(r.arrivals[event_id] for r in readers) - done)
    print(
        f"fan-out: one write reaches all {connections} streams in "
        f"{statistics.median(times) * 1000:.0f} ms (median of 5; worst {max(times) * 1000:.0f} ms)"
    )
    loaded = await _features_throughput(server, 5, 16)
    print(
        f"idle streams: /api/client/features {baseline:.0f} req/s without them, "
        f"{loaded:.0f} req/s with {connections} idle streams open ({loaded / baseline:.2f}x)"
    )
    for reader in readers:
        reader.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--connections", type=int, default=5000)
    parser.add_argument("--flags", type=int, default=50, help="flags in the payload")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        server = Server(Path(directory))
        try:
            for index in range(args.flags):
                server.admin("POST", FLAG, {"name": f"flag-{index}"})
            server.admin("POST", FLAG, {"name": "live"})
            server.admin("POST", f"{FLAG}/live/environments/development/on")
            await propagation(server, args.clients, args.writes)
            await fan_out_and_idle_cost(server, args.connections)
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
