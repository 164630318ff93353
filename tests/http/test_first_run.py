"""`flagcore serve` as a new user meets it: a real subprocess, its output, its exit code."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from flagcore_cli.main import main
from flagcore_cli.startup import cannot_listen
from tests.http.serving import command as _command
from tests.http.serving import env as _env
from tests.http.serving import start

# Started as the README starts it, a fresh interpreter each (not tests/forkserver.py).
FRESH_INTERPRETER = True

__all__ = ["start"]  # the fixture, imported to be used here

README = Path(__file__).parents[2] / "README.md"

ADMIN_RECOVERY = "*:*.recovery-secret-0123456789"


def _fails(*args: str, cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        _command(*args), capture_output=True, text=True, env=_env(**variables), cwd=cwd, timeout=30
    )
    assert result.returncode != 0, result
    return result


def test_a_taken_port_stops_the_start_before_any_database_or_token_exists(
    tmp_path: Path, start: Any
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        result = _fails("serve", "--port", port, "--db", str(tmp_path / "f.db"), cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"127.0.0.1:{port}" in lines[0]
    assert "FLAGCORE_PORT" in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "f.db").exists()
    # The next start is a first start: the admin token is made and shown then.
    server = start()
    token_line = server.next_line()
    assert token_line.startswith("admin API token, shown once: *:*.")
    secret = token_line.split(": ", 1)[1].strip()
    assert server.next_line().strip() == f"use it as: export ADMIN_TOKEN='{secret}'"
    assert server.next_line().startswith("first sign-in as user 'admin', a one-time link")
    assert server.request("GET", "/api/admin/projects", secret)[0] == 200
    assert "admin API token" not in server.stop()
    assert secret.partition(".")[2] not in server.stderr_path.read_text()  # stdout only


README_CLIENT_SECRET = "default:development.a-client-secret-to-try"


def test_the_readmes_client_token_example_works_as_written(start: Any) -> None:
    assert f"FLAGCORE_INIT_CLIENT_API_TOKENS={README_CLIENT_SECRET}" in README.read_text()
    server = start(
        FLAGCORE_INIT_CLIENT_API_TOKENS=README_CLIENT_SECRET,
        FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN_RECOVERY,
    )
    status, body = server.request("GET", "/api/client/features", README_CLIENT_SECRET)
    assert status == 200
    assert body["features"] == []
    # Listings hint at a secret with its scope and 2 characters, never more.
    _, listing = server.request("GET", "/api/admin/api-tokens", ADMIN_RECOVERY)
    hints = {t["tokenName"]: t["secretHint"] for t in listing["tokens"]}
    assert hints["init-client-1"] == "default:development.a-…"
    assert hints["init-admin-1"] == "*:*.re…"
    server.stop()
    assert "a-client-secret" not in server.stderr_path.read_text()


def test_a_short_init_secret_stops_a_first_start_naming_its_entry(tmp_path: Path) -> None:
    result = _fails(
        "serve",
        "--db",
        str(tmp_path / "f.db"),
        "--port",
        "0",
        cwd=tmp_path,
        FLAGCORE_INIT_CLIENT_API_TOKENS="default:development.secret",
    )
    assert result.stderr.strip().splitlines() == [
        "flagcore: FLAGCORE_INIT_CLIENT_API_TOKENS, entry 1 (default:development.…): the "
        "secret part (after project:environment.) has 6 characters; a chosen secret needs "
        "at least 16 (a long random one is best)"
    ]
    assert list(tmp_path.iterdir()) == []  # no database left behind, no token made


@pytest.mark.parametrize(
    ("args", "variables", "expected"),
    [
        ((), {"FLAGCORE_PORT": "abc"}, ["FLAGCORE_PORT='abc'", "0 to 65535"]),
        (("--port", "70000"), {}, ["--port='70000'", "0 to 65535"]),
        ((), {"FLAGCORE_AUTH": "off"}, ["FLAGCORE_AUTH='off'", "token or none"]),
        (("--host", "999.1.1.1"), {}, ["--host='999.1.1.1'", "not an IP address or host name"]),
        ((), {"FLAGCORE_HOST": "10.0.0.256"}, ["FLAGCORE_HOST='10.0.0.256'", "127.0.0.1"]),
        (("--auth", "open"), {}, ["--auth='open'", "token or none"]),
        ((), {"FLAGCORE_HEADER_TIMEOUT": "-1"}, ["FLAGCORE_HEADER_TIMEOUT='-1'", "seconds"]),
        ((), {"FLAGCORE_MAX_CONNECTIONS": "0"}, ["FLAGCORE_MAX_CONNECTIONS='0'", "1 to"]),
        (
            (),
            {"FLAGCORE_INIT_CLIENT_API_TOKENS": "development.secret-no-project"},
            ["FLAGCORE_INIT_CLIENT_API_TOKENS, entry 1", "project:environment.secret"],
        ),
        (
            (),
            {"FLAGCORE_INIT_CLIENT_API_TOKENS": "[]:development.secret-all"},
            ["FLAGCORE_INIT_CLIENT_API_TOKENS, entry 1 ([]:development.…)", "one project or *"],
        ),
        (
            (),
            {"FLAGCORE_INIT_CLIENT_API_TOKENS": "*:*.secret-everything"},
            ["FLAGCORE_INIT_CLIENT_API_TOKENS", "one environment", "ADMIN_API_TOKENS"],
        ),
        (
            (),
            {"FLAGCORE_INIT_ADMIN_API_TOKENS": "default:development.secret-admin"},
            ["FLAGCORE_INIT_ADMIN_API_TOKENS, entry 1", "client-shaped", "*:*.secret"],
        ),
        (
            (),
            {"FLAGCORE_INIT_CLIENT_API_TOKENS": "default:development.a b"},
            ["FLAGCORE_INIT_CLIENT_API_TOKENS, entry 1", "malformed"],
        ),
    ],
)
def test_a_bad_setting_stops_the_start_with_one_line_naming_it(
    tmp_path: Path,
    args: tuple[str, ...],
    variables: dict[str, str],
    expected: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The console script's entry point, in this process (a subprocess per case is slow;
    # the subprocess test below shows the same path end to end).
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("FLAGCORE_")]:
        monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    db = tmp_path / "f.db"
    assert main(["serve", "--db", str(db), "--port", "0", *args]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for part in expected:
        assert part in lines[0]
    assert "secret-" not in err  # a secret is never echoed
    assert out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_bad_setting_stops_the_real_command_before_it_creates_anything(tmp_path: Path) -> None:
    result = _fails(
        "serve",
        "--db",
        str(tmp_path / "f.db"),
        cwd=tmp_path,
        FLAGCORE_PORT="abc",
        FLAGCORE_INIT_ADMIN_API_TOKENS="default:development.secret-admin",
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "flagcore: FLAGCORE_PORT='abc': not a port number (0 picks a free port); "
        "use an integer from 0 to 65535"
    ]
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_an_init_token_for_a_missing_environment_leaves_no_database_behind(
    tmp_path: Path,
) -> None:
    db = tmp_path / "f.db"
    result = _fails(
        "serve",
        "--db",
        str(db),
        "--port",
        "0",
        cwd=tmp_path,
        FLAGCORE_INIT_CLIENT_API_TOKENS="default:development.first-one-0123456789,default:staging.another-0123456789",
    )
    assert result.stderr.strip().splitlines() == [
        "flagcore: FLAGCORE_INIT_CLIENT_API_TOKENS, entry 2 (default:staging.…): "
        "a client token needs an existing environment; got 'staging'"
    ]
    assert result.returncode == 2  # a wrong setting, as docs/http.md says
    assert list(tmp_path.iterdir()) == []


def test_a_first_start_makes_an_admin_user_and_prints_a_one_time_sign_in_link(
    start: Any,
) -> None:
    server = start()
    lines = [server.next_line() for _ in range(3)]
    secret = lines[0].split(": ", 1)[1].strip()
    link = lines[2].rsplit(" ", 1)[1].strip()
    assert link.startswith("http://127.0.0.1:")
    assert "/ui/set-password?token=" in link
    with urllib.request.urlopen(link, timeout=10) as page:
        assert "Set your password" in page.read().decode()
    _, users = server.request("GET", "/api/admin/user-admin", secret)
    assert [(u["username"], u["rootRole"]) for u in users["users"]] == [("admin", 1)]
    token = link.rsplit("=", 1)[1]
    assert token not in server.stderr_path.read_text()  # stdout only, like the token
    server.stop()
    # Users exist now: a later start makes none and prints no link.
    assert "sign-in" not in start().stop()


def test_the_first_sign_in_link_is_built_on_the_public_url_when_one_is_set(
    start: Any,
) -> None:
    server = start(FLAGCORE_PUBLIC_URL="https://flags.example.com")
    lines = [server.next_line() for _ in range(3)]
    link = lines[2].rsplit(" ", 1)[1].strip()
    assert link.startswith("https://flags.example.com/ui/set-password?token=")
    server.stop()


def test_a_lost_admin_token_is_recovered_with_the_init_variable(start: Any) -> None:
    first = start()
    assert first.next_line().startswith("admin API token, shown once")
    first.stop()
    second = start(FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN_RECOVERY)
    status, body = second.request("GET", "/api/admin/api-tokens", ADMIN_RECOVERY)
    assert status == 200
    assert sorted(t["tokenName"] for t in body["tokens"]) == ["admin", "init-admin-1"]
    assert "admin API token" not in second.stop()


def test_init_tokens_of_later_starts_get_names_of_their_own(start: Any) -> None:
    variables = {"FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN_RECOVERY}
    start(
        FLAGCORE_INIT_CLIENT_API_TOKENS="default:development.first-secret-0123456789", **variables
    ).stop()
    start(
        FLAGCORE_INIT_CLIENT_API_TOKENS="default:development.second-secret-0123456789", **variables
    ).stop()
    server = start(
        FLAGCORE_INIT_CLIENT_API_TOKENS="default:development.second-secret-0123456789", **variables
    )
    _, body = server.request("GET", "/api/admin/api-tokens", ADMIN_RECOVERY)
    names = sorted(t["tokenName"] for t in body["tokens"])
    assert names == ["init-admin-1", "init-client-1", "init-client-2"]
    for secret in (
        "default:development.first-secret-0123456789",
        "default:development.second-secret-0123456789",
    ):
        assert server.request("GET", "/api/client/features", secret)[0] == 200
    server.stop()


def test_tokens_made_while_authentication_was_off_are_announced_at_a_token_auth_start(
    start: Any,
) -> None:
    open_server = start("--auth", "none")
    assert "authentication is off" in open_server.next_line()
    status, made = open_server.request(
        "POST", "/api/admin/api-tokens", None, {"tokenName": "made-by-anyone", "type": "admin"}
    )
    assert status == 201
    open_server.stop()

    server = start()
    new_line = server.next_line()
    assert new_line.startswith("admin API token, shown once: *:*.")
    new_secret = new_line.split(": ", 1)[1].strip()
    assert server.request("GET", "/api/admin/projects", new_secret)[0] == 200
    # The token made without authentication still works, and the operator is told so.
    assert server.request("GET", "/api/admin/projects", made["secret"])[0] == 200
    server.stop()
    warning = server.stderr_path.read_text()
    assert "WARNING: 1 API token(s) were created while authentication was off" in warning
    assert "made-by-anyone" in warning
    # Once there is an admin token the server made, no further one is made.
    again = start()
    assert "admin API token" not in again.stop()
    assert "made-by-anyone" in again.stderr_path.read_text()


def test_help_names_every_setting_and_version_answers(tmp_path: Path) -> None:
    help_text = subprocess.run(
        _command("serve", "--help"), capture_output=True, text=True, check=True, env=_env()
    ).stdout
    for name in (
        "--host",
        "--port",
        "--db",
        "--auth",
        "--header-timeout",
        "--body-timeout",
        "--max-connections",
        "FLAGCORE_AUTH",
        "FLAGCORE_INIT_ADMIN_API_TOKENS",
        "FLAGCORE_INIT_CLIENT_API_TOKENS",
        "FLAGCORE_HEADER_TIMEOUT",
        "FLAGCORE_MAX_CONNECTIONS",
        "default:development.secret",
    ):
        assert name in help_text
    version = subprocess.run(
        _command("--version"), capture_output=True, text=True, check=True, env=_env()
    ).stdout
    assert re.fullmatch(r"flagcore \d+\.\d+\.\d+\S*\n", version)


async def test_the_api_accepts_two_tokens_of_one_name_as_unleash_does(api: Any) -> None:
    body = {"tokenName": "shop", "type": "client", "environment": "development"}
    first = await api.json("POST", "/api/admin/api-tokens", 201, json=body)
    second = await api.json("POST", "/api/admin/api-tokens", 201, json=body)
    assert first["secret"] != second["secret"]
    tokens = (await api.json("GET", "/api/admin/api-tokens"))["tokens"]
    assert [t["tokenName"] for t in tokens].count("shop") == 2


def test_init_tokens_are_created_all_or_none_on_an_existing_database(
    tmp_path: Path, start: Any
) -> None:
    db = tmp_path / "f.db"
    start(db=db, FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN_RECOVERY).stop()
    good, bad = "default:development.good-secret-0123456", "nowhere:development.bad-secret-0123456"
    result = _fails(
        "serve",
        "--db",
        str(db),
        "--port",
        "0",
        cwd=tmp_path,
        FLAGCORE_INIT_CLIENT_API_TOKENS=f"{good},{bad}",
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "flagcore: FLAGCORE_INIT_CLIENT_API_TOKENS, entry 2 (nowhere:development.…): "
        'there is no project "nowhere"'
    ]
    assert db.exists()  # an existing database is kept…
    server = start(db=db)
    assert server.request("GET", "/api/client/features", good)[0] == 401  # …unchanged
    _, body = server.request("GET", "/api/admin/api-tokens", ADMIN_RECOVERY)
    assert sorted(t["tokenName"] for t in body["tokens"]) == ["init-admin-1"]
    server.stop()


def test_a_database_that_cannot_be_opened_is_named_with_its_setting(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-directory" / "f.db"
    result = _fails("serve", "--db", str(missing), "--port", "0", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert str(missing) in line
    assert line.endswith("choose another with --db or FLAGCORE_DB")
    assert list(tmp_path.iterdir()) == []


def test_a_host_that_is_not_this_machines_is_named_with_its_setting(tmp_path: Path) -> None:
    # 192.0.2.1 is TEST-NET-1: a well-formed address no machine here has; nothing is sent.
    result = _fails(
        "serve", "--host", "192.0.2.1", "--port", "0", "--db", str(tmp_path / "f.db"), cwd=tmp_path
    )
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("flagcore: cannot listen on 192.0.2.1:0: '192.0.2.1' is not an address")
    assert "--host or FLAGCORE_HOST" in line
    assert "Unknown error" not in line
    assert list(tmp_path.iterdir()) == []


def test_a_host_name_that_does_not_resolve_is_explained_not_unknown_error() -> None:
    # What getaddrinfo raises for a name it cannot find (errno -2, EAI_NONAME).
    failure = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    message = str(cannot_listen("no-such-host", 4242, failure, "--port", "FLAGCORE_PORT"))
    assert message.startswith(
        "cannot listen on no-such-host:4242: 'no-such-host' is not an address of this "
        "machine (Name or service not known); set --host or FLAGCORE_HOST"
    )
    assert "Unknown error" not in message


def test_an_unknown_option_of_serve_gets_serves_usage_and_is_named(tmp_path: Path) -> None:
    result = _fails("serve", "--prot", "8080", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: flagcore serve ")
    assert "--no-access-log" in result.stderr  # serve's own options, not the command list
    assert result.stderr.splitlines()[-1] == (
        "flagcore serve: error: unrecognized arguments: --prot 8080 (did you mean --port?)"
    )
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []
