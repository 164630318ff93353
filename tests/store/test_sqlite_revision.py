"""The SQLite store's revision across connections: what `flagcore serve --workers N` needs."""

from __future__ import annotations

import time
from pathlib import Path

from flagcore.entities import TokenType
from flagcore.service import Service, TokenSpec
from flagcore_store_sqlite import SqliteStore


def _write(service: Service, index: int) -> None:
    secret = f"default:development.revision-test-{index:04d}-0123456789"
    spec = TokenSpec(TokenType.CLIENT, secret, ("default",), "development", "t", "test")
    service.tokens.ensure_tokens([spec])


def test_a_commit_by_another_store_on_the_file_moves_the_revision_at_once(
    tmp_path: Path,
) -> None:
    writer, reader = SqliteStore(tmp_path / "f.db"), SqliteStore(tmp_path / "f.db")
    try:
        service = Service(writer)
        for index in range(50):
            before = reader.revision()
            _write(service, index)
            # No delay: the very next call sees it, however soon it comes.
            assert reader.revision() == writer.revision() > before
            assert reader.revision() == reader.revision()  # and stays put without writes
    finally:
        writer.close()
        reader.close()


def test_without_a_wal_index_to_watch_the_store_still_sees_its_own_and_others_commits(
    tmp_path: Path,
) -> None:
    writer, reader = SqliteStore(tmp_path / "f.db"), SqliteStore(tmp_path / "f.db")
    # As if the index could not be mapped (the watches are let go after the connections).
    watches = [writer._watch, reader._watch]
    writer._watch = reader._watch = None
    try:
        service = Service(writer)
        _write(service, 1)
        assert writer.revision() == reader.revision() > 0  # first reads: from the table
        _write(service, 2)
        assert writer.revision() == 2  # its own commit: at once
        time.sleep(0.01)  # past the 2 ms a read is trusted
        assert reader.revision() == 2
    finally:
        writer.close()
        reader.close()
        for watch in watches:
            assert watch is not None
            watch.close()
