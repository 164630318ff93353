"""``flagcore import`` (a file, or --from-unleash against a live server) and
``flagcore export``: real SQLite files, a real server started by a fixture."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flagcore.model import Constraint
from flagcore.service import Service
from flagcore.wire import structure
from flagcore_cli.main import main
from flagcore_client.unleash_admin import read_unleash
from flagcore_http.bodies import parse_json
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import ADMIN
from tests.http.serving import Running, start

__all__ = ["start"]  # the fixture, used by name below

DATA = Path(__file__).parent.parent / "data" / "unleash-export-8.2"
EXPORT_FILE = DATA / "unleash-export-8.2.json"
SEGMENTS = json.loads((DATA / "unleash-export-8.2.segments.json").read_text())["segments"]


@contextmanager
def opened(db: Path) -> Iterator[Service]:
    store = SqliteStore(db)
    try:
        yield Service(store)
    finally:
        store.close()


def with_segments(db: Path) -> None:
    with opened(db) as service:
        for segment in SEGMENTS:
            service.segments.create_segment(
                segment["name"], structure(segment["constraints"], tuple[Constraint, ...])
            )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_importing_a_file_twice_creates_once_then_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "flags.db"
    with_segments(db)
    code, out, _ = run(capsys, "import", str(EXPORT_FILE), "--db", str(db))
    assert code == 0
    assert "60 created, 0 updated, 0 unchanged" in out
    with opened(db) as service:
        revision = service.store.revision()
    code, out, _ = run(capsys, "import", str(EXPORT_FILE), "--db", str(db))
    assert code == 0
    assert "0 created, 0 updated, 60 unchanged" in out
    with opened(db) as service:
        assert service.store.revision() == revision
        assert len(service.flags.list_flags("default")) == 60


def test_a_bad_file_is_refused_one_line_per_problem_and_leaves_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = json.loads(EXPORT_FILE.read_text())
    broken["featureStrategies"][2]["parameters"] = ["rollout"]
    broken["features"][1]["name"] = 12
    del broken["features"][5]["name"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    db = tmp_path / "new.db"
    code, _, err = run(capsys, "import", str(path), "--db", str(db))
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith("flagcore: refused, nothing was written (3 problems)")
    assert sorted(lines[1:]) == [
        "  $.featureStrategies[2].parameters: expected an object, got an array",
        "  $.features[1].name: expected a string, got a number",
        "  $.features[5].name: required field missing",
    ]
    assert not db.exists()


def test_a_file_naming_missing_segments_is_refused_saying_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "flags.db"
    with opened(db):
        pass
    code, _, err = run(capsys, "import", str(EXPORT_FILE), "--db", str(db))
    assert code == 2
    assert "mig-seg-1" in err
    with opened(db) as service:
        assert service.flags.list_flags() == []


def test_a_conflicting_flag_exits_3_and_overwrite_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "flags.db"
    with_segments(db)
    with opened(db) as service:
        service.flags.create_flag("default", "mig.flag-07", type="permission")
    code, _, err = run(capsys, "import", str(EXPORT_FILE), "--db", str(db))
    assert code == 3
    assert "mig.flag-07" in err
    assert "$.features[7]" in err
    code, out, _ = run(capsys, "import", str(EXPORT_FILE), "--db", str(db), "--overwrite")
    assert code == 0
    assert "59 created, 1 updated" in out


def test_a_dry_run_shows_what_would_change_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "flags.db"
    with_segments(db)
    code, out, _ = run(capsys, "import", str(EXPORT_FILE), "--db", str(db), "--dry-run")
    assert code == 0
    assert "would import into default/development: 60 created" in out
    assert "  create mig.flag-00" in out
    with opened(db) as service:
        assert service.flags.list_flags() == []


def test_export_writes_a_file_that_imports_elsewhere_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "flags.db"
    with_segments(db)
    assert run(capsys, "import", str(EXPORT_FILE), "--db", str(db))[0] == 0
    out_file = tmp_path / "out.json"
    code, _, _ = run(capsys, "export", "--db", str(db), "--output", str(out_file))
    assert code == 0
    other = tmp_path / "other.db"
    with_segments(other)
    code, out, _ = run(
        capsys, "import", str(out_file), "--db", str(other), "--environment", "production"
    )
    assert code == 0
    assert "60 created" in out
    with opened(db) as one, opened(other) as two:
        first = one.client.engine("development")
        second = two.client.engine("production")
        for n in range(60):
            name = f"mig.flag-{n:02d}"
            for user in ("user-1", "user-2", "user-13", "beta-7"):
                context: dict[str, Any] = {"userId": user, "sessionId": f"s-{user}"}
                assert first.is_enabled(name, context) == second.is_enabled(name, context)
                assert first.get_variant(name, context) == second.get_variant(name, context)


def _populate(server: Running) -> None:
    """A source server with a project, a segment, a custom strategy, tag types, and a flag
    with strategies in two environments, tags and a dependency."""

    def ok(method: str, path: str, body: Any = None) -> Any:
        status, answer = server.request(method, path, ADMIN, body)
        assert status < 300, (path, status, answer)
        return answer

    ok("POST", "/api/admin/projects", {"id": "shop", "name": "Shop"})
    segment = ok(
        "POST",
        "/api/admin/segments",
        {
            "name": "beta",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["u1", "u2"]}],
        },
    )
    ok("POST", "/api/admin/strategies", {"name": "by-region", "parameters": []})
    ok("POST", "/api/admin/tag-types", {"name": "team"})
    flags = "/api/admin/projects/shop/features"
    ok("POST", flags, {"name": "cart", "tags": [{"type": "team", "value": "shop"}]})
    ok("POST", flags, {"name": "cart-ui"})
    ok("PUT", f"{flags}/cart-ui/dependencies", [{"feature": "cart"}])
    for environment, rollout in (("development", "100"), ("production", "25")):
        strategies = f"{flags}/cart/environments/{environment}/strategies"
        ok(
            "POST",
            strategies,
            {"name": "userWithId", "parameters": {"userIds": "u9"}, "segments": [segment["id"]]},
        )
        ok(
            "POST",
            strategies,
            {"name": "flexibleRollout", "parameters": {"rollout": rollout, "stickiness": "userId"}},
        )
        ok("POST", strategies, {"name": "by-region", "parameters": {}})
        ok("POST", f"{flags}/cart/environments/{environment}/on")


def test_from_unleash_copies_a_live_server_once_and_reruns_change_nothing(
    start: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start(db=tmp_path / "source.db", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    _populate(server)
    target = tmp_path / "target.db"
    args = ("import", "--from-unleash", server.url, "--token", ADMIN, "--db", str(target))
    code, out, err = run(capsys, *args, "--dry-run")
    assert code == 0, err
    assert "would copy from Unleash" in out
    assert "  create flag cart" in out
    assert not target.exists()
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "flags: 2 created, 0 updated, 0 unchanged" in out
    assert "segments: 1 created" in out
    with opened(target) as service:
        details = service.flags.get_flag("shop", "cart")
        assert [t.value for t in details.tags] == ["shop"]
        by_environment = {e.environment.name: e for e in details.environments}
        production = by_environment["production"]
        assert production.enabled
        assert [s.name for s in production.strategies] == [
            "userWithId",
            "flexibleRollout",
            "by-region",
        ]
        assert production.strategies[1].parameters["rollout"] == "25"
        (beta,) = service.segments.list_segments()
        assert production.strategies[0].segments == (beta.id,)
        child = service.flags.get_flag("shop", "cart-ui").flag
        assert [d.feature for d in child.dependencies] == ["cart"]
        revision = service.store.revision()
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "flags: 0 created, 0 updated, 2 unchanged" in out
    with opened(target) as service:
        assert service.store.revision() == revision
    server.stop()


def test_an_unreachable_unleash_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        "import",
        "--from-unleash",
        "http://127.0.0.1:9",
        "--token",
        ADMIN,
        "--db",
        str(tmp_path / "t.db"),
    )
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        "flagcore: cannot reach Unleash at http://127.0.0.1:9: [Errno 111] Connection refused"
    ]


def test_a_wrong_token_says_so(
    start: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start(db=tmp_path / "source.db", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    code, _, err = run(
        capsys,
        "import",
        "--from-unleash",
        server.url,
        "--token",
        "*:*.wrong-secret",
        "--db",
        str(tmp_path / "t.db"),
    )
    assert code == 1
    assert "answered 401 to GET /api/admin/projects" in err
    server.stop()


def test_reading_a_live_server_reports_progress_flag_by_flag(start: Any, tmp_path: Path) -> None:
    server = start(db=tmp_path / "source.db", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    _populate(server)
    seen: list[tuple[str, int, int]] = []
    source = read_unleash(
        server.url,
        ADMIN,
        lambda what, done, total: seen.append((what, done, total)),
        parse=lambda raw, what: parse_json(raw, what=what),
    )
    assert seen == [("flags", 1, 2), ("flags", 2, 2)]
    assert sorted(source.flags) == ["default", "shop"]
    server.stop()


def test_the_token_may_come_from_the_environment(
    start: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start(db=tmp_path / "source.db", FLAGCORE_INIT_ADMIN_API_TOKENS=ADMIN)
    monkeypatch.setenv("UNLEASH_API_TOKEN", ADMIN)
    target = tmp_path / "target.db"
    code, out, err = run(capsys, "import", "--from-unleash", server.url, "--db", str(target))
    assert code == 0, err
    assert "projects: 0 created, 0 updated, 1 unchanged" in out
    server.stop()
