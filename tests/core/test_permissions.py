"""The one permission table: every write of the service is in it, and the predefined
roles mean what Unleash's do."""

from __future__ import annotations

import inspect
from pathlib import Path

from flagcore.entities import TokenType
from flagcore.memory import MemoryStore
from flagcore.permissions import (
    ENVIRONMENT_PERMISSIONS,
    OPERATIONS,
    PREDEFINED_ROLES,
    PROJECT_PERMISSIONS,
    Grant,
    Permission,
    Role,
    RoleType,
)
from flagcore.principals import Principal
from flagcore.service import Service


def _guarded_methods() -> dict[str, str]:
    """Every public service method that takes an ``actor`` a caller may pass."""
    service = Service(MemoryStore())
    found: dict[str, str] = {}
    for part_name, part in vars(service).items():
        for name, method in inspect.getmembers(part, inspect.ismethod):
            if name.startswith("_") or name.endswith("_in"):
                continue
            actor = inspect.signature(method).parameters.get("actor")
            if actor is not None and "Actor" in str(actor.annotation):
                found[name] = part_name
    return found


def test_every_service_write_taking_an_actor_names_its_permission_in_the_table() -> None:
    """Operations are named by the method; tokens check ``create_<type>_token``."""
    per_token_type = {f"{verb}_{kind}_token" for verb in ("create", "delete") for kind in TokenType}
    guarded = set(_guarded_methods()) - {"create_token", "delete_token"}
    assert guarded | per_token_type == set(OPERATIONS)


def test_every_write_that_takes_a_plain_string_actor_is_an_internal_one() -> None:
    """Methods still typed ``actor: str`` are trusted inner steps or bootstrap, not uses an
    HTTP caller reaches with a principal."""
    service = Service(MemoryStore())
    plain = sorted(
        name
        for part in vars(service).values()
        for name, method in inspect.getmembers(part, inspect.ismethod)
        if not name.startswith("_")
        and not name.endswith("_in")
        and (p := inspect.signature(method).parameters.get("actor")) is not None
        and "Actor" not in str(p.annotation)
    )
    assert plain == ["ensure_admin_token", "ensure_tokens", "tokens_created_by"]


def test_admin_may_do_everything_and_viewer_nothing() -> None:
    admin, viewer = PREDEFINED_ROLES[1], PREDEFINED_ROLES[3]
    for permission in Permission:
        assert admin.allows(permission)
        assert not viewer.allows(permission)


def test_editor_may_change_flags_segments_and_projects_but_not_people_or_admin_tokens() -> None:
    editor = Principal.of_roles("user:2:Ed", PREDEFINED_ROLES[2])
    for operation in ("create_flag", "create_segment", "create_project", "add_strategy"):
        assert editor.may(OPERATIONS[operation], project="any")
    assert editor.may(OPERATIONS["create_client_token"])
    for operation in ("create_user", "create_role", "create_admin_token", "add_project_access"):
        assert not editor.may(OPERATIONS[operation], project="any")


def test_a_project_role_acts_only_in_its_project() -> None:
    member = Principal.of_roles("user:5:Mo", PREDEFINED_ROLES[3], [("alpha", PREDEFINED_ROLES[5])])
    assert member.may(Permission.CREATE_FEATURE, project="alpha")
    assert not member.may(Permission.CREATE_FEATURE, project="beta")
    assert not member.may(Permission.CREATE_FEATURE)
    assert not member.may(Permission.UPDATE_PROJECT, project="alpha")


def test_an_environment_scoped_grant_holds_in_that_environment_only() -> None:
    role = Role(
        10,
        "dev toggler",
        RoleType.CUSTOM,
        grants=(Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "development"),),
    )
    someone = Principal.of_roles("user:6:Di", PREDEFINED_ROLES[3], [("alpha", role)])
    allowed = Permission.UPDATE_FEATURE_ENVIRONMENT
    assert someone.may(allowed, project="alpha", environment="development")
    assert not someone.may(allowed, project="alpha", environment="production")


def test_the_docs_role_table_is_the_roles_meaning() -> None:
    """docs/users-and-roles.md's roles × permissions table, as the roles hold them."""
    roles = [PREDEFINED_ROLES[role_id] for role_id in range(1, 6)]
    rows = []
    for permission in Permission:
        cells = ["✓" if role.allows(permission) else "—" for role in roles]
        if permission in ENVIRONMENT_PERMISSIONS:
            custom = "per environment"
        else:
            custom = "yes" if permission in PROJECT_PERMISSIONS else "no"
        rows.append(f"| `{permission.value}` | " + " | ".join(cells) + f" | {custom} |")
    docs = (Path(__file__).parents[2] / "docs" / "users-and-roles.md").read_text()
    header = "| permission | " + " | ".join(role.name for role in roles)
    start = docs.index(header)
    written = docs[start:].splitlines()[2 : 2 + len(rows)]
    assert written == rows
