"""The edge's data directory: every followed token's last payload and the frontend
tokens the upstream accepted, in one JSON file written atomically (a temporary file,
fsync, rename), so a start with the upstream down serves what the last run had.
Tokens are named by the SHA-256 of their secret: the file holds no secret."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from flagcore_edge.snapshots import Scope, TokenSnapshot
from flagcore_edge.tokens import FollowedToken, FrontendToken

__all__ = ["SNAPSHOT_FILE", "load_snapshot_file", "write_atomically", "write_snapshot_file"]

SNAPSHOT_FILE = "edge-snapshot.json"
_FORMAT = 1
_log = logging.getLogger("flagcore_edge")


def write_snapshot_file(
    data_dir: Path, followed: list[FollowedToken], frontends: list[FrontendToken]
) -> None:
    document = {
        "format": _FORMAT,
        "clients": {
            token.digest: {
                "body": token.snapshot.body.decode("utf-8"),
                "etag": token.snapshot.etag,
                "fetchedAt": token.snapshot.fetched_at,
                "legacy": None if token.legacy is None else _kept(token.legacy),
            }
            for token in followed
            if token.snapshot is not None
        },
        "frontends": {
            token.digest: {
                "environment": token.scope.environment,
                "projects": token.scope.projects,
                "checkedAt": token.checked_at,
            }
            for token in frontends
        },
    }
    write_atomically(data_dir / SNAPSHOT_FILE, document)


def write_atomically(path: Path, document: Any) -> None:
    """``document`` as JSON at ``path``: a temporary file in the same folder, fsync,
    rename; a crash leaves the old file or the new, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".edge-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as sink:
            json.dump(document, sink, ensure_ascii=False, separators=(",", ":"))
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _kept(snapshot: TokenSnapshot) -> dict[str, Any]:
    return {
        "body": snapshot.body.decode("utf-8"),
        "etag": snapshot.etag,
        "fetchedAt": snapshot.fetched_at,
    }


def _read(kept: Any) -> TokenSnapshot | None:
    if kept is None:
        return None
    return TokenSnapshot(kept["body"].encode("utf-8"), kept["etag"], kept["fetchedAt"])


def load_snapshot_file(data_dir: Path) -> tuple[list[FollowedToken], list[FrontendToken]]:
    """What the last run kept; nothing (and a warning) for a missing or unreadable file."""
    path = data_dir / SNAPSHOT_FILE
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != _FORMAT:
            raise ValueError(f"format {document.get('format')!r}, not {_FORMAT}")
        followed = [
            FollowedToken(
                digest,
                None,
                _read(kept),
                legacy=_read(kept.get("legacy")),
                wants_legacy=kept.get("legacy") is not None,
            )
            for digest, kept in document["clients"].items()
        ]
        frontends = [
            FrontendToken(
                digest,
                Scope(
                    kept["environment"],
                    None if kept["projects"] is None else tuple(kept["projects"]),
                ),
                kept["checkedAt"],
            )
            for digest, kept in document["frontends"].items()
        ]
    except FileNotFoundError:
        return [], []
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        _log.warning("the snapshot file %s could not be read (%s); starting empty", path, error)
        return [], []
    return followed, frontends
