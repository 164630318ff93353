"""Every setting of ``flagcore serve`` is read from one table, listed by ``--help`` and
documented in docs/http.md with the default the server really uses."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from flagcore.service import RetentionSettings
from flagcore_http import config
from flagcore_http.config import SETTINGS, ServerConfig, Setting
from tests.http.serving import command, env

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = re.compile(r"FLAGCORE_[A-Z0-9_]+(?![*A-Za-z0-9_])")  # not FLAGCORE_INIT_*_...


def _help() -> str:
    return subprocess.run(
        command("serve", "--help"), capture_output=True, text=True, check=True, env=env()
    ).stdout


def _settings_rows() -> list[str]:
    """The rows of docs/http.md's settings table (``| flag | variable | default |``)."""
    lines = (ROOT / "docs" / "http.md").read_text().splitlines()
    start = lines.index("| flag | variable | default |") + 2
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def test_every_variable_the_settings_module_names_is_in_the_table() -> None:
    # A variable read outside the table would be missing from --help and the docs.
    named = set(VARIABLE.findall(Path(config.__file__).read_text()))
    assert named == {s.variable for s in SETTINGS}
    assert len({s.variable for s in SETTINGS}) == len(SETTINGS)
    flags = [s.flag for s in SETTINGS if s.flag is not None]
    assert len(set(flags)) == len(flags)


def test_help_lists_every_setting_with_its_flag_variable_and_default() -> None:
    text = " ".join(_help().split())  # argparse wraps lines; compare the words
    for setting in SETTINGS:
        assert setting.variable in text
        default = setting.default or "none"
        if setting.flag is not None:
            assert f"{setting.flag} {setting.metavar}" in text
            assert f"(default {default}; {setting.variable})" in text
        else:
            assert f"(default {default})" in text
    assert "--no-access-log" in text


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.variable)
def test_docs_http_md_has_a_row_for_the_setting_with_its_flag_and_default(
    setting: Setting,
) -> None:
    rows = [row for row in _settings_rows() if f"`{setting.variable}`" in row]
    assert len(rows) == 1, f"docs/http.md: one settings row for {setting.variable}"
    flag_cell, variable_cell, default_cell = rows[0].split(" | ")[:3]
    if setting.flag is not None:
        assert flag_cell.startswith(f"| `{setting.flag}"), rows[0]
    else:
        assert flag_cell == "|", rows[0]
    assert variable_cell.startswith(f"`{setting.variable}`")
    expected = f"`{setting.default}`" if setting.default else "none"
    assert default_cell.startswith(expected), rows[0]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.variable)
def test_the_default_shown_is_the_default_the_server_uses(setting: Setting) -> None:
    defaults = ServerConfig()
    if setting.field.startswith("retention."):
        actual = getattr(RetentionSettings(), setting.field.removeprefix("retention."))
    else:
        actual = getattr(defaults, setting.field)
    if setting.default:
        assert setting.read(setting.default, setting.variable) == actual
    else:  # shown as "none": the field is empty by default
        assert actual in (None, ())
    assert getattr(ServerConfig.from_env({}), setting.field.partition(".")[0]) == getattr(
        defaults, setting.field.partition(".")[0]
    )


# A value other than the default for every setting that has a flag.
OTHER_VALUES = {
    "FLAGCORE_HOST": "::1",
    "FLAGCORE_PORT": "4243",
    "FLAGCORE_DB": "/tmp/other.db",
    "FLAGCORE_DB_POOL_SIZE": "3",
    "FLAGCORE_DB_POOL_TIMEOUT": "1.5",
    "FLAGCORE_DB_CONNECT_TIMEOUT": "2.5",
    "FLAGCORE_DB_REVISION_CHECK_INTERVAL": "7",
    "FLAGCORE_AUTH": "none",
    "FLAGCORE_HEADER_TIMEOUT": "3",
    "FLAGCORE_BODY_TIMEOUT": "4",
    "FLAGCORE_MAX_CONNECTIONS": "50",
    "FLAGCORE_TRUSTED_PROXIES": "10.0.0.0/8",
    "FLAGCORE_SDK_FETCH_MODE": "streaming",
    "FLAGCORE_FRONTEND_ORIGINS": "https://app.example",
    "FLAGCORE_TRUST_FORWARDED_FOR": "true",
    "FLAGCORE_WORKERS": "2",
    "FLAGCORE_LOOP": "asyncio",
    "FLAGCORE_METRICS_PORT": "9100",
    "FLAGCORE_LOG_FORMAT": "json",
    "FLAGCORE_ACCESS_LOG": "all",
    "FLAGCORE_LOG_LEVEL": "debug",
}


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.flag], ids=lambda s: s.variable)
def test_a_flag_and_its_variable_fill_the_same_field(setting: Setting) -> None:
    value = OTHER_VALUES[setting.variable]
    from_flag = ServerConfig.from_env({}, **{setting.field: value})
    from_variable = ServerConfig.from_env({setting.variable: value})
    assert from_flag == from_variable != ServerConfig()


def test_the_docs_settings_table_names_no_variable_the_server_does_not_read() -> None:
    documented = {v for row in _settings_rows() for v in VARIABLE.findall(row.split(" | ")[1])}
    assert documented == {s.variable for s in SETTINGS}
