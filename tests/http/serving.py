"""`flagcore serve` as a real subprocess on a free port, for tests that read its output."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.forkserver import popen

__all__ = ["Running", "command", "env", "start"]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "flagcore_http", *args]


def env(**variables: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("FLAGCORE_")}
    return {**base, **variables}


class Running:
    """A started server: its URL, what it printed so far, and how to stop it."""

    def __init__(self, process: Any, stderr: Path) -> None:
        self.process = process
        self.stderr_path = stderr
        assert process.stdout is not None
        self.first_line = process.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", self.first_line)
        assert match, self.first_line + stderr.read_text()
        self.url = match.group(1)

    def next_line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline()

    def stop(self) -> str:
        """SIGTERM; the rest of stdout. The server must exit 0."""
        self.process.send_signal(signal.SIGTERM)
        rest, _ = self.process.communicate(timeout=20)
        assert self.process.returncode == 0, rest + self.stderr_path.read_text()
        return rest

    def request(self, method: str, path: str, token: str | None, body: Any = None) -> Any:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = token
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


@pytest.fixture
def start(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Start servers; forked from the fork server (tests/forkserver.py) unless the test
    module sets ``FRESH_INTERPRETER = True`` (first starts, worker processes)."""
    started: list[Running] = []
    spawn: Any = subprocess.Popen if getattr(request.module, "FRESH_INTERPRETER", False) else popen

    def start(*args: str, db: Path | None = None, **variables: str) -> Running:
        stderr = tmp_path / f"stderr-{len(started)}.txt"
        with stderr.open("w") as sink:
            process = spawn(
                command("serve", "--port", "0", "--db", str(db or tmp_path / "f.db"), *args),
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
                env=env(**variables),
            )
        running = Running(process, stderr)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=20)
