"""Managing environments over every store: deleting one with every flag's rules in it,
cloning one, and copying a flag's strategies, each in one unit of work."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.entities import Action, ActionKind
from flagcore.errors import Conflict, Forbidden, NotFound
from flagcore.model import Constraint, Strategy
from flagcore.people import RootRole
from flagcore.permissions import PREDEFINED_ROLES, Grant, Permission, RoleType
from flagcore.ports import Store
from flagcore.principals import Principal
from flagcore.service import NewRole, Service
from tests.service.store_factories import FACTORIES


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store: Store = FACTORIES[request.param](tmp_path)
    yield Service(store)
    store.close()


def _flag_with_rules(service: Service, environment: str) -> Strategy:
    service.flags.create_flag("default", "f")
    segment = service.segments.create_segment("beta", [Constraint("userId", "IN", ("1",))])
    strategy = service.strategies.add_strategy(
        "default", "f", environment, Strategy("default", segments=(segment.id,))
    )
    service.environments.set_environment_enabled("default", "f", environment, True)
    return strategy


def test_deleting_an_environment_deletes_every_flags_rules_there_and_nothing_else(
    service: Service,
) -> None:
    service.environments.create_environment("qa", "test")
    _flag_with_rules(service, "qa")
    service.strategies.add_strategy("default", "f", "development", Strategy("default"))
    assert service.environments.environment_usage("qa").strategies == 1
    service.environments.delete_environment("qa")
    names = [e.name for e in service.environments.list_environments()]
    assert names == ["development", "production"]
    states = service.flags.get_flag("default", "f").environments
    assert [(s.environment.name, len(s.strategies)) for s in states] == [
        ("development", 1),
        ("production", 0),
    ]
    with pytest.raises(NotFound):
        service.environments.delete_environment("qa")


def test_an_environment_a_token_names_is_kept_and_the_refusal_names_the_token(
    service: Service,
) -> None:
    service.tokens.create_token("sdk", "client", environment="production")
    with pytest.raises(Conflict) as refused:
        service.environments.delete_environment("production")
    assert [d.message for d in refused.value.details] == ['API token "sdk"']
    assert "production" in [e.name for e in service.environments.list_environments()]


def test_a_clone_copies_switches_and_strategies_with_new_ids_and_segments(
    service: Service,
) -> None:
    original = _flag_with_rules(service, "development")
    service.environments.clone_environment("development", "dev-two", "development")
    (state,) = (
        s
        for s in service.flags.get_flag("default", "f").environments
        if s.environment.name == "dev-two"
    )
    assert state.enabled
    (copy,) = state.strategies
    assert copy.id != original.id
    assert (copy.name, copy.segments) == (original.name, original.segments)


def test_copying_strategies_appends_them_in_order_and_asks_for_the_target_environment(
    service: Service,
) -> None:
    service.flags.create_flag("default", "f")
    for name in ("default", "userWithId"):
        parameters = {"userIds": "1"} if name == "userWithId" else {}
        service.strategies.add_strategy("default", "f", "development", Strategy(name, parameters))
    service.strategies.add_strategy("default", "f", "production", Strategy("default", title="kept"))
    copied = service.strategies.copy_strategies("default", "f", "development", "production")
    listed = service.strategies.list_strategies("default", "f", "production")
    assert [(s.name, s.title) for s in listed] == [
        ("default", "kept"),
        ("default", None),
        ("userWithId", None),
    ]
    assert [s.id for s in listed[1:]] == [s.id for s in copied]
    viewer = Principal.of_roles("user:9:vi", PREDEFINED_ROLES[RootRole.VIEWER.role_id])
    with pytest.raises(Forbidden):
        service.strategies.copy_strategies(
            "default", "f", "development", "production", actor=viewer
        )
    assert len(service.strategies.list_strategies("default", "f", "production")) == 3


def test_an_environment_an_action_set_or_a_role_names_is_kept_naming_each(
    service: Service,
) -> None:
    service.environments.create_environment("qa", "test")
    service.flags.create_flag("default", "f")
    endpoint = service.signals.create_signal_endpoint("alerts")
    off = Action(ActionKind.TOGGLE_FEATURE_OFF, "f", environment="qa")
    service.actions.create_action_set("switch off", "default", endpoint.id, [off])
    grant = Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "qa")
    service.roles.create_role(NewRole("qa switcher", RoleType.CUSTOM, "", (grant,)))
    with pytest.raises(Conflict) as refused:
        service.environments.delete_environment("qa")
    assert [d.message for d in refused.value.details] == [
        'action set "switch off" of project "default"',
        'role "qa switcher"',
    ]
    assert "qa" in [e.name for e in service.environments.list_environments()]
