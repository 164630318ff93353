"""The role matrix (issue 28): every admin write route the server has, as each kind of
person (signed in, or acting through a personal token or a service account's token), over
a real server and SQLite file. A person allowed gets a 2xx; one not allowed
gets a 403 with nothing written and no event.

The routes come from the app's router: a new write route without a case here fails
`test_the_matrix_covers_every_admin_write_route`. Each case names the permission Unleash
asks for it; who holds which permission is the roles' meaning written out below, apart
from `flagcore.permissions`, so a wrong row there shows here.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import (
    Action,
    ActionKind,
    ContextField,
    IntegrationDelivery,
    Strategy,
    StrategyDefinition,
    Tag,
)
from flagcore.model import Constraint
from flagcore.people import RootRole
from flagcore.permissions import Grant, Permission, RoleType
from flagcore.release_plans import Milestone
from flagcore.service import (
    IntegrationSpec,
    NewGroup,
    NewRole,
    NewUser,
    Service,
    checked_safeguard,
)
from flagcore.tables import RELEASE_PLANS
from flagcore_http import ServerConfig, create_app
from flagcore_http.session_cookie import COOKIE_NAME, SIGNER
from flagcore_store_sqlite import SqliteStore

P = Permission
_FEATURE = "/api/admin/projects/{project}/features/{name}"
_STRATEGIES = _FEATURE + "/environments/{environment}/strategies"
_ACTION_SET = {
    "name": "made",
    "match": {"source": "signal-endpoint", "sourceId": "{endpoint}", "payload": {}},
    "actions": [
        {
            "action": "MARK_FEATURE_STALE",
            "sortOrder": 1,
            "executionParams": {"project": "beta", "featureName": "f"},
        }
    ],
}
_ADDON = {
    "provider": "webhook",
    "enabled": False,
    "parameters": {"url": "https://93.184.216.34/hook"},
    "events": ["feature-created"],
}
_CR_DRAFTS = "/api/admin/projects/{{cr_project}}/environments/{env}/change-requests"
_CR_CONFIG = "/api/admin/projects/{cr_project}/environments/{environment}/change-requests/config"
_CR = "/api/admin/projects/{cr_project}/change-requests"
_TEMPLATES = "/api/admin/release-plan-templates"
_ON_F = _FEATURE + "/environments/{environment}"
_PLAN = _ON_F + "/release-plans/{plan}"
_MILESTONES = [{"name": "only", "sortOrder": 0, "strategies": [{"name": "default"}]}]


@attrs.frozen
class Case:
    body: Any
    needs: Permission | None  # None: changes nothing (validation, playground, export)
    ids: str | None = None  # which world id fills ``{id}``


CASES: dict[tuple[str, str], Case] = {
    ("POST", "/api/admin/projects/{project}/features"): Case({"name": "g"}, P.CREATE_FEATURE),
    ("PUT", _FEATURE): Case({"description": "x"}, P.UPDATE_FEATURE),
    ("PATCH", _FEATURE): Case(
        [{"op": "replace", "path": "/description", "value": "y"}], P.UPDATE_FEATURE
    ),
    ("POST", _FEATURE + "/stale/{state}"): Case(None, P.UPDATE_FEATURE),
    ("PUT", _FEATURE + "/dependencies"): Case([{"feature": "parent"}], P.UPDATE_FEATURE_DEPENDENCY),
    ("POST", _FEATURE + "/environments/{environment}/on"): Case(None, P.UPDATE_FEATURE_ENVIRONMENT),
    ("POST", _FEATURE + "/environments/{environment}/off"): Case(
        None, P.UPDATE_FEATURE_ENVIRONMENT
    ),
    ("PUT", _FEATURE + "/environments/{environment}/variants"): Case(
        [{"name": "a", "weight": 1000, "weightType": "variable"}], P.UPDATE_FEATURE_VARIANTS
    ),
    ("POST", _STRATEGIES): Case({"name": "default"}, P.CREATE_FEATURE_STRATEGY),
    ("POST", _STRATEGIES + "/set-sort-order"): Case(
        [{"id": "{strategy_id}", "sortOrder": 0}], P.UPDATE_FEATURE_STRATEGY
    ),
    ("PUT", _STRATEGIES + "/{strategy_id}"): Case({"name": "default"}, P.UPDATE_FEATURE_STRATEGY),
    ("DELETE", _STRATEGIES + "/{doomed_strategy}"): Case(None, P.DELETE_FEATURE_STRATEGY),
    ("DELETE", _FEATURE.replace("{name}", "{doomed}")): Case(None, P.DELETE_FEATURE),
    ("POST", "/api/admin/archive/revive/{old}"): Case(None, P.CREATE_FEATURE),
    ("DELETE", "/api/admin/archive/{older}"): Case(None, P.DELETE_FEATURE),
    ("POST", "/api/admin/features/{name}/tags"): Case(
        {"type": "simple", "value": "ww"}, P.UPDATE_FEATURE
    ),
    ("DELETE", "/api/admin/features/{name}/tags/{type}/{value}"): Case(None, P.UPDATE_FEATURE),
    ("POST", "/api/admin/features/validate"): Case({"name": "free-name"}, None),
    ("POST", "/api/admin/projects"): Case({"id": "made", "name": "Made"}, P.CREATE_PROJECT),
    ("PUT", "/api/admin/projects/{id}"): Case({"name": "Renamed"}, P.UPDATE_PROJECT, "project"),
    ("DELETE", "/api/admin/projects/{id}"): Case(None, P.DELETE_PROJECT, "empty_project"),
    ("POST", "/api/admin/projects/{project}/access"): Case(
        {"roles": [5], "users": ["{user}"], "groups": ["{groupId}"]}, P.PROJECT_USER_ACCESS_WRITE
    ),
    ("PUT", "/api/admin/projects/{project}/groups/{groupId}/roles"): Case(
        {"roles": [4]}, P.PROJECT_USER_ACCESS_WRITE
    ),
    ("DELETE", "/api/admin/projects/{project}/groups/{groupId}/roles"): Case(
        None, P.PROJECT_USER_ACCESS_WRITE
    ),
    ("POST", "/api/admin/groups"): Case(
        {"name": "made group", "users": [{"user": {"id": "{user}"}}]}, P.ADMIN
    ),
    ("PUT", "/api/admin/groups/{id}"): Case({"name": "renamed group"}, P.ADMIN, "groupId"),
    ("DELETE", "/api/admin/groups/{id}"): Case(None, P.ADMIN, "doomed_group"),
    ("PUT", "/api/admin/projects/{project}/users/{userId}/roles"): Case(
        {"roles": [4]}, P.PROJECT_USER_ACCESS_WRITE
    ),
    ("DELETE", "/api/admin/projects/{project}/users/{userId}/roles"): Case(
        None, P.PROJECT_USER_ACCESS_WRITE
    ),
    ("POST", "/api/admin/projects/{project}/actions"): Case(_ACTION_SET, P.CREATE_ACTIONS),
    ("PUT", "/api/admin/projects/{project}/actions/{id}"): Case(
        {**_ACTION_SET, "name": "changed"}, P.UPDATE_ACTIONS, "action_set"
    ),
    ("POST", "/api/admin/projects/{project}/actions/{id}/on"): Case(
        None, P.UPDATE_ACTIONS, "action_set"
    ),
    ("POST", "/api/admin/projects/{project}/actions/{id}/off"): Case(
        None, P.UPDATE_ACTIONS, "action_set"
    ),
    ("DELETE", "/api/admin/projects/{project}/actions/{id}"): Case(
        None, P.DELETE_ACTIONS, "doomed_action_set"
    ),
    ("POST", "/api/admin/environments"): Case({"name": "qa"}, P.CREATE_ENVIRONMENT),
    ("POST", "/api/admin/strategies"): Case({"name": "mine"}, P.CREATE_STRATEGY),
    ("POST", "/api/admin/segments"): Case({"name": "s", "constraints": []}, P.CREATE_SEGMENT),
    ("PUT", "/api/admin/segments/{id}"): Case(
        {"name": "renamed", "constraints": []}, P.UPDATE_SEGMENT, "segment"
    ),
    ("DELETE", "/api/admin/segments/{id}"): Case(None, P.DELETE_SEGMENT, "doomed_segment"),
    ("POST", "/api/admin/segments/strategies"): Case(
        {
            "projectId": "{project}",
            "strategyId": "{strategy_id}",
            "environmentId": "development",
            "segmentIds": ["{segment}"],
        },
        P.UPDATE_FEATURE_STRATEGY,
    ),
    ("POST", "/api/admin/signal-endpoints"): Case({"name": "new"}, P.CREATE_SIGNAL_ENDPOINT),
    ("PUT", "/api/admin/signal-endpoints/{id}"): Case(
        {"description": "d"}, P.UPDATE_SIGNAL_ENDPOINT, "endpoint"
    ),
    ("DELETE", "/api/admin/signal-endpoints/{id}"): Case(
        None, P.DELETE_SIGNAL_ENDPOINT, "doomed_endpoint"
    ),
    ("POST", "/api/admin/signal-endpoints/{id}/tokens"): Case(
        {"name": "t2"}, P.UPDATE_SIGNAL_ENDPOINT, "endpoint"
    ),
    ("DELETE", "/api/admin/signal-endpoints/{id}/tokens/{token_id}"): Case(
        None, P.UPDATE_SIGNAL_ENDPOINT, "endpoint"
    ),
    ("POST", "/api/admin/tag-types"): Case({"name": "kind2"}, P.CREATE_TAG_TYPE),
    ("DELETE", "/api/admin/tag-types/{tag_type}"): Case(None, P.DELETE_TAG_TYPE),
    ("POST", "/api/admin/api-tokens"): Case(
        {"tokenName": "sdk", "type": "client", "environment": "development"},
        P.CREATE_CLIENT_API_TOKEN,
    ),
    ("DELETE", "/api/admin/api-tokens/{token}"): Case(None, P.DELETE_CLIENT_API_TOKEN),
    ("POST", "/api/admin/features-batch/export"): Case(
        {"environment": "development", "features": ["{name}"]}, None
    ),
    ("POST", "/api/admin/features-batch/validate"): Case(
        {"project": "{project}", "environment": "development", "data": {"features": []}}, None
    ),
    ("POST", "/api/admin/features-batch/import"): Case(
        {
            "project": "{project}",
            "environment": "development",
            "data": {"features": [{"name": "imported", "project": "x"}]},
        },
        P.CREATE_FEATURE,
    ),
    ("POST", "/api/admin/playground"): Case(
        {"environment": "development", "context": {"appName": "matrix"}}, None
    ),
    ("POST", "/api/admin/playground/advanced"): Case(
        {"environments": ["development"], "context": {"appName": "matrix"}}, None
    ),
    ("POST", "/api/admin/playground/explain"): Case(
        {"environment": "development", "flag": "{name}", "context": {"appName": "matrix"}}, None
    ),
    ("POST", "/api/admin/roles"): Case({"name": "new role"}, P.ADMIN),
    ("PUT", "/api/admin/roles/{id}"): Case({"name": "renamed role"}, P.ADMIN, "role"),
    ("DELETE", "/api/admin/roles/{id}"): Case(None, P.ADMIN, "doomed_role"),
    ("POST", "/api/admin/user-admin"): Case({"email": "new@x.io", "rootRole": 3}, P.ADMIN),
    ("PUT", "/api/admin/user-admin/{id}"): Case({"name": "Tee"}, P.ADMIN, "user"),
    ("DELETE", "/api/admin/user-admin/{id}"): Case(None, P.ADMIN, "doomed_user"),
    ("POST", "/api/admin/user-admin/{id}/change-password"): Case(
        {"password": "Correct-Horse-9"}, P.ADMIN, "user"
    ),
    ("DELETE", "/api/admin/user-admin/{id}/sessions"): Case(None, P.ADMIN, "user"),
    ("POST", "/api/admin/user-admin/reset-password"): Case({"id": "tee@x.io"}, P.ADMIN),
    ("POST", "/api/admin/context"): Case({"name": "made-field"}, P.CREATE_CONTEXT_FIELD),
    ("POST", "/api/admin/context/validate"): Case({"name": "free-field"}, None),
    ("PUT", "/api/admin/context/{ctx}"): Case(
        {"name": "{ctx}", "description": "changed"}, P.UPDATE_CONTEXT_FIELD
    ),
    ("DELETE", "/api/admin/context/{doomed_ctx}"): Case(None, P.DELETE_CONTEXT_FIELD),
    ("POST", "/api/admin/service-account"): Case(
        {"name": "Bot", "username": "bot-made", "rootRole": 3}, P.ADMIN
    ),
    ("PUT", "/api/admin/service-account/{id}"): Case({"name": "Bot two"}, P.ADMIN, "account"),
    ("DELETE", "/api/admin/service-account/{id}"): Case(None, P.ADMIN, "doomed_account"),
    ("POST", "/api/admin/service-account/{id}/token"): Case(
        {"description": "made", "expiresAt": "{expiry}"}, P.ADMIN, "account"
    ),
    ("DELETE", "/api/admin/service-account/{id}/token/{tokenId}"): Case(None, P.ADMIN, "account"),
    ("POST", _FEATURE + "/environments/{environment}/preview"): Case({"enabled": False}, None),
    ("POST", "/api/admin/environments/{environment}/context-sample"): Case(
        {"userId": "sampled"}, P.ADMIN
    ),
    # integrations: off, to a public address literal (nothing is sent, nothing resolved)
    ("POST", "/api/admin/addons"): Case(_ADDON, P.CREATE_ADDON),
    ("PUT", "/api/admin/addons/{id}"): Case(
        {**_ADDON, "description": "x"}, P.UPDATE_ADDON, "addon"
    ),
    ("DELETE", "/api/admin/addons/{id}"): Case(None, P.DELETE_ADDON, "doomed_addon"),
    ("POST", "/api/admin/addons/{id}/deliveries/{deliveryId}/resend"): Case(
        None, P.UPDATE_ADDON, "addon"
    ),
    ("PUT", "/api/admin/environments/update/{env}"): Case({"type": "test"}, P.ADMIN),
    ("PUT", "/api/admin/environments/sort-order"): Case({"{env}": 9}, P.ADMIN),
    ("POST", "/api/admin/environments/{env}/off"): Case(None, P.ADMIN),
    ("POST", "/api/admin/environments/{env}/on"): Case(None, P.ADMIN),
    ("DELETE", "/api/admin/environments/{doomed_env}"): Case(None, P.ADMIN),
    ("POST", "/api/admin/environments/{env}/clone"): Case(
        {"name": "staging-copy", "type": "test"}, P.ADMIN
    ),
    ("POST", "/api/admin/environments/{renamable_env}/rename"): Case(
        {"name": "renamed-env"}, P.ADMIN
    ),
    ("PUT", "/api/admin/tag-types/{kept_tag_type}"): Case({"description": "d"}, P.UPDATE_TAG_TYPE),
    ("PUT", "/api/admin/strategies/{strategy_def}"): Case(
        {"name": "{strategy_def}", "title": "T"}, P.UPDATE_STRATEGY
    ),
    ("POST", "/api/admin/strategies/{strategy_def}/deprecate"): Case(None, P.UPDATE_STRATEGY),
    ("POST", "/api/admin/strategies/{strategy_def}/reactivate"): Case(None, P.UPDATE_STRATEGY),
    ("DELETE", "/api/admin/strategies/{doomed_strategy_def}"): Case(None, P.DELETE_STRATEGY),
    # Change requests (issue 30), in project gamma where they are on: in this order, a
    # person's drafts (ids 1 and 2) exist for the cases after them.
    ("PUT", _CR_CONFIG): Case(
        {"changeRequestsEnabled": True, "requiredApprovals": 1}, P.UPDATE_PROJECT
    ),
    ("POST", _CR_DRAFTS.format(env="{cr_env}")): Case(
        [
            {"feature": "gf", "action": "updateEnabled", "payload": {"enabled": True}},
            {"feature": "gf", "action": "addStrategy", "payload": {"name": "default"}},
        ],
        P.UPDATE_FEATURE,
    ),
    ("POST", _CR_DRAFTS.format(env="{staging}")): Case(
        {"feature": "gf", "action": "updateEnabled", "payload": {"enabled": True}},
        P.UPDATE_FEATURE,
    ),
    ("DELETE", _CR + "/{staged_cr}"): Case(None, P.UPDATE_FEATURE),
    ("PUT", _CR + "/{own_cr}/title"): Case({"title": "Launch"}, P.UPDATE_FEATURE),
    ("PUT", _CR + "/{own_cr}/approvers"): Case({"reviewers": ["{user}"]}, P.UPDATE_FEATURE),
    ("PUT", _CR + "/{own_cr}/changes/{first_change}"): Case(
        {"feature": "gf", "action": "updateEnabled", "payload": {"enabled": False}},
        P.UPDATE_FEATURE,
    ),
    ("DELETE", _CR + "/{own_cr}/changes/{second_change}"): Case(None, P.UPDATE_FEATURE),
    ("POST", _CR + "/{own_cr}/comments"): Case({"text": "looks fine"}, P.UPDATE_FEATURE),
    ("PUT", _CR + "/{own_cr}/state"): Case({"state": "In review"}, P.UPDATE_FEATURE),
    ("POST", _FEATURE + "/lifecycle/complete"): Case(
        {"status": "kept", "statusValue": "on"}, P.UPDATE_FEATURE
    ),
    ("POST", _FEATURE + "/lifecycle/uncomplete"): Case(None, P.UPDATE_FEATURE),
    ("PUT", "/api/admin/feature-types/{id}/lifetimes"): Case(
        {"lifetimeDays": 30}, P.ADMIN, "feature_type"
    ),
    ("POST", "/api/admin/code-references"): Case(
        {
            "source": "repo",
            "references": [{"flag": "{name}", "file": "a.py", "line": 1, "call": None}],
        },
        P.ADMIN,
    ),
    # Release plans (issue 32): the world's plan on f in development, in this order.
    ("POST", _TEMPLATES): Case(
        {"name": "made", "milestones": _MILESTONES}, P.RELEASE_PLAN_TEMPLATE_CREATE
    ),
    ("PUT", _TEMPLATES + "/{template}"): Case(
        {"name": "renamed", "milestones": _MILESTONES}, P.RELEASE_PLAN_TEMPLATE_UPDATE
    ),
    ("POST", _TEMPLATES + "/archive/{archived_template}"): Case(
        None, P.RELEASE_PLAN_TEMPLATE_DELETE
    ),
    ("DELETE", _TEMPLATES + "/{doomed_template}"): Case(None, P.RELEASE_PLAN_TEMPLATE_DELETE),
    (
        "POST",
        "/api/admin/projects/{project}/features/{plan_flag}/environments/{environment}"
        "/release-plans",
    ): Case({"templateId": "{template}"}, P.CREATE_FEATURE_STRATEGY),
    ("POST", _PLAN + "/milestones/{milestone}/start"): Case(None, P.UPDATE_FEATURE_STRATEGY),
    ("PUT", _ON_F + "/progressions/{first_milestone}"): Case(
        {"targetMilestone": "{milestone}", "transitionCondition": {"intervalMinutes": 60}},
        P.UPDATE_FEATURE_STRATEGY,
    ),
    ("DELETE", _ON_F + "/progressions/{progressed_milestone}"): Case(
        None, P.UPDATE_FEATURE_STRATEGY
    ),
    ("POST", _FEATURE + "/environments/{prod}/progressions/{paused_plan}/resume"): Case(
        None, P.UPDATE_FEATURE_STRATEGY
    ),
    ("PUT", _PLAN + "/safeguards"): Case(
        {
            "impactMetric": {
                "metricName": "errors",
                "aggregationMode": "count",
                "timeRange": "hour",
            },
            "triggerCondition": {"operator": ">", "threshold": 5},
        },
        P.UPDATE_FEATURE_STRATEGY,
    ),
    ("DELETE", _PLAN + "/safeguards/{safeguard}"): Case(None, P.UPDATE_FEATURE_STRATEGY),
    ("DELETE", _PLAN): Case(None, P.DELETE_FEATURE_STRATEGY),
    ("POST", _ON_F + "/impact-metrics"): Case(
        {"impactMetrics": [{"name": "errors", "type": "counter", "samples": [{"value": 1}]}]},
        P.UPDATE_FEATURE_STRATEGY,
    ),
}
"""Every admin write route → a body an allowed person's request succeeds with, and the
permission Unleash names for it. ``{...}`` in a path or body is filled from the world."""

OWN_ACCOUNT = {
    ("POST", "/api/admin/user/change-password"),
    ("POST", "/api/admin/user/tokens"),
    ("DELETE", "/api/admin/user/tokens/{id}"),
}
"""A person's own password and personal tokens: every signed-in person may
(tests/http/test_users.py, tests/http/test_personal_tokens.py)."""

# What each person may do, written out (Unleash's meaning of the predefined roles).
_EVERYTHING = frozenset(Permission)
_EDITOR = _EVERYTHING - {P.ADMIN, P.PROJECT_USER_ACCESS_WRITE, P.SKIP_CHANGE_REQUEST}
_MEMBER = frozenset(
    {
        P.CREATE_FEATURE,
        P.UPDATE_FEATURE,
        P.DELETE_FEATURE,
        P.UPDATE_FEATURE_DEPENDENCY,
        P.UPDATE_FEATURE_VARIANTS,
        P.UPDATE_FEATURE_ENVIRONMENT,
        P.CREATE_FEATURE_STRATEGY,
        P.UPDATE_FEATURE_STRATEGY,
        P.DELETE_FEATURE_STRATEGY,
        P.CREATE_ACTIONS,
        P.UPDATE_ACTIONS,
        P.DELETE_ACTIONS,
    }
)
_OWNER = _MEMBER | {
    P.UPDATE_PROJECT,
    P.DELETE_PROJECT,
    P.PROJECT_USER_ACCESS_WRITE,
    P.APPROVE_CHANGE_REQUEST,
    P.APPLY_CHANGE_REQUEST,
}
PEOPLE: dict[str, frozenset[Permission]] = {
    "admin": _EVERYTHING,
    "editor": _EDITOR,
    "viewer": frozenset(),
    "owner-of-alpha": frozenset(),  # acts on beta, where they have no role
    "member-of-beta": _MEMBER,
    # A Viewer in groups: one holding Owner in beta; one whose root role is Editor.
    "in-a-group-owning-beta": _OWNER,
    "in-a-group-of-editors": _EDITOR,
    "may-only-create-flags-in-beta": frozenset({P.CREATE_FEATURE}),
    "a-viewers-personal-token": frozenset(),
    "a-service-account-editor": _EDITOR,
}
"""The last two act by ``Authorization`` with their token, not with a browser's session."""
# Routes that act outside any project: a project role does not reach them.
_PROJECT_SCOPED = ("{project}", "/api/admin/archive/", "/api/admin/features/{name}/tags")


def _allowed(person: str, key: tuple[str, str], case: Case) -> bool:
    if case.needs is None:
        return True
    held = PEOPLE[person]
    if person in ("member-of-beta", "may-only-create-flags-in-beta", "in-a-group-owning-beta"):
        scoped = (
            any(part in key[1] for part in _PROJECT_SCOPED)
            or key[1].endswith(("/segments/strategies", "/features-batch/import"))
            or case.ids == "project"  # beta itself
        )
        return scoped and case.needs in held
    return case.needs in held


def _admin_write_routes(app: web.Application) -> set[tuple[str, str]]:
    found = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = str(info.get("formatter") or info.get("path") or "")
        if path.startswith("/api/admin") and route.method not in ("GET", "HEAD", "OPTIONS"):
            found.add((route.method, path))
    return found


def _normal(template: str) -> str:
    """The router's spelling of a case's path (cases name which object fills it)."""
    for alias, name in (
        ("{doomed}", "{name}"),
        ("{old}", "{name}"),
        ("{older}", "{name}"),
        ("{tag_type}", "{name}"),
        ("{doomed_strategy}", "{strategy_id}"),
        ("{ctx}", "{name}"),
        ("{doomed_ctx}", "{name}"),
        ("{env}", "{name}"),
        ("{doomed_env}", "{name}"),
        ("{renamable_env}", "{name}"),
        ("{kept_tag_type}", "{name}"),
        ("{strategy_def}", "{name}"),
        ("{doomed_strategy_def}", "{name}"),
        ("{cr_project}", "{project}"),
        ("{cr_env}", "{environment}"),
        ("{staging}", "{environment}"),
        ("{staged_cr}", "{id}"),
        ("{own_cr}", "{id}"),
        ("{first_change}", "{changeId}"),
        ("{second_change}", "{changeId}"),
        ("{archived_template}", "{template}"),
        ("{doomed_template}", "{template}"),
        ("{plan_flag}", "{name}"),
        ("{first_milestone}", "{milestone}"),
        ("{progressed_milestone}", "{milestone}"),
        ("{prod}", "{environment}"),
        ("{paused_plan}", "{plan}"),
    ):
        template = template.replace(alias, name)
    return template


def test_the_matrix_covers_every_admin_write_route(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        app = create_app(Service(store), ServerConfig())
        cases = {(m, _normal(p)) for m, p in CASES}
        assert _admin_write_routes(app) - OWN_ACCOUNT == cases
    finally:
        store.close()


def _world(service: Service) -> dict[str, Any]:
    """Everything the cases act on, made by the server's own trusted caller."""
    for project in ("alpha", "beta", "empty"):
        service.projects.create_project(project, project.title())
    flags = service.flags
    for name in ("f", "parent", "doomed", "old", "older"):
        flags.create_flag("beta", name)
    service.archive.archive_flag("beta", "old")
    service.archive.archive_flag("beta", "older")
    service.tags.add_flag_tag("f", Tag("simple", "vv"))
    strategy, doomed_strategy = (
        service.strategies.add_strategy("beta", "f", "development", Strategy("default"))
        for _ in range(2)
    )
    segments = service.segments
    segment = segments.create_segment("seg", [Constraint("userId", "IN", ("1",))])
    doomed_segment = segments.create_segment("doomed-seg", [])
    endpoint = service.signals.create_signal_endpoint("alerts")
    doomed_endpoint = service.signals.create_signal_endpoint("doomed-alerts")
    signal_token = service.signals.create_signal_endpoint_token(endpoint.id, "t")
    action_sets = [
        service.actions.create_action_set(
            name, "beta", endpoint.id, [Action(ActionKind.MARK_FEATURE_STALE, "f")]
        )
        for name in ("kept", "doomed")
    ]
    service.tags.create_tag_type("kind")
    service.tags.create_tag_type("kept-kind")
    for custom in ("custom-kept", "custom-doomed"):
        service.strategy_definitions.create_strategy_definition(StrategyDefinition(custom))
    token = service.tokens.create_token("old-sdk", "client", environment="development")
    users = service.users
    tee = users.create_user(NewUser(RootRole.VIEWER, email="tee@x.io", name="Tee"))
    doomed_user = users.create_user(NewUser(RootRole.VIEWER, email="gone@x.io"))
    role = service.roles.create_role(NewRole("kept role", RoleType.CUSTOM, "", ()))
    doomed_role = service.roles.create_role(NewRole("doomed role", RoleType.CUSTOM, "", ()))
    service.roles.add_project_access("beta", [tee.id], [5])
    groups = service.groups
    group = groups.create_group(NewGroup("kept group", user_ids=(tee.id,))).group
    doomed_group = groups.create_group(NewGroup("doomed group")).group
    accounts = service.service_accounts
    account = accounts.create_service_account(name="Bot", username="bot", root_role=RootRole.VIEWER)
    doomed_account = accounts.create_service_account(
        name="Gone", username="gone-bot", root_role=RootRole.VIEWER
    )
    expiry = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    for field in ("region", "doomed-region"):
        service.context_fields.create_context_field(ContextField(field))
    bot_token = accounts.create_service_account_token(account.id, "kept", expiry)
    # An integration to a local address made in-process: a resend is refused at delivery
    # time by the SSRF rules (no allow list here), so nothing leaves the machine.
    hook = IntegrationSpec(
        "webhook", False, {"url": "http://127.0.0.1:9/hook"}, ("feature-created",)
    )
    addon, doomed_addon = (service.integrations.create_integration(hook) for _ in range(2))
    newest = service.events.list_events(limit=1)[0]
    delivery = service.integration_outbox.record_integration_resend(
        IntegrationDelivery(0, addon.id, newest.id, newest.type, "failed", 1, 400)
    )
    for environment in ("staging", "doomed-env", "renamable-env"):
        service.environments.create_environment(environment)
    # Change requests on in project gamma (not beta: there they would hold back the
    # direct cases above), in production and staging.
    service.projects.create_project("gamma", "Gamma")
    service.flags.create_flag("gamma", "gf")
    for environment in ("production", "staging"):
        service.change_requests.set_change_request_config(
            "gamma", environment, enabled=True, required_approvals=1
        )
    plans = service.release_plans
    steps = [Milestone("", name, i, (Strategy("default"),)) for i, name in enumerate("abc")]
    template, archived, doomed_template = (
        service.release_templates.create_release_plan_template(name, None, steps)
        for name in ("kept", "archived", "doomed")
    )
    plan = plans.add_release_plan("beta", "f", "development", template.id)
    first, second, third = plan.milestones
    plans.start_release_plan_milestone("beta", "f", "development", plan.id, first.id)
    plans.change_milestone_progression("beta", "f", "development", second.id, third.id, 30)
    guard = checked_safeguard("errors", "count", ">", 1.0, 60)
    safeguard = plans.put_release_plan_safeguard("beta", "f", "development", plan.id, guard)
    paused = plans.add_release_plan("beta", "f", "production", template.id)
    with service.context.unit() as tx:
        tx.save_record(RELEASE_PLANS, attrs.evolve(paused, paused_reason="errors above 1"))
    return {
        "template": template.id,
        "archived_template": archived.id,
        "doomed_template": doomed_template.id,
        "plan_flag": "parent",
        "plan": plan.id,
        "milestone": second.id,
        "first_milestone": first.id,
        "progressed_milestone": second.id,
        "prod": "production",
        "paused_plan": paused.id,
        "safeguard": safeguard.safeguards[0].id,
        "cr_project": "gamma",
        "cr_env": "production",
        "staging": "staging",
        "own_cr": 1,
        "staged_cr": 2,
        "first_change": 1,
        "second_change": 2,
        "project": "beta",
        "name": "f",
        "doomed": "doomed",
        "old": "old",
        "older": "older",
        "environment": "development",
        "state": "on",
        "type": "simple",
        "value": "vv",
        "strategy_id": strategy.id,
        "doomed_strategy": doomed_strategy.id,
        "segment": segment.id,
        "doomed_segment": doomed_segment.id,
        "endpoint": endpoint.id,
        "doomed_endpoint": doomed_endpoint.id,
        "token_id": signal_token.token.id,
        "action_set": action_sets[0].id,
        "doomed_action_set": action_sets[1].id,
        "tag_type": "kind",
        "token": token.token.id,
        "user": tee.id,
        "userId": tee.id,
        "doomed_user": doomed_user.id,
        "role": role.id,
        "doomed_role": doomed_role.id,
        "groupId": group.id,
        "doomed_group": doomed_group.id,
        "empty_project": "empty",
        "account": account.id,
        "doomed_account": doomed_account.id,
        "tokenId": bot_token.token.id,
        "expiry": expiry.isoformat(),
        "ctx": "region",
        "doomed_ctx": "doomed-region",
        "addon": addon.id,
        "doomed_addon": doomed_addon.id,
        "deliveryId": delivery.id,
        "env": "staging",
        "doomed_env": "doomed-env",
        "renamable_env": "renamable-env",
        "kept_tag_type": "kept-kind",
        "strategy_def": "custom-kept",
        "doomed_strategy_def": "custom-doomed",
        "feature_type": "release",
    }


def _headers(service: Service, person: str, client: TestClient[Any, Any]) -> dict[str, str]:
    """How the person's requests say who they are: a session cookie, or their token."""
    json_body = {"Content-Type": "application/json"}
    expiry = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    if person == "a-service-account-editor":
        accounts = service.service_accounts
        account = accounts.create_service_account(
            name="Deployer", username="deployer", root_role=RootRole.EDITOR
        )
        made = accounts.create_service_account_token(account.id, "deploys", expiry)
        return {"Authorization": made.secret, **json_body}
    if person == "a-viewers-personal-token":
        tokens = service.personal_tokens
        return {
            "Authorization": tokens.create_personal_token(
                _person(service, person), "scripts", expiry
            ).secret,
            **json_body,
        }
    started = service.sessions.start(user_id=_person(service, person), lifetime=dt.timedelta(1))
    signer = client.app[SIGNER]  # type: ignore[index]
    cookie = signer.cookie_value(signer.new_session(started.secret))
    return {"Cookie": f"{COOKIE_NAME}={cookie}", **json_body}


def _person(service: Service, person: str) -> int:
    """The person as a user with their roles (root Viewer unless their role is root)."""
    root = {"admin": RootRole.ADMIN, "editor": RootRole.EDITOR}.get(person, RootRole.VIEWER)
    user = service.users.create_user(NewUser(root, email=f"{person}@x.io", name=person))
    if person == "owner-of-alpha":
        service.roles.add_project_access("alpha", [user.id], [4])
    if person == "member-of-beta":
        service.roles.add_project_access("beta", [user.id], [5])
    if person == "in-a-group-owning-beta":
        owners = service.groups.create_group(NewGroup("beta owners", user_ids=(user.id,)))
        service.roles.add_project_access("beta", [], [4], group_ids=[owners.group.id])
    if person == "in-a-group-of-editors":
        service.groups.create_group(NewGroup("editors", root_role=2, user_ids=(user.id,)))
    if person == "may-only-create-flags-in-beta":
        only = NewRole("creator", RoleType.CUSTOM, "", (Grant(P.CREATE_FEATURE),))
        role = service.roles.create_role(only)
        service.roles.add_project_access("beta", [user.id], [role.id])
    return user.id


def _filled(value: Any, world: dict[str, Any]) -> Any:
    text = json.dumps(value)
    for key, filled in world.items():
        text = text.replace(f'"{{{key}}}"', json.dumps(filled))
    return json.loads(text)


def _snapshot(service: Service) -> Any:
    return (
        service.events.list_events(limit=10_000),
        service.projects.list_projects(),
        service.flags.list_flags(),
        service.archive.list_archived_flags(),
        service.segments.list_segments(),
        service.tokens.list_tokens(),
        service.roles.list_roles(),
        service.roles.project_access("beta"),
        service.groups.list_groups(),
        service.users.list_users(),
        service.service_accounts.list_accounts(),
        service.context_fields.list_context_fields(),
        [
            (i, service.integration_outbox.list_integration_deliveries(i.id))
            for i in service.integrations.list_integrations()
        ],
        service.environments.list_environments(),
        service.code_references.list_code_scans(),
        service.feature_types.list_feature_types(),
        service.release_templates.list_release_plan_templates(),
    )


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Service, TestClient[Any, Any]]]:
    store = SqliteStore(tmp_path / "flags.db")
    service = Service(store)
    app = create_app(service, ServerConfig())
    try:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield service, client
    finally:
        store.close()


@pytest.mark.parametrize("person", sorted(PEOPLE))
async def test_each_person_is_allowed_or_refused_with_nothing_written(
    server: tuple[Service, TestClient[Any, Any]], person: str
) -> None:
    service, client = server
    world = _world(service)
    headers = _headers(service, person, client)
    # A token's first use notes when it was seen: done here, not inside a case's snapshot.
    assert (await client.get("/api/admin/user", headers=headers)).status == 200
    wrong = []
    for (method, template), case in CASES.items():
        key = (method, template)
        ids = {**world, "id": world[case.ids]} if case.ids else world
        path = template.format(**ids)
        body = None if case.body is None else json.dumps(_filled(case.body, world))
        before = _snapshot(service)
        response = await client.request(method, path, data=body, headers=headers)
        text = await response.text()
        if _allowed(person, key, case):
            if response.status >= 300:
                wrong.append(f"{method} {path}: {response.status} {text}")
        elif response.status != 403 or _snapshot(service) != before:
            wrong.append(f"{method} {path}: {response.status}, wanted 403 and no change")
    assert "\n".join(wrong) == ""
