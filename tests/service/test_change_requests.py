"""Change requests (issue 30) in the service, over every store: the config, drafts, the
review by a second person, applying all changes or none, conflicts, and direct changes
refused where change requests are on."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flagcore.change_requests import ChangeRequestState
from flagcore.errors import Conflict, Forbidden, InvalidInput, LimitExceeded
from flagcore.model import Dependency, Strategy
from flagcore.people import RootRole
from flagcore.ports import Store
from flagcore.principals import Principal
from flagcore.service import DraftChange, NewUser, Service
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.cluster.postgres_server import fresh_database
from tests.service.store_factories import FACTORIES

PROD = "production"


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        made = Service(store)
        made.projects.create_project("alpha", "Alpha")
        for name in ("f", "g", "parent", "grandparent"):
            made.flags.create_flag("alpha", name)
        made.change_requests.set_change_request_config(
            "alpha", PROD, enabled=True, required_approvals=1
        )
        yield made
    finally:
        store.close()


def _editor(service: Service, name: str) -> Principal:
    user = service.users.create_user(NewUser(RootRole.EDITOR, email=f"{name}@x.io", name=name))
    return service.roles.principal_of(user)


def _approved(service: Service, author: Principal, approver: Principal, *changes: DraftChange):  # type: ignore[no-untyped-def]
    crs = service.change_requests
    draft = crs.add_changes("alpha", PROD, changes, actor=author)
    crs.submit_change_request("alpha", draft.id, actor=author)
    return crs.approve_change_request("alpha", draft.id, actor=approver)


def _enabled(service: Service, flag: str) -> bool:
    return any(
        e.enabled
        for e in service.flags.get_flag("alpha", flag).environments
        if e.environment.name == PROD
    )


def test_the_config_is_kept_per_environment_and_bad_approvals_are_refused_at_their_path(
    service: Service,
) -> None:
    rows = {r.environment: r for r in service.change_requests.change_request_config("alpha")}
    assert rows[PROD].enabled
    assert rows[PROD].required_approvals == 1
    assert not rows["development"].enabled
    with pytest.raises(InvalidInput) as caught:
        service.change_requests.set_change_request_config(
            "alpha", "development", enabled=True, required_approvals=0
        )
    assert caught.value.details[0].path == "$.requiredApprovals"
    rows = {r.environment: r for r in service.change_requests.change_request_config("alpha")}
    assert not rows["development"].enabled


def test_a_request_is_drafted_reviewed_by_another_person_and_applied_whole(
    service: Service,
) -> None:
    ann, bob = _editor(service, "Ann"), _editor(service, "Bob")
    crs = service.change_requests
    first = crs.add_changes(
        "alpha",
        PROD,
        [DraftChange("f", "addStrategy", {"name": "default", "constraints": []})],
        actor=ann,
    )
    second = crs.add_changes(
        "alpha", PROD, [DraftChange("f", "updateEnabled", {"enabled": True})], actor=ann
    )
    assert second.id == first.id
    assert [c.action.value for c in second.changes] == [
        "addStrategy",
        "updateEnabled",
    ]
    crs.submit_change_request("alpha", first.id, actor=ann)
    with pytest.raises(Forbidden):
        crs.approve_change_request("alpha", first.id, actor=ann)
    with pytest.raises(Conflict):
        crs.apply_change_request("alpha", first.id, actor=bob)
    assert not _enabled(service, "f")
    approved = crs.approve_change_request("alpha", first.id, actor=bob)
    assert approved.state is ChangeRequestState.APPROVED
    applied = crs.apply_change_request("alpha", first.id, actor=ann)
    assert applied.state is ChangeRequestState.APPLIED
    assert _enabled(service, "f")
    assert [s.name for s in service.strategies.list_strategies("alpha", "f", PROD)] == ["default"]
    events = service.events.list_events(limit=30)
    by_type = {e.type: e.created_by for e in events}
    assert by_type["change-request-approved"] == bob.actor
    assert by_type["change-request-applied"] == ann.actor
    assert by_type["change-request-sent-to-review"] == ann.actor


def test_two_approvals_needed_means_two_distinct_people(service: Service) -> None:
    service.change_requests.set_change_request_config(
        "alpha", PROD, enabled=True, required_approvals=2
    )
    ann, bob, cy = (_editor(service, n) for n in ("Ann", "Bob", "Cy"))
    crs = service.change_requests
    made = _approved(service, ann, bob, DraftChange("f", "updateEnabled", {"enabled": True}))
    assert made.state is ChangeRequestState.IN_REVIEW
    with pytest.raises(Conflict):
        crs.approve_change_request("alpha", made.id, actor=bob)
    assert crs.approve_change_request("alpha", made.id, actor=cy).state is (
        ChangeRequestState.APPROVED
    )


def test_a_bad_payload_is_refused_with_its_path_and_nothing_is_drafted(
    service: Service,
) -> None:
    ann = _editor(service, "Ann")
    bad = {"name": "default", "constraints": [{"contextName": "userId", "operator": "NOPE"}]}
    with pytest.raises(InvalidInput) as caught:
        service.change_requests.add_changes(
            "alpha",
            PROD,
            [
                DraftChange("f", "updateEnabled", {"enabled": True}, "$[0]"),
                DraftChange("f", "addStrategy", bad, "$[1]"),
            ],
            actor=ann,
        )
    assert caught.value.details[0].path.startswith("$[1].payload.constraints[0]")
    with pytest.raises(InvalidInput) as typed:
        service.change_requests.add_changes(
            "alpha", PROD, [DraftChange("f", "updateEnabled", {"enabled": "yes"})], actor=ann
        )
    assert typed.value.details[0].path == "$.payload.enabled"
    assert service.change_requests.open_change_requests("alpha", ann) == []
    assert service.strategies.list_strategies("alpha", "f", PROD) == []


def test_a_flag_changed_after_drafting_shows_the_conflict_and_is_not_applied(
    service: Service,
) -> None:
    ann, bob = _editor(service, "Ann"), _editor(service, "Bob")
    made = _approved(service, ann, bob, DraftChange("f", "updateEnabled", {"enabled": True}))
    service.strategies.add_strategy("alpha", "f", PROD, Strategy("default"), actor="admin-cli")
    view = service.change_requests.get_change_request("alpha", made.id)
    [conflict] = view.conflicts.values()
    assert "feature-strategy-add by admin-cli" in conflict
    with pytest.raises(Conflict):
        service.change_requests.apply_change_request("alpha", made.id, actor=bob)
    assert not _enabled(service, "f")
    service.change_requests.edit_change(
        "alpha", made.id, 1, DraftChange("f", "updateEnabled", {"enabled": True}), actor=ann
    )
    redone = service.change_requests.get_change_request("alpha", made.id)
    assert redone.conflicts == {}
    assert redone.request.state is ChangeRequestState.IN_REVIEW  # approvals withdrawn


def test_apply_writes_all_changes_or_none_when_the_second_fails(service: Service) -> None:
    ann, bob = _editor(service, "Ann"), _editor(service, "Bob")
    made = _approved(
        service,
        ann,
        bob,
        DraftChange("f", "updateEnabled", {"enabled": True}),
        DraftChange("g", "addDependency", {"feature": "parent"}),
    )
    # The parent gains a parent of its own: g may no longer depend on it (one level).
    service.dependencies.set_dependencies("alpha", "parent", [Dependency("grandparent")])
    with pytest.raises(InvalidInput):
        service.change_requests.apply_change_request("alpha", made.id, actor=bob)
    assert not _enabled(service, "f")
    assert service.flags.get_flag("alpha", "g").flag.dependencies == ()
    after = service.change_requests.get_change_request("alpha", made.id).request
    assert after.state is ChangeRequestState.APPROVED


def test_direct_changes_are_refused_where_change_requests_are_on_unless_skipped(
    service: Service,
) -> None:
    ann = _editor(service, "Ann")
    with pytest.raises(Forbidden) as caught:
        service.environments.set_environment_enabled("alpha", "f", PROD, True, actor=ann)
    assert "/api/admin/projects/alpha/environments/production/change-requests" in (
        caught.value.message
    )
    with pytest.raises(Forbidden):
        service.strategies.add_strategy("alpha", "f", PROD, Strategy("default"), actor=ann)
    with pytest.raises(Forbidden):
        service.dependencies.set_dependencies("alpha", "g", [Dependency("parent")], actor=ann)
    service.environments.set_environment_enabled("alpha", "f", "development", True, actor=ann)
    admin = Principal.admin("token:admin")
    service.environments.set_environment_enabled("alpha", "f", PROD, True, actor=admin)
    assert _enabled(service, "f")


def test_copying_strategies_into_an_environment_under_change_requests_is_refused(
    service: Service,
) -> None:
    ann = _editor(service, "Ann")
    service.strategies.add_strategy("alpha", "f", "development", Strategy("default"))
    with pytest.raises(Forbidden):
        service.strategies.copy_strategies("alpha", "f", "development", PROD, actor=ann)
    assert service.strategies.list_strategies("alpha", "f", PROD) == []
    admin = Principal.admin("token:admin")  # may skip change requests
    service.strategies.copy_strategies("alpha", "f", "development", PROD, actor=admin)
    assert len(service.strategies.list_strategies("alpha", "f", PROD)) == 1


def test_a_scheduled_request_keeps_its_time_and_can_be_applied_then(service: Service) -> None:
    ann, bob = _editor(service, "Ann"), _editor(service, "Bob")
    made = _approved(service, ann, bob, DraftChange("f", "updateEnabled", {"enabled": True}))
    at = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    crs = service.change_requests
    scheduled = crs.schedule_change_request("alpha", made.id, at, actor=bob)
    assert scheduled.state is ChangeRequestState.SCHEDULED
    assert crs.get_change_request("alpha", made.id).request.scheduled_at == at
    with pytest.raises(InvalidInput):
        crs.schedule_change_request("alpha", made.id, at - dt.timedelta(days=1), actor=bob)
    crs.apply_change_request("alpha", made.id, actor=bob)
    assert _enabled(service, "f")


def _two_nodes(kind: str, tmp_path: Path) -> tuple[Store, Store]:
    if kind == "postgres":
        url = fresh_database()
        return PostgresStore(url), PostgresStore(url)
    return SqliteStore(tmp_path / "shared.db"), SqliteStore(tmp_path / "shared.db")


@pytest.mark.parametrize("kind", ["sqlite-file", "postgres"])
def test_a_due_schedule_is_applied_exactly_once_by_two_nodes_racing(
    kind: str, tmp_path: Path
) -> None:
    first, second = _two_nodes(kind, tmp_path)
    try:
        now = dt.datetime.now(dt.UTC)
        one = Service(first)
        one.projects.create_project("alpha", "Alpha")
        one.flags.create_flag("alpha", "f")
        one.change_requests.set_change_request_config(
            "alpha", PROD, enabled=True, required_approvals=1
        )
        ann, bob = _editor(one, "Ann"), _editor(one, "Bob")
        made = _approved(one, ann, bob, DraftChange("f", "updateEnabled", {"enabled": True}))
        at = now + dt.timedelta(minutes=5)
        one.change_requests.schedule_change_request("alpha", made.id, at, actor=bob)
        later = at + dt.timedelta(seconds=90)
        nodes = [Service(store, clock=lambda: later) for store in (first, second)]
        assert nodes[1].change_requests.due_change_requests() == [("alpha", made.id)]
        with ThreadPoolExecutor(2) as pool:
            results = list(
                pool.map(
                    lambda node: node.change_requests.apply_scheduled_change_request(
                        "alpha", made.id
                    ),
                    nodes,
                )
            )
        assert sum(result is not None for result in results) == 1
        events = nodes[0].events.list_events(limit=50)
        success = [e for e in events if e.type == "change-request-scheduled-application-success"]
        assert len(success) == 1
        assert success[0].created_by == bob.actor
        assert success[0].data is not None
        assert success[0].data["data"]["delaySeconds"] == 90
        assert [e.type for e in events].count("feature-environment-enabled") == 1
        assert nodes[0].change_requests.due_change_requests() == []
    finally:
        first.close()
        second.close()


def test_a_schedule_that_cannot_be_applied_is_marked_failed_with_nothing_half_done(
    service: Service,
) -> None:
    ann, bob = _editor(service, "Ann"), _editor(service, "Bob")
    made = _approved(
        service,
        ann,
        bob,
        DraftChange("f", "updateEnabled", {"enabled": True}),
        DraftChange("g", "addDependency", {"feature": "parent"}),
    )
    at = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
    service.change_requests.schedule_change_request("alpha", made.id, at, actor=bob)
    service.dependencies.set_dependencies("alpha", "parent", [Dependency("grandparent")])
    node = Service(service.store, clock=lambda: at + dt.timedelta(seconds=1))
    assert node.change_requests.apply_scheduled_change_request("alpha", made.id) is None
    failed = node.change_requests.get_change_request("alpha", made.id).request
    assert failed.state is ChangeRequestState.SCHEDULED
    assert failed.schedule_failure is not None
    assert "one level" in failed.schedule_failure
    assert not _enabled(service, "f")
    assert node.change_requests.due_change_requests() == []


def test_an_update_drafted_without_segments_keeps_the_strategys_segments_as_directly(
    service: Service,
) -> None:
    ann, bob = _editor(service, "Ann"), _editor(service, "Bob")
    segment = service.segments.create_segment("beta", [])
    placed = service.strategies.add_strategy(
        "alpha", "f", PROD, Strategy("default", segments=(segment.id,))
    )
    made = _approved(
        service,
        ann,
        bob,
        DraftChange("f", "updateStrategy", {"id": placed.id, "name": "default", "title": "t"}),
    )
    service.change_requests.apply_change_request("alpha", made.id, actor=bob)
    [after] = service.strategies.list_strategies("alpha", "f", PROD)
    assert (after.title, after.segments) == ("t", (segment.id,))


def test_a_request_holds_a_bounded_number_of_changes(service: Service) -> None:
    ann = _editor(service, "Ann")
    change = DraftChange("f", "updateEnabled", {"enabled": True})
    with pytest.raises(LimitExceeded) as caught:
        service.change_requests.add_changes("alpha", PROD, [change] * 101, actor=ann)
    assert caught.value.limit == "changes_per_request"
    service.change_requests.add_changes("alpha", PROD, [change] * 100, actor=ann)
    with pytest.raises(LimitExceeded):
        service.change_requests.add_changes("alpha", PROD, [change], actor=ann)
    [draft] = service.change_requests.open_change_requests("alpha", ann)
    assert len(draft.request.changes) == 100
