"""A node killed with SIGKILL in the middle of concurrent writes loses no acknowledged write."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import time
from pathlib import Path

from tests.cluster.nodes import node, start_node, stop
from tests.cluster.postgres_server import fresh_database

FEATURES = "/api/admin/projects/default/features"


def test_no_acknowledged_write_is_lost_when_a_node_is_killed(tmp_path: Path) -> None:
    url = fresh_database()
    processes = [start_node(url, tmp_path), start_node(url, tmp_path, db_in_env=True)]
    try:
        a, b = (node(p) for p in processes)
        assert "(database postgresql://postgres@" in b.start_line  # FLAGCORE_DB, no password
        acknowledged: list[str] = []

        def write(index: int) -> None:
            target = a if index % 2 else b
            name = f"w-{index}"
            try:
                status, _h, _raw = target.request("POST", FEATURES, {"name": name})
            except OSError:  # the killed node's connection dropped: not acknowledged
                return
            if status == 201:
                acknowledged.append(name)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(write, i) for i in range(160)]
            time.sleep(0.3)
            a.process.send_signal(signal.SIGKILL)
            for future in futures:
                future.result(timeout=60)
        assert len(acknowledged) > 40  # b kept writing throughout
        status, _h, raw = b.request("GET", FEATURES)
        assert status == 200
        stored = {f["name"] for f in json.loads(raw)["features"]}
        assert set(acknowledged) <= stored
        # b serves every one of them to SDKs too
        served = {f["name"] for f in json.loads(b.features()[2])["features"]}
        assert set(acknowledged) <= served
    finally:
        for process in processes:
            stop(process)
