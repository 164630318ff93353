"""Integrations (Unleash's addons): made, changed and deleted with Unleash's rules.

An integration is checked against its provider's definition
(`flagcore.integration_providers`): known provider, known parameters, required ones
present, event types the provider is sent. Secret parameters are written, never read
back: answers show `MASKED`, and an update that sends `MASKED` keeps the stored value.
Whether a URL's host is a public address needs DNS, so the server checks it
(`flagcore_http.integration_targets`) before calling here, and again before each delivery.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import urllib.parse
from collections.abc import Mapping, Sequence

import attrs

from flagcore.entities import Integration, IntegrationCursor
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.integration_providers import MASKED, PROVIDERS, ProviderDefinition
from flagcore.ports import EventLog, KeptWrite, Records
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import INTEGRATION_CURSORS, INTEGRATIONS
from flagcore.validation import check_name, check_text
from flagcore.wire.event_data import IntegrationData

__all__ = [
    "MAX_URL_LENGTH",
    "RESERVED_HEADERS",
    "IntegrationSpec",
    "Integrations",
    "checked_spec",
    "custom_headers",
    "new_signing_secret",
]

MAX_URL_LENGTH = 2_000
WILDCARD = "*"  # Unleash's "every project" / "every environment" in a filter

RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)
"""Headers a delivery sets itself: a custom header may not replace them."""

# Parameters sent as a header's value (Content-Type, Authorization, DD-API-KEY, Api-Key).
_HEADER_PARAMETERS = frozenset({"contentType", "authorization", "apiKey", "licenseKey"})
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")


@attrs.frozen
class IntegrationSpec:
    """What a person gives for an integration (Unleash's ``addonCreateUpdateSchema``)."""

    provider: str
    enabled: bool
    parameters: Mapping[str, str]
    events: tuple[str, ...]
    description: str | None = None
    projects: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()


def new_signing_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def custom_headers(text: str | None) -> dict[str, str]:
    """The ``customHeaders`` parameter read (a JSON object of strings), or `InvalidInput`
    at ``$.parameters.customHeaders``. Unleash logs a bad one and sends without it; here it
    is refused when written, so a delivery never goes without the headers asked for."""
    path = "$.parameters.customHeaders"
    if text is None or text.strip() == "":
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()
    ):
        raise InvalidInput(
            "customHeaders must be a JSON object whose values are strings",
            [ErrorDetail('a JSON object of strings, such as {"X-Team": "flags"}', path)],
        )
    for name, value in parsed.items():
        if not _HEADER_NAME.fullmatch(name) or name.lower() in RESERVED_HEADERS:
            raise InvalidInput(
                f"customHeaders cannot set the header {name[:100]!r}",
                [ErrorDetail("a header name of your own (not Host, webhook-*, ...)", path)],
            )
        if any(ch in value for ch in "\r\n\0") or len(value) > 4_000:
            raise InvalidInput(
                f"the value of customHeaders {name!r} is not a header value",
                [ErrorDetail("one line of at most 4000 characters", path)],
            )
    return dict(parsed)


def _check_url(value: str) -> None:
    path = "$.parameters.url"
    parsed = urllib.parse.urlsplit(value) if len(value) <= MAX_URL_LENGTH else None
    try:
        port_ok = parsed is not None and (parsed.port is None or parsed.port > 0)
    except ValueError:
        port_ok = False
    if (
        parsed is None
        or parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or not port_ok
        or parsed.username is not None
        or any(ch.isspace() for ch in value)
    ):
        raise InvalidInput(
            "the URL must be an http or https URL with a host (and no user or password)",
            [ErrorDetail(f"an http(s) URL of at most {MAX_URL_LENGTH} characters", path)],
        )


def _checked_parameters(
    definition: ProviderDefinition,
    given: Mapping[str, str],
    stored: Mapping[str, str],
) -> dict[str, str]:
    known = {p.name: p for p in definition.parameters}
    kept: dict[str, str] = {}
    for name, value in given.items():
        path = f"$.parameters.{name}"
        if name not in known:
            raise InvalidInput(
                f"provider {definition.name} has no parameter {name[:100]!r}",
                [ErrorDetail(f"one of {', '.join(known)}", path)],
            )
        check_text(value, path, optional=False)
        if value == MASKED and known[name].sensitive:
            if name not in stored:
                raise InvalidInput(
                    f"{name} is {MASKED}, but no value is stored to keep",
                    [ErrorDetail("the secret itself", path)],
                )
            value = stored[name]
        if value != "":
            kept[name] = value
    missing = [p.name for p in definition.parameters if p.required and p.name not in kept]
    if missing:
        raise InvalidInput(
            f"Missing required parameters: {','.join(missing)}",
            [ErrorDetail("required", f"$.parameters.{name}") for name in missing],
        )
    for name in _HEADER_PARAMETERS & kept.keys():
        if any(ch in kept[name] for ch in "\r\n\0") or len(kept[name]) > 4_000:
            raise InvalidInput(
                f"{name} is sent as a header: one line of at most 4000 characters",
                [ErrorDetail("one line of at most 4000 characters", f"$.parameters.{name}")],
            )
    if "url" in kept:
        _check_url(kept["url"])
    custom_headers(kept.get("customHeaders"))
    return kept


def _checked_names(values: Sequence[str], path: str, what: str) -> tuple[str, ...]:
    if len(set(values)) != len(values):
        raise InvalidInput(f"{path} names something twice", [ErrorDetail("no repeats", path)])
    for index, value in enumerate(values):
        if value != WILDCARD:
            check_name(value, what, f"{path}[{index}]")
    return tuple(values)


def checked_spec(spec: IntegrationSpec, stored: Integration | None = None) -> IntegrationSpec:
    """``spec`` with masked secrets replaced by the stored ones, once every rule holds."""
    definition = PROVIDERS.get(spec.provider)
    if definition is None:
        raise InvalidInput(
            f"Unknown addon provider {spec.provider[:100]}",
            [ErrorDetail(f"one of {', '.join(PROVIDERS)}", "$.provider")],
        )
    if stored is not None and stored.provider != spec.provider:
        raise InvalidInput(
            "an integration's provider cannot change; make a new integration",
            [ErrorDetail(f"must be {stored.provider}", "$.provider")],
        )
    check_text(spec.description, "$.description")
    parameters = _checked_parameters(
        definition, spec.parameters, stored.parameters if stored else {}
    )
    for index, event in enumerate(spec.events):
        if event not in definition.events:
            raise InvalidInput(
                f"{definition.name} is not sent {event[:100]!r} events",
                [ErrorDetail("an event type the provider lists", f"$.events[{index}]")],
            )
    if len(set(spec.events)) != len(spec.events):
        raise InvalidInput("an event type is listed twice", [ErrorDetail("no repeats", "$.events")])
    return attrs.evolve(
        spec,
        parameters=parameters,
        projects=_checked_names(spec.projects, "$.projects", "project"),
        environments=_checked_names(spec.environments, "$.environments", "environment"),
    )


def _newest_event_id(tx: EventLog) -> int:
    newest = tx.list_events(limit=1)
    return newest[0].id if newest else 0


def _start_cursor(tx: KeptWrite, integration_id: int) -> None:
    """Deliveries start after the newest event: nothing from before is owed."""
    tx.save_record(INTEGRATION_CURSORS, IntegrationCursor(integration_id, _newest_event_id(tx)))


class Integrations:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_integrations(self) -> list[Integration]:
        with self._context.read() as tx:
            return list(tx.list_records(INTEGRATIONS))

    def get_integration(self, integration_id: int) -> Integration:
        with self._context.read() as tx:
            return _required(tx, integration_id)

    def check_new_integration(
        self, spec: IntegrationSpec, *, actor: Actor = SYSTEM
    ) -> IntegrationSpec:
        """``spec`` checked for `create_integration` (what the server asks before it looks
        the URL's host up: a person who may not create integrations is refused first)."""
        authorize(actor, "check_new_integration")
        return checked_spec(spec)

    def check_integration_change(
        self, integration_id: int, spec: IntegrationSpec, *, actor: Actor = SYSTEM
    ) -> IntegrationSpec:
        """``spec`` checked for `update_integration`, masked secrets replaced by the stored
        ones (so the server checks the URL that will be used)."""
        authorize(actor, "check_integration_change")
        with self._context.read() as tx:
            return checked_spec(spec, _required(tx, integration_id))

    def create_integration(self, spec: IntegrationSpec, *, actor: Actor = SYSTEM) -> Integration:
        """A new integration with a fresh signing secret (its one showing is the answer)."""
        by = authorize(actor, "create_integration")
        spec = checked_spec(spec)
        with self._context.unit() as tx:
            made = tx.create_record(
                INTEGRATIONS,
                Integration(
                    0,
                    spec.provider,
                    spec.enabled,
                    spec.description,
                    spec.parameters,
                    spec.events,
                    spec.projects,
                    spec.environments,
                    new_signing_secret(),
                    self._context.clock(),
                ),
            )
            self._context.record_event(
                tx, "addon-config-created", by, data=IntegrationData.of(made)
            )
            _start_cursor(tx, made.id)
            return made

    def update_integration(
        self, integration_id: int, spec: IntegrationSpec, *, actor: Actor = SYSTEM
    ) -> Integration:
        """Replace what ``spec`` gives (secrets sent as `MASKED` kept). Turned on again,
        an integration starts after the newest event: what happened while it was off is
        not sent late."""
        by = authorize(actor, "update_integration")
        with self._context.unit() as tx:
            stored = _required(tx, integration_id)
            checked = checked_spec(spec, stored)
            updated = attrs.evolve(
                stored,
                enabled=checked.enabled,
                description=checked.description,
                parameters=checked.parameters,
                events=checked.events,
                projects=checked.projects,
                environments=checked.environments,
            )
            tx.save_record(INTEGRATIONS, updated)
            self._context.record_event(
                tx,
                "addon-config-updated",
                by,
                data=IntegrationData.of(updated),
                pre_data=IntegrationData.of(stored),
            )
            if updated.enabled and not stored.enabled:
                _start_cursor(tx, integration_id)
            return updated

    def delete_integration(self, integration_id: int, *, actor: Actor = SYSTEM) -> None:
        """Delete an integration with its cursor and delivery log (absent: nothing)."""
        by = authorize(actor, "delete_integration")
        with self._context.unit() as tx:
            stored = tx.get_record(INTEGRATIONS, integration_id)
            if stored is None:
                return
            tx.delete_record(INTEGRATIONS, integration_id)
            self._context.record_event(
                tx, "addon-config-deleted", by, pre_data=IntegrationData.of(stored)
            )


def _required(tx: Records, integration_id: int) -> Integration:
    found = tx.get_record(INTEGRATIONS, integration_id)
    if found is None:
        raise NotFound(f"Could not find addon with id {integration_id}")
    return found
