"""A change request's preview in the service, over every store (issue 30): each flag's end
state is what applying the request would leave, found by a trial that every store rolls
back, so reading a preview writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from flagcore.model import Strategy, Variant
from flagcore.people import RootRole
from flagcore.principals import Principal
from flagcore.service import DraftChange, NewUser, Service
from tests.service.store_factories import FACTORIES

PROD = "production"
ROLLOUT = {"name": "flexibleRollout", "parameters": {"rollout": "25", "stickiness": "userId"}}
VARIANTS = [{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "userId"}]


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        made = Service(store)
        made.projects.create_project("alpha", "Alpha")
        made.flags.create_flag("alpha", "f")
        made.strategies.add_strategy("alpha", "f", PROD, Strategy("default"))
        made.change_requests.set_change_request_config(
            "alpha", PROD, enabled=True, required_approvals=1
        )
        yield made
    finally:
        store.close()


def _editor(service: Service, name: str) -> Principal:
    user = service.users.create_user(NewUser(RootRole.EDITOR, email=f"{name}@x.io", name=name))
    return service.roles.principal_of(user)


def _without_ids(strategies: tuple[Strategy, ...]) -> list[Strategy]:
    return [attrs.evolve(s, id=None) for s in strategies]


def test_a_flags_end_state_is_what_applying_leaves_and_reading_it_writes_nothing(
    service: Service,
) -> None:
    [placed] = service.strategies.list_strategies("alpha", "f", PROD)
    ann = _editor(service, "Ann")
    draft = service.change_requests.add_changes(
        "alpha",
        PROD,
        [
            DraftChange("f", "addStrategy", ROLLOUT),
            DraftChange("f", "deleteStrategy", {"id": placed.id}),
            DraftChange("f", "updateEnabled", {"enabled": True}),
            DraftChange("f", "patchVariant", {"variants": VARIANTS}),
        ],
        actor=ann,
    )
    revision = service.storage.revision()
    events = len(service.events.list_events())

    request, [state] = service.change_requests.flag_end_states("alpha", draft.id)
    read = service.change_request_previews.change_request_preview_input("alpha", draft.id)

    assert service.storage.revision() == revision
    assert len(service.events.list_events()) == events
    assert service.strategies.list_strategies("alpha", "f", PROD) == [placed]
    assert request.id == draft.id
    assert (state.flag, state.failure) == ("f", None)
    assert state.change is not None
    assert state.change.enabled is True
    assert [s.name for s in state.change.strategies or ()] == ["flexibleRollout"]
    assert state.change.variants == (Variant("blue", 1000, stickiness="userId"),)
    [feature] = read.features
    assert feature.read is not None
    assert feature.read.after != feature.read.before

    # Approved by another person and applied, the flag is in the end state the trial found.
    crs = service.change_requests
    crs.submit_change_request("alpha", draft.id, actor=ann)
    crs.approve_change_request("alpha", draft.id, actor=_editor(service, "Bob"))
    crs.apply_change_request("alpha", draft.id)
    applied = tuple(service.strategies.list_strategies("alpha", "f", PROD))
    assert _without_ids(applied) == _without_ids(state.change.strategies or ())
    environment = next(
        e for e in service.flags.get_flag("alpha", "f").environments if e.environment.name == PROD
    )
    assert (environment.enabled, environment.variants) == (True, state.change.variants)
