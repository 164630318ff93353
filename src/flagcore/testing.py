"""The port contract suite: what every store must do, checked through `flagcore.ports` alone.

It drives a store only through `Store` and `Transaction` (never the `Service`), one class
per part of the port, so a new backend sees exactly which storage promise it breaks:
round-trips, atomic units and rollback, revision bumps, ordering, id allocation, the
`flagcore.errors.Conflict` the port promises, and concurrent writers from two threads.
A store proves itself by subclassing `StorePortContract` (or only the parts it has
implemented so far) with a ``store`` fixture that yields a fresh, empty store::

    import pytest
    from flagcore.testing import StorePortContract


    class TestMyStore(StorePortContract):
        @pytest.fixture
        def store(self, tmp_path):
            store = MyStore(tmp_path / "db")
            yield store
            store.close()

It needs pytest (and nothing else); flagcore itself does not import this module. The
service's domain rules (names, limits, events of each use case) are not storage
promises: flagcore checks them over every store in its own ``tests/service``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator

import attrs
import pytest

from flagcore.entities import (
    Action,
    ActionExecution,
    ActionKind,
    ActionOutcome,
    ActionSet,
    ActionState,
    ApiToken,
    ClientInstance,
    Environment,
    FlagDefinition,
    FlagEnvironment,
    FlagMetrics,
    Project,
    SegmentDefinition,
    StrategyDefinition,
    StrategyParameter,
    StrategyPlacement,
    Tag,
    TagType,
    TokenType,
)
from flagcore.errors import Conflict
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant, WeightType
from flagcore.people import (
    LinkKind,
    PersonalToken,
    ResetLink,
    RootRole,
    User,
    UserPassword,
    UserSession,
)
from flagcore.ports import Store, Transaction
from flagcore.tables import (
    PERSONAL_TOKENS,
    USER_PASSWORDS,
    USER_RESET_LINKS,
    USER_SESSIONS,
    USERS,
)

__all__ = [
    "ActionRepositoryContract",
    "EventLogContract",
    "FlagRepositoryContract",
    "MetricsRepositoryContract",
    "PeopleContract",
    "ProjectRepositoryContract",
    "RetentionDeletesContract",
    "SegmentRepositoryContract",
    "SignalRepositoryContract",
    "StorePortContract",
    "StrategyDefinitionsContract",
    "StrategyRepositoryContract",
    "TagRepositoryContract",
    "TokenRepositoryContract",
    "UnitOfWorkContract",
]

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DEV = "development"
PROD = "production"
_MAX_COUNT = 2**63 - 1


def _at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


class _Boom(Exception):
    """Raised inside a unit of work to make it roll back."""


def _write_then_fail(store: Store, write: Callable[[Transaction], object]) -> None:
    with store.transaction() as tx:
        write(tx)
        raise _Boom


class _PortContract:
    """The ``store`` fixture every part's tests use; a subclass provides it."""

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        raise NotImplementedError("a store contract test class provides the `store` fixture")

    @staticmethod
    def _environments(tx: Transaction) -> None:
        tx.save_environment(Environment(DEV, "development", 2))
        tx.save_environment(Environment(PROD, "production", 3))

    @classmethod
    def _flag(cls, tx: Transaction, name: str = "checkout", minute: float = 0) -> FlagDefinition:
        if tx.get_environment(DEV) is None:
            cls._environments(tx)
        if tx.get_project("default") is None:
            tx.save_project(Project("default", "Default", None, T0))
        flag = FlagDefinition(name, "default", "release", None, False, False, _at(minute))
        tx.save_flag(flag)
        return flag


class UnitOfWorkContract(_PortContract):
    """`Store.transaction` and `Store.revision`: atomic units, and a revision that moves."""

    def test_a_fresh_store_is_empty_at_revision_0(self, store: Store) -> None:
        assert store.revision() == 0
        with store.transaction(write=False) as tx:
            assert list(tx.list_projects()) == []
            assert list(tx.list_environments()) == []
            assert list(tx.list_flags(archived=None)) == []
            assert list(tx.list_events()) == []

    def test_a_committed_unit_is_seen_by_the_next_one(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_project(Project("web", "Web", "shop", T0))
        with store.transaction(write=False) as tx:
            assert tx.get_project("web") == Project("web", "Web", "shop", T0)

    def test_an_exception_rolls_back_everything_the_unit_wrote(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx, "kept")
        before = store.revision()

        def write(tx: Transaction) -> None:
            tx.append_event("feature-created", "test", feature_name="lost")
            self._flag(tx, "lost")
            tx.save_flag_environment(FlagEnvironment("lost", DEV, True))
            kept = tx.get_flag("kept")
            assert kept is not None
            tx.save_flag(attrs.evolve(kept, description="changed"))
            tx.delete_project("default")
            tx.create_segment(Segment(0, "seg"))
            tx.save_token(ApiToken("t", TokenType.CLIENT, "hash", "*:dev.a", ("*",), DEV, T0))

        with pytest.raises(_Boom):
            _write_then_fail(store, write)
        assert store.revision() == before
        with store.transaction(write=False) as tx:
            assert tx.get_flag("lost") is None
            assert tx.get_flag_environment("lost", DEV) is None
            assert tx.get_flag("kept").description is None  # type: ignore[union-attr]
            assert tx.get_project("default") is not None
            assert list(tx.list_segments()) == []
            assert tx.get_token("hash") is None
            assert list(tx.list_events()) == []

    def test_the_store_stays_usable_after_a_rollback(self, store: Store) -> None:
        with pytest.raises(_Boom):
            _write_then_fail(store, lambda tx: tx.save_project(Project("web", "Web", None, T0)))
        with store.transaction() as tx:
            tx.save_project(Project("api", "API", None, T0))
        with store.transaction(write=False) as tx:
            assert [p.id for p in tx.list_projects()] == ["api"]

    def test_the_revision_grows_with_each_committed_event(self, store: Store) -> None:
        seen = [store.revision()]
        for index in range(3):
            with store.transaction() as tx:
                tx.append_event("feature-created", "test", feature_name=f"f{index}")
            seen.append(store.revision())
        assert seen == sorted(set(seen))
        with store.transaction(write=False) as tx:
            assert tx.list_events(limit=1)[0].id == store.revision()

    def test_the_revision_stays_on_rollback_and_read_only_units(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.append_event("feature-created", "test")
        before = store.revision()
        with pytest.raises(_Boom):
            _write_then_fail(store, lambda tx: tx.append_event("feature-updated", "test"))
        assert store.revision() == before
        with store.transaction(write=False) as tx:
            tx.list_events()
        assert store.revision() == before
        with store.transaction() as tx:
            event = tx.append_event("feature-updated", "test")
        assert store.revision() == event.id > before

    def test_the_revision_answers_during_a_write_with_only_committed_events(
        self, store: Store
    ) -> None:
        # The server asks for the revision on every SDK request, from its event loop.
        with store.transaction() as tx:
            tx.append_event("feature-created", "test")
        before = store.revision()
        inside, release = threading.Event(), threading.Event()

        def write() -> None:
            with store.transaction() as tx:
                tx.append_event("feature-updated", "test")
                inside.set()
                release.wait(timeout=60)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            assert inside.wait(timeout=60)
            seen: list[int] = []
            reader = threading.Thread(target=lambda: seen.append(store.revision()))
            reader.start()
            reader.join(timeout=10)
        finally:
            release.set()
            writer.join(timeout=60)
        assert seen == [before]
        assert store.revision() > before

    def test_two_threads_writing_at_once_lose_nothing(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx, "seed")
        errors: list[BaseException] = []

        def write(prefix: str) -> None:
            try:
                for index in range(25):
                    with store.transaction() as tx:
                        self._flag(tx, f"{prefix}-{index:02d}", minute=index)
                        tx.append_event("feature-created", prefix, feature_name=f"{prefix}-{index}")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(p,)) for p in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        with store.transaction(write=False) as tx:
            assert len(tx.list_flags()) == 51
            events = tx.list_events(limit=1000)
        assert len(events) == 50
        assert len({e.id for e in events}) == 50
        assert store.revision() == max(e.id for e in events)


class EventLogContract(_PortContract):
    """`flagcore.ports.EventLog`."""

    def test_an_event_round_trips_with_its_data(self, store: Store) -> None:
        with store.transaction() as tx:
            written = tx.append_event(
                "feature-updated",
                "token:admin",
                feature_name="f",
                project="default",
                environment=DEV,
                data={"name": "f", "list": [1, "two", None], "nested": {"ok": True}},
                pre_data={"name": "f"},
            )
        assert written.id > 0
        assert abs(written.created_at - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)
        with store.transaction(write=False) as tx:
            assert list(tx.list_events()) == [written]

    def test_events_list_newest_first_by_page_and_by_flag(self, store: Store) -> None:
        with store.transaction() as tx:
            ids = [
                tx.append_event("feature-created", "test", feature_name=name).id
                for name in ("a", "b", "a", "c", "a")
            ]
        assert ids == sorted(set(ids))
        with store.transaction(write=False) as tx:
            assert [e.id for e in tx.list_events()] == ids[::-1]
            assert [e.id for e in tx.list_events(limit=2)] == ids[:-3:-1]
            assert [e.id for e in tx.list_events(before_id=ids[3])] == ids[2::-1]
            by_flag = tx.list_events(feature_name="a", before_id=ids[4])
            assert [e.id for e in by_flag] == [ids[2], ids[0]]


class ProjectRepositoryContract(_PortContract):
    """`flagcore.ports.ProjectRepository`."""

    def test_projects_round_trip_upsert_list_by_id_and_delete(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_project(Project("web", "Web", "shop", _at(1)))
            tx.save_project(Project("api", "API", None, _at(2)))
            tx.save_project(Project("web", "Web 2", "store", _at(1)))
        with store.transaction() as tx:
            assert tx.get_project("web") == Project("web", "Web 2", "store", _at(1))
            assert [p.id for p in tx.list_projects()] == ["api", "web"]
            tx.delete_project("api")
            tx.delete_project("never-there")
            assert tx.get_project("api") is None
            assert [p.id for p in tx.list_projects()] == ["web"]

    def test_environments_round_trip_and_list_by_sort_order_then_name(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_environment(Environment("zeta", "test", 1, True))
            tx.save_environment(Environment("beta", "test", 5, False))
            tx.save_environment(Environment("alpha", "test", 5, True))
            tx.save_environment(Environment("zeta", "production", 9, False))
        with store.transaction(write=False) as tx:
            assert tx.get_environment("zeta") == Environment("zeta", "production", 9, False)
            assert tx.get_environment("nope") is None
            assert [e.name for e in tx.list_environments()] == ["alpha", "beta", "zeta"]


class FlagRepositoryContract(_PortContract):
    """`flagcore.ports.FlagRepository`."""

    def test_a_flag_round_trips_with_every_field(self, store: Store) -> None:
        flag = FlagDefinition(
            "checkout",
            "default",
            "experiment",
            "the new checkout",
            True,
            True,
            _at(1),
            _at(2),
            (Dependency("parent", False), Dependency("other", True, ("blue", "red"))),
        )
        with store.transaction() as tx:
            self._flag(tx, "parent")
            tx.save_flag(flag)
        with store.transaction(write=False) as tx:
            assert tx.get_flag("checkout") == flag
            assert tx.get_flag("nope") is None

    def test_flags_list_by_creation_then_name_filtered_by_project_and_archive(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            self._flag(tx, "late", minute=5)
            self._flag(tx, "b-early", minute=1)
            self._flag(tx, "a-early", minute=1)
            tx.save_project(Project("web", "Web", None, T0))
            tx.save_flag(FlagDefinition("web-flag", "web", created_at=_at(0)))
            gone = FlagDefinition("gone", "default", created_at=_at(0), archived_at=_at(9))
            tx.save_flag(gone)
        with store.transaction(write=False) as tx:
            assert [f.name for f in tx.list_flags()] == ["web-flag", "a-early", "b-early", "late"]
            assert [f.name for f in tx.list_flags(project="web")] == ["web-flag"]
            assert [f.name for f in tx.list_flags(archived=True)] == ["gone"]
            everything = [f.name for f in tx.list_flags(archived=None)]
            assert everything == ["gone", "web-flag", "a-early", "b-early", "late"]
            assert dict(tx.flag_projects(["gone", "web-flag", "missing"])) == {
                "gone": "default",
                "web-flag": "web",
            }

    def test_flag_environments_round_trip_upsert_and_list_in_order(self, store: Store) -> None:
        variants = (
            Variant("blue", 600, WeightType.VARIABLE, "userId"),
            Variant("red", 400, WeightType.FIX, "default"),
        )
        with store.transaction() as tx:
            self._flag(tx, "b")
            self._flag(tx, "a")
            tx.save_flag_environment(FlagEnvironment("b", PROD, True))
            tx.save_flag_environment(FlagEnvironment("a", PROD, False))
            tx.save_flag_environment(FlagEnvironment("a", DEV, False))
            tx.save_flag_environment(FlagEnvironment("a", DEV, True, variants))
        with store.transaction(write=False) as tx:
            assert tx.get_flag_environment("a", DEV) == FlagEnvironment("a", DEV, True, variants)
            assert tx.get_flag_environment("a", "nowhere") is None
            listed = [(s.flag, s.environment) for s in tx.list_flag_environments()]
            assert listed == [("a", DEV), ("a", PROD), ("b", PROD)]
            assert [s.flag for s in tx.list_flag_environments(environment=PROD)] == ["a", "b"]
            assert [s.environment for s in tx.list_flag_environments(flag="a")] == [DEV, PROD]

    def test_deleting_a_flag_deletes_its_state_strategies_and_tags(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx, "doomed")
            self._flag(tx, "other")
            tx.save_tag_type(TagType("simple"))
            for name in ("doomed", "other"):
                tx.save_flag_environment(FlagEnvironment(name, DEV, True))
                tx.save_strategy(
                    StrategyPlacement(name, DEV, Strategy("default", id=f"s-{name}", sort_order=0))
                )
                tx.add_flag_tag(name, Tag("simple", "x"))
        with store.transaction() as tx:
            tx.delete_flag("doomed")
        with store.transaction(write=False) as tx:
            assert tx.get_flag("doomed") is None
            assert [s.flag for s in tx.list_flag_environments()] == ["other"]
            assert [p.flag for p in tx.list_strategies()] == ["other"]
            assert [name for name, _tag in tx.list_flag_tags()] == ["other"]


class StrategyRepositoryContract(_PortContract):
    """`flagcore.ports.StrategyRepository`."""

    def test_a_strategy_round_trips_with_its_rules_and_segment_order(self, store: Store) -> None:
        strategy = Strategy(
            "flexibleRollout",
            {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
            (
                Constraint("userId", "IN", ("a", "b")),
                Constraint("appVersion", "SEMVER_GT", (), "1.2.3", True, False),
                Constraint("country", "STR_STARTS_WITH", ("N",), None, False, True),
            ),
            (),
            (Variant("blue", 1000, WeightType.VARIABLE, "userId"),),
            True,
            "s-1",
            "half of them",
            3,
        )
        with store.transaction() as tx:
            self._flag(tx)
            first = tx.create_segment(Segment(0, "first"))
            second = tx.create_segment(Segment(0, "second"))
            strategy = attrs.evolve(strategy, segments=(second.id, first.id))
            tx.save_strategy(StrategyPlacement("checkout", DEV, strategy))
        with store.transaction(write=False) as tx:
            assert tx.get_strategy("s-1") == StrategyPlacement("checkout", DEV, strategy)
            assert tx.get_strategy("nope") is None
            used = tx.strategies_using_segment(first.id)
            assert [p.id for p in used] == ["s-1"]

    def test_saving_a_strategy_replaces_it_and_its_segment_links(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            one = tx.create_segment(Segment(0, "one"))
            two = tx.create_segment(Segment(0, "two"))
            placed = Strategy("default", segments=(one.id, two.id), id="s-1", sort_order=0)
            tx.save_strategy(StrategyPlacement("checkout", DEV, placed))
        with store.transaction() as tx:
            changed = Strategy("default", {"x": "y"}, segments=(two.id,), id="s-1", sort_order=1)
            tx.save_strategy(StrategyPlacement("checkout", PROD, changed))
        with store.transaction() as tx:
            assert list(tx.list_strategies()) == [StrategyPlacement("checkout", PROD, changed)]
            assert list(tx.strategies_using_segment(one.id)) == []
            tx.delete_strategy("s-1")
            tx.delete_strategy("never-there")
            assert list(tx.list_strategies()) == []
            assert list(tx.strategies_using_segment(two.id)) == []

    def test_strategies_list_by_flag_environment_sort_order_then_id(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx, "b")
            self._flag(tx, "a")
            for flag, env, order, strategy_id in [
                ("b", DEV, 0, "s-1"),
                ("a", PROD, 0, "s-2"),
                ("a", DEV, 2, "s-3"),
                ("a", DEV, 1, "s-5"),
                ("a", DEV, 1, "s-4"),
            ]:
                strategy = Strategy("default", id=strategy_id, sort_order=order)
                tx.save_strategy(StrategyPlacement(flag, env, strategy))
        with store.transaction(write=False) as tx:
            assert [p.id for p in tx.list_strategies()] == ["s-4", "s-5", "s-3", "s-2", "s-1"]
            assert [p.id for p in tx.list_strategies(flag="a", environment=DEV)] == [
                "s-4",
                "s-5",
                "s-3",
            ]
            assert [p.id for p in tx.list_strategies(environment=PROD)] == ["s-2"]


class SegmentRepositoryContract(_PortContract):
    """`flagcore.ports.SegmentRepository`."""

    def test_segments_get_fresh_growing_ids_and_round_trip(self, store: Store) -> None:
        rule = (Constraint("region", "IN", ("eu", "us")),)
        with store.transaction() as tx:
            first = tx.create_segment(
                Segment(99, "eu", rule, "Europe", "default"), created_by="alice", created_at=_at(1)
            )
            second = tx.create_segment(Segment(99, "us"))
        assert first == Segment(first.id, "eu", rule, "Europe", "default")
        assert second.id > first.id
        with store.transaction(write=False) as tx:
            assert tx.get_segment(first.id) == first
            assert tx.get_segment(12345) is None
            assert tx.get_segment_definition(first.id) == SegmentDefinition(first, _at(1), "alice")
            assert [s.id for s in tx.list_segments()] == [first.id, second.id]
            defined = tx.list_segment_definitions()
            assert [d.id for d in defined] == [first.id, second.id]
            assert defined[1].created_by is None
            assert abs(defined[1].created_at - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)

    def test_saving_a_segment_keeps_its_creation_and_delete_removes_it(self, store: Store) -> None:
        with store.transaction() as tx:
            made = tx.create_segment(Segment(0, "eu"), created_by="alice", created_at=_at(1))
        changed = Segment(made.id, "europe", (Constraint("x", "IN", ("1",)),), "now", "web")
        with store.transaction() as tx:
            tx.save_segment(changed)
        with store.transaction() as tx:
            assert tx.get_segment_definition(made.id) == SegmentDefinition(changed, _at(1), "alice")
            tx.delete_segment(made.id)
            tx.delete_segment(424242)
            assert tx.get_segment(made.id) is None


class StrategyDefinitionsContract(_PortContract):
    """`flagcore.ports.StrategyDefinitions`."""

    def test_strategy_definitions_round_trip_and_list_by_name(self, store: Store) -> None:
        custom = StrategyDefinition(
            "byTenant",
            "tenants",
            (StrategyParameter("tenants", "list", "who", True),),
            True,
            False,
            "By tenant",
        )
        with store.transaction() as tx:
            tx.save_strategy_definition(custom)
            tx.save_strategy_definition(StrategyDefinition("aCustom"))
            tx.save_strategy_definition(attrs.evolve(custom, deprecated=True))
        with store.transaction() as tx:
            assert tx.get_strategy_definition("byTenant") == attrs.evolve(custom, deprecated=True)
            assert [d.name for d in tx.list_strategy_definitions()] == ["aCustom", "byTenant"]


class TagRepositoryContract(_PortContract):
    """`flagcore.ports.TagRepository`."""

    def test_tag_types_round_trip_and_list_by_name(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_tag_type(TagType("simple", "plain"))
            tx.save_tag_type(TagType("area", None))
            tx.save_tag_type(TagType("simple", "changed"))
        with store.transaction() as tx:
            assert tx.get_tag_type("simple") == TagType("simple", "changed")
            assert [t.name for t in tx.list_tag_types()] == ["area", "simple"]
            tx.delete_tag_type("area")
            assert tx.get_tag_type("area") is None

    def test_flag_tags_are_a_set_in_order_and_go_with_their_type(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx, "b")
            self._flag(tx, "a")
            tx.save_tag_type(TagType("simple"))
            tx.save_tag_type(TagType("area"))
            tx.add_flag_tag("b", Tag("simple", "x"))
            tx.add_flag_tag("a", Tag("simple", "y"))
            tx.add_flag_tag("a", Tag("area", "z"))
            tx.add_flag_tag("a", Tag("simple", "y"))  # already there: a no-op
        with store.transaction() as tx:
            assert list(tx.list_flag_tags()) == [
                ("a", Tag("area", "z")),
                ("a", Tag("simple", "y")),
                ("b", Tag("simple", "x")),
            ]
            assert list(tx.list_flag_tags("b")) == [("b", Tag("simple", "x"))]
            tx.remove_flag_tag("a", Tag("area", "z"))
            tx.delete_tag_type("simple")
            assert list(tx.list_flag_tags()) == []


class TokenRepositoryContract(_PortContract):
    """`flagcore.ports.TokenRepository`."""

    def test_tokens_round_trip_list_by_creation_and_delete(self, store: Store) -> None:
        client = ApiToken("sdk", TokenType.CLIENT, "h1", "*:development.ab", ("web", "api"), DEV)
        client = attrs.evolve(client, created_at=_at(2), id="9f2c01d4e5a6b7c8")
        admin = ApiToken("ops", TokenType.ADMIN, "h2", "*:*.cd", ("*",), None, _at(1), id="a1")
        with store.transaction() as tx:
            self._environments(tx)
            tx.save_token(client)
            tx.save_token(admin)
        with store.transaction() as tx:
            assert tx.get_token("h1") == client  # its id kept too
            assert tx.get_token("nope") is None
            assert [t.secret_hash for t in tx.list_tokens()] == ["h2", "h1"]
            tx.delete_token("h2")
            assert [t.secret_hash for t in tx.list_tokens()] == ["h1"]


class SignalRepositoryContract(_PortContract):
    """`flagcore.ports.SignalRepository`."""

    def test_endpoints_and_their_tokens_round_trip_with_fresh_ids(self, store: Store) -> None:
        with store.transaction() as tx:
            first = tx.create_signal_endpoint("deploys", "from CI", True, _at(1))
            second = tx.create_signal_endpoint("alerts", None, False, _at(2))
            token = tx.create_signal_endpoint_token(first.id, "ci", "hash-1", _at(3))
            other = tx.create_signal_endpoint_token(first.id, "cd", "hash-2", _at(4))
        assert second.id > first.id
        assert other.id > token.id
        with store.transaction() as tx:
            assert tx.get_signal_endpoint(first.id) == first
            assert tx.find_signal_endpoint("alerts") == second
            assert tx.find_signal_endpoint("nope") is None
            assert [e.id for e in tx.list_signal_endpoints()] == [first.id, second.id]
            assert list(tx.list_signal_endpoint_tokens(first.id)) == [token, other]
            tx.save_signal_endpoint(attrs.evolve(second, name="pages", enabled=True))
            tx.delete_signal_endpoint_token(token.id)
        with store.transaction(write=False) as tx:
            assert tx.get_signal_endpoint(second.id) == attrs.evolve(
                second, name="pages", enabled=True
            )
            assert list(tx.list_signal_endpoint_tokens(first.id)) == [other]

    def test_signals_list_newest_first_by_endpoint_and_page(self, store: Store) -> None:
        payload = {"deploy": {"env": "prod", "ok": True, "n": 3.5, "tags": ["a", None]}}
        with store.transaction() as tx:
            a = tx.create_signal_endpoint("a", None, True, T0)
            b = tx.create_signal_endpoint("b", None, True, T0)
            signals = [
                tx.add_signal(endpoint.id, None, payload, _at(index))
                for index, endpoint in enumerate([a, b, a, a])
            ]
        ids = [s.id for s in signals]
        assert ids == sorted(set(ids))
        with store.transaction(write=False) as tx:
            assert list(tx.list_signals()) == signals[::-1]
            assert [s.id for s in tx.list_signals(endpoint_id=a.id)] == [ids[3], ids[2], ids[0]]
            assert [s.id for s in tx.list_signals(endpoint_id=a.id, limit=1)] == [ids[3]]
            assert [s.id for s in tx.list_signals(before_id=ids[2])] == [ids[1], ids[0]]

    def test_deleting_an_endpoint_deletes_its_tokens_signals_and_action_sets(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            doomed = tx.create_signal_endpoint("doomed", None, True, T0)
            kept = tx.create_signal_endpoint("kept", None, True, T0)
            for endpoint in (doomed, kept):
                tx.create_signal_endpoint_token(endpoint.id, "t", f"hash-{endpoint.id}", T0)
                tx.add_signal(endpoint.id, None, {}, T0)
                tx.create_action_set(_action_set(endpoint.id, f"on-{endpoint.name}"))
        with store.transaction() as tx:
            tx.delete_signal_endpoint(doomed.id)
        with store.transaction(write=False) as tx:
            assert tx.get_signal_endpoint(doomed.id) is None
            assert list(tx.list_signal_endpoint_tokens(doomed.id)) == []
            assert [s.endpoint_id for s in tx.list_signals()] == [kept.id]
            assert [a.source for a in tx.list_action_sets()] == [kept.id]


def _action_set(source: int, name: str = "kill", project: str = "default") -> ActionSet:
    return ActionSet(
        0,
        name,
        project,
        source,
        (
            Action(ActionKind.TOGGLE_FEATURE_OFF, "checkout", DEV, 1),
            Action(ActionKind.MARK_FEATURE_STALE, "checkout", None, 2),
        ),
        (Constraint("alert.severity", "IN", ("critical",)),),
        True,
        "turn it off",
        T0,
        None,
    )


class ActionRepositoryContract(_PortContract):
    """`flagcore.ports.ActionRepository`."""

    def test_action_sets_round_trip_with_fresh_ids_and_filters(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_project(Project("default", "Default", None, T0))
            tx.save_project(Project("web", "Web", None, T0))
            a = tx.create_signal_endpoint("a", None, True, T0)
            b = tx.create_signal_endpoint("b", None, True, T0)
            first = tx.create_action_set(_action_set(a.id, "one"))
            second = tx.create_action_set(_action_set(b.id, "two", "web"))
        assert first == attrs.evolve(_action_set(a.id, "one"), id=first.id)
        assert second.id > first.id
        with store.transaction() as tx:
            assert tx.get_action_set(first.id) == first
            assert tx.get_action_set(999) is None
            assert [s.id for s in tx.list_action_sets()] == [first.id, second.id]
            assert [s.id for s in tx.list_action_sets(project="web")] == [second.id]
            assert [s.id for s in tx.list_action_sets(source=a.id)] == [first.id]
            renamed = attrs.evolve(first, name="uno", enabled=False, description=None)
            tx.save_action_set(renamed)
            assert tx.get_action_set(first.id) == renamed
            tx.delete_action_set(second.id)
            assert [s.id for s in tx.list_action_sets()] == [first.id]

    def test_an_action_set_runs_once_per_signal(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_project(Project("default", "Default", None, T0))
            endpoint = tx.create_signal_endpoint("a", None, True, T0)
            action_set = tx.create_action_set(_action_set(endpoint.id))
            signal = tx.add_signal(endpoint.id, None, {"x": 1}, T0)
            other = tx.add_signal(endpoint.id, None, {"x": 2}, T0)
            outcomes = tuple(
                ActionOutcome(action, ActionState.SUCCESS) for action in action_set.actions
            )
            run = ActionExecution(0, action_set, signal, ActionState.SUCCESS, outcomes, _at(1))
            first = tx.add_action_execution(run)
        assert first == attrs.evolve(run, id=first.id)
        with pytest.raises(Conflict), store.transaction() as tx:
            tx.add_action_execution(attrs.evolve(run, state=ActionState.FAILED))
        with store.transaction() as tx:
            again = tx.add_action_execution(attrs.evolve(run, signal=other))
            assert [e.id for e in tx.list_action_executions()] == [again.id, first.id]
            assert list(tx.list_action_executions(action_set_id=action_set.id)) == [again, first]

    def test_executions_list_newest_first_by_page_and_go_with_their_set(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.save_project(Project("default", "Default", None, T0))
            endpoint = tx.create_signal_endpoint("a", None, True, T0)
            doomed = tx.create_action_set(_action_set(endpoint.id, "doomed"))
            kept = tx.create_action_set(_action_set(endpoint.id, "kept"))
            ids = []
            for index in range(4):
                signal = tx.add_signal(endpoint.id, None, index, _at(index))
                for action_set in (doomed, kept):
                    run = ActionExecution(0, action_set, signal, ActionState.FAILED, (), _at(index))
                    ids.append((action_set.id, tx.add_action_execution(run).id))
        kept_ids = [run_id for set_id, run_id in ids if set_id == kept.id][::-1]
        with store.transaction() as tx:
            page = tx.list_action_executions(action_set_id=kept.id, limit=2, offset=1)
            assert [e.id for e in page] == kept_ids[1:3]
            tx.delete_action_set(doomed.id)
        with store.transaction(write=False) as tx:
            assert [e.id for e in tx.list_action_executions()] == kept_ids


class MetricsRepositoryContract(_PortContract):
    """`flagcore.ports.MetricsRepository`."""

    def test_metric_buckets_add_up_saturate_and_list_in_order(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            tx.add_flag_metrics(
                [
                    FlagMetrics("checkout", "web", DEV, _at(60), 1, 2, {"blue": 3}),
                    FlagMetrics("checkout", "app", DEV, _at(60), 5, 0, {}),
                    FlagMetrics("checkout", "web", DEV, _at(0), 1, 1, {}),
                ]
            )
        with store.transaction() as tx:
            tx.add_flag_metrics(
                [
                    FlagMetrics("checkout", "web", DEV, _at(60), 10, 20, {"blue": 1, "red": 4}),
                    FlagMetrics("checkout", "app", DEV, _at(60), _MAX_COUNT, 0, {}),
                ]
            )
        with store.transaction(write=False) as tx:
            assert list(tx.list_flag_metrics("checkout")) == [
                FlagMetrics("checkout", "web", DEV, _at(0), 1, 1, {}),
                FlagMetrics("checkout", "app", DEV, _at(60), _MAX_COUNT, 0, {}),
                FlagMetrics("checkout", "web", DEV, _at(60), 11, 22, {"blue": 4, "red": 4}),
            ]
            assert list(tx.list_flag_metrics("other")) == []

    def test_new_metric_buckets_and_variant_names_stop_at_their_bounds(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            assert tx.add_flag_metrics([FlagMetrics("checkout", "web", DEV, _at(0), 1, 0, {})]) == 1
            created = tx.add_flag_metrics(
                [
                    FlagMetrics("checkout", "new-1", DEV, _at(0), 1, 0, {}),
                    FlagMetrics("checkout", "web", DEV, _at(0), 2, 0, {"a": 1, "b": 1}),
                    FlagMetrics("checkout", "new-2", DEV, _at(0), 1, 0, {}),
                ],
                max_new=1,
                max_variants=2,
            )
            assert created == 1
            tx.add_flag_metrics(
                [FlagMetrics("checkout", "web", DEV, _at(0), 0, 1, {"c": 5, "a": 2})],
                max_new=0,
                max_variants=2,
            )
        with store.transaction(write=False) as tx:
            assert list(tx.list_flag_metrics("checkout")) == [
                FlagMetrics("checkout", "new-1", DEV, _at(0), 1, 0, {}),
                FlagMetrics("checkout", "web", DEV, _at(0), 3, 1, {"a": 3, "b": 1}),
            ]

    def test_usage_moves_to_a_renamed_environment_and_adds_up_where_it_meets_a_bucket(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            rows = [
                FlagMetrics("checkout", "web", "qa", _at(0), 1, 2, {"blue": 1}),
                FlagMetrics("checkout", "web", "qa", _at(60), 3, 0, {}),
                # already held under the new name (SDKs that named it): adds up
                FlagMetrics("checkout", "web", "staging", _at(60), 10, 1, {"blue": 2}),
                FlagMetrics("checkout", "web", DEV, _at(0), 7, 7, {}),
            ]
            tx.add_flag_metrics(rows)
            tx.add_daily_flag_metrics([FlagMetrics("checkout", "web", "qa", _at(0), 4, 4, {})])
            tx.save_client_instance(ClientInstance("web", "i-1", "qa", last_seen=_at(0)))
            tx.save_client_instance(ClientInstance("web", "i-2", DEV, last_seen=_at(0)))
        with store.transaction() as tx:
            assert tx.rename_usage_environment("qa", "staging") == 4
        with store.transaction(write=False) as tx:
            assert list(tx.list_flag_metrics("checkout")) == [
                FlagMetrics("checkout", "web", DEV, _at(0), 7, 7, {}),
                FlagMetrics("checkout", "web", "staging", _at(0), 1, 2, {"blue": 1}),
                FlagMetrics("checkout", "web", "staging", _at(60), 13, 1, {"blue": 2}),
            ]
            assert list(tx.list_daily_flag_metrics("checkout")) == [
                FlagMetrics("checkout", "web", "staging", _at(0), 4, 4, {})
            ]
            assert [(i.instance_id, i.environment) for i in tx.list_client_instances()] == [
                ("i-1", "staging"),
                ("i-2", DEV),
            ]
        with pytest.raises(_Boom):
            _write_then_fail(store, lambda tx: tx.rename_usage_environment("staging", "gone"))
        with store.transaction(write=False) as tx:
            assert {m.environment for m in tx.list_flag_metrics("checkout")} == {DEV, "staging"}

    def test_an_instance_is_created_only_when_allowed_and_says_it_was_new(
        self, store: Store
    ) -> None:
        seen = ClientInstance("web", "i-1", None, None, (), None, None, _at(0))
        with store.transaction() as tx:
            assert tx.save_client_instance(seen) is True
            assert tx.save_client_instance(attrs.evolve(seen, last_seen=_at(5))) is False
            assert (
                tx.save_client_instance(attrs.evolve(seen, last_seen=_at(6)), create=False) is False
            )
            other = ClientInstance("web", "i-2", None, None, (), None, None, _at(0))
            assert tx.save_client_instance(other, create=False) is False
        with store.transaction(write=False) as tx:
            assert list(tx.list_client_instances()) == [attrs.evolve(seen, last_seen=_at(6))]

    def test_metrics_since_an_hour_list_every_flag_by_flag_then_app_within_the_limit(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            self._flag(tx, "banner")
            tx.add_flag_metrics(
                [
                    FlagMetrics("checkout", "web", DEV, _at(120), 1, 2, {}),
                    FlagMetrics("checkout", "app", DEV, _at(60), 3, 4, {"blue": 1}),
                    FlagMetrics("banner", "web", DEV, _at(60), 5, 6, {}),
                    FlagMetrics("banner", "web", DEV, _at(0), 7, 8, {}),
                ]
            )
        with store.transaction(write=False) as tx:
            assert list(tx.list_flag_metrics_since(_at(60), limit=10)) == [
                FlagMetrics("banner", "web", DEV, _at(60), 5, 6, {}),
                FlagMetrics("checkout", "app", DEV, _at(60), 3, 4, {"blue": 1}),
                FlagMetrics("checkout", "web", DEV, _at(120), 1, 2, {}),
            ]
            assert [(m.flag, m.app_name) for m in tx.list_flag_metrics_since(_at(0), limit=2)] == [
                ("banner", "web"),
                ("banner", "web"),
            ]
            assert list(tx.list_flag_metrics_since(_at(180), limit=10)) == []

    def test_client_instances_merge_what_a_later_report_leaves_out(self, store: Store) -> None:
        first = ClientInstance(
            "web", "i-1", DEV, "unleash-python:6", ("default",), _at(0), 15, _at(1)
        )
        with store.transaction() as tx:
            tx.save_client_instance(first)
            tx.save_client_instance(
                ClientInstance("app", "i-9", None, None, (), None, None, _at(0))
            )
            tx.save_client_instance(
                ClientInstance("web", "i-1", None, None, (), None, None, _at(5))
            )
        with store.transaction(write=False) as tx:
            assert list(tx.list_client_instances()) == [
                ClientInstance("app", "i-9", None, None, (), None, None, _at(0)),
                attrs.evolve(first, last_seen=_at(5)),
            ]

    def test_hour_buckets_taken_are_gone_and_handed_out_oldest_first(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            tx.add_flag_metrics(
                FlagMetrics("checkout", "web", DEV, _at(60 * hour), hour, 1, {"a": hour})
                for hour in range(4)
            )
        with store.transaction() as tx:
            taken = tx.take_flag_metrics_before(_at(180), 2)
            assert [(m.hour, m.yes, m.no, dict(m.variants)) for m in taken] == [
                (_at(0), 0, 1, {"a": 0}),
                (_at(60), 1, 1, {"a": 1}),
            ]
        with store.transaction() as tx:
            assert [m.hour for m in tx.take_flag_metrics_before(_at(180), 10)] == [_at(120)]
            assert list(tx.take_flag_metrics_before(_at(180), 10)) == []
            assert [m.hour for m in tx.list_flag_metrics("checkout")] == [_at(180)]
        with store.transaction(write=False) as tx:
            assert [m.hour for m in tx.list_flag_metrics("checkout", since=_at(120))] == [_at(180)]
            assert list(tx.list_flag_metrics("checkout", since=_at(181))) == []

    def test_day_buckets_add_up_apart_from_hours_and_list_by_day(self, store: Store) -> None:
        day, next_day = _at(0), _at(24 * 60)
        with store.transaction() as tx:
            self._flag(tx)
            assert (
                tx.add_daily_flag_metrics(
                    [
                        FlagMetrics("checkout", "web", DEV, next_day, 1, 0, {}),
                        FlagMetrics("checkout", "web", DEV, day, 1, 2, {"a": 1, "b": 1}),
                    ],
                    max_variants=2,
                )
                == 2
            )
            created = tx.add_daily_flag_metrics(
                [FlagMetrics("checkout", "web", DEV, day, _MAX_COUNT, 3, {"c": 1, "a": 2})],
                max_variants=2,
            )
            assert created == 0
        with store.transaction(write=False) as tx:
            assert list(tx.list_daily_flag_metrics("checkout")) == [
                FlagMetrics("checkout", "web", DEV, day, _MAX_COUNT, 5, {"a": 3, "b": 1}),
                FlagMetrics("checkout", "web", DEV, next_day, 1, 0, {}),
            ]
            assert [m.hour for m in tx.list_daily_flag_metrics("checkout", since=_at(1))] == [
                next_day
            ]
            assert list(tx.list_flag_metrics("checkout")) == []
            assert list(tx.list_daily_flag_metrics("other")) == []


class RetentionDeletesContract(_PortContract):
    """`flagcore.ports.RetentionDeletes`."""

    def test_old_metrics_and_instances_go_oldest_first_within_the_limit(self, store: Store) -> None:
        with store.transaction() as tx:
            self._flag(tx)
            tx.add_flag_metrics(
                FlagMetrics("checkout", "web", DEV, _at(60 * hour), 1, 0, {}) for hour in range(4)
            )
            for minute in range(4):
                instance = ClientInstance(
                    "web", f"i-{minute}", None, None, (), None, None, _at(minute)
                )
                tx.save_client_instance(instance)
        with store.transaction() as tx:
            assert tx.delete_flag_metrics_before(_at(180), 2) == 2
            assert tx.delete_client_instances_seen_before(_at(3), 2) == 2
        with store.transaction() as tx:
            assert [m.hour for m in tx.list_flag_metrics("checkout")] == [_at(120), _at(180)]
            assert [i.instance_id for i in tx.list_client_instances()] == ["i-2", "i-3"]
            assert tx.delete_flag_metrics_before(_at(180), 10) == 1
            assert tx.delete_client_instances_seen_before(_at(3), 10) == 1
            assert tx.delete_client_instances_seen_before(_at(3), 10) == 0

    def test_old_day_buckets_go_oldest_first_within_the_limit(self, store: Store) -> None:
        days = [_at(24 * 60 * n) for n in range(4)]
        with store.transaction() as tx:
            self._flag(tx)
            tx.add_daily_flag_metrics(FlagMetrics("checkout", "web", DEV, d, 1) for d in days)
            tx.add_flag_metrics([FlagMetrics("checkout", "web", DEV, days[0], 1)])
        with store.transaction() as tx:
            assert tx.delete_daily_flag_metrics_before(days[3], 2) == 2
        with store.transaction() as tx:
            assert [m.hour for m in tx.list_daily_flag_metrics("checkout")] == days[2:]
            assert tx.delete_daily_flag_metrics_before(days[3], 10) == 1
            assert tx.delete_daily_flag_metrics_before(days[3], 10) == 0
            assert [m.hour for m in tx.list_flag_metrics("checkout")] == [days[0]]

    def test_old_signals_go_oldest_first_and_each_endpoint_keeps_its_newest(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            a = tx.create_signal_endpoint("a", None, True, T0)
            b = tx.create_signal_endpoint("b", None, True, T0)
            a_ids = [tx.add_signal(a.id, None, n, _at(n)).id for n in range(5)]
            b_ids = [tx.add_signal(b.id, None, n, _at(n)).id for n in range(2)]
        with store.transaction() as tx:
            assert tx.delete_signals_beyond_newest(a.id, 2, 2) == 2
            assert tx.delete_signals_beyond_newest(a.id, 2, 10) == 1
            assert [s.id for s in tx.list_signals(endpoint_id=a.id)] == a_ids[:2:-1]
            assert tx.delete_signals_before(_at(1), 10) == 1
            assert [s.id for s in tx.list_signals(endpoint_id=b.id)] == [b_ids[1]]

    def test_old_events_go_in_batches_but_never_the_newest(self, store: Store) -> None:
        with store.transaction() as tx:
            for index in range(5):
                tx.append_event("feature-created", "test", feature_name=f"f{index}")
        revision = store.revision()
        future = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
        with store.transaction() as tx:
            assert tx.delete_events_before(future, 3) == 3
            assert tx.delete_events_before(future, 3) == 1
            assert tx.delete_events_before(future, 3) == 0
            assert [e.id for e in tx.list_events()] == [revision]
        assert store.revision() == revision
        with store.transaction() as tx:
            assert tx.append_event("feature-created", "test").id > revision


class PeopleContract(_PortContract):
    """Users, their passwords, sessions and links (issue 28), kept through `Records`."""

    def test_a_user_round_trips_with_every_field_and_ids_are_never_reused(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            first = tx.create_record(
                USERS, User(0, RootRole.EDITOR, "Ann", "ann@x.io", created_at=T0)
            )
            second = tx.create_record(
                USERS,
                User(0, RootRole.VIEWER, None, None, "bob", True, _at(1), seen_at=_at(2)),
            )
            tx.delete_record(USERS, second.id)
            third = tx.create_record(USERS, User(0, RootRole.ADMIN, username="cy", created_at=T0))
        assert third.id > second.id > first.id
        with store.transaction(write=False) as tx:
            assert tx.get_record(USERS, first.id) == first
            assert tx.list_records(USERS) == [first, third]
            assert tx.get_record(USERS, second.id) is None

    def test_deleting_a_user_deletes_their_password_sessions_and_links(self, store: Store) -> None:
        with store.transaction() as tx:
            ann = tx.create_record(USERS, User(0, RootRole.ADMIN, email="ann@x.io", created_at=T0))
            bob = tx.create_record(USERS, User(0, RootRole.ADMIN, email="bob@x.io", created_at=T0))
            for user in (ann, bob):
                tx.save_record(USER_PASSWORDS, UserPassword(user.id, f"hash-{user.id}", T0))
                tx.save_record(
                    USER_SESSIONS, UserSession(f"s{user.id}", user.id, None, T0, _at(60), T0)
                )
                tx.save_record(
                    USER_RESET_LINKS,
                    ResetLink(f"l{user.id}", user.id, LinkKind.RESET, "system", T0, _at(60)),
                )
            tx.save_record(USER_SESSIONS, UserSession("token", None, "abc", T0, _at(60), _at(1)))
        with store.transaction() as tx:
            tx.delete_record(USERS, ann.id)
        with store.transaction(write=False) as tx:
            assert tx.get_record(USER_PASSWORDS, ann.id) is None
            assert [s.id_digest for s in tx.list_records(USER_SESSIONS)] == [f"s{bob.id}", "token"]
            assert [link.user_id for link in tx.list_records(USER_RESET_LINKS)] == [bob.id]
            assert tx.list_records(USER_SESSIONS, {"user_id": bob.id})[0].expires_at == _at(60)
            assert tx.get_record(USER_PASSWORDS, bob.id) == UserPassword(
                bob.id, f"hash-{bob.id}", T0
            )

    def test_personal_tokens_are_found_by_digest_unique_and_go_with_their_owner(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            bot = tx.create_record(
                USERS, User(0, RootRole.EDITOR, username="bot", service_account=True)
            )
            ann = tx.create_record(USERS, User(0, RootRole.ADMIN, email="ann@x.io"))
            kept = tx.create_record(
                PERSONAL_TOKENS, PersonalToken(0, bot.id, "ci", "d1", T0, _at(60), _at(1))
            )
            tx.create_record(PERSONAL_TOKENS, PersonalToken(0, ann.id, "mine", "d2", T0, _at(60)))
        with store.transaction(write=False) as tx:
            assert tx.get_record(USERS, bot.id) == bot
            assert tx.list_records(PERSONAL_TOKENS, {"secret_digest": "d1"}) == [kept]
        with pytest.raises(Conflict), store.transaction() as tx:
            tx.create_record(PERSONAL_TOKENS, PersonalToken(0, ann.id, "x", "d1", T0, T0))
        with store.transaction() as tx:
            tx.delete_record(USERS, ann.id)
        with store.transaction(write=False) as tx:
            assert tx.list_records(PERSONAL_TOKENS) == [kept]


class StorePortContract(
    UnitOfWorkContract,
    EventLogContract,
    ProjectRepositoryContract,
    FlagRepositoryContract,
    StrategyRepositoryContract,
    SegmentRepositoryContract,
    StrategyDefinitionsContract,
    TagRepositoryContract,
    TokenRepositoryContract,
    SignalRepositoryContract,
    ActionRepositoryContract,
    MetricsRepositoryContract,
    RetentionDeletesContract,
    PeopleContract,
):
    """The whole port: subclass with a ``store`` fixture yielding a fresh, empty store."""
