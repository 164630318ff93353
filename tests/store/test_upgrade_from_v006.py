"""A SQLite file made before the shared SQL layer opens with it and keeps all its data.

``tests/store/legacy_v006`` is the SQLite store and schema exactly as shipped before
issue #13 (migrations ``m001`` … ``m006`` run by sqlite-utils). A database it made and
filled must open with today's `SqliteStore` running only the migrations shipped since
(``m007``: token ids and shorter hints), read back the same through the port, and take
new writes.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import attrs

from flagcore.entities import (
    Action,
    ActionExecution,
    ActionKind,
    ActionOutcome,
    ActionSet,
    ActionState,
    ApiToken,
    ClientInstance,
    FlagDefinition,
    FlagEnvironment,
    FlagMetrics,
    Project,
    StrategyDefinition,
    StrategyPlacement,
    Tag,
    TagType,
    TokenType,
)
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant
from flagcore.ports import Store, Transaction
from flagcore.service import Service
from flagcore_store_sqlite import SqliteStore
from tests.store.legacy_v006.store import SqliteStore as LegacySqliteStore

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DEV = "development"


def _fill(tx: Transaction) -> None:
    tx.save_project(Project("web", "Web", "shop", T0))
    tx.save_flag(FlagDefinition("parent", "web", created_at=T0))
    tx.save_flag(
        FlagDefinition(
            "checkout", "web", "experiment", "new", True, True, T0, None, (Dependency("parent"),)
        )
    )
    tx.save_flag(FlagDefinition("old", "default", created_at=T0, archived_at=T0))
    tx.save_flag_environment(FlagEnvironment("checkout", DEV, True, (Variant("blue", 1000),)))
    segment = tx.create_segment(
        Segment(0, "eu", (Constraint("region", "IN", ("eu",)),)), created_by="alice"
    )
    tx.save_strategy(
        StrategyPlacement(
            "checkout",
            DEV,
            Strategy(
                "flexibleRollout",
                {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
                (Constraint("userId", "IN", ("a", "b")),),
                (segment.id,),
                id="s-1",
                sort_order=0,
            ),
        )
    )
    tx.save_strategy_definition(StrategyDefinition("byTenant", "tenants"))
    tx.save_tag_type(TagType("area", "where"))
    tx.add_flag_tag("checkout", Tag("area", "payments"))
    tx.save_token(ApiToken("sdk", TokenType.CLIENT, "hash", "*:development.ab", ("web",), DEV))
    endpoint = tx.create_signal_endpoint("deploys", "from CI", True, T0)
    token = tx.create_signal_endpoint_token(endpoint.id, "ci", "signal-hash", T0)
    signal = tx.add_signal(endpoint.id, token.id, {"deploy": {"ok": True}}, T0)
    action = Action(ActionKind.TOGGLE_FEATURE_OFF, "checkout", DEV, 1)
    action_set = tx.create_action_set(
        ActionSet(0, "kill", "web", endpoint.id, (action,), (), True, None, T0)
    )
    tx.add_action_execution(
        ActionExecution(
            0,
            action_set,
            signal,
            ActionState.SUCCESS,
            (ActionOutcome(action, ActionState.SUCCESS),),
        )
    )
    tx.add_flag_metrics([FlagMetrics("checkout", "shop", DEV, T0, 3, 4, {"blue": 3})])
    tx.save_client_instance(
        ClientInstance("shop", "i-1", DEV, "unleash-python:6", ("default",), T0, 15, T0)
    )
    tx.append_event("feature-created", "alice", feature_name="checkout", data={"n": 1})


def _everything(store: Store) -> dict[str, Any]:
    with store.transaction(write=False) as tx:
        return {"revision": store.revision(), **everything_in(tx)}


def everything_in(tx: Transaction) -> dict[str, Any]:
    """What `_fill` wrote and the defaults, read back through the port."""
    endpoints = tx.list_signal_endpoints()
    flags = tx.list_flags(archived=None)
    return {
        "projects": tx.list_projects(),
        "environments": tx.list_environments(),
        "flags": flags,
        "flag_environments": tx.list_flag_environments(),
        "strategies": tx.list_strategies(),
        "segments": tx.list_segment_definitions(),
        "strategy_definitions": tx.list_strategy_definitions(),
        "tag_types": tx.list_tag_types(),
        "flag_tags": tx.list_flag_tags(),
        "tokens": tx.list_tokens(),
        "endpoints": endpoints,
        "endpoint_tokens": [tx.list_signal_endpoint_tokens(e.id) for e in endpoints],
        "signals": tx.list_signals(limit=1000),
        "action_sets": tx.list_action_sets(),
        "executions": tx.list_action_executions(limit=1000),
        "metrics": [tx.list_flag_metrics(f.name) for f in flags],
        "instances": tx.list_client_instances(),
        "events": tx.list_events(limit=1000),
    }


def _applied_migrations(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT migration_set, name FROM _sqlite_migrations ORDER BY applied_at, name"
        ).fetchall()


def test_a_database_made_by_the_pre_shared_layer_store_opens_with_all_its_data(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v006.db"
    legacy = LegacySqliteStore(path)
    Service(legacy)  # the defaults a real database has: projects, environments, tag types
    with legacy.transaction() as tx:
        _fill(tx)
    before = _everything(legacy)
    legacy.close()
    applied = _applied_migrations(path)
    assert [name for _set, name in applied][-1] == "m006_metrics_buckets_and_retention"

    store = SqliteStore(path)
    try:
        # nothing re-run; the migrations shipped since then applied once
        migration_set = applied[0][0]
        assert _applied_migrations(path) == [
            *applied,
            (migration_set, "m007_api_token_ids"),
            (migration_set, "m008_users_and_sessions"),
            (migration_set, "m009_personal_tokens"),
            (migration_set, "m010_user_identities"),
            (migration_set, "m011_roles"),
            (migration_set, "m012_context_fields"),
            (migration_set, "m013_change_requests"),
            (migration_set, "m014_integrations"),
            (migration_set, "m015_custom_root_roles"),
            (migration_set, "m016_context_samples"),
            (migration_set, "m019_code_scans"),
            (migration_set, "m020_lifecycle"),
            (migration_set, "m022_daily_metrics"),
            (migration_set, "m023_release_plans"),
            (migration_set, "m024_upkeep_due"),
            (migration_set, "m025_groups"),
        ]
        after = _everything(store)
        assert {k: v for k, v in after.items() if k != "tokens"} == {
            k: v for k, v in before.items() if k != "tokens"
        }
        # m007: each token has a random id; a hint shows none of a short secret
        (old_token,), (token,) = before["tokens"], after["tokens"]
        assert len(token.id) == 16
        assert attrs.evolve(token, id="", secret_hint=old_token.secret_hint) == old_token
        assert token.secret_hint == "*:development.…"
        assert before["revision"] > 0
        with store.transaction() as tx:
            tx.save_flag(FlagDefinition("after-upgrade", "web", created_at=T0))
            event = tx.append_event("feature-created", "bob", feature_name="after-upgrade")
        assert store.revision() == event.id > before["revision"]
        assert store.integrity_check() == "ok"
    finally:
        store.close()


def test_a_new_database_has_the_same_tables_as_one_made_before_the_shared_layer(
    tmp_path: Path,
) -> None:
    LegacySqliteStore(tmp_path / "old.db").close()
    SqliteStore(tmp_path / "old.db").close()  # the migrations shipped since, applied
    SqliteStore(tmp_path / "new.db").close()

    def schema(path: Path) -> list[tuple[str, str]]:
        with sqlite3.connect(path) as conn:
            return conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE '_sqlite_migrations%' "
                "AND sql IS NOT NULL ORDER BY name"
            ).fetchall()

    assert schema(tmp_path / "new.db") == schema(tmp_path / "old.db")
