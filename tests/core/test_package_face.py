"""The package face: everything public is importable from ``flagcore`` and nothing else leaks."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

import flagcore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_name_in_all_is_exported_and_documented() -> None:
    for name in flagcore.__all__:
        assert hasattr(flagcore, name), name
    public = {name for name in vars(flagcore) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(flagcore, name)).__name__ == "module"}
    assert public - modules == set(flagcore.__all__) - {"__version__"}


def test_the_core_imports_no_adapter_or_io_framework() -> None:
    source = Path(flagcore.__file__).parent
    for module in source.rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        for forbidden in ("aiohttp", "sqlite", "flagcore_http", "flagcore_store_sqlite"):
            assert f"import {forbidden}" not in text, (module, forbidden)
            assert f"from {forbidden}" not in text, (module, forbidden)


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_examples_run(
    example: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [str(example)])  # examples read their arguments
    runpy.run_path(str(example), run_name="__main__")
    assert capsys.readouterr().out
