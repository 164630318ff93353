"""``pip install 'flagcore[server]'`` (the README's first command) brings the fast event
loop wherever it has wheels, so the server a user starts is the one measured (issue 26)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _server_extra() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["optional-dependencies"]["server"]]


def _uvloop() -> Requirement:
    (uvloop,) = [r for r in _server_extra() if r.name == "uvloop"]
    return uvloop


def test_the_server_extra_installs_uvloop_on_cpython_outside_windows() -> None:
    uvloop = _uvloop()
    assert uvloop.specifier.contains("0.19")
    assert uvloop.marker is not None
    here = {"sys_platform": sys.platform, "platform_python_implementation": "CPython"}
    for system in ("linux", "darwin"):
        assert uvloop.marker.evaluate({**here, "sys_platform": system})
    # Where uvloop has no wheels, asyncio serves (`--loop auto` falls back to it).
    assert not uvloop.marker.evaluate({**here, "sys_platform": "win32"})
    assert not uvloop.marker.evaluate({**here, "platform_python_implementation": "PyPy"})


def test_the_readme_first_command_installs_the_server_extra() -> None:
    first = (ROOT / "README.md").read_text().split("pip install", 1)[1].splitlines()[0]
    assert "'.[server]'" in first
