"""Managing environments over every store: deleting one with every flag's rules in it,
cloning one, renaming one with everything that names it, and copying a flag's
strategies, each in one unit of work."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flagcore.change_requests import ChangeRequestSettings
from flagcore.entities import Action, ActionKind, FlagMetrics, SampledContext
from flagcore.errors import Conflict, Forbidden, InvalidInput, NameConflict, NotFound
from flagcore.model import Constraint, Strategy, Variant
from flagcore.people import RootRole
from flagcore.permissions import PREDEFINED_ROLES, Grant, Permission, RoleType
from flagcore.ports import Store
from flagcore.principals import Principal
from flagcore.release_plans import ImpactPoint, ImpactSeries, Milestone
from flagcore.service import DraftChange, IntegrationSpec, NewRole, Service
from flagcore.tables import CHANGE_REQUEST_SETTINGS, CONTEXT_SAMPLES, IMPACT_POINTS, IMPACT_SERIES
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


_HOUR = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)


def _everything_in(service: Service, environment: str) -> dict[str, Any]:
    """A flag with a strategy (and segment), variants and a release plan there, a token,
    an action set step, a role's grant, change requests on with a draft, an integration
    filtered on it, an uploaded context sample, SDK usage and an impact metric."""
    strategy = _flag_with_rules(service, environment)
    service.variants.set_flag_variants("default", "f", environment, [Variant("a", 1000)])
    steps = [Milestone("", "all", 0, (Strategy("default"),))]
    template = service.release_templates.create_release_plan_template("steps", None, steps)
    plan = service.release_plans.add_release_plan("default", "f", environment, template.id)
    token = service.tokens.create_token("qa-sdk", "client", environment=environment)
    endpoint = service.signals.create_signal_endpoint("alerts")
    off = Action(ActionKind.TOGGLE_FEATURE_OFF, "f", environment=environment)
    service.actions.create_action_set("switch off", "default", endpoint.id, [off])
    grants = (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, environment),)
    role = service.roles.create_role(NewRole("switcher", RoleType.CUSTOM, "", grants))
    hook = IntegrationSpec(
        "webhook",
        False,
        {"url": "http://127.0.0.1:9/hook"},
        ("feature-created",),
        environments=(environment, "production"),
    )
    integration = service.integrations.create_integration(hook)
    service.previews.replace_context_sample(environment, [{"userId": "from-qa"}])
    service.change_requests.set_change_request_config(
        "default", environment, enabled=True, required_approvals=2
    )
    draft = service.change_requests.add_changes(
        "default", environment, [DraftChange("f", "updateEnabled", {"enabled": False})]
    )
    with service.context.unit() as tx:
        tx.add_flag_metrics([FlagMetrics("f", "web", environment, _HOUR, 3, 1, {})])
        tx.save_record(IMPACT_SERIES, ImpactSeries(environment, "f", "errors", "counter", _HOUR))
        tx.save_record(IMPACT_POINTS, ImpactPoint(environment, "f", "errors", _HOUR, 2.0))
    return {
        "strategy": strategy,
        "plan": plan.id,
        "token": token.token.id,
        "role": role.id,
        "integration": integration.id,
        "draft": draft.id,
    }


def test_a_rename_moves_everything_that_names_the_environment_and_the_token_serves_it(
    service: Service,
) -> None:
    service.environments.create_environment("qa", "test")
    made = _everything_in(service, "qa")
    served = service.client.client_features("qa")
    # Rows an environment named "staging" left behind when it was deleted: replaced.
    with service.context.unit() as tx:
        old = ChangeRequestSettings("default", "staging", False, 5)
        tx.save_record(CHANGE_REQUEST_SETTINGS, old)
        tx.save_record(CONTEXT_SAMPLES, SampledContext("staging", "upload", 0, "{}", _HOUR))
        tx.save_record(IMPACT_POINTS, ImpactPoint("staging", "f", "old", _HOUR, 9.0))

    renamed = service.environments.rename_environment("qa", "staging")

    assert (renamed.name, renamed.type) == ("staging", "test")
    assert [e.name for e in service.environments.list_environments()] == [
        "development",
        "production",
        "staging",
    ]
    with pytest.raises(NotFound):
        service.environments.get_environment("qa")
    assert service.client.client_features("staging") == served
    (state,) = (
        s
        for s in service.flags.get_flag("default", "f").environments
        if s.environment.name == "staging"
    )
    assert state.enabled
    assert [v.name for v in state.variants] == ["a"]
    assert made["strategy"] in state.strategies  # the same id and segments
    (token,) = (t for t in service.tokens.list_tokens() if t.id == made["token"])
    assert token.environment == "staging"
    (action_set,) = service.actions.list_action_sets()
    assert [a.environment for a in action_set.actions] == ["staging"]
    (role,) = (r for r in service.roles.list_roles() if r.id == made["role"])
    assert role.grants == (Grant(Permission.UPDATE_FEATURE_ENVIRONMENT, "staging"),)
    (integration,) = service.integrations.list_integrations()
    assert integration.environments == ("staging", "production")
    config = {c.environment: c for c in service.change_requests.change_request_config("default")}
    assert (config["staging"].enabled, config["staging"].required_approvals) == (True, 2)
    draft = service.change_requests.get_change_request("default", made["draft"])
    assert draft.request.environment == "staging"
    (plan,) = service.release_plans.release_plans_of("default", "f", "staging")
    assert plan.id == made["plan"]
    sample = service.previews.sampled_contexts("staging")
    assert [s.context for s in sample] == ['{"userId":"from-qa"}']
    with service.context.read() as tx:
        assert [(m.environment, m.yes) for m in tx.list_flag_metrics("f")] == [("staging", 3)]
        points = tx.list_records(IMPACT_POINTS)
        series = tx.list_records(IMPACT_SERIES)
    assert [(p.environment, p.name) for p in points] == [("staging", "errors")]
    assert [(s.environment, s.name) for s in series] == [("staging", "errors")]
    event = service.events.list_events(limit=1)[0]
    assert (event.type, event.environment) == ("environment-renamed", "staging")
    assert (event.data or {})["name"] == "staging"
    assert event.pre_data == {"name": "qa"}


def test_a_refused_rename_changes_nothing(service: Service) -> None:
    service.environments.create_environment("qa", "test")
    _flag_with_rules(service, "qa")
    before = (service.environments.list_environments(), service.flags.get_flag("default", "f"))
    refusals: list[tuple[str, str, type[Exception]]] = [
        ("qa", "production", NameConflict),
        ("qa", "qa", InvalidInput),
        ("qa", "no spaces", InvalidInput),
        ("nowhere", "x", NotFound),
        ("development", "dev", Conflict),  # what requests naming none are served
    ]
    for name, new_name, error in refusals:
        with pytest.raises(error):
            service.environments.rename_environment(name, new_name)
    viewer = Principal.of_roles("user:9:vi", PREDEFINED_ROLES[RootRole.VIEWER.role_id])
    with pytest.raises(Forbidden):
        service.environments.rename_environment("qa", "staging", actor=viewer)
    after = (service.environments.list_environments(), service.flags.get_flag("default", "f"))
    assert after == before
