"""Release templates and plans (issue 32) in the service, over every store: templates
checked with JSON paths, plans whose milestones replace the flag's strategies in steps,
every move an event, all or nothing, and automatic progression applied exactly once by
two nodes over one database (and by a node started after the time passed)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flagcore.engine import Engine
from flagcore.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
)
from flagcore.model import Constraint, Strategy
from flagcore.people import RootRole
from flagcore.ports import Store
from flagcore.release_plans import Milestone, ReleasePlan
from flagcore.service import NewUser, Service, checked_safeguard
from flagcore.service.context import utc_now
from flagcore.service.impact_metrics import MAX_SERIES_PER_FLAG
from flagcore.wire import ImpactMetric, ImpactSample
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.cluster.postgres_server import fresh_database
from tests.service.store_factories import FACTORIES

DEV = "development"
USERS = [str(i) for i in range(1000)]


def _rollout(percent: int) -> Strategy:
    return Strategy(
        "flexibleRollout",
        {"rollout": str(percent), "stickiness": "userId", "groupId": "checkout"},
    )


def _steps(*, minutes: int | None = None) -> list[Milestone]:
    return [
        Milestone("", name, order, (_rollout(percent),), transition_minutes=minutes)
        for order, (name, percent) in enumerate((("10%", 10), ("50%", 50), ("100%", 100)))
    ]


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        made = Service(store)
        made.flags.create_flag("default", "checkout")
        yield made
    finally:
        store.close()


def _on_for(service: Service) -> set[str]:
    engine = Engine(service.client.client_features(DEV))
    return {u for u in USERS if engine.is_enabled("checkout", {"userId": u})}


def _applied(service: Service, *, minutes: int | None = None) -> ReleasePlan:
    template = service.release_templates.create_release_plan_template(
        "Gradual", "10 → 50 → 100", _steps(minutes=minutes)
    )
    return service.release_plans.add_release_plan("default", "checkout", DEV, template.id)


def test_a_template_keeps_its_milestones_in_order_with_ids_of_its_own(service: Service) -> None:
    steps = list(reversed(_steps()))
    made = service.release_templates.create_release_plan_template("Gradual", None, steps)
    assert [m.name for m in made.milestones] == ["10%", "50%", "100%"]
    assert all(m.id and m.strategies[0].id for m in made.milestones)
    assert service.release_templates.get_release_plan_template(made.id) == made
    assert service.release_templates.list_release_plan_templates() == [made]
    with pytest.raises(NameConflict):
        service.release_templates.create_release_plan_template("Gradual", None, _steps())


@pytest.mark.parametrize(
    ("milestones", "path"),
    [
        ([], "$.milestones"),
        ([Milestone("", "", 0)], "$.milestones[0].name"),
        (
            [Milestone("", "a", 0), Milestone("", "b", 1, (Strategy("nope"),))],
            "$.milestones[1].strategies[0].name",
        ),
        (
            [Milestone("", "a", 0, (_rollout(150),))],
            "$.milestones[0].strategies[0].parameters.rollout",
        ),
        (
            [Milestone("", "a", 0, (Strategy("default", segments=(99,)),))],
            "$.milestones[0].strategies[0].segments[0]",
        ),
        (
            [Milestone("", "a", 0, transition_minutes=0)],
            "$.milestones[0].transitionCondition.intervalMinutes",
        ),
        ([Milestone("", "a", 0), Milestone("", "a", 1)], "$.milestones[1].name"),
    ],
)
def test_a_bad_template_is_refused_at_the_json_path_of_what_is_wrong(
    service: Service, milestones: list[Milestone], path: str
) -> None:
    with pytest.raises((InvalidInput, NotFound)) as refused:
        service.release_templates.create_release_plan_template("T", None, milestones)
    assert path in [d.path for d in refused.value.details]
    assert service.release_templates.list_release_plan_templates() == []


def test_milestones_move_the_rollout_10_50_100_for_the_same_users_with_an_event_each(
    service: Service,
) -> None:
    plan = _applied(service)
    assert plan.active_milestone_id is None
    ten, fifty, hundred = (m.id for m in plan.milestones)
    plans = service.release_plans
    plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, ten)
    service.environments.set_environment_enabled("default", "checkout", DEV, True)
    at_ten = _on_for(service)
    strategies = service.strategies.list_strategies("default", "checkout", DEV)
    assert [s.parameters["rollout"] for s in strategies] == ["10"]
    plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, fifty)
    at_fifty = _on_for(service)
    plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, hundred)
    at_hundred = _on_for(service)
    assert 50 < len(at_ten) < 150
    assert 400 < len(at_fifty) < 600
    assert at_ten < at_fifty < at_hundred == set(USERS)
    strategies = service.strategies.list_strategies("default", "checkout", DEV)
    assert [s.parameters["rollout"] for s in strategies] == ["100"]
    stored = plans.release_plans_of("default", "checkout", DEV)[0]
    assert stored.active_milestone_id == hundred
    types = [e.type for e in reversed(service.events.list_events(limit=50))]
    assert types.count("release-plan-milestone-started") == 3
    assert "release-plan-added" in types
    with pytest.raises(Conflict):
        plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, hundred)


def test_a_milestone_that_cannot_start_changes_nothing(service: Service) -> None:
    segment = service.segments.create_segment("beta", [Constraint("region", "IN", values=("eu",))])
    steps = [
        Milestone("", "first", 0, (_rollout(10),)),
        Milestone(
            "", "segmented", 1, (Strategy("default"), Strategy("default", segments=(segment.id,)))
        ),
    ]
    template = service.release_templates.create_release_plan_template("T", None, steps)
    plan = service.release_plans.add_release_plan("default", "checkout", DEV, template.id)
    first, second = plan.milestones
    service.release_plans.start_release_plan_milestone(
        "default", "checkout", DEV, plan.id, first.id
    )
    service.segments.delete_segment(segment.id)
    before = service.strategies.list_strategies("default", "checkout", DEV)
    events = len(service.events.list_events(limit=500))
    with pytest.raises(NotFound):
        service.release_plans.start_release_plan_milestone(
            "default", "checkout", DEV, plan.id, second.id
        )
    assert service.strategies.list_strategies("default", "checkout", DEV) == before
    assert len(service.events.list_events(limit=500)) == events
    kept = service.release_plans.release_plans_of("default", "checkout", DEV)[0]
    assert kept.active_milestone_id == first.id


def test_removing_a_plan_removes_its_strategies_and_keeps_those_added_by_hand(
    service: Service,
) -> None:
    plan = _applied(service)
    service.release_plans.start_release_plan_milestone(
        "default", "checkout", DEV, plan.id, plan.milestones[0].id
    )
    by_hand = service.strategies.add_strategy(
        "default", "checkout", DEV, Strategy("userWithId", {"userIds": "ann"})
    )
    with pytest.raises(Conflict):
        _applied_again = service.release_plans.add_release_plan(
            "default", "checkout", DEV, plan.template_id
        )
    service.release_plans.remove_release_plan("default", "checkout", DEV, plan.id)
    assert service.strategies.list_strategies("default", "checkout", DEV) == [by_hand]
    assert service.release_plans.release_plans_of("default", "checkout", DEV) == []
    assert service.events.list_events(limit=1)[0].type == "release-plan-removed"


def test_a_viewer_may_not_start_a_milestone_and_nothing_is_written(service: Service) -> None:
    plan = _applied(service)
    viewer = service.roles.principal_of(
        service.users.create_user(NewUser(RootRole.VIEWER, email="v@x.io", name="V"))
    )
    with pytest.raises(Forbidden):
        service.release_plans.start_release_plan_milestone(
            "default", "checkout", DEV, plan.id, plan.milestones[0].id, actor=viewer
        )
    assert service.strategies.list_strategies("default", "checkout", DEV) == []


def test_a_progression_is_due_only_once_its_time_has_come(service: Service) -> None:
    plan = _applied(service, minutes=30)
    plans = service.release_plans
    started = plans.start_release_plan_milestone(
        "default", "checkout", DEV, plan.id, plan.milestones[0].id
    )
    assert started.next_move_at is not None
    assert plans.due_release_plans() == []
    later = Service(service.store, clock=lambda: started.next_move_at + dt.timedelta(seconds=5))  # type: ignore[operator]
    assert later.release_plans.due_release_plans() == [plan.id]
    moved = later.release_plans.advance_release_plan(plan.id)
    assert moved is not None
    assert moved.active_milestone_id == plan.milestones[1].id
    started_event = later.events.list_events(limit=1)[0]
    assert started_event.type == "release-plan-milestone-started"
    assert started_event.data is not None
    assert started_event.data["automatic"] is True
    assert started_event.data["delaySeconds"] == 5


def _two_nodes(kind: str, tmp_path: Path) -> tuple[Store, Store]:
    if kind == "postgres":
        url = fresh_database()
        return PostgresStore(url), PostgresStore(url)
    return SqliteStore(tmp_path / "shared.db"), SqliteStore(tmp_path / "shared.db")


@pytest.mark.parametrize("kind", ["sqlite-file", "postgres"])
def test_a_due_progression_is_applied_exactly_once_by_two_nodes_racing(
    kind: str, tmp_path: Path
) -> None:
    first, second = _two_nodes(kind, tmp_path)
    try:
        one = Service(first)
        one.flags.create_flag("default", "checkout")
        plan = _applied(one, minutes=10)
        started = one.release_plans.start_release_plan_milestone(
            "default", "checkout", DEV, plan.id, plan.milestones[0].id
        )
        assert started.next_move_at is not None
        later = started.next_move_at + dt.timedelta(minutes=1)
        nodes = [Service(store, clock=lambda: later) for store in (first, second)]
        assert nodes[1].release_plans.due_release_plans() == [plan.id]
        with ThreadPoolExecutor(2) as pool:
            results = list(
                pool.map(lambda node: node.release_plans.advance_release_plan(plan.id), nodes)
            )
        assert sum(result is not None for result in results) == 1
        events = nodes[0].events.list_events(limit=50)
        assert [e.type for e in events].count("release-plan-milestone-started") == 2
        strategies = nodes[0].strategies.list_strategies("default", "checkout", DEV)
        assert [s.parameters["rollout"] for s in strategies] == ["50"]
        # The 50% milestone has its own 10 minutes: nothing is due until they pass.
        assert nodes[0].release_plans.due_release_plans() == []
    finally:
        first.close()
        second.close()


def test_a_node_started_after_the_time_passed_applies_the_progression(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    one = Service(store)
    one.flags.create_flag("default", "checkout")
    plan = _applied(one, minutes=10)
    started = one.release_plans.start_release_plan_milestone(
        "default", "checkout", DEV, plan.id, plan.milestones[0].id
    )
    store.close()
    assert started.next_move_at is not None
    reopened = SqliteStore(tmp_path / "flags.db")
    try:
        restarted = Service(reopened, clock=lambda: started.next_move_at + dt.timedelta(hours=3))  # type: ignore[operator]
        assert restarted.release_plans.due_release_plans() == [plan.id]
        moved = restarted.release_plans.advance_release_plan(plan.id)
        assert moved is not None
        assert moved.active_milestone_id == plan.milestones[1].id
        assert restarted.release_plans.advance_release_plan(plan.id) is None
    finally:
        reopened.close()


def _counter(name: str, value: float, flag: str = "checkout") -> ImpactMetric:
    return ImpactMetric(name, "counter", (ImpactSample({"featureName": flag}, value=value),))


def _guarded(service: Service, action: str = "pausePlan") -> ReleasePlan:
    """A plan on its 50% milestone, due to move on in 10 minutes, guarded by an error
    rate above 2% over 5 minutes."""
    plan = _applied(service, minutes=10)
    plans = service.release_plans
    plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, plan.milestones[0].id)
    plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, plan.milestones[1].id)
    guard = checked_safeguard("errors", "sum", ">", 0.02, 5, action=action, ratio_of="requests")
    return plans.put_release_plan_safeguard("default", "checkout", DEV, plan.id, guard)


def test_an_error_rate_above_its_threshold_pauses_the_plan_with_the_reason_as_an_event(
    service: Service,
) -> None:
    plan = _guarded(service)
    plans = service.release_plans
    service.impact_metrics.record_sdk_impact_metrics(
        DEV, [_counter("requests", 1000), _counter("errors", 10)]
    )
    assert plans.due_release_plans() == []  # 1%: nothing trips, the time has not come
    service.impact_metrics.record_sdk_impact_metrics(DEV, [_counter("errors", 40)])
    assert plans.due_release_plans() == [plan.id]  # 5% > 2%, before the time
    paused = plans.advance_release_plan(plan.id)
    assert paused is not None
    assert paused.paused_reason is not None
    assert "errors / requests" in paused.paused_reason
    assert "0.05" in paused.paused_reason
    assert paused.next_move_at is None
    assert paused.active_milestone_id == plan.milestones[1].id
    event = service.events.list_events(limit=1)[0]
    assert event.type == "release-plan-progressions-paused"
    assert event.feature_name == "checkout"
    assert event.data is not None
    assert event.data["action"] == "pause"
    later = Service(service.store, clock=lambda: utc_now() + dt.timedelta(hours=1))
    assert later.release_plans.due_release_plans() == []  # paused: the time passes by
    resumed = plans.resume_milestone_progressions("default", "checkout", DEV, plan.id)
    assert resumed.paused_reason is None
    assert resumed.next_move_at is not None


def test_a_rollback_safeguard_puts_the_previous_milestones_strategies_back(
    service: Service,
) -> None:
    plan = _guarded(service, action="rollbackPlan")
    service.impact_metrics.record_sdk_impact_metrics(
        DEV, [_counter("requests", 100), _counter("errors", 50)]
    )
    moved = service.release_plans.advance_release_plan(plan.id)
    assert moved is not None
    assert moved.active_milestone_id == plan.milestones[0].id
    assert moved.paused_reason is not None
    strategies = service.strategies.list_strategies("default", "checkout", DEV)
    assert [s.parameters["rollout"] for s in strategies] == ["10"]


def test_impact_metrics_of_unknown_flags_or_without_a_flag_are_not_kept(
    service: Service,
) -> None:
    unlabelled = ImpactMetric("errors", "counter", (ImpactSample({}, value=1),))
    recorded = service.impact_metrics.record_sdk_impact_metrics(
        DEV, [_counter("errors", 1, flag="no-such-flag"), unlabelled, _counter("errors", 2)]
    )
    assert (recorded.kept, recorded.dropped) == (1, 2)
    (point,) = service.impact_metrics.impact_points("default", "checkout", DEV, "errors")
    assert point.value == 2


def test_an_operator_posting_past_a_flags_series_bound_is_told_and_nothing_is_kept(
    service: Service,
) -> None:
    many = [_counter(f"m{i}", 1) for i in range(MAX_SERIES_PER_FLAG + 1)]
    with pytest.raises(LimitExceeded):
        service.impact_metrics.post_impact_metrics("default", "checkout", DEV, many)
    assert service.impact_metrics.impact_points("default", "checkout", DEV, "m0") == []


def test_histogram_percentiles_read_the_bucket_holding_the_quantile(service: Service) -> None:
    plan = _applied(service, minutes=10)
    plans = service.release_plans
    plans.start_release_plan_milestone("default", "checkout", DEV, plan.id, plan.milestones[0].id)
    guard = checked_safeguard("latency", "p95", ">", 0.5, 5)
    plans.put_release_plan_safeguard("default", "checkout", DEV, plan.id, guard)
    sample = ImpactSample(
        {"featureName": "checkout"},
        count=100,
        sum=20.0,
        buckets=(("0.1", 50), ("0.5", 90), ("1.0", 99), ("+Inf", 100)),
    )
    service.impact_metrics.record_sdk_impact_metrics(
        DEV, [ImpactMetric("latency", "histogram", (sample,))]
    )
    assert plans.due_release_plans() == [plan.id]  # p95 is in the ≤ 1.0 bucket
    paused = plans.advance_release_plan(plan.id)
    assert paused is not None
    assert paused.paused_reason is not None
    assert "latency (p95)" in paused.paused_reason


def test_a_progression_that_cannot_be_made_pauses_the_plan_and_changes_no_strategy(
    service: Service,
) -> None:
    segment = service.segments.create_segment("beta", [Constraint("region", "IN", ("eu",))])
    steps = [
        Milestone("", "first", 0, (_rollout(10),), transition_minutes=5),
        Milestone("", "segmented", 1, (Strategy("default", segments=(segment.id,)),)),
    ]
    template = service.release_templates.create_release_plan_template("T", None, steps)
    plan = service.release_plans.add_release_plan("default", "checkout", DEV, template.id)
    started = service.release_plans.start_release_plan_milestone(
        "default", "checkout", DEV, plan.id, plan.milestones[0].id
    )
    service.segments.delete_segment(segment.id)
    before = service.strategies.list_strategies("default", "checkout", DEV)
    assert started.next_move_at is not None
    later = Service(service.store, clock=lambda: started.next_move_at + dt.timedelta(minutes=1))  # type: ignore[operator]
    stuck = later.release_plans.advance_release_plan(plan.id)
    assert stuck is not None
    assert stuck.paused_reason is not None
    assert stuck.paused_reason.startswith("the plan could not move on: there is no segment")
    assert stuck.active_milestone_id == plan.milestones[0].id
    assert later.strategies.list_strategies("default", "checkout", DEV) == before
    assert later.events.list_events(limit=1)[0].type == "release-plan-progressions-paused"
    assert later.release_plans.due_release_plans() == []


def test_an_archived_flags_plan_waits_and_moves_once_the_flag_is_revived(
    service: Service,
) -> None:
    plan = _applied(service, minutes=5)
    started = service.release_plans.start_release_plan_milestone(
        "default", "checkout", DEV, plan.id, plan.milestones[0].id
    )
    service.archive.archive_flag("default", "checkout")
    assert started.next_move_at is not None
    later = Service(service.store, clock=lambda: started.next_move_at + dt.timedelta(minutes=1))  # type: ignore[operator]
    assert later.release_plans.due_release_plans() == []
    assert later.release_plans.advance_release_plan(plan.id) is None
    later.archive.revive_flag("checkout")
    assert later.release_plans.due_release_plans() == [plan.id]


def test_points_older_than_the_safeguards_window_trip_nothing(service: Service) -> None:
    plan = _guarded(service)  # errors / requests over the last 5 minutes
    at = utc_now()
    then = Service(service.store, clock=lambda: at)
    then.impact_metrics.record_sdk_impact_metrics(
        DEV, [_counter("requests", 100), _counter("errors", 50)]
    )
    assert then.release_plans.due_release_plans() == [plan.id]
    six_minutes_on = Service(service.store, clock=lambda: at + dt.timedelta(minutes=6))
    assert six_minutes_on.release_plans.due_release_plans() == []


def test_an_sdk_keeps_impact_metrics_only_for_flags_of_its_tokens_projects(
    service: Service,
) -> None:
    service.projects.create_project("payments", "Payments")
    service.flags.create_flag("payments", "refunds")
    recorded = service.impact_metrics.record_sdk_impact_metrics(
        DEV,
        [_counter("errors", 1), _counter("errors", 5, flag="refunds")],
        projects=("default",),
    )
    assert (recorded.kept, recorded.dropped) == (1, 1)
    assert service.impact_metrics.impact_points("payments", "refunds", DEV, "errors") == []
