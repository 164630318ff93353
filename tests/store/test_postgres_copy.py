"""``flagcore copy`` between SQLite and PostgreSQL: everything, ids and revision kept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_sql.copying import TABLES
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.cluster.nodes import ADMIN, CLIENT, Node, stop
from tests.cluster.postgres_server import fresh_database
from tests.forkserver import popen
from tests.http.serving import command, env
from tests.store.test_upgrade_from_v006 import _everything, _fill


def _copy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command("copy", *args), capture_output=True, text=True, env=env(), timeout=120
    )


def _source(path: Path) -> None:
    store = SqliteStore(path)
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    service.tokens.create_token(
        "sdk", "client", projects=["default"], environment="development", secret=CLIENT
    )
    with store.transaction() as tx:
        _fill(tx)
    for index in range(30):
        service.flags.create_flag("default", f"flag-{index}")
    store.close()


def _serve(db: str, tmp_path: Path) -> subprocess.Popen[str]:
    with (tmp_path / f"serve-{abs(hash(db))}.txt").open("w") as sink:
        return popen(
            command("serve", "--port", "0", "--db", db, "--no-access-log"),
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            env=env(),
        )


def test_a_sqlite_database_copied_to_postgresql_and_back_keeps_everything(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source.db"
    _source(source)
    url = fresh_database()

    done = _copy("--from", str(source), "--to", url)
    assert done.returncode == 0, done.stderr
    assert "counts match" in done.stdout
    assert "digest matches" in done.stdout

    sqlite_store, pg_store = SqliteStore(source), PostgresStore(url, listen=False)
    try:
        expected = _everything(sqlite_store)
        assert _everything(pg_store) == expected  # ids, revision and every part kept
        # New ids grow on from the copied ones.
        with pg_store.transaction() as tx:
            event = tx.append_event("feature-created", "bob", feature_name="flag-0")
        assert event.id == expected["revision"] + 1
    finally:
        sqlite_store.close()
        pg_store.close()

    back = tmp_path / "back.db"
    done = _copy("--from", url, "--to", str(back))
    assert done.returncode == 0, done.stderr
    copied_back, original = SqliteStore(back), SqliteStore(source)
    try:
        with copied_back.transaction() as tx:
            assert len(tx.list_events(limit=1000)) == len(expected["events"]) + 1
        assert _everything(original)["flags"] == _everything(copied_back)["flags"]
    finally:
        copied_back.close()
        original.close()


def test_a_non_empty_target_is_refused_unless_forced(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    _source(source)
    url = fresh_database()
    assert _copy("--from", str(source), "--to", url).returncode == 0
    with psycopg.connect(url) as connection:
        before = connection.execute("SELECT count(*) FROM flags").fetchone()

    refused = _copy("--from", str(source), "--to", url)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        refused.stderr.strip().splitlines()[0]
    ]  # one line
    assert "not empty" in refused.stderr
    assert "--force" in refused.stderr
    assert "Traceback" not in refused.stderr

    forced = _copy("--from", str(source), "--to", url, "--force")
    assert forced.returncode == 0, forced.stderr
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM flags").fetchone() == before


def test_a_missing_source_is_one_clear_line(tmp_path: Path) -> None:
    done = _copy("--from", str(tmp_path / "nope.db"), "--to", str(tmp_path / "t.db"))
    assert done.returncode == 1
    assert "no SQLite database" in done.stderr
    assert not (tmp_path / "t.db").exists()


def test_a_server_on_the_copy_serves_the_same_bytes_and_etag(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    _source(source)
    url = fresh_database()
    assert _copy("--from", str(source), "--to", url).returncode == 0
    processes = [_serve(str(source), tmp_path), _serve(url, tmp_path)]
    try:
        nodes = [
            Node(p, tmp_path / f"serve-{abs(hash(db))}.txt")
            for p, db in zip(processes, (str(source), url), strict=True)
        ]
        answers = [n.features() for n in nodes]
        assert [a[0] for a in answers] == [200, 200]
        assert answers[0][2] == answers[1][2]
        assert answers[0][1]["ETag"] == answers[1][1]["ETag"]
    finally:
        for process in processes:
            stop(process)


def test_the_copied_tables_are_every_table_of_the_schema(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "fresh.db")
    store.close()
    import sqlite3

    with sqlite3.connect(tmp_path / "fresh.db") as connection:
        names = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    assert names - {"_sqlite_migrations", "sqlite_sequence"} == {t for t, _ in TABLES}


def test_on_a_terminal_the_copy_shows_a_progress_bar(tmp_path: Path) -> None:
    import os

    source = tmp_path / "source.db"
    _source(source)
    main, terminal = os.openpty()
    try:
        done = subprocess.run(
            command("copy", "--from", str(source), "--to", str(tmp_path / "copy.db")),
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            env=env(),
            timeout=120,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
    assert done.returncode == 0
    assert b"\r[" in shown
    assert b"##############################]" in shown  # the bar reaches its end
    assert b"rows (" in shown
