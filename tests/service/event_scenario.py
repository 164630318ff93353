"""One walk through the service that writes every type of event the service writes, on a
fixed clock, for `test_event_data_json`: the JSON each event carries (``data`` and
``preData``) is read by the events API, the UI's event diff, integrations' messages and
Slack texts, so it is pinned as written.

Random ids (strategies', release plans' and milestones' ULIDs) are the only values that
differ between two walks; `pinned` names them by their first appearance.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import attrs

from flagcore.change_requests import ChangeRequestState
from flagcore.entities import (
    Action,
    ActionKind,
    ActionSet,
    ContextField,
    Environment,
    Event,
    LegalValue,
    Project,
    StrategyDefinition,
    StrategyParameter,
    Tag,
    TagType,
)
from flagcore.integration_providers import MASKED
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant
from flagcore.passwords import NewPassword
from flagcore.people import LinkKind, RootRole
from flagcore.permissions import Grant, Permission, RoleType
from flagcore.ports import Store
from flagcore.release_plans import Milestone
from flagcore.service import (
    DraftChange,
    InstanceCopy,
    IntegrationSpec,
    NewGroup,
    NewRole,
    NewUser,
    ProviderIdentity,
    ProviderRules,
    Service,
    checked_safeguard,
)
from flagcore.wire import ImpactMetric, ImpactSample, read_export
from tests.service.test_importing import small_export

START = dt.datetime(2026, 3, 2, 9, 30, tzinfo=dt.UTC)
PROD = "production"
DEV = "development"
# A known hash: hashing a password for real is slow and its salt random (no event
# carries it anyway).
PASSWORD = NewPassword("$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA")


class Clock:
    """The service's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def walk(store: Store) -> Service:
    """Every kind of write the service records an event for, at least once."""
    clock = Clock()
    service = Service(store, clock=clock)
    _projects_and_environments(service)
    _flags_and_strategies(service, clock)
    _segments_tags_and_definitions(service)
    _people(service, clock)
    _tokens_signals_and_actions(service, clock)
    _change_requests(service, clock)
    _release_plans(service, clock)
    _moving_in(service)
    _upkeep(service, clock)
    _renaming(service)
    return service


def _projects_and_environments(service: Service) -> None:
    service.projects.create_project("web", "Web", "the shop")
    service.projects.update_project("web", name="Web shop", description=None)
    service.projects.create_project("gone", "Gone")
    service.projects.delete_project("gone")
    envs = service.environments
    envs.create_environment("staging", "test")
    envs.update_environment("staging", type="preproduction", sort_order=7)
    envs.set_environment_sort_orders({"staging": 8})
    envs.toggle_environment("staging", False)
    envs.clone_environment("staging", "qa", "test", projects=["web"])
    envs.delete_environment("qa")


def _flags_and_strategies(service: Service, clock: Clock) -> None:
    service.tags.create_tag_type("team", "owning team")
    flags = service.flags
    flags.create_flag("web", "checkout", description="new checkout", tags=[Tag("team", "payments")])
    flags.create_flag("web", "banner", type="experiment", impression_data=True)
    flags.update_flag("web", "checkout", description="the new checkout", impression_data=True)
    flags.mark_stale("web", "banner")
    flags.mark_stale("web", "banner", False)
    flags.replace_flag("web", "banner", type="operational", description="")
    strategies = service.strategies
    rollout = strategies.add_strategy(
        "web",
        "checkout",
        DEV,
        Strategy(
            "flexibleRollout",
            {"rollout": "25", "stickiness": "userId", "groupId": "checkout"},
            (Constraint("plan", "IN", ("pro", "team")),),
            title="a quarter",
        ),
    )
    assert rollout.id is not None
    clock.advance(seconds=1)
    ids = strategies.add_strategy("web", "checkout", DEV, Strategy("userWithId", {"userIds": "a"}))
    assert ids.id is not None
    strategies.update_strategy(
        "web", "checkout", DEV, ids.id, Strategy("userWithId", {"userIds": "a,b"}, disabled=True)
    )
    strategies.reorder_strategies("web", "checkout", DEV, {ids.id: 0, rollout.id: 1})
    strategies.copy_strategies("web", "checkout", DEV, PROD)
    service.environments.set_environment_enabled("web", "banner", DEV, True)  # adds a rollout
    (added,) = strategies.list_strategies("web", "banner", DEV)
    assert added.id is not None
    strategies.delete_strategy("web", "banner", DEV, added.id)  # the last: switched off
    strategies.delete_strategy("web", "checkout", DEV, ids.id)
    service.environments.set_environment_enabled("web", "checkout", DEV, True)
    service.environments.set_environment_enabled("web", "checkout", DEV, False)
    service.variants.set_flag_variants(
        "web",
        "checkout",
        DEV,
        [Variant("blue", 500, stickiness="userId"), Variant("amber", 500, stickiness="userId")],
    )
    service.dependencies.set_dependencies("web", "banner", [Dependency("checkout")])
    service.dependencies.set_dependencies("web", "banner", [])
    service.tags.add_flag_tag("banner", Tag("simple", "promo"))
    service.tags.remove_flag_tag("banner", Tag("simple", "promo"))
    service.flags.create_flag("web", "old")
    service.archive.archive_flag("web", "old")
    service.archive.revive_flag("old")
    service.archive.archive_flag("web", "old")
    service.archive.delete_flag("old")
    service.lifecycle.complete_flag("web", "checkout", "kept", "blue")
    service.lifecycle.uncomplete_flag("web", "checkout")
    service.lifecycle.complete_flag("web", "banner", "discarded")


def _segments_tags_and_definitions(service: Service) -> None:
    segments = service.segments
    beta = segments.create_segment("beta", [Constraint("userId", "STR_STARTS_WITH", ("beta-",))])
    segments.update_segment(
        beta.id,
        "beta",
        [Constraint("userId", "STR_STARTS_WITH", ("beta-", "b-"))],
        description="beta testers",
    )
    local = segments.create_segment("local", [], project="web")
    (placed, *_rest) = service.strategies.list_strategies("web", "checkout", PROD)
    assert placed.id is not None
    segments.replace_strategy_segments(placed.id, [beta.id, local.id])
    segments.replace_strategy_segments(placed.id, [local.id])
    spare = segments.create_segment("spare", [Constraint("region", "IN", ("eu",))])
    segments.delete_segment(spare.id)
    tags = service.tags
    tags.create_tag_type("owner", None)
    tags.update_tag_type("owner", "who owns it")
    tags.delete_tag_type("owner")
    fields = service.context_fields
    fields.create_context_field(
        ContextField(
            "plan",
            "billing plan",
            (LegalValue("pro", "paying"), LegalValue("free")),
            stickiness=True,
            sort_order=3,
        )
    )
    fields.update_context_field(
        "plan",
        description="the plan",
        legal_values=(LegalValue("pro"),),
        stickiness=False,
        sort_order=4,
    )
    fields.create_context_field(ContextField("tenant"))
    fields.delete_context_field("tenant")
    definitions = service.strategy_definitions
    custom = StrategyDefinition(
        "byTenant",
        "tenants listed",
        (StrategyParameter("tenants", "list", "which tenants", required=True),),
        title="By tenant",
    )
    definitions.create_strategy_definition(custom)
    definitions.update_strategy_definition(
        StrategyDefinition("byTenant", "the tenants listed", (), title="Tenants")
    )
    definitions.deprecate_strategy_definition("byTenant")
    definitions.reactivate_strategy_definition("byTenant")
    definitions.delete_strategy_definition("byTenant")
    service.feature_types.set_type_lifetime("experiment", 21)


def _people(service: Service, clock: Clock) -> None:
    users = service.users
    users.ensure_first_admin()
    ann = users.create_user(NewUser(RootRole.EDITOR, email="ann@example.io", name="Ann"))
    users.update_user(ann.id, name="Ann Lee", disabled=False)
    users.set_name(ann.id, "Ann L.")
    users.set_password(ann.id, PASSWORD)
    bob, invitation = users.invite_user(NewUser(RootRole.VIEWER, username="bob"))
    users.use_link(invitation.token, PASSWORD)
    users.create_link("ann@example.io", kind=LinkKind.RESET)
    cy = users.create_user(NewUser(RootRole.VIEWER, email="cy@example.io"))
    users.delete_user(cy.id)
    roles = service.roles
    role = roles.create_role(
        NewRole(
            "switcher",
            RoleType.CUSTOM,
            "turns flags",
            (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, DEV),),
        )
    )
    roles.update_role(
        role.id,
        NewRole(
            "switcher",
            RoleType.CUSTOM,
            "turns flags on",
            (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, PROD),),
        ),
    )
    spare = roles.create_role(NewRole("spare", RoleType.ROOT_CUSTOM, "", ()))
    roles.delete_role(spare.id)
    groups = service.groups
    team = groups.create_group(
        NewGroup("team", "the team", ("sso-team",), None, (ann.id, bob.id))
    ).group
    groups.update_group(
        team.id, NewGroup("team", "our team", ("sso-team", "sso-devs"), 2, (ann.id,))
    )
    roles.add_project_access("web", [ann.id], [role.id], group_ids=[team.id])
    roles.set_user_project_roles("web", ann.id, [])
    roles.set_group_project_roles("web", team.id, [])
    rules = ProviderRules(
        default_role=RootRole.VIEWER, email_domains=("example.io",), sync_groups=True
    )
    identity = ProviderIdentity(
        "https://sso.example.io", "sub-9", "dee@example.io", True, "Dee", ("sso-team",)
    )
    dee = service.provider_sign_in.user_for(identity, rules)
    service.provider_sign_in.user_for(attrs.evolve(identity, groups=()), rules)
    spare_group = groups.create_group(NewGroup("spare", user_ids=(dee.id,)))
    groups.delete_group(spare_group.group.id)
    tokens = service.personal_tokens
    made = tokens.create_personal_token(ann.id, "ci", START + dt.timedelta(days=30))
    tokens.delete_personal_token(ann.id, made.token.id)
    accounts = service.service_accounts
    bot = accounts.create_service_account(name="Bot", username="bot", root_role=RootRole.VIEWER)
    accounts.update_service_account(bot.id, name="Robot", root_role=RootRole.EDITOR)
    accounts.delete_service_account(bot.id)
    clock.advance(minutes=1)


def _tokens_signals_and_actions(service: Service, clock: Clock) -> None:
    made = service.tokens.create_token("ci", "client", projects=["web"], environment=DEV)
    service.tokens.create_token("ops", "admin")
    service.tokens.delete_token(made.token.id)
    signals = service.signals
    alerts = signals.create_signal_endpoint("alerts", "pager alerts")
    signals.update_signal_endpoint(alerts.id, description="pager", enabled=False)
    pager = signals.create_signal_endpoint_token(alerts.id, "pager")
    signals.delete_signal_endpoint_token(alerts.id, pager.token.id)
    spare = signals.create_signal_endpoint("spare")
    signals.delete_signal_endpoint(spare.id)
    actions = service.actions
    enable = [Action(ActionKind.TOGGLE_FEATURE_ON, "banner", DEV)]
    made_set = actions.create_action_set("wake", "web", alerts.id, enable)
    actions.update_action_set(
        made_set.id,
        ActionSet(0, "wake-up", "web", alerts.id, tuple(enable), created_at=START),
    )
    actions.set_action_set_enabled(made_set.id, False)
    actions.delete_action_set(made_set.id)
    hook = IntegrationSpec(
        "webhook",
        True,
        {"url": "https://hooks.example.io/in", "authorization": "Bearer s3cret"},
        ("feature-created",),
        projects=("web",),
    )
    integration = service.integrations.create_integration(hook)
    service.integrations.update_integration(
        integration.id,
        IntegrationSpec(
            "webhook",
            False,
            {"url": "https://hooks.example.io/in", "authorization": MASKED},
            ("feature-created", "feature-archived"),
            description="our hook",
        ),
    )
    service.integrations.delete_integration(integration.id)
    service.previews.replace_context_sample(
        PROD,
        [{"userId": "u1", "properties": {"plan": "pro", "email": "u1@x.io"}}] * 3,
        denied=("email",),
    )
    clock.advance(minutes=1)


def _change_requests(service: Service, clock: Clock) -> None:
    ann = service.users.create_user(NewUser(RootRole.EDITOR, email="ann2@example.io"))
    bob = service.users.create_user(NewUser(RootRole.EDITOR, email="bob2@example.io"))
    cy = service.users.create_user(NewUser(RootRole.EDITOR, email="cy2@example.io"))
    author, reviewer = service.roles.principal_of(ann), service.roles.principal_of(bob)
    third_person = service.roles.principal_of(cy)
    crs = service.change_requests
    crs.set_change_request_config("web", PROD, enabled=True, required_approvals=1)
    crs.set_change_request_config("web", PROD, enabled=True, required_approvals=2)
    on = DraftChange("checkout", "updateEnabled", {"enabled": True})
    draft = crs.add_changes("web", PROD, [on, on], actor=author)
    crs.edit_change(
        "web",
        draft.id,
        draft.changes[0].id,
        DraftChange("checkout", "updateEnabled", {"enabled": False}),
        actor=author,
    )
    crs.discard_change("web", draft.id, draft.changes[0].id, actor=author)
    crs.set_change_request_title("web", draft.id, "turn checkout on", actor=author)
    crs.set_change_request_reviewers("web", draft.id, [bob.id], actor=author)
    crs.comment_change_request("web", draft.id, "please look", actor=author)
    crs.submit_change_request("web", draft.id, actor=author)
    crs.approve_change_request("web", draft.id, comment="fine", actor=reviewer)
    crs.approve_change_request("web", draft.id, actor=third_person)
    crs.set_change_request_config("web", PROD, enabled=True, required_approvals=1)
    crs.apply_change_request("web", draft.id, actor=author)
    second = crs.add_changes(
        "web", PROD, [DraftChange("banner", "updateEnabled", {"enabled": True})], actor=author
    )
    crs.submit_change_request("web", second.id, actor=author)
    crs.reject_change_request("web", second.id, comment="not now", actor=reviewer)
    third = crs.add_changes(
        "web", PROD, [DraftChange("banner", "updateEnabled", {"enabled": True})], actor=author
    )
    crs.submit_change_request("web", third.id, actor=author)
    crs.cancel_change_request("web", third.id, actor=author)
    fourth = crs.add_changes(
        "web", PROD, [DraftChange("banner", "updateEnabled", {"enabled": True})], actor=author
    )
    crs.discard_draft("web", fourth.id, actor=author)
    scheduled = crs.add_changes(
        "web", PROD, [DraftChange("banner", "updateEnabled", {"enabled": True})], actor=author
    )
    crs.submit_change_request("web", scheduled.id, actor=author)
    crs.approve_change_request("web", scheduled.id, actor=reviewer)
    at = clock.now + dt.timedelta(minutes=5)
    crs.schedule_change_request("web", scheduled.id, at, actor=reviewer)
    clock.advance(minutes=6, seconds=1.5)
    assert crs.apply_scheduled_change_request("web", scheduled.id) is not None
    failing = crs.add_changes(
        "web", PROD, [DraftChange("banner", "addDependency", {"feature": "checkout"})], actor=author
    )
    crs.submit_change_request("web", failing.id, actor=author)
    crs.approve_change_request("web", failing.id, actor=reviewer)
    crs.schedule_change_request(
        "web", failing.id, clock.now + dt.timedelta(minutes=1), actor=reviewer
    )
    service.flags.create_flag("web", "root")
    service.dependencies.set_dependencies("web", "checkout", [Dependency("root")])
    clock.advance(minutes=2)
    assert crs.apply_scheduled_change_request("web", failing.id) is None
    assert crs.get_change_request("web", failing.id).request.state is ChangeRequestState.SCHEDULED
    crs.set_change_request_config("web", PROD, enabled=False, required_approvals=1)


def _release_plans(service: Service, clock: Clock) -> None:
    templates = service.release_templates
    steps = [
        Milestone(
            "",
            name,
            order,
            (
                Strategy(
                    "flexibleRollout",
                    {"rollout": str(p), "stickiness": "default", "groupId": "banner"},
                ),
            ),
            transition_minutes=10,
        )
        for order, (name, p) in enumerate((("10%", 10), ("50%", 50), ("100%", 100)))
    ]
    template = templates.create_release_plan_template("Gradual", "10, 50, 100", steps)
    templates.update_release_plan_template(template.id, "Gradual rollout", None, steps)
    spare = templates.create_release_plan_template("Spare", None, steps[:1])
    templates.archive_release_plan_template(spare.id)
    templates.delete_release_plan_template(spare.id)
    plans = service.release_plans
    plan = plans.add_release_plan("web", "banner", DEV, template.id)
    first, second, third = (m.id for m in plan.milestones)
    plans.start_release_plan_milestone("web", "banner", DEV, plan.id, first)
    plans.change_milestone_progression("web", "banner", DEV, first, second, 15)
    plans.delete_milestone_progression("web", "banner", DEV, first)
    plans.change_milestone_progression("web", "banner", DEV, first, second, 10)
    clock.advance(minutes=10, seconds=2.25)
    assert plans.advance_release_plan(plan.id) is not None  # 10% → 50% on its own
    guard = checked_safeguard(
        "errors", "sum", ">", 0.02, 5, action="rollbackPlan", ratio_of="requests"
    )
    plans.put_release_plan_safeguard("web", "banner", DEV, plan.id, guard)
    service.impact_metrics.record_sdk_impact_metrics(
        DEV,
        [
            ImpactMetric(
                "requests", "counter", (ImpactSample({"featureName": "banner"}, value=100),)
            ),
            ImpactMetric("errors", "counter", (ImpactSample({"featureName": "banner"}, value=50),)),
        ],
    )
    assert plans.advance_release_plan(plan.id) is not None  # tripped: rolled back to 10%
    now = service.release_plans.release_plans_of("web", "banner", DEV)[0]
    plans.resume_milestone_progressions("web", "banner", DEV, plan.id)
    (kept,) = now.safeguards
    plans.delete_release_plan_safeguard("web", "banner", DEV, plan.id, kept.id)
    guard = checked_safeguard("errors", "sum", ">", 0.02, 5, ratio_of="requests")
    plans.put_release_plan_safeguard("web", "banner", DEV, plan.id, guard)
    assert plans.advance_release_plan(plan.id) is not None  # tripped: paused
    plans.remove_release_plan("web", "banner", DEV, plan.id)
    assert third


def _moving_in(service: Service) -> None:
    service.projects.create_project("shop", "Shop")
    export = read_export(json.loads(json.dumps(small_export()).replace("checkout", "imp")))
    service.segments.create_segment("beta-users", [])
    service.importing.import_export("shop", PROD, export)
    service.importing.copy_instance(
        InstanceCopy(
            projects=(Project("copied", "Copied", None, START),),
            environments=(Environment("copied-env", "test", 50),),
            strategy_definitions=(StrategyDefinition("fromThere"),),
            tag_types=(TagType("copied-tag", None),),
            segments=(
                Segment(90, "copied-segment", ()),
                Segment(
                    91,
                    "beta",
                    (Constraint("userId", "STR_STARTS_WITH", ("beta-",)),),
                    "beta testers",
                ),
            ),
        ),
        overwrite=True,
    )


def _upkeep(service: Service, clock: Clock) -> None:
    service.flags.create_flag("web", "ancient", type="experiment")
    clock.advance(days=60)
    service.feature_types.announce_potentially_stale()
    service.feature_types.remind_potentially_stale(dt.timedelta(days=1))  # sets the due time
    clock.advance(days=1)
    service.feature_types.remind_potentially_stale(dt.timedelta(days=1))


def _renaming(service: Service) -> None:
    service.tokens.create_token("sdk-prod", "client", projects=["web"], environment=PROD)
    service.environments.rename_environment(PROD, "prod")


_ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


class _Names:
    """Random ids named ``<id n>`` by their first appearance."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def __call__(self, text: str | None) -> str | None:
        if text is None:
            return None
        return _ULID.sub(lambda found: self._names.setdefault(found.group(0), self._next()), text)

    def _next(self) -> str:
        return f"<id {len(self._names) + 1}>"


def pinned(events: list[Event]) -> list[dict[str, Any]]:
    """Each event, oldest first, as what is pinned: its type, who, where, and its data and
    pre-data as JSON text (key order included), random ids named by first appearance."""
    named = _Names()
    return [
        {
            "type": event.type,
            "createdBy": event.created_by,
            "featureName": event.feature_name,
            "project": event.project,
            "environment": event.environment,
            "data": named(_text(event.data)),
            "preData": named(_text(event.pre_data)),
        }
        for event in sorted(events, key=lambda e: e.id)
    ]


def name_ids(
    rows: list[tuple[str | None, str | None]],
) -> list[tuple[str | None, str | None]]:
    """Stored (data, pre-data) texts, oldest first, with random ids named as `pinned` does."""
    named = _Names()
    return [(named(data), named(pre_data)) for data, pre_data in rows]


def _text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


if __name__ == "__main__":
    # Writes the pinned file again: only for a change of event data made on purpose (a new
    # event type walked above), never to make `test_event_data_json` pass.
    import pathlib

    from flagcore.memory import MemoryStore

    store = MemoryStore()
    walk(store)
    with store.transaction(write=False) as tx:
        rows = pinned(list(tx.list_events(limit=10_000)))
    target = pathlib.Path(__file__).with_name("event_data_pinned.json")
    target.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"{len(rows)} events of {len({r['type'] for r in rows})} types -> {target}")
