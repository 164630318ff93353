"""Integrations as Unleash's addons API answers them (``addonsSchema``, ``addonSchema``,
``addonTypeSchema``, ``addonParameterSchema``), and flagcore's delivery log.

Secret parameters are answered as `flagcore.integration_providers.MASKED`; the signing
secret only in the answer that made the integration.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

import attrs

from flagcore.entities import Integration, IntegrationDelivery
from flagcore.integration_providers import (
    MASKED,
    PROVIDERS,
    ProviderDefinition,
    ProviderParameter,
)
from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "AddonAnswer",
    "AddonProviderAnswer",
    "AddonProviderParameterAnswer",
    "AddonsAnswer",
    "DeliveriesAnswer",
    "DeliveryAnswer",
]


@answer(
    AnswerField("name", "name"),
    AnswerField("display_name", "displayName"),
    AnswerField("type", "type"),
    AnswerField("description", "description"),
    AnswerField("placeholder", "placeholder", omitted_when_none=True),
    AnswerField("required", "required"),
    AnswerField("sensitive", "sensitive"),
)
@attrs.frozen
class AddonProviderParameterAnswer:
    """One parameter a provider takes."""

    name: str
    display_name: str
    type: str
    description: str
    placeholder: str | None
    required: bool
    sensitive: bool

    @classmethod
    def of(cls, p: ProviderParameter) -> AddonProviderParameterAnswer:
        return cls(
            p.name, p.display_name, p.type, p.description, p.placeholder, p.required, p.sensitive
        )


@answer(
    AnswerField("name", "name"),
    AnswerField("display_name", "displayName"),
    AnswerField("description", "description"),
    AnswerField("documentation_url", "documentationUrl"),
    AnswerField("how_to", "howTo"),
    AnswerField("parameters", "parameters"),
    AnswerField("events", "events"),
)
@attrs.frozen
class AddonProviderAnswer:
    """A provider: what it is, its parameters, the event types it may be sent."""

    name: str
    display_name: str
    description: str
    documentation_url: str
    how_to: str
    parameters: tuple[AddonProviderParameterAnswer, ...]
    events: tuple[str, ...]

    @classmethod
    def of(cls, d: ProviderDefinition) -> AddonProviderAnswer:
        return cls(
            d.name,
            d.display_name,
            d.description,
            d.documentation_url,
            d.how_to,
            tuple(AddonProviderParameterAnswer.of(p) for p in d.parameters),
            d.events,
        )


def _masked(integration: Integration) -> dict[str, str]:
    definition = PROVIDERS.get(integration.provider)
    secret = definition.sensitive if definition else frozenset(integration.parameters)
    return {k: MASKED if k in secret else v for k, v in integration.parameters.items()}


@answer(
    AnswerField("id", "id"),
    AnswerField("provider", "provider"),
    AnswerField("description", "description"),
    AnswerField("enabled", "enabled"),
    AnswerField("parameters", "parameters"),
    AnswerField("events", "events"),
    AnswerField("projects", "projects"),
    AnswerField("environments", "environments"),
    AnswerField("created_at", "createdAt"),
    AnswerField("signing_secret", "signingSecret", omitted_when_none=True),
)
@attrs.frozen
class AddonAnswer:
    """An integration as Unleash answers an addon, secrets masked. ``signingSecret``
    (flagcore's: the Standard Webhooks secret receivers verify with) only when made."""

    id: int
    provider: str
    description: str | None
    enabled: bool
    parameters: Mapping[str, str]
    events: tuple[str, ...]
    projects: tuple[str, ...]
    environments: tuple[str, ...]
    created_at: dt.datetime
    signing_secret: str | None = None

    @classmethod
    def of(cls, i: Integration, *, show_secret: bool = False) -> AddonAnswer:
        return cls(
            i.id,
            i.provider,
            i.description,
            i.enabled,
            _masked(i),
            i.events,
            i.projects,
            i.environments,
            i.created_at,
            i.signing_secret if show_secret else None,
        )


@answer(AnswerField("addons", "addons"), AnswerField("providers", "providers"))
@attrs.frozen
class AddonsAnswer:
    """Unleash's ``GET /api/admin/addons``: the integrations and every provider."""

    addons: tuple[AddonAnswer, ...]
    providers: tuple[AddonProviderAnswer, ...]

    @classmethod
    def of(cls, integrations: Iterable[Integration]) -> AddonsAnswer:
        return cls(
            tuple(AddonAnswer.of(i) for i in integrations),
            tuple(AddonProviderAnswer.of(d) for d in PROVIDERS.values()),
        )


@answer(
    AnswerField("id", "id"),
    AnswerField("integration_id", "integrationId"),
    AnswerField("event_id", "eventId"),
    AnswerField("event_type", "eventType"),
    AnswerField("state", "state"),
    AnswerField("attempts", "attempts"),
    AnswerField("status_code", "statusCode"),
    AnswerField("detail", "detail"),
    AnswerField("created_at", "createdAt"),
)
@attrs.frozen
class DeliveryAnswer:
    """One entry of an integration's delivery log (flagcore's own shape)."""

    id: int
    integration_id: int
    event_id: int
    event_type: str
    state: str
    attempts: int
    status_code: int | None
    detail: str
    created_at: dt.datetime

    @classmethod
    def of(cls, d: IntegrationDelivery) -> DeliveryAnswer:
        return cls(
            d.id,
            d.integration_id,
            d.event_id,
            d.event_type,
            d.state,
            d.attempts,
            d.status_code,
            d.detail,
            d.created_at,
        )


@answer(AnswerField("deliveries", "deliveries"))
@attrs.frozen
class DeliveriesAnswer:
    """An integration's delivery log, newest first."""

    deliveries: tuple[DeliveryAnswer, ...]

    @classmethod
    def of(cls, deliveries: Iterable[IntegrationDelivery]) -> DeliveriesAnswer:
        return cls(tuple(DeliveryAnswer.of(d) for d in deliveries))
