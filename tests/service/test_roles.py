"""Custom roles and project access, stored (issue 28), over every store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.errors import Conflict, Forbidden, InvalidInput, NameConflict
from flagcore.people import RootRole
from flagcore.permissions import Grant, Permission, RoleType
from flagcore.service import NewRole, NewUser, Service
from tests.service.store_factories import FACTORIES

DEV_TOGGLER = NewRole(
    "dev toggler",
    RoleType.CUSTOM,
    "turns flags on in development",
    (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "development"),),
)


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        made = Service(store)
        made.projects.create_project("alpha", "Alpha")
        made.flags.create_flag("alpha", "f")
        yield made
    finally:
        store.close()


def _user(service: Service, email: str = "dee@x.io") -> int:
    return service.users.create_user(NewUser(RootRole.VIEWER, email=email)).id


def test_a_custom_project_role_given_in_a_project_lets_its_holder_act_there_only(
    service: Service,
) -> None:
    role = service.roles.create_role(DEV_TOGGLER)
    assert role.id == 6
    dee = _user(service)
    service.roles.add_project_access("alpha", [dee], [role.id])
    principal = service.roles.principal_of(service.users.get_user(dee))
    service.environments.set_environment_enabled("alpha", "f", "development", True, actor=principal)
    with pytest.raises(Forbidden):
        service.environments.set_environment_enabled(
            "alpha", "f", "production", True, actor=principal
        )
    access = service.roles.project_access("alpha")
    assert [(u.id, roles) for u, roles in access.users] == [(dee, (6,))]
    assert [r.name for r in access.roles] == ["Owner", "Member", "dev toggler"]


def test_a_role_is_stored_and_read_back_with_its_permissions(service: Service) -> None:
    made = service.roles.create_role(DEV_TOGGLER)
    assert service.roles.get_role(made.id) == made
    assert made.grants == (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "development"),)


def test_predefined_roles_cannot_be_changed_or_deleted(service: Service) -> None:
    with pytest.raises(InvalidInput):
        service.roles.update_role(2, DEV_TOGGLER)
    with pytest.raises(InvalidInput):
        service.roles.delete_role(4)
    assert service.roles.get_role(2).name == "Editor"


def test_a_role_named_like_another_whatever_its_case_is_a_conflict(service: Service) -> None:
    service.roles.create_role(DEV_TOGGLER)
    with pytest.raises(NameConflict):
        service.roles.create_role(NewRole("Dev Toggler", RoleType.CUSTOM, "", ()))
    with pytest.raises(NameConflict):
        service.roles.create_role(NewRole("owner", RoleType.CUSTOM, "", ()))


def test_a_project_role_refuses_root_permissions_and_unknown_environments(
    service: Service,
) -> None:
    bad = NewRole(
        "bad",
        RoleType.CUSTOM,
        "",
        (
            Grant(Permission.CREATE_SEGMENT),
            Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "nowhere"),
            Grant(Permission.CREATE_FEATURE, "development"),
        ),
    )
    with pytest.raises(InvalidInput) as refused:
        service.roles.create_role(bad)
    assert [d.path for d in refused.value.details] == [
        "$.permissions[0].name",
        "$.permissions[1].environment",
        "$.permissions[2]",
    ]
    assert [r.name for r in service.roles.list_roles()][5:] == []


def test_a_role_in_use_is_not_deleted_until_nobody_holds_it(service: Service) -> None:
    role = service.roles.create_role(DEV_TOGGLER)
    dee = _user(service)
    service.roles.add_project_access("alpha", [dee], [role.id])
    with pytest.raises(Conflict):
        service.roles.delete_role(role.id)
    service.roles.set_user_project_roles("alpha", dee, [])
    service.roles.delete_role(role.id)
    assert [r.id for r in service.roles.list_roles()] == [1, 2, 3, 4, 5]


def test_access_goes_with_the_user_and_with_the_project(service: Service) -> None:
    dee, eve = _user(service), _user(service, "eve@x.io")
    service.projects.create_project("beta", "Beta")
    service.roles.add_project_access("alpha", [dee, eve], [5])
    service.roles.add_project_access("beta", [dee], [4])
    service.users.delete_user(eve)
    assert [u.id for u, _ in service.roles.project_access("alpha").users] == [dee]
    service.projects.delete_project("beta")
    principal = service.roles.principal_of(service.users.get_user(dee))
    assert [(p, r.name) for p, r in principal.project_roles] == [("alpha", "Member")]


def test_access_naming_an_unknown_user_or_a_root_role_writes_nothing(service: Service) -> None:
    dee = _user(service)
    with pytest.raises(InvalidInput) as refused:
        service.roles.add_project_access("alpha", [dee, 999], [5, 2])
    assert [d.path for d in refused.value.details] == ["$.users[1]", "$.roles[1]"]
    assert service.roles.project_access("alpha").users == ()
