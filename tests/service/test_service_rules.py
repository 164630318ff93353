"""The service's domain rules (every use case of `flagcore.service.Service`), over each store.

These tests drive the `Service`; they moved here from ``flagcore.testing.StoreContract``
(issue #13) with their assertions unchanged. What a store itself must do is pinned by
the port contract suite in `flagcore.testing`, run in ``tests/store/test_contract.py``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from flagcore.engine import Engine
from flagcore.entities import (
    Action,
    ActionKind,
    ActionState,
    SegmentDefinition,
    StrategyDefinition,
    Tag,
    TokenType,
)
from flagcore.errors import (
    Conflict,
    FlagcoreError,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
    RateLimited,
    Unauthenticated,
)
from flagcore.limits import Limits
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant, WeightType
from flagcore.ports import Store
from flagcore.service import RetentionSettings, Service
from tests.service.store_factories import FACTORIES


def _service_at(store: Store, now: dt.datetime, limits: Limits | None = None) -> Service:
    """A service whose clock stands at ``now`` (metrics buckets must start near it)."""
    clock = _Clock()
    clock.now = now
    return Service(store, clock=clock, limits=limits)


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


DEV = "development"
PROD = "production"


def _rollout(percent: int = 100, **extra: str) -> Strategy:
    return Strategy("flexibleRollout", {"rollout": str(percent), **extra})


def _in(field: str, *values: str) -> Constraint:
    return Constraint(field, "IN", values)


class TestServiceRules:
    """Every test gets a fresh store of each kind (`FACTORIES`) and a service over it."""

    @pytest.fixture(params=sorted(FACTORIES))
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
        store = FACTORIES[request.param](tmp_path)
        yield store
        store.close()

    @pytest.fixture
    def service(self, store: Store) -> Service:
        return Service(store)

    @staticmethod
    def _flag_with_strategy(service: Service, name: str = "checkout") -> Strategy:
        service.flags.create_flag("default", name)
        return service.strategies.add_strategy("default", name, DEV, _rollout(50))

    # --- a fresh store ---
    def test_a_fresh_store_has_unleash_defaults(self, service: Service) -> None:
        assert [p.id for p in service.projects.list_projects()] == ["default"]
        assert [e.name for e in service.environments.list_environments()] == [DEV, PROD]
        assert [t.name for t in service.tags.list_tag_types()] == ["simple"]
        assert service.store.revision() == 0
        # Opening a service again does not duplicate them.
        again = Service(service.store)
        assert [p.id for p in again.projects.list_projects()] == ["default"]

    # --- projects and environments ---
    def test_projects_are_created_updated_and_listed(self, service: Service) -> None:
        service.projects.create_project("web", "Web shop", "the storefront")
        updated = service.projects.update_project("web", name="Web", description="shop")
        assert (updated.name, updated.description) == ("Web", "shop")
        assert [p.id for p in service.projects.list_projects()] == ["default", "web"]
        assert service.projects.get_project("web").name == "Web"

    def test_project_ids_must_be_url_friendly_and_unique(self, service: Service) -> None:
        with pytest.raises(InvalidInput):
            service.projects.create_project("web shop", "Web")
        service.projects.create_project("web", "Web")
        with pytest.raises(NameConflict):
            service.projects.create_project("web", "Again")
        with pytest.raises(NotFound):
            service.projects.update_project("nope", name="x")

    def test_a_project_with_active_flags_cannot_be_deleted(self, service: Service) -> None:
        service.projects.create_project("web", "Web")
        service.flags.create_flag("web", "banner")
        with pytest.raises(Conflict) as refused:
            service.projects.delete_project("web")
        assert "banner" in refused.value.details[0].message
        service.archive.archive_flag("web", "banner")
        service.projects.delete_project("web")
        assert [p.id for p in service.projects.list_projects()] == ["default"]
        with pytest.raises(NotFound):
            service.projects.delete_project("web")

    def test_environments_can_be_added(self, service: Service) -> None:
        staging = service.environments.create_environment("staging", "test")
        assert staging.sort_order == 4
        assert [e.name for e in service.environments.list_environments()] == [DEV, PROD, "staging"]
        with pytest.raises(NameConflict):
            service.environments.create_environment("staging")

    # --- flags ---
    def test_a_flag_is_created_with_its_metadata(self, service: Service) -> None:
        flag = service.flags.create_flag(
            "default", "new-checkout", type="experiment", description="d", impression_data=True
        )
        assert (flag.type, flag.description, flag.impression_data, flag.stale) == (
            "experiment",
            "d",
            True,
            False,
        )
        details = service.flags.get_flag("default", "new-checkout")
        assert details.flag == flag
        assert [(e.environment.name, e.enabled) for e in details.environments] == [
            (DEV, False),
            (PROD, False),
        ]

    @pytest.mark.parametrize("name", ["with space", "", "slash/name", "ü", "x" * 256])
    def test_flag_names_must_be_url_friendly(self, service: Service, name: str) -> None:
        with pytest.raises(InvalidInput):
            service.flags.create_flag("default", name)

    def test_flag_names_are_unique_among_active_and_archived_flags(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        with pytest.raises(NameConflict, match="a flag"):
            service.flags.create_flag("default", "f")
        service.archive.archive_flag("default", "f")
        with pytest.raises(NameConflict, match="archived"):
            service.flags.create_flag("default", "f")

    def test_flag_type_and_project_are_checked(self, service: Service) -> None:
        with pytest.raises(InvalidInput):
            service.flags.create_flag("default", "f", type="nonsense")
        with pytest.raises(NotFound):
            service.flags.create_flag("nope", "f")

    def test_flag_metadata_updates_and_stale_marking(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        service.flags.update_flag("default", "f", description="now described", type="kill-switch")
        service.flags.mark_stale("default", "f")
        flag = service.flags.get_flag("default", "f").flag
        assert (flag.description, flag.type, flag.stale) == ("now described", "kill-switch", True)
        types = [e.type for e in self._events(service)]
        assert types[:3] == ["feature-stale-on", "feature-metadata-updated", "feature-created"]
        with pytest.raises(NotFound):
            service.flags.update_flag("other-project", "f", description="x")

    def test_archiving_hides_a_flag_from_admins_and_sdks(self, service: Service) -> None:
        self._flag_with_strategy(service, "f")
        service.environments.set_environment_enabled("default", "f", DEV, True)
        service.archive.archive_flag("default", "f")
        assert service.flags.list_flags() == []
        assert [d.flag.name for d in service.archive.list_archived_flags()] == ["f"]
        assert service.client.client_features(DEV).features == ()
        with pytest.raises(NotFound):
            service.flags.get_flag("default", "f")
        with pytest.raises(NotFound):
            service.archive.archive_flag("default", "f")

    def test_revive_keeps_strategies_but_disables_every_environment(self, service: Service) -> None:
        strategy = self._flag_with_strategy(service, "f")
        service.environments.set_environment_enabled("default", "f", DEV, True)
        service.environments.set_environment_enabled("default", "f", PROD, True)
        service.archive.archive_flag("default", "f")
        service.archive.revive_flag("f")
        details = service.flags.get_flag("default", "f")
        assert [e.enabled for e in details.environments] == [False, False]
        assert details.environments[0].strategies == (strategy,)

    def test_revive_is_refused_for_active_flags_and_lost_projects(self, service: Service) -> None:
        service.projects.create_project("web", "Web")
        service.flags.create_flag("web", "f")
        with pytest.raises(Conflict):
            service.archive.revive_flag("f")
        service.archive.archive_flag("web", "f")
        service.projects.delete_project("web")
        with pytest.raises(Conflict, match="project"):
            service.archive.revive_flag("f")
        with pytest.raises(NotFound):
            service.archive.revive_flag("never-existed")

    def test_only_archived_flags_can_be_deleted_for_good(self, service: Service) -> None:
        self._flag_with_strategy(service, "f")
        with pytest.raises(Conflict, match="archive it first"):
            service.archive.delete_flag("f")
        assert service.flags.list_flags()[0].name == "f"
        service.archive.archive_flag("default", "f")
        service.archive.delete_flag("f")
        assert service.archive.list_archived_flags() == []
        with pytest.raises(NotFound):
            service.archive.delete_flag("f")
        # The name is free again, and nothing of the old flag comes back with it.
        service.flags.create_flag("default", "f")
        assert service.flags.get_flag("default", "f").environments[0].strategies == ()

    def test_dependencies_are_one_level_deep(self, service: Service) -> None:
        for name in ("parent", "child", "grandchild"):
            service.flags.create_flag("default", name)
        service.dependencies.set_dependencies("default", "child", [Dependency("parent")])
        with pytest.raises(InvalidInput, match="one level"):
            service.dependencies.set_dependencies("default", "grandchild", [Dependency("child")])
        with pytest.raises(InvalidInput, match="one level"):
            service.dependencies.set_dependencies("default", "parent", [Dependency("grandchild")])
        with pytest.raises(InvalidInput):
            service.dependencies.set_dependencies("default", "grandchild", [Dependency("missing")])
        flag = service.client.client_features(DEV).features
        assert {f.name: f.dependencies for f in flag}["child"] == (Dependency("parent"),)

    # --- strategies ---
    def test_strategies_are_stored_normalised_and_in_order(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        first = service.strategies.add_strategy(
            "default", "f", DEV, Strategy("flexibleRollout", {})
        )
        second = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
        assert first.id
        assert second.id
        assert first.id != second.id
        assert (first.sort_order, second.sort_order) == (0, 1)
        assert dict(first.parameters) == {"rollout": "100", "stickiness": "default", "groupId": "f"}
        assert service.strategies.list_strategies("default", "f", DEV) == [first, second]
        assert service.strategies.get_strategy("default", "f", DEV, first.id) == first

    def test_strategy_variants_share_1000_by_weight_type(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        variants = (
            Variant("a", 0),
            Variant("b", 0),
            Variant("c", 100, WeightType.FIX),
            Variant("d", 0),
        )
        stored = service.strategies.add_strategy(
            "default", "f", DEV, attrs.evolve(_rollout(), variants=variants)
        )
        assert [v.weight for v in stored.variants] == [300, 300, 100, 300]

    @pytest.mark.parametrize(
        ("constraint", "path"),
        [
            (Constraint("userId", "LIKE", ("a",)), "$.constraints[0].operator"),
            (Constraint("userId", "IN", ()), "$.constraints[0].values"),
            (Constraint("age", "NUM_GT", value="abc"), "$.constraints[0].value"),
            (Constraint("age", "NUM_GT"), "$.constraints[0].value"),
            (Constraint("currentTime", "DATE_AFTER", value="yesterday"), "$.constraints[0].value"),
            (Constraint("version", "SEMVER_EQ", value="1.2"), "$.constraints[0].value"),
            (Constraint("version", "SEMVER_EQ", value="v1.2.3"), "$.constraints[0].value"),
            (Constraint("email", "REGEX", value="(unclosed"), "$.constraints[0].value"),
            (Constraint("email", "REGEX", value="^(?=a)"), "$.constraints[0].value"),
            (Constraint("ip", "IN_CIDR", ("10.0.0.0/8", "nope")), "$.constraints[0].values[1]"),
        ],
    )
    def test_constraints_the_engine_cannot_evaluate_are_refused_with_a_path(
        self, service: Service, constraint: Constraint, path: str
    ) -> None:
        service.flags.create_flag("default", "f")
        strategy = Strategy("default", constraints=(_in("appName", "web"), constraint))
        with pytest.raises(InvalidInput) as refused:
            service.strategies.add_strategy("default", "f", DEV, strategy)
        assert [d.path for d in refused.value.details] == [path.replace("[0]", "[1]", 1)]
        assert service.strategies.list_strategies("default", "f", DEV) == []

    @pytest.mark.parametrize("rollout", ["150", "-1", "50.5", "lots"])
    def test_rollouts_outside_0_to_100_are_refused(self, service: Service, rollout: str) -> None:
        service.flags.create_flag("default", "f")
        with pytest.raises(InvalidInput):
            service.strategies.add_strategy(
                "default", "f", DEV, Strategy("flexibleRollout", {"rollout": rollout})
            )

    def test_strategy_targets_must_exist(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        with pytest.raises(InvalidInput, match="unknown strategy"):
            service.strategies.add_strategy("default", "f", DEV, Strategy("mine"))
        with pytest.raises(NotFound):
            service.strategies.add_strategy("default", "f", "nowhere", Strategy("default"))
        with pytest.raises(NotFound):
            service.strategies.add_strategy("default", "nope", DEV, Strategy("default"))
        with pytest.raises(NotFound):
            service.strategies.add_strategy(
                "default", "f", DEV, Strategy("default", segments=(99,))
            )

    def test_custom_strategies_can_be_defined_then_used(self, service: Service) -> None:
        service.strategy_definitions.create_strategy_definition(
            StrategyDefinition("tenant", "per tenant")
        )
        with pytest.raises(NameConflict):
            service.strategy_definitions.create_strategy_definition(StrategyDefinition("default"))
        service.flags.create_flag("default", "f")
        stored = service.strategies.add_strategy(
            "default", "f", DEV, Strategy("tenant", {"ids": "a,b"})
        )
        assert stored.name == "tenant"
        assert "tenant" in [
            d.name for d in service.strategy_definitions.list_strategy_definitions()
        ]

    def test_strategy_limits_name_the_limit(self, store: Store) -> None:
        service = Service(store, limits=Limits(constraints_per_strategy=2, constraint_values=3))
        service.flags.create_flag("default", "f")
        too_many = Strategy("default", constraints=(_in("a", "1"),) * 3)
        with pytest.raises(LimitExceeded) as refused:
            service.strategies.add_strategy("default", "f", DEV, too_many)
        assert refused.value.limit == "constraints_per_strategy"
        assert [d.path for d in refused.value.details] == ["$.constraints"]
        at_limit = Strategy("default", constraints=(_in("a", "1", "2", "3"),) * 2)
        service.strategies.add_strategy("default", "f", DEV, at_limit)
        with pytest.raises(LimitExceeded) as refused:
            service.strategies.add_strategy(
                "default", "f", DEV, Strategy("default", constraints=(_in("a", *"1234"),))
            )
        assert refused.value.limit == "constraint_values"
        # Every error detail is a JSON path, a limit's too (issue 23 §6).
        assert [d.path for d in refused.value.details] == ["$.constraints[0].values"]

    def test_strategies_are_updated_deleted_and_reordered(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        a = service.strategies.add_strategy("default", "f", DEV, _rollout(10))
        b = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
        updated = service.strategies.update_strategy("default", "f", DEV, a.id or "", _rollout(20))
        assert updated.parameters["rollout"] == "20"
        assert updated.sort_order == 0
        reordered = service.strategies.reorder_strategies(
            "default", "f", DEV, {a.id or "": 5, b.id or "": 1}
        )
        assert [s.id for s in reordered] == [b.id, a.id]
        with pytest.raises(NotFound):
            service.strategies.reorder_strategies("default", "f", DEV, {"nope": 0, b.id or "": 9})
        assert [s.id for s in service.strategies.list_strategies("default", "f", DEV)] == [
            b.id,
            a.id,
        ]
        service.strategies.delete_strategy("default", "f", DEV, b.id or "")
        assert [s.id for s in service.strategies.list_strategies("default", "f", DEV)] == [a.id]
        with pytest.raises(NotFound):
            service.strategies.delete_strategy("default", "f", PROD, a.id or "")

    def test_enabling_without_strategies_adds_a_full_rollout(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        service.environments.set_environment_enabled("default", "f", DEV, True)
        (added,) = service.strategies.list_strategies("default", "f", DEV)
        assert (added.name, dict(added.parameters)) == (
            "flexibleRollout",
            {"rollout": "100", "stickiness": "default", "groupId": "f"},
        )
        assert Engine(service.client.client_features(DEV)).is_enabled("f", {"userId": "anyone"})
        service.environments.set_environment_enabled("default", "f", DEV, False)
        service.environments.set_environment_enabled("default", "f", DEV, True)
        assert len(service.strategies.list_strategies("default", "f", DEV)) == 1

    def test_disabled_strategies_do_not_reach_sdks(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        service.strategies.add_strategy("default", "f", DEV, Strategy("default", disabled=True))
        active = service.strategies.add_strategy("default", "f", DEV, _rollout(50))
        service.environments.set_environment_enabled("default", "f", DEV, True)
        (flag,) = service.client.client_features(DEV).features
        assert flag.enabled
        assert [s.id for s in flag.strategies] == [active.id]

    # --- segments ---
    def test_segments_are_created_read_updated_and_deleted(self, service: Service) -> None:
        beta = service.segments.create_segment(
            "beta", [_in("userId", "1", "2")], description="testers"
        )
        other = service.segments.create_segment("ios", [])
        assert beta.id != other.id
        assert service.segments.get_segment(beta.id) == beta
        assert [s.name for s in service.segments.list_segments()] == ["beta", "ios"]
        updated = service.segments.update_segment(beta.id, "beta-users", [_in("userId", "3")])
        assert service.segments.get_segment(beta.id) == updated
        with pytest.raises(NameConflict):
            service.segments.create_segment("ios", [])
        with pytest.raises(NameConflict):
            service.segments.update_segment(beta.id, "ios", [])
        service.segments.delete_segment(other.id)
        with pytest.raises(NotFound):
            service.segments.get_segment(other.id)
        with pytest.raises(NotFound):
            service.segments.update_segment(999, "x", [])

    def test_segments_keep_when_and_by_whom_they_were_created(self, store: Store) -> None:
        at = dt.datetime(2026, 2, 3, 4, 5, 6, 789000, tzinfo=dt.UTC)
        with store.transaction() as tx:
            created = tx.create_segment(
                Segment(0, "beta", (_in("userId", "1"),)), created_by="alice", created_at=at
            )
            unsigned = tx.create_segment(Segment(0, "ios"))
        renamed = attrs.evolve(created, name="beta-users", description="testers")
        with store.transaction() as tx:
            tx.save_segment(renamed)
        with store.transaction(write=False) as tx:
            definition = tx.get_segment_definition(created.id)
            assert definition == SegmentDefinition(renamed, at, "alice")
            assert definition.created_at.tzinfo is not None
            other = tx.get_segment_definition(unsigned.id)
            assert other is not None
            assert other.created_by is None
            assert abs(other.created_at - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)
            assert list(tx.list_segment_definitions()) == [definition, other]
            assert tx.get_segment_definition(999) is None

    def test_a_segment_in_use_by_an_active_flag_cannot_be_deleted(self, service: Service) -> None:
        segment = service.segments.create_segment("beta", [_in("userId", "1")])
        service.flags.create_flag("default", "f")
        strategy = service.strategies.add_strategy(
            "default", "f", DEV, Strategy("default", segments=(segment.id,))
        )
        with pytest.raises(Conflict):
            service.segments.delete_segment(segment.id)
        assert [p.id for p in service.segments.strategies_using_segment(segment.id)] == [
            strategy.id
        ]
        service.archive.archive_flag("default", "f")
        service.segments.delete_segment(segment.id)
        service.archive.revive_flag("f")
        assert service.strategies.list_strategies("default", "f", DEV)[0].segments == ()

    def test_replacing_the_segments_of_a_strategy_is_all_or_nothing(self, service: Service) -> None:
        one = service.segments.create_segment("one", [])
        two = service.segments.create_segment("two", [])
        strategy = self._flag_with_strategy(service)
        strategy_id = strategy.id or ""
        service.segments.replace_strategy_segments(strategy_id, [one.id, two.id])
        assert [s.id for s in service.segments.segments_of_strategy(strategy_id)] == [
            one.id,
            two.id,
        ]
        revision = service.store.revision()
        with pytest.raises(NotFound):
            service.segments.replace_strategy_segments(strategy_id, [two.id, 999])
        assert [s.id for s in service.segments.segments_of_strategy(strategy_id)] == [
            one.id,
            two.id,
        ]
        assert service.store.revision() == revision
        with pytest.raises(NotFound):
            service.segments.replace_strategy_segments("no-such-strategy", [one.id])
        with pytest.raises(NotFound):
            service.segments.segments_of_strategy("no-such-strategy")
        service.segments.replace_strategy_segments(strategy_id, [two.id])
        assert [s.id for s in service.segments.segments_of_strategy(strategy_id)] == [two.id]
        service.segments.replace_strategy_segments(strategy_id, [])
        assert service.segments.segments_of_strategy(strategy_id) == []
        assert service.store.revision() > revision

    def test_segment_limits_name_the_limit(self, store: Store) -> None:
        limits = Limits(segments=2, segments_per_strategy=1, segment_values=3)
        service = Service(store, limits=limits)
        a = service.segments.create_segment("a", [_in("x", "1", "2", "3")])
        b = service.segments.create_segment("b", [])
        with pytest.raises(LimitExceeded) as refused:
            service.segments.create_segment("c", [])
        assert refused.value.limit == "segments"
        assert [d.path for d in refused.value.details] == ["$"]
        with pytest.raises(LimitExceeded) as refused:
            service.segments.update_segment(b.id, "b", [_in("x", "1", "2"), _in("y", "3", "4")])
        assert refused.value.limit == "segment_values"
        assert [d.path for d in refused.value.details] == ["$.constraints"]
        strategy = self._flag_with_strategy(service)
        with pytest.raises(LimitExceeded) as refused:
            service.segments.replace_strategy_segments(strategy.id or "", [a.id, b.id])
        assert refused.value.limit == "segments_per_strategy"
        assert [d.path for d in refused.value.details] == ["$.segmentIds"]

    # --- tags ---
    def test_tags_need_a_known_type_and_filter_client_features(self, service: Service) -> None:
        for name in ("a", "b", "c"):
            service.flags.create_flag("default", name)
        service.tags.create_tag_type("team", "owning team")
        with pytest.raises(NameConflict):
            service.tags.create_tag_type("team")
        service.tags.add_flag_tag("a", Tag("team", "core"))
        service.tags.add_flag_tag("b", Tag("simple", "beta"))
        service.tags.add_flag_tag("b", Tag("simple", "beta"))  # adding twice is harmless
        with pytest.raises(InvalidInput):
            service.tags.add_flag_tag("c", Tag("nosuchtype", "xx"))
        with pytest.raises(InvalidInput):
            service.tags.add_flag_tag("c", Tag("simple", "x"))
        assert service.tags.list_flag_tags("b") == [Tag("simple", "beta")]
        either = service.client.client_features(
            DEV, tags=[Tag("team", "core"), Tag("simple", "beta")]
        )
        assert [f.name for f in either.features] == ["a", "b"]
        with pytest.raises(Conflict):
            service.tags.delete_tag_type("team")
        service.tags.remove_flag_tag("a", Tag("team", "core"))
        with pytest.raises(NotFound):
            service.tags.remove_flag_tag("a", Tag("team", "core"))
        service.tags.delete_tag_type("team")

    # --- client features ---
    def test_client_features_filters_combine_or_within_and_across(self, service: Service) -> None:
        service.projects.create_project("web", "Web")
        service.flags.create_flag("default", "app.one")
        service.flags.create_flag("web", "app.two")
        service.flags.create_flag("web", "other")
        service.tags.add_flag_tag("app.one", Tag("simple", "t1"))
        service.tags.add_flag_tag("other", Tag("simple", "t1"))

        def names(**filters: object) -> list[str]:
            return [f.name for f in service.client.client_features(DEV, **filters).features]  # type: ignore[arg-type]

        assert names() == ["app.one", "app.two", "other"]
        assert names(projects=["web"]) == ["app.two", "other"]
        assert names(projects=["web", "default"]) == ["app.one", "app.two", "other"]
        assert names(name_prefix="app.") == ["app.one", "app.two"]
        assert names(name_prefix="app.", projects=["web"]) == ["app.two"]
        assert names(tags=[Tag("simple", "t1")], projects=["web"]) == ["other"]
        with pytest.raises(NotFound):
            service.client.client_features("nowhere")

    def test_client_features_carry_state_strategies_and_used_segments(
        self, service: Service
    ) -> None:
        used = service.segments.create_segment("used", [_in("userId", "1")])
        service.segments.create_segment("unused", [])
        service.flags.create_flag("default", "f")
        service.strategies.add_strategy(
            "default", "f", DEV, Strategy("default", segments=(used.id,))
        )
        service.environments.set_environment_enabled("default", "f", DEV, True)
        snapshot = service.client.client_features(DEV)
        (flag,) = snapshot.features
        assert flag.enabled
        assert [s.segments for s in flag.strategies] == [(used.id,)]
        assert [s.name for s in snapshot.segments] == ["used"]
        assert not service.client.client_features(PROD).features[0].enabled
        engine = Engine(snapshot)
        assert engine.is_enabled("f", {"userId": "1"})
        assert not engine.is_enabled("f", {"userId": "2"})

    def test_an_in_process_engine_follows_writes(self, service: Service) -> None:
        live = service.client.engine(DEV)
        assert not live.is_enabled("f")
        service.flags.create_flag("default", "f")
        service.environments.set_environment_enabled("default", "f", DEV, True)
        assert live.is_enabled("f")
        service.environments.set_environment_enabled("default", "f", DEV, False)
        assert not live.is_enabled("f")

    def test_flag_level_variants_reach_sdks(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        service.variants.set_flag_variants("default", "f", DEV, [Variant("a", 0), Variant("b", 0)])
        service.environments.set_environment_enabled("default", "f", DEV, True)
        (flag,) = service.client.client_features(DEV).features
        assert [(v.name, v.weight) for v in flag.variants] == [("a", 500), ("b", 500)]

    # --- tokens ---
    def test_tokens_are_created_authenticated_and_deleted(self, service: Service) -> None:
        admin = service.tokens.create_token("ops", TokenType.ADMIN)
        client = service.tokens.create_token("web", "client", projects=["default"], environment=DEV)
        assert admin.secret.startswith("*:*.")
        assert client.secret.startswith("default:development.")
        assert client.token.secret_hash != client.secret
        assert client.secret not in repr(service.tokens.list_tokens())
        found = service.tokens.authenticate(client.secret)
        assert found is not None
        assert found.projects == ("default",)
        assert found.environment == DEV
        assert service.tokens.authenticate(client.secret + "x") is None
        service.tokens.delete_token(client.secret)
        assert service.tokens.authenticate(client.secret) is None
        with pytest.raises(NotFound):
            service.tokens.delete_token(client.secret)

    def test_client_tokens_need_a_real_environment_and_projects(self, service: Service) -> None:
        with pytest.raises(InvalidInput):
            service.tokens.create_token("x", "client", environment="nowhere")
        with pytest.raises(NotFound):
            service.tokens.create_token("x", "client", projects=["nope"], environment=DEV)
        with pytest.raises(InvalidInput):
            service.tokens.create_token("x", "superuser")
        given = service.tokens.create_token(
            "x", "client", environment=DEV, secret="*:development.abcdefgh12345678"
        )
        assert given.secret == "*:development.abcdefgh12345678"
        with pytest.raises(NameConflict):
            service.tokens.create_token(
                "y", "client", environment=DEV, secret="*:development.abcdefgh12345678"
            )

    def test_a_chosen_secret_needs_sixteen_characters_and_listings_show_two(
        self, service: Service
    ) -> None:
        with pytest.raises(InvalidInput) as refused:
            service.tokens.create_token(
                "x", "client", environment=DEV, secret="*:development.fifteen-chars-x"
            )
        assert "at least 16" in refused.value.message
        assert [d.path for d in refused.value.details] == ["$.secret"]
        given = service.tokens.create_token(
            "x", "client", environment=DEV, secret="*:development.sixteen-chars-xyz"
        )
        assert given.token.secret_hint == "*:development.si…"
        generated = service.tokens.create_token(
            "g", "client", projects=["default"], environment=DEV
        )
        assert generated.token.secret_hint == f"default:development.{generated.secret[20:22]}…"

    def test_a_token_is_deleted_by_the_id_its_listing_shows(self, service: Service) -> None:
        service.tokens.create_token("ops", TokenType.ADMIN)
        first = service.tokens.create_token("web", "client", environment=DEV)
        second = service.tokens.create_token("app", "client", environment=DEV)
        listed = {token.name: token.id for token in service.tokens.list_tokens()}
        assert listed["web"] == first.token.id
        assert len(set(listed.values())) == 3
        assert first.token.id not in first.secret
        service.tokens.delete_token(first.token.id)
        assert service.tokens.authenticate(first.secret) is None
        assert service.tokens.authenticate(second.secret) is not None
        with pytest.raises(NotFound):
            service.tokens.delete_token(first.token.id)

    def test_the_last_admin_token_is_kept_while_nothing_else_can_administer(
        self, service: Service
    ) -> None:
        first = service.tokens.create_token("ops", TokenType.ADMIN)
        client = service.tokens.create_token("web", "client", environment=DEV)
        with pytest.raises(Conflict) as refused:
            service.tokens.delete_token(first.token.id)
        assert '"ops" is the last admin token' in refused.value.message
        assert service.tokens.authenticate(first.secret) is not None
        service.tokens.delete_token(client.secret)  # other kinds go as before
        second = service.tokens.create_token("ops-2", TokenType.ADMIN)
        service.tokens.delete_token(first.secret)  # another admin token remains
        with pytest.raises(Conflict):
            service.tokens.delete_token(second.token.secret_hash)
        # where the server needs no token to be administered (--auth none), it may go
        service.tokens.delete_token(second.token.id, admin_without_token=True)
        assert service.tokens.list_tokens() == []

    # --- metrics ---
    def test_metrics_add_up_per_flag_app_environment_and_hour(self, store: Store) -> None:
        start = dt.datetime(2026, 1, 1, 10, 15, tzinfo=dt.UTC)
        service = _service_at(store, start + dt.timedelta(minutes=45))
        service.flags.create_flag("default", "f")  # metrics count only flags that exist
        service.instances.register_client(
            "shop", "i-1", sdk_version="python:6", strategies=["tenant"]
        )
        toggles = {"f": {"yes": 2, "no": 1, "variants": {"a": 2}}}
        service.metrics.record_metrics("shop", "i-1", DEV, start, toggles)
        service.metrics.record_metrics(
            "shop", "i-1", DEV, start + dt.timedelta(minutes=30), toggles
        )
        (row,) = service.metrics.flag_metrics("f")
        assert (row.yes, row.no, dict(row.variants)) == (4, 2, {"a": 4})
        assert row.hour == dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
        (instance,) = service.instances.client_instances()
        assert (instance.sdk_version, instance.strategies) == ("python:6", ("tenant",))
        with pytest.raises(InvalidInput):
            service.metrics.record_metrics("shop", "i-1", DEV, start, {"f": {"yes": -1}})

    def test_metrics_count_only_existing_flags_within_the_reporting_scope(
        self, store: Store
    ) -> None:
        start = dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
        service = _service_at(store, start)
        service.projects.create_project("web", "Web")
        service.flags.create_flag("default", "mine")
        service.flags.create_flag("web", "theirs")
        toggles = {name: {"yes": 1} for name in ("mine", "theirs", "made-up", "x" * 5000)}
        recorded = service.metrics.record_metrics(
            "shop", "i", DEV, start, toggles, projects=["default"]
        )
        assert recorded.counted == 1
        assert [row.yes for row in service.metrics.flag_metrics("mine")] == [1]
        assert (
            service.metrics.flag_metrics("theirs") == service.metrics.flag_metrics("made-up") == []
        )
        record = service.metrics.record_metrics
        assert record("shop", "i", DEV, start, toggles, projects=["*"]).counted == 2
        service.archive.archive_flag("default", "mine")  # SDKs polled before still count it
        assert record("shop", "i", DEV, start, toggles, projects=None).counted == 2
        assert [row.yes for row in service.metrics.flag_metrics("mine")] == [3]

    def test_metrics_refuse_counts_outside_0_to_2_63_and_oversized_reports(
        self, store: Store
    ) -> None:
        start = dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
        service = _service_at(store, start, Limits(metrics_toggles_per_post=3))
        service.flags.create_flag("default", "f")
        for bad in (-1, 2**63, True, 1.5, "3"):
            with pytest.raises(InvalidInput) as refused:
                service.metrics.record_metrics("shop", "i", DEV, start, {"f": {"no": bad}})
            assert refused.value.details[0].path == "$.bucket.toggles.f.no"
        with pytest.raises(LimitExceeded):
            service.metrics.record_metrics("shop", "i", DEV, start, {str(i): {} for i in range(4)})
        with pytest.raises(InvalidInput):
            service.metrics.record_metrics("x" * 256, "i", DEV, start, {})
        service.metrics.record_metrics("shop", "i", DEV, start, {"f": {"yes": 2**63 - 1}})
        service.metrics.record_metrics("shop", "i", DEV, start, {"f": {"yes": 5}})
        assert [row.yes for row in service.metrics.flag_metrics("f")] == [2**63 - 1]  # saturates
        assert len(service.instances.client_instances()) == 1

    def test_metrics_buckets_from_48_hours_back_to_5_minutes_ahead_are_counted_others_dropped(
        self, store: Store
    ) -> None:
        now = dt.datetime(2026, 6, 1, 12, 30, tzinfo=dt.UTC)
        service = _service_at(store, now)
        service.flags.create_flag("default", "f")
        record = service.metrics.record_metrics
        minutes = dt.timedelta(minutes=1)
        for start in (now + 5 * minutes, now - 48 * 60 * minutes, now):
            assert record("shop", "i", DEV, start, {"f": {"yes": 1}}).counted == 1
        for start in (
            now + 6 * minutes,  # a clock more than 5 minutes ahead
            now - 48 * 60 * minutes - minutes,
            dt.datetime(2999, 1, 1, tzinfo=dt.UTC),
            dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(-dt.timedelta(hours=5))),
        ):
            dropped = record("shop", "i", DEV, start, {"f": {"yes": 1}})
            assert (dropped.counted, dropped.in_window) == (0, False)
        assert sorted((m.hour, m.yes) for m in service.metrics.flag_metrics("f")) == [
            (dt.datetime(2026, 5, 30, 12, tzinfo=dt.UTC), 1),
            (dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC), 2),
        ]
        assert [i.app_name for i in service.instances.client_instances()] == ["shop"]

    def test_a_metrics_bucket_outside_the_window_is_dropped_unread(self, store: Store) -> None:
        """Its counts are never stored, so they are not read either (a flood of reports
        dated 2999 costs no counting): a bad count there is dropped with the rest, while
        the same count in the window is refused, naming its path."""
        now = dt.datetime(2026, 6, 1, 12, 30, tzinfo=dt.UTC)
        service = _service_at(store, now)
        service.flags.create_flag("default", "f")
        record = service.metrics.record_metrics
        bad = {"f": {"yes": "not a count"}}
        far = dt.datetime(2999, 1, 1, tzinfo=dt.UTC)
        assert (
            record("shop", "i", DEV, far, bad).counted,
            len(service.metrics.flag_metrics("f")),
        ) == (0, 0)
        with pytest.raises(InvalidInput) as refused:
            record("shop", "i", DEV, now, bad)
        assert refused.value.details[0].path == "$.bucket.toggles.f.yes"
        with pytest.raises(InvalidInput):  # the report's own fields are still checked
            record(None, "i", DEV, far, {})

    def test_metrics_create_no_more_rows_than_allowed_and_still_count_into_existing_ones(
        self, store: Store
    ) -> None:
        now = dt.datetime(2026, 6, 1, 12, 30, tzinfo=dt.UTC)
        service = _service_at(store, now)
        for name in ("a", "b", "c"):
            service.flags.create_flag("default", name)
        record = service.metrics.record_metrics
        toggles = {name: {"yes": 1} for name in ("a", "b", "c")}
        first = record("shop", "i-1", DEV, now, toggles, max_new_rows=2)
        assert (first.counted, first.created) == (3, 2)  # the new instance and one bucket
        again = record("shop", "i-1", DEV, now, toggles, max_new_rows=0)
        assert again.created == 0
        assert [(m.flag, m.yes) for m in service.metrics.flag_metrics("a")] == [("a", 2)]
        assert service.metrics.flag_metrics("b") == service.metrics.flag_metrics("c") == []
        record("flood", "i-2", DEV, now, toggles, max_new_rows=0)  # a new app: nothing kept
        assert [i.app_name for i in service.instances.client_instances()] == ["shop"]
        assert [m.app_name for m in service.metrics.flag_metrics("a")] == ["shop"]

    def test_a_metrics_bucket_keeps_at_most_the_variant_limit_of_names_across_reports(
        self, store: Store
    ) -> None:
        now = dt.datetime(2026, 6, 1, 12, 30, tzinfo=dt.UTC)
        service = _service_at(store, now, Limits(metrics_variants_per_toggle=2))
        service.flags.create_flag("default", "f")
        for names in (("blue", "red"), ("green", "pink"), ("blue", "gold")):
            variants = dict.fromkeys(names, 1)
            service.metrics.record_metrics("shop", "i", DEV, now, {"f": {"variants": variants}})
        (row,) = service.metrics.flag_metrics("f")
        assert dict(row.variants) == {"blue": 2, "red": 1}

    # --- retention ---
    def test_prune_deletes_what_the_retention_settings_no_longer_keep(self, store: Store) -> None:
        clock = _Clock()
        service = Service(store, clock=clock)
        service.flags.create_flag("default", "f")
        service.instances.register_client("shop", "gone")
        endpoint = service.signals.create_signal_endpoint("ci")
        secret = service.signals.create_signal_endpoint_token(endpoint.id, "ci").secret
        sent = []
        for day in range(5):
            sent.append(service.signals.receive_signal("ci", secret, {"day": day}).id)
            clock.advance(86400)
        clock.advance(3 * 86400)  # signals are 8, 7, 6, 5 and 4 days old; "gone" 8 days
        service.instances.register_client("shop", "here")
        for hours_ago in (49, 47):
            # Reported when it was new (buckets older than 48 h are refused at intake).
            now = clock.now
            clock.now = now - dt.timedelta(hours=hours_ago)
            service.metrics.record_metrics("shop", "here", DEV, clock.now, {"f": {"yes": 1}})
            clock.now = now
        revision = store.revision()
        settings = RetentionSettings(metrics_hours=48, signals_per_endpoint=3)  # 7 d, 7 d, 90 d
        report = service.retention.prune(settings)
        assert (report.metrics, report.client_instances, report.signals) == (1, 1, 2)
        assert [row.hour for row in service.metrics.flag_metrics("f")] == [
            clock.now - dt.timedelta(hours=47)
        ]
        assert [i.instance_id for i in service.instances.client_instances()] == ["here"]
        assert [s.id for s in service.signals.list_signals(endpoint.id)] == sent[:1:-1]
        assert service.retention.prune(settings).total == 0
        assert store.revision() == revision  # pruning is not a change SDKs see

    def test_prune_works_off_a_backlog_in_batches_and_keeps_the_newest_event(
        self, store: Store
    ) -> None:
        service = Service(store)
        for i in range(7):
            service.flags.create_flag("default", f"f{i}")
        revision = store.revision()
        settings = RetentionSettings(event_days=1)
        later = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
        deleted = [service.retention.prune(settings, now=later, batch=3).events for _ in range(5)]
        assert deleted[:2] == [3, 3]
        assert deleted[-1] == 0
        assert [e.id for e in service.events.list_events()] == [revision]
        assert store.revision() == revision
        assert service.retention.prune(RetentionSettings(event_days=0), now=later).events == 0

    # --- signals ---
    def test_signal_endpoints_are_created_updated_and_deleted(self, service: Service) -> None:
        endpoint = service.signals.create_signal_endpoint("deploys", "from CI")
        assert service.signals.get_signal_endpoint(endpoint.id) == endpoint
        with pytest.raises(NameConflict):
            service.signals.create_signal_endpoint("deploys")
        with pytest.raises(InvalidInput):
            service.signals.create_signal_endpoint("not url friendly")
        updated = service.signals.update_signal_endpoint(
            endpoint.id, description="ci", enabled=False
        )
        assert (updated.description, updated.enabled) == ("ci", False)
        service.signals.delete_signal_endpoint(endpoint.id)
        assert service.signals.list_signal_endpoints() == []
        with pytest.raises(NotFound):
            service.signals.get_signal_endpoint(endpoint.id)

    def test_signal_endpoint_and_token_limits_hold_at_the_edge(self, store: Store) -> None:
        service = Service(store, limits=Limits(signal_endpoints=2, tokens_per_signal_endpoint=2))
        first = service.signals.create_signal_endpoint("a")
        service.signals.create_signal_endpoint("b")
        with pytest.raises(LimitExceeded) as refused:
            service.signals.create_signal_endpoint("c")
        assert refused.value.limit == "signal_endpoints"
        assert [e.name for e in service.signals.list_signal_endpoints()] == ["a", "b"]
        secrets = {
            service.signals.create_signal_endpoint_token(first.id, n).secret for n in ("t1", "t2")
        }
        assert len(secrets) == 2
        with pytest.raises(LimitExceeded) as refused:
            service.signals.create_signal_endpoint_token(first.id, "t3")
        assert refused.value.limit == "tokens_per_signal_endpoint"
        tokens = service.signals.list_signal_endpoint_tokens(first.id)
        assert [t.name for t in tokens] == ["t1", "t2"]
        assert all(t.secret_hash not in secrets for t in tokens)
        service.signals.delete_signal_endpoint_token(first.id, tokens[0].id)
        service.signals.create_signal_endpoint_token(first.id, "t3")
        with pytest.raises(NotFound):
            service.signals.delete_signal_endpoint_token(first.id, 9999)

    def test_signals_are_checked_rate_limited_and_stored(self, store: Store) -> None:
        clock = _Clock()
        service = Service(store, clock=clock)
        ci = service.signals.create_signal_endpoint("ci")
        other = service.signals.create_signal_endpoint("other")
        secret = service.signals.create_signal_endpoint_token(ci.id, "github").secret
        foreign = service.signals.create_signal_endpoint_token(other.id, "x").secret
        first = service.signals.receive_signal("ci", secret, {"type": "deploy", "data": {"v": 1}})
        assert (first.endpoint_id, first.payload) == (ci.id, {"type": "deploy", "data": {"v": 1}})
        with pytest.raises(RateLimited) as limited:
            service.signals.receive_signal("ci", secret, None)
        assert 0 < limited.value.retry_after <= 1
        clock.advance(1.0)
        second = service.signals.receive_signal("ci", secret, None)
        for refused_secret, error in (
            (None, Unauthenticated),
            ("wrong", Unauthenticated),
            (foreign, Forbidden),
        ):
            clock.advance(5)
            with pytest.raises(error):
                service.signals.receive_signal("ci", refused_secret, {})
        with pytest.raises(NotFound):
            service.signals.receive_signal("nope", secret, {})
        service.signals.update_signal_endpoint(ci.id, enabled=False)
        with pytest.raises(Forbidden):
            service.signals.receive_signal("ci", secret, {})
        assert [s.id for s in service.signals.list_signals(ci.id)] == [second.id, first.id]
        assert [
            s.id for s in service.signals.list_signals(ci.id, limit=1, before_id=second.id)
        ] == [first.id]
        assert [s.id for s in service.signals.list_signals()] == [second.id, first.id]

    def test_a_signal_payload_over_the_limit_is_refused_and_not_stored(self, store: Store) -> None:
        service = Service(store, limits=Limits(signal_payload_bytes=20))
        endpoint = service.signals.create_signal_endpoint("ci")
        secret = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
        with pytest.raises(LimitExceeded) as refused:
            service.signals.receive_signal("ci", secret, {"text": "x" * 20})
        assert refused.value.limit == "signal_payload_bytes"
        assert service.signals.list_signals() == []
        service.signals.receive_signal("ci", secret, {"t": "x" * 10})  # 16 bytes: within the limit

    # --- action sets ---
    @staticmethod
    def _alerting(service: Service) -> int:
        service.flags.create_flag("default", "kill-checkout", type="kill-switch")
        service.flags.create_flag("default", "banner")
        endpoint = service.signals.create_signal_endpoint("alerts")
        return endpoint.id

    def test_a_matching_signal_runs_the_action_set_in_order(self, store: Store) -> None:
        clock = _Clock()
        service = Service(store, clock=clock)
        source = self._alerting(service)
        secret = service.signals.create_signal_endpoint_token(source, "pager").secret
        action_set = service.actions.create_action_set(
            "page-kills-checkout",
            "default",
            source,
            [
                Action(ActionKind.MARK_FEATURE_STALE, "banner", sort_order=2),
                Action(ActionKind.TOGGLE_FEATURE_ON, "kill-checkout", PROD, sort_order=1),
            ],
            filters=[Constraint("alert.severity", "IN", ("critical",))],
        )
        assert [a.kind for a in action_set.actions] == [
            ActionKind.TOGGLE_FEATURE_ON,
            ActionKind.MARK_FEATURE_STALE,
        ]
        quiet = service.signals.receive_signal("alerts", secret, {"alert": {"severity": "info"}})
        assert service.actions.run_action_sets(quiet) == []
        assert service.actions.list_action_executions(action_set.id) == []
        clock.advance(1)
        critical = service.signals.receive_signal(
            "alerts", secret, {"alert": {"severity": "critical"}}
        )
        (execution,) = service.actions.run_action_sets(critical)
        assert execution.state is ActionState.SUCCESS
        assert [o.state for o in execution.outcomes] == [ActionState.SUCCESS] * 2
        assert execution.signal == critical
        assert execution.action_set == action_set
        details = service.flags.get_flag("default", "kill-checkout")
        assert [e.enabled for e in details.environments] == [False, True]
        assert service.flags.get_flag("default", "banner").flag.stale
        assert service.actions.list_action_executions(action_set.id) == [execution]
        actors = {e.created_by for e in self._events(service) if e.feature_name == "kill-checkout"}
        assert "action-set:page-kills-checkout" in actors

    def test_an_action_set_runs_once_per_signal(self, service: Service) -> None:
        source = self._alerting(service)
        enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV)]
        action_set = service.actions.create_action_set("once", "default", source, enable)
        secret = service.signals.create_signal_endpoint_token(source, "t").secret
        signal = service.signals.receive_signal("alerts", secret, {})
        (first,) = service.actions.run_action_sets(signal)
        assert service.actions.run_action_sets(signal) == []
        assert service.actions.execute_action_set(action_set, signal) is None
        assert service.actions.list_action_executions(action_set.id) == [first]
        with pytest.raises(Conflict), service.store.transaction() as tx:
            tx.add_action_execution(attrs.evolve(first, id=0))

    def test_an_action_set_changed_after_matching_does_not_run(self, service: Service) -> None:
        source = self._alerting(service)
        enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV)]
        matched = service.actions.create_action_set("x", "default", source, enable)
        secret = service.signals.create_signal_endpoint_token(source, "t").secret
        signal = service.signals.receive_signal("alerts", secret, {})
        service.actions.set_action_set_enabled(matched.id, False)
        assert service.actions.execute_action_set(matched, signal) is None
        assert not service.flags.get_flag("default", "banner").environments[0].enabled
        assert service.actions.list_action_executions(matched.id) == []

    def test_a_failing_action_stops_the_rest_and_is_recorded(self, service: Service) -> None:
        source = self._alerting(service)
        action_set = service.actions.create_action_set(
            "three-steps",
            "default",
            source,
            [
                Action(ActionKind.TOGGLE_FEATURE_ON, "kill-checkout", PROD, 1),
                Action(ActionKind.TOGGLE_FEATURE_OFF, "banner", DEV, 2),
                Action(ActionKind.TOGGLE_FEATURE_ON, "kill-checkout", DEV, 3),
            ],
        )
        service.archive.archive_flag("default", "banner")
        secret = service.signals.create_signal_endpoint_token(source, "t").secret
        (execution,) = service.actions.run_action_sets(
            service.signals.receive_signal("alerts", secret, None)
        )
        assert execution.state is ActionState.FAILED
        assert [o.state for o in execution.outcomes] == [
            ActionState.SUCCESS,
            ActionState.FAILED,
            ActionState.NOT_STARTED,
        ]
        assert "banner" in (execution.outcomes[1].details or "")
        # The step before the failure stands; the one after it never ran.
        environments = service.flags.get_flag("default", "kill-checkout").environments
        assert [e.enabled for e in environments] == [False, True]
        assert service.actions.list_action_executions(action_set.id) == [execution]

    def test_an_action_set_whose_filters_cannot_be_evaluated_fails_alone_and_is_recorded(
        self, service: Service
    ) -> None:
        source = self._alerting(service)
        stale = [Action(ActionKind.MARK_FEATURE_STALE, "banner")]
        broken = service.actions.create_action_set("broken", "default", source, stale)
        enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "kill-checkout", DEV)]
        healthy = service.actions.create_action_set("healthy", "default", source, enable)
        secret = service.signals.create_signal_endpoint_token(source, "t").secret
        signal = service.signals.receive_signal("alerts", secret, {})
        problem = "its filters could not be evaluated: ValueError()"
        failed = service.actions.execute_action_set(broken, signal, filter_problem=problem)
        assert failed is not None
        assert failed.state is ActionState.FAILED
        assert [(o.state, o.details) for o in failed.outcomes] == [
            (ActionState.NOT_STARTED, problem)
        ]
        assert not service.flags.get_flag("default", "banner").flag.stale
        assert service.actions.list_action_executions(broken.id) == [failed]
        (ran,) = service.actions.run_action_sets(signal)  # the other set still runs
        assert ran.action_set == healthy
        assert ran.state is ActionState.SUCCESS

    def test_action_sets_are_validated_and_limited(self, store: Store) -> None:
        limits = Limits(
            action_sets_per_project=1,
            filters_per_action_set=1,
            values_per_action_filter=2,
            actions_per_action_set=1,
        )
        service = Service(store, limits=limits)
        source = self._alerting(service)
        enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV)]
        with pytest.raises(NotFound):
            service.actions.create_action_set("x", "default", 999, enable)
        with pytest.raises(NotFound):
            service.actions.create_action_set(
                "x", "default", source, [Action(ActionKind.TOGGLE_FEATURE_ON, "nope", DEV)]
            )
        with pytest.raises(InvalidInput):
            service.actions.create_action_set(
                "x", "default", source, [Action(ActionKind.TOGGLE_FEATURE_ON, "banner")]
            )
        with pytest.raises(InvalidInput):
            service.actions.create_action_set(
                "x", "default", source, [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV, 0)]
            )
        with pytest.raises(InvalidInput):
            service.actions.create_action_set(
                "x", "default", source, enable, filters=[Constraint("a", "REGEX", value="(")]
            )
        with pytest.raises(LimitExceeded) as refused:
            service.actions.create_action_set("x", "default", source, enable * 2)
        assert refused.value.limit == "actions_per_action_set"
        with pytest.raises(LimitExceeded) as refused:
            service.actions.create_action_set(
                "x", "default", source, enable, filters=[_in("a", "1"), _in("b", "1")]
            )
        assert refused.value.limit == "filters_per_action_set"
        with pytest.raises(LimitExceeded) as refused:
            service.actions.create_action_set(
                "x", "default", source, enable, filters=[_in("a", *"123")]
            )
        assert refused.value.limit == "values_per_action_filter"
        first = service.actions.create_action_set(
            "x", "default", source, enable, filters=[_in("a", "1", "2")]
        )
        with pytest.raises(LimitExceeded) as refused:
            service.actions.create_action_set("y", "default", source, enable)
        assert refused.value.limit == "action_sets_per_project"
        assert [a.id for a in service.actions.list_action_sets("default")] == [first.id]
        service.actions.update_action_set(
            first.id, attrs.evolve(first, name="renamed", enabled=False)
        )
        assert service.actions.get_action_set(first.id).name == "renamed"
        service.actions.delete_action_set(first.id)
        assert service.actions.list_action_sets() == []

    def test_action_set_names_are_unique_in_a_project(self, service: Service) -> None:
        source = self._alerting(service)
        enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV)]
        first = service.actions.create_action_set("page", "default", source, enable)
        with pytest.raises(NameConflict):
            service.actions.create_action_set("page", "default", source, enable)
        second = service.actions.create_action_set("other", "default", source, enable)
        with pytest.raises(NameConflict):
            service.actions.update_action_set(second.id, attrs.evolve(second, name="page"))
        service.actions.update_action_set(first.id, attrs.evolve(first, description="same name"))

    def test_an_action_set_is_only_found_in_its_own_project(self, service: Service) -> None:
        source = self._alerting(service)
        service.projects.create_project("other", "Other")
        enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV)]
        action_set = service.actions.create_action_set("x", "default", source, enable)
        with pytest.raises(NotFound):
            service.actions.get_action_set(action_set.id, project="other")
        with pytest.raises(NotFound):
            service.actions.list_action_executions(action_set.id, project="other")
        with pytest.raises(NotFound):
            service.actions.update_action_set(
                action_set.id, attrs.evolve(action_set, project="other")
            )
        with pytest.raises(NotFound):
            service.actions.delete_action_set(action_set.id, project="other")
        with pytest.raises(NotFound):
            service.actions.set_action_set_enabled(action_set.id, False, project="other")
        assert service.actions.get_action_set(action_set.id, project="default") == action_set

    # --- events, revision, atomicity ---
    def test_every_change_writes_an_event_and_moves_the_revision(self, service: Service) -> None:
        revisions = [service.store.revision()]
        service.flags.create_flag("default", "f")
        revisions.append(service.store.revision())
        strategy = service.strategies.add_strategy("default", "f", DEV, _rollout(10))
        revisions.append(service.store.revision())
        service.environments.set_environment_enabled("default", "f", DEV, True)
        revisions.append(service.store.revision())
        service.segments.replace_strategy_segments(strategy.id or "", [])
        revisions.append(service.store.revision())
        assert revisions == sorted(set(revisions))
        events = self._events(service)
        assert [e.type for e in events] == [
            "feature-strategy-segments-updated",
            "feature-environment-enabled",
            "feature-strategy-add",
            "feature-created",
        ]
        latest = events[0]
        assert latest.id == service.store.revision()
        assert latest.feature_name == "f"
        assert latest.created_by == "system"
        added = next(e for e in events if e.type == "feature-strategy-add")
        assert (added.environment, added.project) == (DEV, "default")

    def test_a_failed_use_case_changes_nothing(self, service: Service) -> None:
        service.flags.create_flag("default", "f")
        before = service.store.revision()
        with pytest.raises(FlagcoreError):
            service.strategies.add_strategy(
                "default", "f", DEV, Strategy("default", segments=(42,))
            )
        assert service.store.revision() == before
        assert service.strategies.list_strategies("default", "f", DEV) == []

    def test_an_exception_inside_a_transaction_rolls_everything_back(self, store: Store) -> None:
        Service(store)
        before = store.revision()

        def change_then_fail() -> None:
            with store.transaction() as tx:
                tx.append_event("x", "test")
                tx.save_tag_type(attrs.evolve(tx.list_tag_types()[0], description="changed"))
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError):
            change_then_fail()
        assert store.revision() == before
        with store.transaction(write=False) as tx:
            assert tx.list_tag_types()[0].description != "changed"

    @staticmethod
    def _events(service: Service) -> list:  # type: ignore[type-arg]
        with service.store.transaction(write=False) as tx:
            return list(tx.list_events(limit=1000))
