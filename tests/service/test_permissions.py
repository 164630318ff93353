"""The service decides who may write (issue 28): a principal without the permission is
refused with `Forbidden`, nothing written and no event; one with it acts, logged by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.entities import Strategy
from flagcore.errors import Forbidden
from flagcore.passwords import NewPassword
from flagcore.people import RootRole
from flagcore.permissions import PREDEFINED_ROLES, Grant, Permission, Role, RoleType
from flagcore.principals import Principal
from flagcore.service import NewUser, Service
from flagcore_store_sqlite import SqliteStore

ADMIN, EDITOR, VIEWER, OWNER, MEMBER = (PREDEFINED_ROLES[i] for i in range(1, 6))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        made = Service(store)
        made.projects.create_project("alpha", "Alpha")
        made.projects.create_project("beta", "Beta")
        made.flags.create_flag("beta", "in-beta")
        yield made
    finally:
        store.close()


def _events(service: Service) -> int:
    return len(service.events.list_events(limit=1000))


def test_a_viewer_creating_a_flag_is_refused_with_nothing_written_and_no_event(
    service: Service,
) -> None:
    viewer = Principal.of_roles("user:3:Vi", VIEWER, user_id=3)
    events = _events(service)
    with pytest.raises(Forbidden, match="CREATE_FEATURE"):
        service.flags.create_flag("alpha", "nope", actor=viewer)
    assert [f.name for f in service.flags.list_flags("alpha")] == []
    assert _events(service) == events


def test_an_editor_creates_a_flag_and_the_event_names_the_person(service: Service) -> None:
    editor = Principal.of_roles("user:2:Ed", EDITOR, user_id=2)
    service.flags.create_flag("alpha", "made", actor=editor)
    assert service.events.list_events(limit=1)[0].created_by == "user:2:Ed"


def test_the_owner_of_one_project_is_refused_in_another(service: Service) -> None:
    owner = Principal.of_roles("user:4:Ow", VIEWER, [("alpha", OWNER)], user_id=4)
    service.flags.create_flag("alpha", "own", actor=owner)
    events = _events(service)
    with pytest.raises(Forbidden, match="project 'beta'"):
        service.archive.archive_flag("beta", "in-beta", actor=owner)
    with pytest.raises(Forbidden):
        service.strategies.add_strategy(
            "beta", "in-beta", "development", Strategy("default"), actor=owner
        )
    assert service.flags.get_flag("beta", "in-beta").flag.archived_at is None
    assert _events(service) == events


def test_a_member_may_not_change_the_projects_settings(service: Service) -> None:
    member = Principal.of_roles("user:5:Me", VIEWER, [("alpha", MEMBER)], user_id=5)
    with pytest.raises(Forbidden, match="UPDATE_PROJECT"):
        service.projects.update_project("alpha", name="Renamed", actor=member)
    assert {p.id: p.name for p in service.projects.list_projects()}["alpha"] == "Alpha"


def test_a_role_scoped_to_development_turns_flags_on_there_only(service: Service) -> None:
    dev_only = Role(
        10,
        "dev toggler",
        RoleType.CUSTOM,
        grants=(Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "development"),),
    )
    someone = Principal.of_roles("user:6:Di", VIEWER, [("beta", dev_only)], user_id=6)
    service.environments.set_environment_enabled(
        "beta", "in-beta", "development", True, actor=someone
    )
    with pytest.raises(Forbidden, match="environment 'production'"):
        service.environments.set_environment_enabled(
            "beta", "in-beta", "production", True, actor=someone
        )
    states = {
        e.environment.name: e.enabled
        for e in service.flags.get_flag("beta", "in-beta").environments
    }
    assert states == {"development": True, "production": False}


def test_an_editor_may_not_make_an_admin_token_but_may_make_a_client_token(
    service: Service,
) -> None:
    editor = Principal.of_roles("user:2:Ed", EDITOR, user_id=2)
    before = len(service.tokens.list_tokens())
    with pytest.raises(Forbidden, match="ADMIN"):
        service.tokens.create_token("sneaky", "admin", actor=editor)
    assert len(service.tokens.list_tokens()) == before
    service.tokens.create_token("sdk", "client", environment="development", actor=editor)


def test_a_user_sets_their_own_password_but_not_anothers(service: Service) -> None:
    password = NewPassword.of("Correct-Horse-9")
    ann = service.users.create_user(NewUser(RootRole.VIEWER, email="ann@x.io"))
    bob = service.users.create_user(NewUser(RootRole.VIEWER, email="bob@x.io"))
    as_ann = Principal.of_roles(ann.actor, VIEWER, user_id=ann.id)
    service.users.set_password(ann.id, password, actor=as_ann)
    with pytest.raises(Forbidden):
        service.users.set_password(bob.id, password, actor=as_ann)


def test_an_admin_principal_may_do_anything(service: Service) -> None:
    token = Principal.admin("token:admin")
    service.projects.delete_project("alpha", actor=token)
    assert "alpha" not in {p.id for p in service.projects.list_projects()}
