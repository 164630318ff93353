"""Who may do what: Unleash's permission names, the one table of service operations to
permissions, and the predefined roles made of them.

Reads are open to every role (Unleash's Viewer reads everything); a write names its
operation (the service method's name) and `OPERATIONS` says which permission it needs.
A permission is either root-wide or, for a project role, held in one project and,
for the environment permissions, optionally only in some environments.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

__all__ = [
    "ENVIRONMENT_PERMISSIONS",
    "OPERATIONS",
    "PREDEFINED_ROLES",
    "PROJECT_PERMISSIONS",
    "Grant",
    "GroupRoleAssignment",
    "Permission",
    "Role",
    "RoleAssignment",
    "RoleType",
    "grants_of",
]


class Permission(enum.StrEnum):
    """Unleash's permission names (src/lib/types/permissions.ts), as its API spells them."""

    ADMIN = "ADMIN"
    CREATE_FEATURE = "CREATE_FEATURE"
    UPDATE_FEATURE = "UPDATE_FEATURE"
    DELETE_FEATURE = "DELETE_FEATURE"
    UPDATE_FEATURE_DEPENDENCY = "UPDATE_FEATURE_DEPENDENCY"
    UPDATE_FEATURE_VARIANTS = "UPDATE_FEATURE_VARIANTS"
    UPDATE_FEATURE_ENVIRONMENT = "UPDATE_FEATURE_ENVIRONMENT"
    CREATE_FEATURE_STRATEGY = "CREATE_FEATURE_STRATEGY"
    UPDATE_FEATURE_STRATEGY = "UPDATE_FEATURE_STRATEGY"
    DELETE_FEATURE_STRATEGY = "DELETE_FEATURE_STRATEGY"
    CREATE_PROJECT = "CREATE_PROJECT"
    UPDATE_PROJECT = "UPDATE_PROJECT"
    DELETE_PROJECT = "DELETE_PROJECT"
    PROJECT_USER_ACCESS_WRITE = "PROJECT_USER_ACCESS_WRITE"
    CREATE_CONTEXT_FIELD = "CREATE_CONTEXT_FIELD"
    UPDATE_CONTEXT_FIELD = "UPDATE_CONTEXT_FIELD"
    DELETE_CONTEXT_FIELD = "DELETE_CONTEXT_FIELD"
    CREATE_SEGMENT = "CREATE_SEGMENT"
    UPDATE_SEGMENT = "UPDATE_SEGMENT"
    DELETE_SEGMENT = "DELETE_SEGMENT"
    CREATE_STRATEGY = "CREATE_STRATEGY"
    UPDATE_STRATEGY = "UPDATE_STRATEGY"
    DELETE_STRATEGY = "DELETE_STRATEGY"
    CREATE_TAG_TYPE = "CREATE_TAG_TYPE"
    UPDATE_TAG_TYPE = "UPDATE_TAG_TYPE"
    DELETE_TAG_TYPE = "DELETE_TAG_TYPE"
    CREATE_ENVIRONMENT = "CREATE_ENVIRONMENT"
    CREATE_CLIENT_API_TOKEN = "CREATE_CLIENT_API_TOKEN"
    DELETE_CLIENT_API_TOKEN = "DELETE_CLIENT_API_TOKEN"
    CREATE_FRONTEND_API_TOKEN = "CREATE_FRONTEND_API_TOKEN"
    DELETE_FRONTEND_API_TOKEN = "DELETE_FRONTEND_API_TOKEN"
    # Signals and actions are enterprise in Unleash; flagcore names them in its style.
    CREATE_SIGNAL_ENDPOINT = "CREATE_SIGNAL_ENDPOINT"
    UPDATE_SIGNAL_ENDPOINT = "UPDATE_SIGNAL_ENDPOINT"
    DELETE_SIGNAL_ENDPOINT = "DELETE_SIGNAL_ENDPOINT"
    CREATE_ACTIONS = "CREATE_ACTIONS"
    UPDATE_ACTIONS = "UPDATE_ACTIONS"
    DELETE_ACTIONS = "DELETE_ACTIONS"
    CREATE_ADDON = "CREATE_ADDON"
    UPDATE_ADDON = "UPDATE_ADDON"
    DELETE_ADDON = "DELETE_ADDON"
    # Change requests (issue 30): enterprise in Unleash, with its names; held per environment.
    APPROVE_CHANGE_REQUEST = "APPROVE_CHANGE_REQUEST"
    APPLY_CHANGE_REQUEST = "APPLY_CHANGE_REQUEST"
    SKIP_CHANGE_REQUEST = "SKIP_CHANGE_REQUEST"
    # Release templates (issue 32): enterprise in Unleash, with its names; root-wide.
    RELEASE_PLAN_TEMPLATE_CREATE = "RELEASE_PLAN_TEMPLATE_CREATE"
    RELEASE_PLAN_TEMPLATE_UPDATE = "RELEASE_PLAN_TEMPLATE_UPDATE"
    RELEASE_PLAN_TEMPLATE_DELETE = "RELEASE_PLAN_TEMPLATE_DELETE"


P = Permission

OPERATIONS: Mapping[str, Permission] = {
    # flags
    "create_flag": P.CREATE_FEATURE,
    "update_flag": P.UPDATE_FEATURE,
    "replace_flag": P.UPDATE_FEATURE,
    "mark_stale": P.UPDATE_FEATURE,
    "add_flag_tag": P.UPDATE_FEATURE,
    "remove_flag_tag": P.UPDATE_FEATURE,
    "archive_flag": P.DELETE_FEATURE,
    "revive_flag": P.CREATE_FEATURE,
    "delete_flag": P.DELETE_FEATURE,
    "set_dependencies": P.UPDATE_FEATURE_DEPENDENCY,
    "set_flag_variants": P.UPDATE_FEATURE_VARIANTS,
    # a flag in one environment (a project role may hold these in some environments)
    "set_environment_enabled": P.UPDATE_FEATURE_ENVIRONMENT,
    "add_strategy": P.CREATE_FEATURE_STRATEGY,
    "update_strategy": P.UPDATE_FEATURE_STRATEGY,
    "reorder_strategies": P.UPDATE_FEATURE_STRATEGY,
    "delete_strategy": P.DELETE_FEATURE_STRATEGY,
    "replace_strategy_segments": P.UPDATE_FEATURE_STRATEGY,
    # projects
    "create_project": P.CREATE_PROJECT,
    "update_project": P.UPDATE_PROJECT,
    "delete_project": P.DELETE_PROJECT,
    "add_project_access": P.PROJECT_USER_ACCESS_WRITE,
    "set_user_project_roles": P.PROJECT_USER_ACCESS_WRITE,
    "set_group_project_roles": P.PROJECT_USER_ACCESS_WRITE,
    # segments
    "create_context_field": P.CREATE_CONTEXT_FIELD,
    "update_context_field": P.UPDATE_CONTEXT_FIELD,
    "delete_context_field": P.DELETE_CONTEXT_FIELD,
    "create_segment": P.CREATE_SEGMENT,
    "define_segment": P.CREATE_SEGMENT,
    "update_segment": P.UPDATE_SEGMENT,
    "delete_segment": P.DELETE_SEGMENT,
    # root-level vocabulary
    "create_strategy_definition": P.CREATE_STRATEGY,
    "create_tag_type": P.CREATE_TAG_TYPE,
    "delete_tag_type": P.DELETE_TAG_TYPE,
    "create_environment": P.CREATE_ENVIRONMENT,
    # API tokens: an admin token needs ADMIN, checked by the tokens part on its type
    "create_client_token": P.CREATE_CLIENT_API_TOKEN,
    "delete_client_token": P.DELETE_CLIENT_API_TOKEN,
    "create_frontend_token": P.CREATE_FRONTEND_API_TOKEN,
    "delete_frontend_token": P.DELETE_FRONTEND_API_TOKEN,
    "create_admin_token": P.ADMIN,
    "delete_admin_token": P.ADMIN,
    # signals and actions
    "create_signal_endpoint": P.CREATE_SIGNAL_ENDPOINT,
    "update_signal_endpoint": P.UPDATE_SIGNAL_ENDPOINT,
    "delete_signal_endpoint": P.DELETE_SIGNAL_ENDPOINT,
    "create_signal_endpoint_token": P.UPDATE_SIGNAL_ENDPOINT,
    "delete_signal_endpoint_token": P.UPDATE_SIGNAL_ENDPOINT,
    "create_action_set": P.CREATE_ACTIONS,
    "update_action_set": P.UPDATE_ACTIONS,
    "set_action_set_enabled": P.UPDATE_ACTIONS,
    "delete_action_set": P.DELETE_ACTIONS,
    # people, roles, and moving whole instances in
    "create_user": P.ADMIN,
    "invite_user": P.ADMIN,
    "update_user": P.ADMIN,
    "delete_user": P.ADMIN,
    "set_password": P.ADMIN,  # another's: a person's own needs nothing
    "set_name": P.ADMIN,  # another's: a person's own needs nothing
    "create_link": P.ADMIN,
    "create_link_for": P.ADMIN,
    "end_all_of_user": P.ADMIN,
    "create_personal_token": P.ADMIN,  # another's: a person's own needs nothing
    "delete_personal_token": P.ADMIN,
    "create_service_account": P.ADMIN,
    "update_service_account": P.ADMIN,
    "delete_service_account": P.ADMIN,
    "create_service_account_token": P.ADMIN,
    "delete_service_account_token": P.ADMIN,
    "create_group": P.ADMIN,  # Unleash's groups: ADMIN (its UNLEASH_GROUP_* are enterprise)
    "update_group": P.ADMIN,
    "delete_group": P.ADMIN,
    "create_role": P.ADMIN,
    "update_role": P.ADMIN,
    "delete_role": P.ADMIN,
    "import_export": P.CREATE_FEATURE,
    "copy_instance": P.ADMIN,
    # the preview's context samples (issue 30): an upload is personal data an admin brings
    "replace_context_sample": P.ADMIN,
    "write_sampled_contexts": P.ADMIN,
    # integrations (Unleash's addons); the outbox's lease and log are the server's own
    # upkeep (actor SYSTEM), and sending a logged delivery again is an update
    "create_integration": P.CREATE_ADDON,
    "check_new_integration": P.CREATE_ADDON,
    "check_integration_change": P.UPDATE_ADDON,
    "update_integration": P.UPDATE_ADDON,
    "delete_integration": P.DELETE_ADDON,
    "lease_integration": P.UPDATE_ADDON,
    "renew_integration_lease": P.UPDATE_ADDON,
    "release_integration_lease": P.UPDATE_ADDON,
    "record_integration_delivery": P.UPDATE_ADDON,
    "delivery_to_resend": P.UPDATE_ADDON,
    "record_integration_resend": P.UPDATE_ADDON,
    # environments: Unleash's routes ask ADMIN (it has no permission of their own)
    "update_environment": P.ADMIN,
    "set_environment_sort_orders": P.ADMIN,
    "toggle_environment": P.ADMIN,
    "delete_environment": P.ADMIN,
    "clone_environment": P.ADMIN,
    "rename_environment": P.ADMIN,  # flagcore's own: Unleash renames no environment
    # every strategy of a flag copied to another environment (Unleash's UI: one add each)
    "copy_strategies": P.CREATE_FEATURE_STRATEGY,
    "update_tag_type": P.UPDATE_TAG_TYPE,
    "update_strategy_definition": P.UPDATE_STRATEGY,
    "deprecate_strategy_definition": P.UPDATE_STRATEGY,
    "reactivate_strategy_definition": P.UPDATE_STRATEGY,
    "delete_strategy_definition": P.DELETE_STRATEGY,
    # change requests (issue 30): the config is the project's (Unleash's
    # PROJECT_CHANGE_REQUEST_WRITE, which UPDATE_PROJECT implies); drafting also needs, per
    # change, the permission of the direct change it stands for
    "set_change_request_config": P.UPDATE_PROJECT,
    "add_changes": P.UPDATE_FEATURE,
    "edit_change": P.UPDATE_FEATURE,
    "discard_change": P.UPDATE_FEATURE,
    "discard_draft": P.UPDATE_FEATURE,
    "set_change_request_title": P.UPDATE_FEATURE,
    "set_change_request_reviewers": P.UPDATE_FEATURE,
    "comment_change_request": P.UPDATE_FEATURE,
    "submit_change_request": P.UPDATE_FEATURE,
    "cancel_change_request": P.UPDATE_FEATURE,
    "approve_change_request": P.APPROVE_CHANGE_REQUEST,
    "reject_change_request": P.APPROVE_CHANGE_REQUEST,
    "apply_change_request": P.APPLY_CHANGE_REQUEST,
    "schedule_change_request": P.APPLY_CHANGE_REQUEST,
    "store_code_scan": P.ADMIN,  # code references (issue 32): not in Unleash, CI's token
    "complete_flag": P.UPDATE_FEATURE,  # lifecycle (issue 32): Unleash's "mark completed"
    "uncomplete_flag": P.UPDATE_FEATURE,
    "set_type_lifetime": P.ADMIN,  # Unleash's PUT /api/admin/feature-types/<id>/lifetimes
    "announce_potentially_stale": P.ADMIN,  # the server's hourly check
    "remind_potentially_stale": P.ADMIN,  # ... and its daily reminder per project
    "create_release_plan_template": P.RELEASE_PLAN_TEMPLATE_CREATE,  # release plans (issue 32)
    "update_release_plan_template": P.RELEASE_PLAN_TEMPLATE_UPDATE,
    "archive_release_plan_template": P.RELEASE_PLAN_TEMPLATE_DELETE,
    "delete_release_plan_template": P.RELEASE_PLAN_TEMPLATE_DELETE,
    "add_release_plan": P.CREATE_FEATURE_STRATEGY,  # as Unleash's UI guards them
    "remove_release_plan": P.DELETE_FEATURE_STRATEGY,
    "start_release_plan_milestone": P.UPDATE_FEATURE_STRATEGY,
    "change_milestone_progression": P.UPDATE_FEATURE_STRATEGY,
    "delete_milestone_progression": P.UPDATE_FEATURE_STRATEGY,
    "resume_milestone_progressions": P.UPDATE_FEATURE_STRATEGY,
    "put_release_plan_safeguard": P.UPDATE_FEATURE_STRATEGY,
    "delete_release_plan_safeguard": P.UPDATE_FEATURE_STRATEGY,
    "post_impact_metrics": P.UPDATE_FEATURE_STRATEGY,  # an operator's samples for a flag
    "advance_release_plan": P.ADMIN,  # the server's worker: progressions and safeguards
}
"""Each write of the service → the permission it needs. `tests/core/test_permissions.py`
checks that every service method taking an actor is in here."""

ENVIRONMENT_PERMISSIONS = frozenset(
    {
        P.UPDATE_FEATURE_ENVIRONMENT,
        P.CREATE_FEATURE_STRATEGY,
        P.UPDATE_FEATURE_STRATEGY,
        P.DELETE_FEATURE_STRATEGY,
        P.APPROVE_CHANGE_REQUEST,
        P.APPLY_CHANGE_REQUEST,
        P.SKIP_CHANGE_REQUEST,
    }
)
"""What a project role may hold in some environments only (Unleash's environment-scoped
project permissions)."""

PROJECT_PERMISSIONS = frozenset(
    {
        P.CREATE_FEATURE,
        P.UPDATE_FEATURE,
        P.DELETE_FEATURE,
        P.UPDATE_FEATURE_DEPENDENCY,
        P.UPDATE_FEATURE_VARIANTS,
        P.UPDATE_PROJECT,
        P.DELETE_PROJECT,
        P.PROJECT_USER_ACCESS_WRITE,
        P.CREATE_ACTIONS,
        P.UPDATE_ACTIONS,
        P.DELETE_ACTIONS,
        *ENVIRONMENT_PERMISSIONS,
    }
)
"""What a project role may be made of: the permissions that act inside one project."""


class RoleType(enum.StrEnum):
    """Unleash's role types: the three predefined root roles, custom root roles, and
    project roles (predefined Owner and Member, or custom)."""

    ROOT = "root"
    ROOT_CUSTOM = "root-custom"
    PROJECT = "project"
    CUSTOM = "custom"


@attrs.frozen
class Grant:
    """One permission held; ``environment`` None means in every environment."""

    # Read back from a store as its name: made a `Permission` again, so ``is`` holds.
    permission: Permission = attrs.field(converter=Permission)
    environment: str | None = None


@attrs.frozen
class Role:
    """A named set of grants. Root roles act everywhere, project roles in the projects a
    user is given them in."""

    id: int
    name: str
    type: RoleType
    description: str = ""
    grants: tuple[Grant, ...] = ()

    @property
    def predefined(self) -> bool:
        return self.id in PREDEFINED_ROLES

    @property
    def is_project_role(self) -> bool:
        return self.type in (RoleType.PROJECT, RoleType.CUSTOM)

    def allows(self, permission: Permission, environment: str | None = None) -> bool:
        if Grant(P.ADMIN) in self.grants:
            return True
        return any(
            grant.permission is permission
            and (grant.environment is None or grant.environment == environment)
            for grant in self.grants
        )


def grants_of(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """``grants`` once each, in one order (what is stored and compared)."""
    return tuple(sorted(set(grants), key=lambda g: (g.permission.value, g.environment or "")))


def _grants(*permissions: Permission) -> tuple[Grant, ...]:
    return grants_of(Grant(permission) for permission in permissions)


@attrs.frozen
class RoleAssignment:
    """A user given a project role in one project (Unleash's project access)."""

    project: str
    user_id: int
    role_id: int


@attrs.frozen
class GroupRoleAssignment:
    """A group given a project role in one project: each of its members holds it there."""

    project: str
    group_id: int
    role_id: int


# Skipping change requests is Admin's alone unless a custom role grants it (Unleash's
# predefined roles leave it out); members neither approve nor apply.
_EDITOR = _grants(
    *(
        p
        for p in Permission
        if p not in {P.ADMIN, P.PROJECT_USER_ACCESS_WRITE, P.SKIP_CHANGE_REQUEST}
    )
)
_CHANGE_REQUEST_POWERS = {P.APPROVE_CHANGE_REQUEST, P.APPLY_CHANGE_REQUEST, P.SKIP_CHANGE_REQUEST}
_OWNER = _grants(*(p for p in PROJECT_PERMISSIONS if p is not P.SKIP_CHANGE_REQUEST))
_MEMBER = _grants(
    *(
        p
        for p in PROJECT_PERMISSIONS
        if p not in {P.UPDATE_PROJECT, P.DELETE_PROJECT, P.PROJECT_USER_ACCESS_WRITE}
        and p not in _CHANGE_REQUEST_POWERS
    )
)

PREDEFINED_ROLES: Mapping[int, Role] = {
    role.id: role
    for role in (
        Role(
            1,
            "Admin",
            RoleType.ROOT,
            "Users with the root admin role have superuser "
            "access to Unleash and can perform any operation.",
            _grants(P.ADMIN),
        ),
        Role(
            2,
            "Editor",
            RoleType.ROOT,
            "Users with the root editor role have access to "
            "most features in Unleash, but can not manage users and roles in the root "
            "scope.",
            _EDITOR,
        ),
        Role(
            3,
            "Viewer",
            RoleType.ROOT,
            "Users with the root viewer role can only read root resources in Unleash.",
            (),
        ),
        Role(
            4,
            "Owner",
            RoleType.PROJECT,
            "Users with the project owner role have full control over the project.",
            _OWNER,
        ),
        Role(
            5,
            "Member",
            RoleType.PROJECT,
            "Users with the project member role are "
            "allowed to view, create, and update feature flags within a project, but have "
            "limited permissions in regards to managing the project's user access and "
            "settings.",
            _MEMBER,
        ),
    )
}
"""Unleash's predefined roles with its ids (1-3 root, 4 Owner, 5 Member): read-only."""
