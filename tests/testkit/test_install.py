"""The test kit's documented install commands bring what the kit needs: pytest for the
fixtures, and the server's packages for ``flagcore_server``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
INSTALL = re.compile(r"pip install '(flagcore(?:\[([a-z,-]+)\])?)'(.*)")


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _packages(extras: list[str]) -> set[str]:
    """Every distribution ``flagcore[extras]`` installs, the extras' own extras followed."""
    table = _extras()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = {Requirement(r).name.lower() for r in project["dependencies"]}
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        assert extra in table, f"pip install names an extra pyproject.toml lacks: {extra}"
        seen.add(extra)
        for text in table[extra]:
            requirement = Requirement(text)
            if requirement.name == "flagcore":
                pending += [e for e in requirement.extras if e not in seen]
            else:
                found.add(requirement.name.lower())
    return found


def _documented_installs() -> list[tuple[list[str], str]]:
    text = (ROOT / "docs" / "testing-your-code.md").read_text()
    return [
        ((match[2] or "").split(","), match[3])
        for match in INSTALL.finditer(text)
        if match[2] is not None
    ]


def test_every_documented_install_of_the_kit_brings_pytest() -> None:
    installs = _documented_installs()
    assert len(installs) == 2  # the fixtures; and the fixtures with flagcore_server
    for extras, _comment in installs:
        assert "pytest" in _packages(extras), extras


def test_the_install_for_flagcore_server_brings_the_server_too() -> None:
    (extras,) = [
        extras for extras, comment in _documented_installs() if "flagcore_server" in comment
    ]
    packages = _packages(extras)
    # What `flagcore_http.pytest_server` imports and `flagcore serve` runs on.
    assert {"pytest", "aiohttp", "sqlite-utils", "prometheus-client", "jinja2"} <= packages


def test_pip_install_flagcore_alone_does_not_bring_pytest() -> None:
    # Why the extra exists: the plain install is for code that evaluates flags.
    assert "pytest" not in _packages([])
