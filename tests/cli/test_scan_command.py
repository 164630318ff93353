"""``flagcore scan``: flag names found in a fixture repository written in six languages
(tests/data/scan-repo), ``.gitignore`` files respected, JSON for CI and the exit status
``--fail-on-unknown`` gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flagcore.service import Service
from flagcore_cli.main import main
from flagcore_store_sqlite import SqliteStore

REPO = Path(__file__).parent.parent / "data" / "scan-repo"


def _scan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["scan", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _scan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status, out, err = _scan(capsys, str(REPO), "--json", *argv)
    assert status == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def _places(report: dict[str, Any], name: str) -> list[tuple[str, int, str | None]]:
    flag = next(f for f in report["flags"] if f["name"] == name)
    return [(r["file"], r["line"], r["call"]) for r in flag["references"]]


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """The server's flags: most the code uses, one archived, one no code names."""
    path = tmp_path / "flags.db"
    store = SqliteStore(path)
    try:
        service = Service(store)
        for name in ("new-checkout", "checkout-colour", "dark-mode", "summer-banner", "unused"):
            service.flags.create_flag("default", name)
        service.flags.create_flag("default", "fast-payments")
        service.archive.archive_flag("default", "fast-payments")
    finally:
        store.close()
    return path


def test_sdk_and_openfeature_calls_are_found_in_every_language_with_file_and_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _scan_json(capsys)
    assert _places(report, "new-checkout") == [
        ("csharp/Checkout.cs", 5, "IsEnabled"),
        ("go/main.go", 11, "IsEnabled"),
        ("py/checkout.py", 9, "is_enabled"),
        ("ruby/checkout.rb", 1, "is_enabled?"),
        ("web/src/App.tsx", 4, "useFlag"),
    ]
    assert _places(report, "dark-mode") == [
        ("csharp/Checkout.cs", 7, "GetBooleanValueAsync"),
        ("go/main.go", 16, "BooleanValue"),
        ("java/com/example/Checkout.java", 7, "getBooleanValue"),
        ("ruby/checkout.rb", 4, "fetch_boolean_value"),
        ("web/src/server.js", 6, "getBooleanValue"),
    ]
    calls = {r[2] for r in _places(report, "checkout-colour")}
    assert calls == {"GetVariant", "getVariant", "get_variant", "useVariant"}
    assert ("py/checkout.py", 12, "get_boolean_value") in _places(report, "fast-payments")


def test_names_built_at_run_time_and_files_of_other_languages_are_not_references(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = {flag["name"] for flag in _scan_json(capsys)["flags"]}
    assert not any(name.startswith(("dynamic-", "flag-")) for name in names)
    assert "not-code-markdown" not in names


def test_gitignore_files_are_respected_at_every_depth_with_negations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _scan_json(capsys)
    names = {flag["name"] for flag in report["flags"]}
    # build/, node_modules/, *.generated.ts at the root; legacy.js in web/.gitignore
    assert names.isdisjoint(
        {"ignored-build", "ignored-node-module", "ignored-generated", "ignored-nested-rule"}
    )
    assert _places(report, "kept-generated") == [("web/src/keep.generated.ts", 1, "isEnabled")]
    assert report["filesScanned"] == 8


def test_a_tree_without_gitignore_scans_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy)
    (copy / ".gitignore").unlink()
    _, out, _ = _scan(capsys, str(copy), "--json")
    names = {flag["name"] for flag in json.loads(out)["flags"]}
    assert {"ignored-build", "ignored-node-module", "ignored-generated"} <= names
    assert "ignored-nested-rule" not in names  # web/.gitignore still applies


def test_with_the_servers_flags_typos_archived_and_unreferenced_flags_are_named(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _scan_json(capsys, "--db", str(database))
    status = {flag["name"]: flag["status"] for flag in report["flags"]}
    assert status["new-checkout"] == "active"
    assert status["fast-payments"] == "archived"
    assert report["unknown"] == ["kept-generated", "new-chekout"]
    assert report["unreferenced"] == ["unused"]
    # A string literal equal to a flag's name is a reference, without a call.
    assert _places(report, "summer-banner") == [("py/checkout.py", 5, None)]


def test_fail_on_unknown_exits_3_when_code_names_a_flag_the_server_lacks(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _scan(capsys, str(REPO), "--db", str(database), "--fail-on-unknown")
    assert status == 3
    assert "names in code that no flag has: 2\n  kept-generated\n  new-chekout\n" in out
    assert "flags no code references: 1\n  unused\n" in out
    clean = REPO / "csharp"
    status, _, _ = _scan(capsys, str(clean), "--db", str(database), "--fail-on-unknown")
    assert status == 0


def test_the_text_report_lists_each_flag_with_its_places(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = _scan(capsys, str(REPO))
    assert status == 0
    assert out.startswith("6 flag names in 22 places (8 files scanned)\n")
    assert "new-checkout: 5\n  csharp/Checkout.cs:5  IsEnabled\n" in out
    assert "names in code that no flag has" not in out  # no server asked


def test_several_paths_are_named_from_where_the_command_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = _scan(capsys, str(REPO / "go"), str(REPO / "ruby"), "--json")
    files = {r["file"] for f in json.loads(out)["flags"] for r in f["references"]}
    assert files == {f"{REPO}/go/main.go", f"{REPO}/ruby/checkout.rb"}


def test_several_processes_find_what_one_finds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(1500):  # three chunks of files
        (tmp_path / f"m{i}.py").write_text(f'x = client.is_enabled("flag-{i % 7}")\n')
    one = _scan(capsys, str(tmp_path), "--json", "--jobs", "1")[1]
    two = _scan(capsys, str(tmp_path), "--json", "--jobs", "2")[1]
    assert one == two
    assert json.loads(one)["filesScanned"] == 1500


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "name the directories to scan"),
        (["nowhere"], "is not a directory"),
        ([str(REPO), "--fail-on-unknown"], "--fail-on-unknown needs the server's flags"),
        ([str(REPO), "--token", "x"], "--token goes with --url"),
        ([str(REPO), "--url", "http://127.0.0.1:9"], "--url needs --token"),
        ([str(REPO), "--upload", "repo"], "--upload needs --url"),
        ([str(REPO), "--jobs", "0"], "--jobs must be at least 1"),
        ([str(REPO), "--db", "missing.db"], "there is no SQLite database"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _scan(capsys, *argv)
    assert status == 2
    assert out == ""
    assert words in err
    assert err.count("\n") == 1


def test_an_unreachable_server_is_exit_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _scan(capsys, str(REPO), "--url", "http://127.0.0.1:9", "--token", "x")
    assert status == 1
    assert "cannot reach the server" in err
