"""A soak of two PostgreSQL nodes through a database restart (issue 25).

Run by hand: ``.venv/bin/python benchmarks/outage_soak.py [--seconds 20] [--sdks 40]
[--away 1.0]``. Needs the ``test`` extra (pgserver starts a private PostgreSQL 16 that
this script stops and starts; ``tests/cluster/postgres_server.py`` does that part).
Everything runs on this machine, on 127.0.0.1.

1. Starts two ``flagcore serve`` nodes over one PostgreSQL database and makes 10 flags.
2. ``--sdks`` SDK threads, each an instance of app ``soak`` talking to one node (half
   each): registers, polls ``/api/client/features`` four times a second (If-None-Match,
   keep-alive), posts a metrics bucket every second, and every 3 to 6 s restarts (a new
   instance id, registered again). One more thread creates a flag every half second on
   the nodes in turn.
3. After a third of ``--seconds``, PostgreSQL is stopped, left away ``--away`` seconds
   and started again.
4. At the end (after the nodes' buffers are written) the database is read directly: every
   count of every accepted metrics post, every accepted registration and every
   acknowledged write must be there. Prints one table.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.cluster.postgres_server import PrivateServer  # noqa: E402

ADMIN = "*:*.soak-admin-secret-0123456789"
CLIENT = "default:development.soak-client-secret-0123456789"
FLAGS = [f"soak-flag-{i}" for i in range(10)]
FEATURES = "/api/admin/projects/default/features"


def _start(url: str, log: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")}
    env |= {
        "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
        "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
        # 40 SDKs from one address: the per-address rate limits are not what is measured.
        "FLAGCORE_METRICS_RATE_LIMIT_PER_MINUTE": "0",
        "FLAGCORE_REGISTER_RATE_LIMIT_PER_MINUTE": "0",
    }
    command = [sys.executable, "-m", "flagcore_http", "serve", "--port", "0", "--db", url]
    process = subprocess.Popen(
        [*command, "--no-access-log"],
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on http://" in line, line + log.read_text()
    return process, line.split("listening on ", 1)[1].split(" ", 1)[0]


class Connection:
    """One keep-alive HTTP connection to a node (reopened when the node closes it)."""

    def __init__(self, base: str) -> None:
        parts = urllib.parse.urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        for attempt in range(2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            try:
                self._conn.request(method, path, data, all_headers)
                response = self._conn.getresponse()
                return response.status, dict(response.headers), response.read()
            except (ConnectionError, http.client.HTTPException):
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


class Tally:
    """Everything the SDKs and the writer sent and were answered, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answers: Counter[tuple[str, int]] = Counter()
        self.counted: Counter[tuple[str, str]] = Counter()  # (flag, yes|no) of accepted posts
        self.registered: set[str] = set()
        self.written: set[str] = set()

    away = threading.Event()  # set from PostgreSQL's stop until its start returns

    def answer(self, kind: str, status: int) -> None:
        with self.lock:
            self.answers[kind, status] += 1
            if self.away.is_set():
                self.answers[kind + " while away", status] += 1


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sdk(base: str, index: int, tally: Tally, running: threading.Event) -> None:
    conn = Connection(base)
    rng = random.Random(index)
    generation = 0
    etag = ""
    next_metrics = time.monotonic() + rng.random()
    restart_at = time.monotonic() + 3 + rng.random() * 3
    registered_as = ""
    while running.is_set():
        instance = f"sdk-{index}-{generation}"
        identity = {"Authorization": CLIENT, "UNLEASH-APPNAME": "soak"}
        identity["UNLEASH-INSTANCEID"] = instance
        if registered_as != instance:
            registration = {
                "appName": "soak",
                "instanceId": instance,
                "sdkVersion": "unleash-client-node:6.1.0",
                "strategies": ["default", "flexibleRollout"],
                "started": _now(),
                "interval": 1000,
            }
            status = conn.request("POST", "/api/client/register", registration, identity)[0]
            tally.answer("register", status)
            if status == 202:
                with tally.lock:
                    tally.registered.add(instance)
            registered_as = instance
        headers = {**identity, "If-None-Match": etag} if etag else identity
        status, got, _body = conn.request("GET", "/api/client/features", None, headers)
        tally.answer("poll", status)
        if status == 200:
            etag = got.get("ETag", "")
        now = time.monotonic()
        if now >= next_metrics:
            toggles = {
                flag: {"yes": rng.randrange(50), "no": rng.randrange(50)}
                for flag in rng.sample(FLAGS, 4)
            }
            bucket = {"start": _now(), "stop": _now(), "toggles": toggles}
            body = {"appName": "soak", "instanceId": instance, "bucket": bucket}
            status = conn.request("POST", "/api/client/metrics", body, identity)[0]
            tally.answer("metrics", status)
            if status == 202:
                with tally.lock:
                    for flag, counts in toggles.items():
                        tally.counted[flag, "yes"] += counts["yes"]
                        tally.counted[flag, "no"] += counts["no"]
            next_metrics = now + 1.0
        if now >= restart_at:  # the SDK's process restarts: a new instance
            generation += 1
            restart_at = now + 3 + rng.random() * 3
        time.sleep(0.25)


def _writer(bases: list[str], tally: Tally, running: threading.Event) -> None:
    conns = [Connection(base) for base in bases]
    index = 0
    while running.is_set():
        name = f"soak-write-{index}"
        status = conns[index % 2].request(
            "POST", FEATURES, {"name": name}, {"Authorization": ADMIN}
        )[0]
        tally.answer("write", status)
        if status == 201:
            with tally.lock:
                tally.written.add(name)
        index += 1
        time.sleep(0.5)


def _held(base: str) -> bool:
    status, _headers, raw = Connection(base).request("GET", "/ready")
    return status != 200 or "usageBuffer" in json.loads(raw)


def _stored(url: str) -> tuple[Counter[tuple[str, str]], set[str], set[str]]:
    counted: Counter[tuple[str, str]] = Counter()
    with psycopg.connect(url) as connection:
        for flag, yes, no in connection.execute(
            "SELECT flag, yes, no FROM flag_metrics WHERE app_name = 'soak'"
        ):
            counted[flag, "yes"] += yes
            counted[flag, "no"] += no
        instances = {
            r[0]
            for r in connection.execute(
                "SELECT instance_id FROM client_instances WHERE app_name = 'soak'"
            )
        }
        flags = {r[0] for r in connection.execute("SELECT name FROM flags")}
    return counted, instances, flags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sdks", type=int, default=40)
    parser.add_argument("--away", type=float, default=1.0, help="seconds PostgreSQL is down")
    args = parser.parse_args()

    server = PrivateServer()
    url = server.database_url("postgres")
    logs = Path(tempfile.mkdtemp(prefix="flagcore-soak-"))
    nodes = [_start(url, logs / f"node-{i}.log") for i in range(2)]
    bases = [base for _process, base in nodes]
    try:
        admin = Connection(bases[0])
        for flag in FLAGS:
            assert (
                admin.request("POST", FEATURES, {"name": flag}, {"Authorization": ADMIN})[0] == 201
            )
        time.sleep(0.5)
        tally = Tally()
        running = threading.Event()
        running.set()
        threads = [
            threading.Thread(target=_sdk, args=(bases[i % 2], i, tally, running))
            for i in range(args.sdks)
        ]
        threads.append(threading.Thread(target=_writer, args=(bases, tally, running)))
        for thread in threads:
            thread.start()
        time.sleep(args.seconds / 3)
        stopped = time.monotonic()
        tally.away.set()
        server.stop()
        time.sleep(args.away)
        server.start()
        tally.away.clear()
        back = time.monotonic() - stopped
        time.sleep(max(0.0, args.seconds * 2 / 3 - back))
        running.clear()
        for thread in threads:
            thread.join(timeout=60)
        deadline = time.monotonic() + 60
        while any(_held(base) for base in bases) and time.monotonic() < deadline:
            time.sleep(0.1)
        stored, instances, flags = _stored(url)
    finally:
        for process, _base in nodes:
            process.terminate()
            process.wait(timeout=30)
        server.close()

    lost = sum((tally.counted - stored).values())
    extra = sum((stored - tally.counted).values())
    answers = tally.answers
    rows = [
        (
            "SDKs, seconds, database away (s, stop to start)",
            f"{args.sdks}, {args.seconds:g}, {back:.2f}",
        ),
        ("polls answered 200/304", f"{answers['poll', 200] + answers['poll', 304]}"),
        (
            "polls answered otherwise",
            f"{sum(n for (k, s), n in answers.items() if k == 'poll' and s not in (200, 304))}",
        ),
        ("metrics posts accepted (202)", f"{answers['metrics', 202]}"),
        (
            "metrics posts refused",
            f"{sum(n for (k, s), n in answers.items() if k == 'metrics' and s != 202)}",
        ),
        ("registrations accepted (202)", f"{answers['register', 202]}"),
        (
            "registrations refused",
            f"{sum(n for (k, s), n in answers.items() if k == 'register' and s != 202)}",
        ),
        (
            "metrics posts / registrations while away (202)",
            f"{answers['metrics while away', 202]} / {answers['register while away', 202]}",
        ),
        ("evaluation counts sent in accepted posts", f"{sum(tally.counted.values())}"),
        ("counts lost / counted twice", f"{lost} / {extra}"),
        ("registered instances missing", f"{len(tally.registered - instances)}"),
        (
            "writes acknowledged (201) / refused (503)",
            f"{answers['write', 201]} / {answers['write', 503]}",
        ),
        ("acknowledged writes missing", f"{len(tally.written - flags)}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"node logs: {logs}")


if __name__ == "__main__":
    main()
