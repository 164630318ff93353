"""Signal endpoints, signals and project action sets as Unleash answers: typed values, each
with its row of keys (`flagcore.wire.answer_table`), so writer and schema are one table.

An action set's filters are engine constraints keyed by the payload path they read; here
they travel as Unleash's ``match.payload``: ``{<path>: {operator, values, ...}}``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.entities import (
    Action,
    ActionExecution,
    ActionKind,
    ActionOutcome,
    ActionSet,
    Signal,
    SignalEndpoint,
    SignalEndpointToken,
)
from flagcore.model import Constraint
from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.converter import INT32_MAX

__all__ = [
    "SIGNAL_ENDPOINT_SOURCE",
    "ActionCatalogueEntry",
    "ActionOutcomeAnswer",
    "ActionParameterAnswer",
    "ActionSetAnswer",
    "ActionSetEventAnswer",
    "ActionSetEventsAnswer",
    "ActionSetRunAnswer",
    "ActionSetsAnswer",
    "ActionSignalAnswer",
    "CreatedId",
    "SignalAnswer",
    "SignalEndpointAnswer",
    "SignalEndpointsAnswer",
    "SignalTokenAnswer",
    "SignalTokenWithSecret",
    "SignalTokensAnswer",
    "SignalsAnswer",
]

# The one source an action set listens to, as Unleash names it.
SIGNAL_ENDPOINT_SOURCE = "signal-endpoint"
_SOURCE = {"const": SIGNAL_ENDPOINT_SOURCE}
_CREATED_AT = AnswerField("created_at", "createdAt")


def _same(*attributes: str) -> tuple[AnswerField, ...]:
    return tuple(AnswerField(name, name) for name in attributes)


@answer(AnswerField("id", "id"))
@attrs.frozen
class CreatedId:
    """What an accepted signal answers: its id."""

    id: int


@answer(*_same("id", "name"), _CREATED_AT)
@attrs.frozen
class SignalTokenAnswer:
    id: int
    name: str
    created_at: dt.datetime

    @classmethod
    def of(cls, value: SignalEndpointToken) -> SignalTokenAnswer:
        return cls(value.id, value.name, value.created_at)


@answer(*_same("id", "name"), _CREATED_AT, AnswerField("token", "token"))
@attrs.frozen
class SignalTokenWithSecret(SignalTokenAnswer):
    """A signal token as created: with its secret, shown this once."""

    token: str


@answer(
    *_same("id", "name", "description", "enabled"),
    _CREATED_AT,
    AnswerField("tokens", "tokens", omitted_when_none=True),
)
@attrs.frozen
class SignalEndpointAnswer:
    """An endpoint; ``tokens`` where the answer lists them (one endpoint, a new one)."""

    id: int
    name: str
    description: str | None
    enabled: bool
    created_at: dt.datetime
    tokens: tuple[SignalTokenAnswer, ...] | None = None

    @classmethod
    def of(
        cls, value: SignalEndpoint, tokens: list[SignalEndpointToken] | None = None
    ) -> SignalEndpointAnswer:
        listed = None if tokens is None else tuple(map(SignalTokenAnswer.of, tokens))
        return cls(value.id, value.name, value.description, value.enabled, value.created_at, listed)


@answer(
    AnswerField("id", "id"),
    AnswerField("endpoint_id", "signalEndpointId"),
    AnswerField("token_id", "tokenId"),
    AnswerField("payload", "payload"),
    _CREATED_AT,
)
@attrs.frozen
class SignalAnswer:
    id: int
    endpoint_id: int
    token_id: int | None
    payload: Any
    created_at: dt.datetime

    @classmethod
    def of(cls, value: Signal) -> SignalAnswer:
        return cls(value.id, value.endpoint_id, value.token_id, value.payload, value.created_at)


@answer(AnswerField("signal_endpoints", "signalEndpoints"))
@attrs.frozen
class SignalEndpointsAnswer:
    signal_endpoints: tuple[SignalEndpointAnswer, ...]


@answer(AnswerField("tokens", "tokens"))
@attrs.frozen
class SignalTokensAnswer:
    tokens: tuple[SignalTokenAnswer, ...]


@answer(AnswerField("signals", "signals"))
@attrs.frozen
class SignalsAnswer:
    signals: tuple[SignalAnswer, ...]


# --- action sets ---
@answer(
    *_same("operator", "values", "inverted"),
    AnswerField("case_insensitive", "caseInsensitive"),
    AnswerField("value", "value", omitted_when_none=True),
)
@attrs.frozen
class PayloadFilterAnswer:
    operator: str
    values: tuple[str, ...]
    inverted: bool
    case_insensitive: bool
    value: str | None

    @classmethod
    def of(cls, value: Constraint) -> PayloadFilterAnswer:
        return cls(
            value.operator, value.values, value.inverted, value.case_insensitive, value.value
        )


@answer(
    AnswerField("project", "project"),
    AnswerField("feature_name", "featureName"),
    AnswerField("environment", "environment", omitted_when_none=True),
)
@attrs.frozen
class ExecutionParamsAnswer:
    project: str
    feature_name: str
    environment: str | None


@answer(
    AnswerField("source", "source", schema=_SOURCE),
    AnswerField("source_id", "sourceId"),
    AnswerField("payload", "payload"),
)
@attrs.frozen
class MatchAnswer:
    source: str
    source_id: int
    payload: Mapping[str, PayloadFilterAnswer]


_ACTION_ROWS = (
    AnswerField("action", "action"),
    AnswerField("sort_order", "sortOrder", schema={"minimum": 1, "maximum": INT32_MAX}),
    AnswerField("execution_params", "executionParams"),
)


def _params(action: Action, action_set: ActionSet) -> ExecutionParamsAnswer:
    return ExecutionParamsAnswer(action_set.project, action.flag, action.environment)


@answer(*_ACTION_ROWS)
@attrs.frozen
class ActionAnswer:
    action: ActionKind
    sort_order: int
    execution_params: ExecutionParamsAnswer

    @classmethod
    def of(cls, value: Action, action_set: ActionSet) -> ActionAnswer:
        return cls(value.kind, value.sort_order, _params(value, action_set))


@answer(*_ACTION_ROWS, *_same("state", "details"))
@attrs.frozen
class ActionOutcomeAnswer(ActionAnswer):
    """An action as it ran: how it went, and why when it did not."""

    state: str
    details: str | None

    @classmethod
    def of_outcome(cls, value: ActionOutcome, action_set: ActionSet) -> ActionOutcomeAnswer:
        action = value.action
        return cls(
            action.kind,
            action.sort_order,
            _params(action, action_set),
            value.state.value,
            value.details,
        )


def _action_set_rows() -> tuple[AnswerField, ...]:
    return (
        *_same("id", "name", "description", "enabled", "project"),
        AnswerField("actor_id", "actorId"),
        AnswerField("match", "match"),
        AnswerField("actions", "actions"),
        _CREATED_AT,
    )


def _action_set_fields(value: ActionSet) -> dict[str, Any]:
    return {
        "id": value.id,
        "name": value.name,
        "description": value.description,
        "enabled": value.enabled,
        "project": value.project,
        "actor_id": value.actor_id,
        "match": MatchAnswer(
            SIGNAL_ENDPOINT_SOURCE,
            value.source,
            {c.context_name: PayloadFilterAnswer.of(c) for c in value.filters},
        ),
        "created_at": value.created_at,
    }


@answer(*_action_set_rows())
@attrs.frozen
class ActionSetAnswer:
    """Unleash's ``ActionSetSchema``."""

    id: int
    name: str
    description: str | None
    enabled: bool
    project: str
    actor_id: int | None
    match: MatchAnswer
    actions: tuple[ActionAnswer, ...]
    created_at: dt.datetime

    @classmethod
    def of(cls, value: ActionSet) -> ActionSetAnswer:
        actions = tuple(ActionAnswer.of(a, value) for a in value.actions)
        return cls(**_action_set_fields(value), actions=actions)


@answer(*_action_set_rows())
@attrs.frozen
class ActionSetRunAnswer:
    """An action set as it ran, each action with its outcome."""

    id: int
    name: str
    description: str | None
    enabled: bool
    project: str
    actor_id: int | None
    match: MatchAnswer
    actions: tuple[ActionOutcomeAnswer, ...]
    created_at: dt.datetime


@answer(
    AnswerField("id", "id"),
    AnswerField("source", "source", schema=_SOURCE),
    AnswerField("source_id", "sourceId"),
    AnswerField("token_id", "createdBySourceTokenId"),
    AnswerField("payload", "payload"),
    _CREATED_AT,
)
@attrs.frozen
class ActionSignalAnswer:
    """The signal that set a run off, as Unleash's ``SignalSchema`` shows it."""

    id: int
    source: str
    source_id: int
    token_id: int | None
    payload: Any
    created_at: dt.datetime


@answer(
    AnswerField("id", "id"),
    AnswerField("action_set_id", "actionSetId"),
    AnswerField("signal_id", "signalId"),
    _CREATED_AT,
    AnswerField("state", "state"),
    AnswerField("signal", "signal"),
    AnswerField("action_set", "actionSet"),
)
@attrs.frozen
class ActionSetEventAnswer:
    """Unleash's ``ActionSetEventSchema``: the run, its signal, the set with each outcome."""

    id: int
    action_set_id: int
    signal_id: int
    created_at: dt.datetime
    state: str
    signal: ActionSignalAnswer
    action_set: ActionSetRunAnswer

    @classmethod
    def of(cls, value: ActionExecution) -> ActionSetEventAnswer:
        ran = value.action_set
        signal = value.signal
        outcomes = tuple(ActionOutcomeAnswer.of_outcome(o, ran) for o in value.outcomes)
        return cls(
            value.id,
            value.action_set_id,
            value.signal_id,
            value.created_at,
            value.state.value,
            ActionSignalAnswer(
                signal.id,
                SIGNAL_ENDPOINT_SOURCE,
                signal.endpoint_id,
                signal.token_id,
                signal.payload,
                signal.created_at,
            ),
            ActionSetRunAnswer(**_action_set_fields(ran), actions=outcomes),
        )


@answer(AnswerField("actions", "actions"))
@attrs.frozen
class ActionSetsAnswer:
    actions: tuple[ActionSetAnswer, ...]


@answer(AnswerField("action_set_events", "actionSetEvents"))
@attrs.frozen
class ActionSetEventsAnswer:
    action_set_events: tuple[ActionSetEventAnswer, ...]


@answer(*_same("name", "label", "type"), AnswerField("options", "options", omitted_when_none=True))
@attrs.frozen
class ActionParameterAnswer:
    name: str
    label: str
    type: str
    options: tuple[str, ...] | None = None


@answer(*_same("label", "description", "category", "permissions", "parameters"))
@attrs.frozen
class ActionCatalogueEntry:
    """One action an action set may run, as Unleash's action configuration lists it."""

    label: str
    description: str
    category: str
    permissions: tuple[str, ...]
    parameters: tuple[ActionParameterAnswer, ...]
