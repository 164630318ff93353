"""Real files, real processes: acknowledged writes survive SIGKILL; parallel writers lose none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]


def _writer(db: Path, prefix: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.writer", str(db), prefix, str(count)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_a_killed_writer_loses_no_acknowledged_write(tmp_path: Path) -> None:
    db = tmp_path / "flags.db"
    SqliteStore(db).close()  # schema in place before the race starts
    writer = _writer(db, "killed", 100_000)
    acknowledged = []
    assert writer.stdout is not None
    for line in writer.stdout:
        acknowledged.append(line.split()[1])
        if len(acknowledged) == 60:
            writer.send_signal(signal.SIGKILL)
            break
    writer.wait(timeout=30)
    # Lines the writer printed before the kill landed may still sit in the pipe or in
    # our read buffer: they are acknowledged writes too, so drain them.
    acknowledged.extend(line.split()[1] for line in writer.stdout)
    writer.stdout.close()
    assert writer.stderr is not None
    writer.stderr.close()
    assert writer.returncode == -signal.SIGKILL

    store = SqliteStore(db)
    try:
        assert store.integrity_check() == "ok"
        service = Service(store)
        stored = {flag.name for flag in service.flags.list_flags()}
        assert set(acknowledged) <= stored
        # At most the write in flight when the kill landed is there without an acknowledgement.
        assert len(stored - set(acknowledged)) <= 1
        for name in acknowledged:
            assert len(service.strategies.list_strategies("default", name, "development")) == 1
    finally:
        store.close()


def test_two_processes_writing_one_file_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "flags.db"
    SqliteStore(db).close()
    writers = [_writer(db, prefix, 80) for prefix in ("left", "right")]
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert "locked" not in err
        assert len(out.splitlines()) == 80
    store = SqliteStore(db)
    try:
        assert store.integrity_check() == "ok"
        names = {flag.name for flag in Service(store).flags.list_flags()}
        assert names == {f"{side}-{i}" for side in ("left", "right") for i in range(80)}
        # Every write is an event too: 2 per flag (created, strategy added).
        assert store.revision() == 2 * 160
    finally:
        store.close()
