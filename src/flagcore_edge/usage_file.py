"""SDK usage the upstream could not take before a clean stop, kept in the data directory
for the next start: a clean stop while the upstream is away loses nothing.

One file per stopping process (``edge-usage-<pid>-<ns>.json``: ``--workers`` each write
their own), written atomically. Tokens are named by the SHA-256 of their secret, as in the
snapshot file: no secret is written (``seenTokens``, which are secrets, are left out). A
start claims each file by renaming it (one worker gets it, never two), reads it and
deletes it; its reports are sent once the edge knows their tokens' secrets again.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from flagcore_edge.forwarding import HeldReport
from flagcore_edge.snapshot_file import write_atomically

__all__ = ["USAGE_FILE_PREFIX", "load_usage_files", "write_usage_file"]

USAGE_FILE_PREFIX = "edge-usage-"
_FORMAT = 1
_log = logging.getLogger("flagcore_edge")


def write_usage_file(data_dir: Path, reports: list[HeldReport]) -> Path | None:
    """Keep ``reports`` for the next start; the file written (None: nothing to keep)."""
    if not reports:
        return None
    document = {
        "format": _FORMAT,
        "reports": [
            {
                "path": report.path,
                "token": report.digest,
                "environment": report.environment,
                "body": {k: v for k, v in report.body.items() if k != "seenTokens"},
            }
            for report in reports
        ],
    }
    path = data_dir / f"{USAGE_FILE_PREFIX}{os.getpid()}-{time.time_ns()}.json"
    write_atomically(path, document)
    return path


def _read(path: Path) -> list[HeldReport]:
    document: Any = json.loads(path.read_text(encoding="utf-8"))
    if document.get("format") != _FORMAT:
        raise ValueError(f"format {document.get('format')!r}, not {_FORMAT}")
    reports = []
    for kept in document["reports"]:
        if not isinstance(kept["body"], dict):
            raise ValueError("a report's body is not an object")
        reports.append(
            HeldReport(
                str(kept["path"]), None, kept["body"], str(kept["environment"]), str(kept["token"])
            )
        )
    return reports


def load_usage_files(data_dir: Path) -> list[HeldReport]:
    """Every report kept by the stops before this start (each file claimed, read and
    deleted); an unreadable file is set aside as ``*.broken`` with a warning."""
    reports: list[HeldReport] = []
    if not data_dir.is_dir():
        return reports
    for path in sorted(data_dir.glob(f"{USAGE_FILE_PREFIX}*.json")):
        claimed = path.with_name(f".claimed-{os.getpid()}-{path.name}")
        try:
            path.rename(claimed)
        except OSError:
            continue  # another worker claimed it first
        try:
            reports.extend(_read(claimed))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            _log.warning("kept usage %s could not be read (%s): set aside", path.name, error)
            claimed.rename(path.with_suffix(".broken"))
            continue
        claimed.unlink()
    if reports:
        _log.info("%d usage reports kept by the last stop, to send upstream", len(reports))
    return reports
