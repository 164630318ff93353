"""Integrations benchmark (issue 31): event committed → delivered, with 10 integrations.

Run by hand: ``.venv/bin/python benchmarks/integrations_bench.py [--integrations 10]
[--events 100] [--pause 0.05] [--db sqlite|postgres]``.

A real server (`create_app` over a SQLite file, or a fresh database on the test suite's
private PostgreSQL) on 127.0.0.1 and one local receiver with a path per integration.
Flags are created one at a time through the admin API, ``--pause`` seconds apart; an
event is committed when its ``POST`` is answered. For each (integration, event) the
latency is the receiver's arrival time minus that answer's time; printed as p50, p99
and max over every pair (the issue's target: p99 under 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import ClientSession, web

from flagcore.entities import TokenType
from flagcore.ports import Store
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.bench-admin-secret"


async def _run(store: Store, integrations: int, events: int, pause: float) -> list[float]:
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    arrivals: dict[tuple[str, str], float] = {}

    async def receive(request: web.Request) -> web.Response:
        body = await request.json()
        arrivals[(request.match_info["which"], body["featureName"])] = time.perf_counter()
        return web.Response(text="ok")

    receiver = web.Application()
    receiver.router.add_post("/hook/{which}", receive)
    receiver_runner = web.AppRunner(receiver)
    await receiver_runner.setup()
    await web.TCPSite(receiver_runner, "127.0.0.1", 0).start()
    receiver_port = receiver_runner.addresses[0][1]

    config = ServerConfig(integration_allow_list=("127.0.0.1",))
    server_runner = web.AppRunner(create_app(service, config))
    await server_runner.setup()
    await web.TCPSite(server_runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{server_runner.addresses[0][1]}"
    committed: dict[str, float] = {}
    try:
        async with ClientSession(headers={"Authorization": ADMIN}) as client:
            for which in range(integrations):
                body = {
                    "provider": "webhook",
                    "enabled": True,
                    "parameters": {"url": f"http://127.0.0.1:{receiver_port}/hook/{which}"},
                    "events": ["feature-created"],
                }
                async with client.post(base + "/api/admin/addons", json=body) as answer:
                    assert answer.status == 201, await answer.text()
            for index in range(events):
                name = f"bench-{index}"
                async with client.post(
                    base + "/api/admin/projects/default/features", json={"name": name}
                ) as answer:
                    assert answer.status == 201, await answer.text()
                    committed[name] = time.perf_counter()
                await asyncio.sleep(pause)
            deadline = time.perf_counter() + 60
            while len(arrivals) < integrations * events and time.perf_counter() < deadline:
                await asyncio.sleep(0.05)
    finally:
        await server_runner.cleanup()
        await receiver_runner.cleanup()
    missing = integrations * events - len(arrivals)
    if missing:
        raise SystemExit(f"{missing} deliveries never arrived")
    return [at - committed[name] for (_which, name), at in arrivals.items()]


def _store(kind: str, directory: Path) -> Store:
    if kind == "postgres":
        from flagcore_store_postgres import PostgresStore

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.cluster.postgres_server import fresh_database

        return PostgresStore(fresh_database())
    return SqliteStore(directory / "bench.db")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--integrations", type=int, default=10)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--pause", type=float, default=0.05)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = _store(options.db, Path(directory))
        try:
            latencies = asyncio.run(
                _run(store, options.integrations, options.events, options.pause)
            )
        finally:
            store.close()
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"{options.db}, {options.integrations} integrations, {options.events} events "
        f"({len(latencies)} deliveries): committed → delivered p50 {p50 * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
