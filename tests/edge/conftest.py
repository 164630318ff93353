from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.edge.processes import EdgeProcess, UpstreamServer


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[UpstreamServer]:
    server = UpstreamServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def edges(tmp_path: Path) -> Iterator[list[EdgeProcess]]:
    """Edges a test starts (``EdgeProcess(tmp_path, name)``), each stopped cleanly after."""
    started: list[EdgeProcess] = []
    try:
        yield started
    finally:
        for edge in started:
            edge.stop()
