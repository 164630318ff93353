"""``FLAGCORE_GC_PAUSE``: the server's switch for pausing the collector on a cache miss."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flagcore_cli.main import main
from flagcore_http import ServerConfig
from flagcore_http.config import ConfigError


def test_the_server_pauses_the_collector_unless_told_not_to() -> None:
    assert ServerConfig.from_env({}).gc_pause is True
    for spelling in ("off", "OFF", " false ", "0"):
        assert ServerConfig.from_env({"FLAGCORE_GC_PAUSE": spelling}).gc_pause is False
    for spelling in ("on", "True", "1"):
        assert ServerConfig.from_env({"FLAGCORE_GC_PAUSE": spelling}).gc_pause is True


@pytest.mark.parametrize("raw", ["maybe", "", "yes please", "2"])
def test_a_gc_pause_that_is_not_on_or_off_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(ConfigError) as refused:
        ServerConfig.from_env({"FLAGCORE_GC_PAUSE": raw})
    assert str(refused.value) == f"FLAGCORE_GC_PAUSE={raw!r}: not a switch; use on or off"


def test_a_bad_gc_pause_stops_the_start_before_anything_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("FLAGCORE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FLAGCORE_GC_PAUSE", "sometimes")
    assert main(["serve", "--db", str(tmp_path / "f.db"), "--port", "0"]) == 2
    out, err = capsys.readouterr()
    assert err.strip().splitlines() == [
        "flagcore: FLAGCORE_GC_PAUSE='sometimes': not a switch; use on or off"
    ]
    assert out == ""
    assert list(tmp_path.iterdir()) == []
