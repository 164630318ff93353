"""``flagcore explain``: the decision as a tree or JSON, from a SQLite file, a JSON file or a
running server; bad input is one line and exit status 2."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from flagcore import Engine
from flagcore.hashing import percentage_bucket
from flagcore.model import Constraint, Payload, Strategy, Variant
from flagcore.service import Service
from flagcore_cli import explain_command
from flagcore_cli import main as cli
from flagcore_cli.main import main
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import ADMIN, CLIENT, Api

CONTEXT = ["--context", "properties.plan=pro", "--context", "properties.country=NO"]


def _store_checkout(service: Service) -> None:
    """Two strategies (a user list, a rollout with a constraint, a segment and variants)
    and flag variants, on in development."""
    segment = service.segments.create_segment("nordics", [Constraint("country", "IN", ("NO",))])
    service.flags.create_flag("default", "checkout")
    service.strategies.add_strategy(
        "default", "checkout", "development", Strategy("userWithId", {"userIds": "7"})
    )
    service.strategies.add_strategy(
        "default",
        "checkout",
        "development",
        Strategy(
            "flexibleRollout",
            {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
            constraints=(Constraint("plan", "IN", ("pro",)),),
            segments=(segment.id,),
            variants=(
                Variant("blue", 500, stickiness="default", payload=Payload("string", "b")),
                Variant("green", 500, stickiness="default"),
            ),
        ),
    )
    service.variants.set_flag_variants(
        "default", "checkout", "development", (Variant("old", 1000, stickiness="default"),)
    )
    service.environments.set_environment_enabled("default", "checkout", "development", True)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "flags.db"
    store = SqliteStore(path)
    try:
        _store_checkout(Service(store))
    finally:
        store.close()
    return path


def _user(wanted: range) -> str:
    return next(u for u in map(str, range(100, 1000)) if percentage_bucket("checkout", u) in wanted)


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["explain", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_tree_names_the_deciding_strategy_its_bucket_and_the_variant(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = _user(range(1, 51))
    status, out, err = _explain(
        capsys, "checkout", "--db", str(database), "--context", f"userId={user}", *CONTEXT
    )

    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == '"checkout" is ON in "development"'
    assert "\x1b[" not in out  # piped: no colour
    assert any('2. "flexibleRollout" → matches ← decides' in line for line in lines)
    bucket = percentage_bucket("checkout", user)
    assert any(f'"{user}" hashes to bucket {bucket} → yes' in line for line in lines)
    assert any('"plan" IN ["pro"]: the context has "pro" → yes' in line for line in lines)
    assert any('segment 1 "nordics" → yes' in line for line in lines)
    assert lines[-1].startswith("└─ variants of strategy 2: ")


def test_json_output_is_the_explanation(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _err = _explain(
        capsys, "checkout", "--db", str(database), "--context", "userId=7", "--json"
    )

    assert status == 0
    data = json.loads(out)
    assert data["environment"] == "development"
    assert data["enabled"] is True
    assert data["matchedStrategy"] == 0
    assert data["variant"]["name"] == "old"
    assert data["variantChoice"]["origin"] == "flag"
    assert [s["name"] for s in data["strategies"]] == ["userWithId", "flexibleRollout"]


def test_a_client_features_file_explains_as_an_engine_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {
        "version": 2,
        "features": [
            {
                "name": "beta",
                "enabled": True,
                "strategies": [
                    {
                        "name": "default",
                        "constraints": [
                            {"contextName": "appName", "operator": "IN", "values": ["shop"]}
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "features.json"
    path.write_text(json.dumps(payload))
    engine = Engine.from_client_features(payload)

    for app in ("shop", "admin"):
        status, out, _ = _explain(
            capsys, "beta", "--file", str(path), "--context", f"appName={app}", "--json"
        )
        assert status == 0
        assert json.loads(out)["enabled"] is engine.is_enabled("beta", {"appName": app})


async def test_a_running_server_is_asked_with_its_token(
    api: Api, service: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    _store_checkout(service)
    url = str(api.client.make_url("/")).rstrip("/")

    def explain(*argv: str) -> int:
        return main(["explain", "checkout", "--url", url, *argv])

    status = await asyncio.to_thread(explain, "--token", CLIENT, "--context", "userId=7", "--json")
    out = capsys.readouterr().out
    assert status == 0
    assert json.loads(out)["enabled"] is True
    assert json.loads(out)["environment"] == "development"

    status = await asyncio.to_thread(explain, "--token", "default:development.wrong")
    assert status == 2
    assert capsys.readouterr().err.count("\n") == 1

    status = await asyncio.to_thread(explain, "--token", CLIENT, "--env", "production")
    err = capsys.readouterr().err
    assert status == 2
    assert "production" in err

    # An admin token (which the client API refuses): the server explains the flag itself.
    status = await asyncio.to_thread(explain, "--token", ADMIN, "--context", "userId=7", "--json")
    by_server = json.loads(capsys.readouterr().out)
    assert status == 0
    assert by_server["enabled"] is True
    assert by_server["variant"]["name"] == "old"
    assert by_server["strategies"][0]["strategyResult"] is True

    status = await asyncio.to_thread(explain, "--token", ADMIN, "--env", "nowhere")
    err = capsys.readouterr().err
    assert status == 2
    assert "nowhere" in err
    assert err.count("\n") == 1

    status = await asyncio.to_thread(main, ["explain", "nope", "--url", url, "--token", ADMIN])
    assert status == 2
    assert '"nope"' in capsys.readouterr().err


async def test_the_url_sdks_are_given_works_as_well_as_the_servers_root(
    api: Api, service: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    # The README points SDKs at http://host:4242/api; explain takes that URL too.
    _store_checkout(service)
    root = str(api.client.make_url("/")).rstrip("/")
    for url in (root, root + "/", root + "/api", root + "/api/"):
        for token in (CLIENT, ADMIN):  # the client API, and the server's own explain
            argv = ["explain", "checkout", "--url", url, "--token", token, "--json"]
            status = await asyncio.to_thread(main, [*argv, "--context", "userId=7"])
            captured = capsys.readouterr()
            assert status == 0, (url, captured.err)
            assert json.loads(captured.out)["enabled"] is True


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["nope"], '"nope"'),
        (["checkout", "--env", "nowhere"], '"nowhere"'),
        (["checkout", "--context", "plan=pro"], "properties.plan"),
        (["checkout", "--context", "userId"], "FIELD=VALUE"),
        (["checkout", "--context", "userId=" + "x" * 3000], "2000 characters"),
        (["checkout", "--context", "currentTime=soon"], "currentTime"),
        (["checkout", "--context", "properties.=x"], "property name"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(
    database: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    flag, *rest = argv
    status, out, err = _explain(capsys, flag, "--db", str(database), *rest)

    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("flagcore explain: ")
    assert said in err
    assert "Traceback" not in err


def test_bad_sources_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    not_a_payload = tmp_path / "list.json"
    not_a_payload.write_text("[1, 2]")
    cases: list[list[Any]] = [
        ["--db", str(tmp_path / "missing.db")],
        ["--file", str(tmp_path / "missing.json")],
        ["--file", str(junk)],
        ["--file", str(not_a_payload)],
        ["--url", "ftp://example.com", "--token", "x"],
        ["--url", "http://127.0.0.1:9"],
        ["--file", str(junk), "--token", "x"],
    ]
    for source in cases:
        status, out, err = _explain(capsys, "checkout", *source)
        assert status == 2, (source, err)
        assert (out, err.count("\n")) == ("", 1), source
    for argv in ([], ["checkout"]):
        status = main(["explain", *argv])
        err = capsys.readouterr().err
        assert status == 2
        assert err.count("\n") == 1, err
    # Nothing was created where --db pointed.
    assert not (tmp_path / "missing.db").exists()


def test_control_characters_in_values_are_escaped(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _explain(
        capsys, "checkout", "--db", str(database), "--context", "properties.plan=\x1b[31mred"
    )

    assert status == 0
    assert "\x1b" not in out
    assert '"\\u001b[31mred"' in out


def test_an_unreachable_server_is_one_line_and_exit_status_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = _explain(capsys, "checkout", "--url", "http://127.0.0.1:9", "--token", "x")

    assert status == 1
    assert (out, err.count("\n")) == ("", 1)
    assert err.startswith("flagcore explain: cannot reach the server")


class _Terminal(io.StringIO):
    """Output that says it is a terminal, as a real one does."""

    def isatty(self) -> bool:
        return True


def test_colour_on_a_terminal_unless_no_color_is_set(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["explain", "checkout", "--db", str(database), "--context", "userId=7"]
    monkeypatch.delenv("NO_COLOR", raising=False)
    terminal = _Terminal()
    assert explain_command.run(cli.build_parser().parse_args(args), out=terminal) == 0
    assert "\x1b[32mON\x1b[0m" in terminal.getvalue()

    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    assert explain_command.run(cli.build_parser().parse_args(args), out=plain) == 0
    assert "\x1b[" not in plain.getvalue()
    assert plain.getvalue().splitlines()[0] == '"checkout" is ON in "development"'
