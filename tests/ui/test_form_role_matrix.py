"""The UI's role matrix (issue 28): every form the UI has, posted by each kind of person
signed in, over a real server and SQLite file (no browser: the server's answers). A
person allowed gets the change done; one not allowed gets a 403, nothing written and no
event.

The forms come from the app's router, as the API's matrix takes its routes: a new form
without a case here fails `test_the_matrix_covers_every_ui_form`. Who holds which
permission is the API matrix's written-out meaning of the roles
(`tests/http/test_role_matrix.py`), and so is the world the forms act on.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.model import Strategy
from flagcore.people import RootRole
from flagcore.permissions import Grant, Permission, RoleType
from flagcore.release_plans import Milestone
from flagcore.service import DraftChange, NewRole, NewUser, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.session_cookie import COOKIE_NAME, SIGNER
from flagcore_store_sqlite import SqliteStore
from tests.http.test_role_matrix import _EDITOR, _snapshot, _world
from tests.ui.test_hostile_forms import UI_ROUTES

P = Permission
_FLAG = "/ui/flags/{name}"
_STRATEGIES = _FLAG + "/environments/{environment}/strategies"
_STRATEGY = _STRATEGIES + "/{strategy_id}"
_PLAN = _FLAG + "/environments/{environment}/release-plans/{plan}"


@attrs.frozen
class Form:
    fields: dict[str, str]
    needs: Permission
    in_beta: bool = False  # acts inside project beta: a project role there reaches it
    fill: dict[str, str] = attrs.field(factory=dict)  # path slot → the world's key
    shows_change: bool = True  # False: what it changes (sessions) is not in the snapshot


def _f(fields: dict[str, str], needs: Permission, *, beta: bool = False, **fill: str) -> Form:
    return Form(fields, needs, beta, fill)


_ACTION_FIELDS = {
    "project": "beta",
    "source": "{endpoint}",
    "actions-0-kind": "MARK_FEATURE_STALE",
    "actions-0-flag": "f",
    "actions-0-environment": "",
}

FORMS: dict[str, Form] = {
    "/ui/flags/new": _f(
        {"project": "beta", "name": "g", "type": "release"}, P.CREATE_FEATURE, beta=True
    ),
    _FLAG + "/archive": _f({}, P.DELETE_FEATURE, beta=True, name="doomed"),
    _FLAG + "/stale": _f({"stale": "true"}, P.UPDATE_FEATURE, beta=True),
    _FLAG + "/tags": _f({"type": "simple", "value": "ww"}, P.UPDATE_FEATURE, beta=True),
    _FLAG + "/tags/remove": _f({"type": "simple", "value": "vv"}, P.UPDATE_FEATURE, beta=True),
    _FLAG + "/environments/{environment}/switch": _f(
        {"enabled": "true"}, P.UPDATE_FEATURE_ENVIRONMENT, beta=True
    ),
    _FLAG + "/environments/{environment}/variants": _f(
        {"variants-0-name": "a", "variants-0-weight": "", "variants-0-stickiness": "default"},
        P.UPDATE_FEATURE_VARIANTS,
        beta=True,
    ),
    _STRATEGIES + "/new": _f({"name": "default"}, P.CREATE_FEATURE_STRATEGY, beta=True),
    _STRATEGY: _f({"name": "default", "title": "t"}, P.UPDATE_FEATURE_STRATEGY, beta=True),
    _STRATEGY + "/move": _f({"direction": "down"}, P.UPDATE_FEATURE_STRATEGY, beta=True),
    _STRATEGY + "/delete": _f(
        {}, P.DELETE_FEATURE_STRATEGY, beta=True, strategy_id="doomed_strategy"
    ),
    "/ui/archive/{name}/revive": _f({}, P.CREATE_FEATURE, beta=True, name="old"),
    "/ui/archive/{name}/delete": _f(
        {"confirm": "older"}, P.DELETE_FEATURE, beta=True, name="older"
    ),
    "/ui/actions/new": _f({**_ACTION_FIELDS, "name": "made"}, P.CREATE_ACTIONS, beta=True),
    "/ui/actions/{id}": _f(
        {**_ACTION_FIELDS, "name": "changed", "enabled": "on"},
        P.UPDATE_ACTIONS,
        beta=True,
        id="action_set",
    ),
    "/ui/projects": _f({"id": "made", "name": "Made"}, P.CREATE_PROJECT),
    "/ui/projects/{id}/rename": _f({"name": "Renamed"}, P.UPDATE_PROJECT, id="project"),
    "/ui/projects/{id}/delete": _f({}, P.DELETE_PROJECT, id="empty_project"),
    "/ui/context/new": _f({"name": "made-field"}, P.CREATE_CONTEXT_FIELD),
    "/ui/context/{name}": _f({"description": "changed"}, P.UPDATE_CONTEXT_FIELD, name="ctx"),
    "/ui/context/{name}/delete": _f({}, P.DELETE_CONTEXT_FIELD, name="doomed_ctx"),
    "/ui/segments/new": _f({"name": "s"}, P.CREATE_SEGMENT),
    "/ui/segments/{id}": _f({"name": "renamed"}, P.UPDATE_SEGMENT, id="segment"),
    "/ui/segments/{id}/delete": _f({}, P.DELETE_SEGMENT, id="doomed_segment"),
    "/ui/signals": _f({"name": "new"}, P.CREATE_SIGNAL_ENDPOINT),
    "/ui/signals/{id}/enabled": _f({"enabled": "false"}, P.UPDATE_SIGNAL_ENDPOINT, id="endpoint"),
    "/ui/signals/{id}/tokens": _f({"name": "t2"}, P.UPDATE_SIGNAL_ENDPOINT, id="endpoint"),
    "/ui/signals/{id}/tokens/{token}/revoke": _f(
        {}, P.UPDATE_SIGNAL_ENDPOINT, id="endpoint", token="token_id"
    ),
    "/ui/tokens": _f(
        {"tokenName": "sdk", "type": "client", "projects": "*", "environment": "development"},
        P.CREATE_CLIENT_API_TOKEN,
    ),
    "/ui/tokens/{token_id}/revoke": _f(
        {"confirm": "yes"}, P.DELETE_CLIENT_API_TOKEN, token_id="token"
    ),
    "/ui/users": _f({"email": "new@x.io", "rootRole": "Viewer"}, P.ADMIN),
    "/ui/users/{id}/reset-link": _f({}, P.ADMIN, id="user"),
    "/ui/users/{id}/root-role": _f({"rootRole": "Editor"}, P.ADMIN, id="user"),
    "/ui/users/{id}/end-sessions": attrs.evolve(_f({}, P.ADMIN, id="user"), shows_change=False),
    "/ui/users/{id}/disabled": _f({"disabled": "yes"}, P.ADMIN, id="user"),
    "/ui/users/{id}/delete": _f({}, P.ADMIN, id="doomed_user"),
    "/ui/service-accounts": _f(
        {"name": "Bot", "username": "bot-made", "rootRole": "Viewer"}, P.ADMIN
    ),
    "/ui/service-accounts/{id}/tokens": _f(
        {"description": "made", "expiresAt": "{expiry_day}"}, P.ADMIN, id="account"
    ),
    "/ui/service-accounts/{id}/tokens/{tokenId}/delete": _f({}, P.ADMIN, id="account"),
    "/ui/service-accounts/{id}/delete": _f({}, P.ADMIN, id="doomed_account"),
    "/ui/roles": _f(
        {"name": "made role", "type": "custom", "permissions": "CREATE_FEATURE"}, P.ADMIN
    ),
    "/ui/roles/{id}": _f({"name": "renamed role", "type": "custom"}, P.ADMIN, id="role"),
    "/ui/roles/{id}/delete": _f({}, P.ADMIN, id="doomed_role"),
    "/ui/projects/{id}/access": _f(
        {"user": "{user}", "role": "4"}, P.PROJECT_USER_ACCESS_WRITE, beta=True, id="project"
    ),
    "/ui/projects/{id}/access/{userId}/roles": _f(
        {"roles": "5"}, P.PROJECT_USER_ACCESS_WRITE, beta=True, id="project"
    ),
    "/ui/projects/{id}/access/{userId}/remove": _f(
        {}, P.PROJECT_USER_ACCESS_WRITE, beta=True, id="project"
    ),
    "/ui/projects/{id}/access/groups/{groupId}/roles": _f(
        {"roles": "4"}, P.PROJECT_USER_ACCESS_WRITE, beta=True, id="project"
    ),
    "/ui/projects/{id}/access/groups/{groupId}/remove": _f(
        {}, P.PROJECT_USER_ACCESS_WRITE, beta=True, id="project"
    ),
    "/ui/groups": _f({"name": "made group", "users": "{user}"}, P.ADMIN),
    "/ui/groups/{id}": _f({"name": "renamed group", "users": "{user}"}, P.ADMIN, id="groupId"),
    "/ui/groups/{id}/delete": _f({}, P.ADMIN, id="doomed_group"),
    # after the merge of hooks, uienv and uimisc: their forms, in an order that keeps each
    # case's world object in place (the copy before the environments change)
    "/ui/actions/{id}/delete": _f({}, P.DELETE_ACTIONS, beta=True, id="doomed_action_set"),
    "/ui/signals/{id}/delete": _f({}, P.DELETE_SIGNAL_ENDPOINT, id="doomed_endpoint"),
    "/ui/service-accounts/{id}": _f(
        {"name": "Bot renamed", "username": "bot", "rootRole": "Editor"}, P.ADMIN, id="account"
    ),
    _FLAG + "/edit": _f({"description": "edited", "type": "release"}, P.UPDATE_FEATURE, beta=True),
    _FLAG + "/dependencies": _f(
        {"feature": "parent", "enabled": "on"}, P.UPDATE_FEATURE_DEPENDENCY, beta=True
    ),
    _FLAG + "/dependencies/remove": _f(
        {"feature": "parent"}, P.UPDATE_FEATURE_DEPENDENCY, beta=True
    ),
    _FLAG + "/environments/{environment}/copy": _f(
        {"target": "staging"}, P.CREATE_FEATURE_STRATEGY, beta=True
    ),
    "/ui/environments": _f({"name": "qa", "type": "test"}, P.CREATE_ENVIRONMENT),
    "/ui/environments/clone": _f(
        {"source": "staging", "clone_name": "staging-copy", "clone_type": "test"}, P.ADMIN
    ),
    "/ui/environments/rename": _f(
        {"rename_source": "renamable-env", "new_name": "renamed-env"}, P.ADMIN
    ),
    "/ui/environments/{name}/type": _f({"type": "test"}, P.ADMIN, name="env"),
    "/ui/environments/{name}/move": _f({"direction": "up"}, P.ADMIN, name="env"),
    "/ui/environments/{name}/toggle": _f({"enabled": "false"}, P.ADMIN, name="env"),
    "/ui/environments/{name}/delete": _f({"confirm": "doomed-env"}, P.ADMIN, name="doomed_env"),
    "/ui/integrations/new": _f(
        {
            "provider": "webhook",
            "parameters-url": "https://93.184.216.34/hook",  # made off: nothing is sent
            "events": "feature-created",
        },
        P.CREATE_ADDON,
    ),
    "/ui/integrations/{id}/enabled": _f({"enabled": ""}, P.UPDATE_ADDON, id="addon"),
    # a test event is sent, never stored (and refused by the SSRF rules: no allow list)
    "/ui/integrations/{id}/test": attrs.evolve(
        _f({}, P.UPDATE_ADDON, id="addon"), shows_change=False
    ),
    "/ui/integrations/{id}/deliveries/{deliveryId}/resend": _f({}, P.UPDATE_ADDON, id="addon"),
    "/ui/integrations/{id}/delete": _f({}, P.DELETE_ADDON, id="doomed_addon"),
    "/ui/tag-types": _f({"name": "kind2", "description": ""}, P.CREATE_TAG_TYPE),
    "/ui/tag-types/{name}": _f({"description": "d"}, P.UPDATE_TAG_TYPE, name="kept_tag_type"),
    "/ui/tag-types/{name}/delete": _f({}, P.DELETE_TAG_TYPE, name="tag_type"),
    "/ui/strategies/new": _f({"name": "custom-made"}, P.CREATE_STRATEGY),
    "/ui/strategies/{name}": _f(
        {"title": "t", "description": "d"}, P.UPDATE_STRATEGY, name="strategy_def"
    ),
    "/ui/strategies/{name}/deprecate": _f({}, P.UPDATE_STRATEGY, name="strategy_def"),
    "/ui/strategies/{name}/reactivate": _f({}, P.UPDATE_STRATEGY, name="strategy_def"),
    "/ui/strategies/{name}/delete": _f({}, P.DELETE_STRATEGY, name="doomed_strategy_def"),
    # lifecycle (issue 32): marked completed, then back
    _FLAG + "/complete": _f({"status": "kept", "statusValue": ""}, P.UPDATE_FEATURE, beta=True),
    _FLAG + "/uncomplete": _f({}, P.UPDATE_FEATURE, beta=True),
    # change requests (issue 30): a request in review, drafted by the server's own caller
    "/ui/change-requests/{project_id}/{id}/comments": _f(
        {"text": "looks right"}, P.UPDATE_FEATURE, project_id="cr_project", id="ui_cr"
    ),
    "/ui/change-requests/{project_id}/{id}/state": _f(
        {"state": "Approved"}, P.APPROVE_CHANGE_REQUEST, project_id="cr_project", id="ui_cr"
    ),  # release plans (issue 32): the API matrix's world plan on f in development
    _FLAG + "/environments/{environment}/release-plans": _f(
        {"template": "{template}"}, P.CREATE_FEATURE_STRATEGY, beta=True, name="plan_flag"
    ),
    _FLAG + "/environments/{environment}/release-plans/{plan}/milestones/{milestone}/start": _f(
        {}, P.UPDATE_FEATURE_STRATEGY, beta=True, plan="plan", milestone="milestone"
    ),
    _FLAG + "/environments/{environment}/release-plans/{plan}/resume": _f(
        {}, P.UPDATE_FEATURE_STRATEGY, beta=True, environment="prod", plan="paused_plan"
    ),
    _PLAN + "/milestones/{milestone}/progression": _f(
        {"minutes": "45"}, P.UPDATE_FEATURE_STRATEGY, beta=True, plan="plan", milestone="milestone"
    ),
    _PLAN + "/milestones/{milestone}/progression/delete": _f(
        {}, P.UPDATE_FEATURE_STRATEGY, beta=True, plan="plan", milestone="progressed_milestone"
    ),
    _PLAN + "/safeguard": _f(
        {
            "metric": "errors",
            "ratioOf": "requests",
            "aggregation": "sum",
            "operator": ">",
            "threshold": "0.05",
            "window": "10",
            "action": "rollbackPlan",
        },
        P.UPDATE_FEATURE_STRATEGY,
        beta=True,
        plan="plan",
    ),
    _PLAN + "/safeguards/{safeguard}/delete": _f(
        {}, P.UPDATE_FEATURE_STRATEGY, beta=True, plan="plan", safeguard="safeguard"
    ),
    _FLAG + "/environments/{environment}/release-plans/{plan}/remove": _f(
        {}, P.DELETE_FEATURE_STRATEGY, beta=True, plan="plan"
    ),
    "/ui/feature-types/{id}/lifetime": _f({"lifetimeDays": "30"}, P.ADMIN, id="feature_type"),
    "/ui/release-templates": _f(
        {"name": "made", "milestones-0-name": "all", "milestones-0-rollout": "100"},
        P.RELEASE_PLAN_TEMPLATE_CREATE,
    ),
    "/ui/release-templates/{id}": _f(
        {"name": "in rows", "milestones-0-name": "all", "milestones-0-rollout": "100"},
        P.RELEASE_PLAN_TEMPLATE_UPDATE,
        id="form_template",
    ),
    "/ui/release-templates/{id}/archive": _f(
        {}, P.RELEASE_PLAN_TEMPLATE_DELETE, id="archived_template"
    ),
    "/ui/release-templates/{id}/delete": _f(
        {}, P.RELEASE_PLAN_TEMPLATE_DELETE, id="doomed_template"
    ),
    "/ui/change-requests/{project_id}/environments/{environment}/config": _f(
        {"enabled": "on", "requiredApprovals": "2"}, P.UPDATE_PROJECT, project_id="cr_project"
    ),
    # the author's forms, on the person's own drafts (in this order: the last change of
    # the first is discarded after its edit, the second draft discarded whole)
    "/ui/change-requests/{project_id}/{id}/title": _f(
        {"title": "Launch"}, P.UPDATE_FEATURE, project_id="cr_project", id="own_ui_cr"
    ),
    "/ui/change-requests/{project_id}/{id}/reviewers": _f(
        {"reviewers": "{user}"}, P.UPDATE_FEATURE, project_id="cr_project", id="own_ui_cr"
    ),
    "/ui/change-requests/{project_id}/{id}/changes/{change_id}": _f(
        {"payload": '{{"enabled": false}}'},  # braces doubled: fields are format strings
        P.UPDATE_FEATURE,
        project_id="cr_project",
        id="own_ui_cr",
        change_id="first_change",
    ),
    "/ui/change-requests/{project_id}/{id}/changes/{change_id}/discard": _f(
        {}, P.UPDATE_FEATURE, project_id="cr_project", id="own_ui_cr", change_id="second_change"
    ),
    "/ui/change-requests/{project_id}/{id}/discard": _f(
        {}, P.UPDATE_FEATURE, project_id="cr_project", id="own_staged_ui_cr"
    ),
}
"""Every UI form that changes what is shared → fields an allowed person's post succeeds
with, the permission it needs, and which world object fills each slot of its path (the
flag ``f``, its first strategy, and ``development`` unless named). ``{...}`` in a field
is filled from the world too."""

OWN_OR_NO_CHANGE = {
    "/ui/sign-in",
    "/ui/sign-in/password",
    "/ui/set-password",
    "/ui/sign-out",
    "/ui/sign-out-everywhere",
    "/ui/my-tokens",
    "/ui/my-tokens/{id}/delete",
    "/ui/profile/name",
    "/ui/profile/password",
    "/ui/playground",
}
"""Signing in and out, a person's own tokens, name and password, and the playground (which
changes nothing): every signed-in person may."""

PEOPLE: dict[str, frozenset[Permission]] = {
    "admin": frozenset(Permission),
    "editor": _EDITOR,
    "viewer": frozenset(),
    "member-of-alpha": frozenset(),  # acts on beta, where they have no role
    "owner-of-alpha": frozenset(),  # the same, as alpha's Owner
    "may-only-create-flags-in-beta": frozenset({P.CREATE_FEATURE}),
}


def _allowed(person: str, form: Form) -> bool:
    if person == "may-only-create-flags-in-beta":
        return form.in_beta and form.needs in PEOPLE[person]
    return form.needs in PEOPLE[person]


def test_the_matrix_covers_every_ui_form() -> None:
    posted = {path for method, path in UI_ROUTES if method == "POST"}
    assert posted - OWN_OR_NO_CHANGE == set(FORMS)


def _person(service: Service, person: str) -> int:
    root = {"admin": RootRole.ADMIN, "editor": RootRole.EDITOR}.get(person, RootRole.VIEWER)
    user = service.users.create_user(NewUser(root, email=f"{person}@x.io", name=person))
    if person == "member-of-alpha":
        service.roles.add_project_access("alpha", [user.id], [5])
    if person == "owner-of-alpha":
        service.roles.add_project_access("alpha", [user.id], [4])
    if person == "may-only-create-flags-in-beta":
        only = NewRole("creator", RoleType.CUSTOM, "", (Grant(P.CREATE_FEATURE),))
        role = service.roles.create_role(only)
        service.roles.add_project_access("beta", [user.id], [role.id])
    return user.id


def _filled(template: str, world: dict[str, Any]) -> str:
    return template.format(**{key: str(value) for key, value in world.items()})


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


def _own_drafts(service: Service, user_id: int, other: int) -> dict[str, int]:
    """The person's own drafts, for the author's forms: one with two changes in
    production, one in staging. Someone who may not draft gets someone else's request
    (refused before whose it is matters)."""
    who = service.roles.principal_of(service.users.get_user(user_id))
    if not who.may(P.UPDATE_FEATURE, project="gamma", environment="production"):
        return {"own_ui_cr": other, "own_staged_ui_cr": other}
    requests = service.change_requests
    on = DraftChange("gf", "updateEnabled", {"enabled": True})
    strategy = DraftChange("gf", "addStrategy", {"name": "default"})
    own = requests.add_changes("gamma", "production", [on, strategy], actor=who)
    staged = requests.add_changes("gamma", "staging", [on], actor=who)
    return {"own_ui_cr": own.id, "own_staged_ui_cr": staged.id}


@pytest.mark.parametrize("person", sorted(PEOPLE))
async def test_each_person_posts_each_form_done_or_refused_with_nothing_written(
    server: tuple[Service, TestClient[Any, Any]], person: str
) -> None:
    service, client = server
    world = _world(service)
    requests = service.change_requests
    in_review = requests.add_changes(
        "gamma", "production", [DraftChange("gf", "updateEnabled", {"enabled": True})]
    )
    world["ui_cr"] = requests.submit_change_request("gamma", in_review.id).id
    world["expiry_day"] = (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).date().isoformat()
    rollout = Strategy("flexibleRollout", {"rollout": "50", "stickiness": "default"})
    world["form_template"] = service.release_templates.create_release_plan_template(
        "in rows", None, [Milestone("", "half", 0, (rollout,))]
    ).id
    user_id = _person(service, person)
    world.update(_own_drafts(service, user_id, world["ui_cr"]))
    started = service.sessions.start(user_id=user_id, lifetime=dt.timedelta(1))
    signer = client.app[SIGNER]  # type: ignore[index]
    session = signer.new_session(started.secret)
    client.session.cookie_jar.update_cookies({COOKIE_NAME: signer.cookie_value(session)})
    csrf = signer.csrf_token(session)
    wrong = []
    for template, form in FORMS.items():
        path = _filled(template, {**world, **{k: world[v] for k, v in form.fill.items()}})
        fields = {key: _filled(value, world) for key, value in form.fields.items()}
        before = _snapshot(service)
        response = await client.post(path, data={"_csrf": csrf, **fields}, allow_redirects=False)
        text = await response.text()
        if _allowed(person, form):
            changed = _snapshot(service) != before or not form.shows_change
            if response.status not in (200, 201, 303) or not changed:
                wrong.append(f"{path}: {response.status}, wanted done: {text[:300]}")
        elif response.status != 403 or _snapshot(service) != before:
            wrong.append(f"{path}: {response.status}, wanted 403 and no change")
    assert not wrong, "\n".join(wrong)
