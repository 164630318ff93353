"""The kinds of integration (Unleash's addon providers): what each is called, the
parameters it takes, which of them are secrets, and the events it may be sent.

Unleash 8.2's definitions (src/lib/addons/*-definition.ts), kept as data: the addons
answer lists them, the service checks an integration against them, and the server builds
each provider's message from the same names. Unleash's ``slack-app`` (the Slack Web API
with a bot token) is not offered: the incoming-webhook ``slack`` provider is.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = [
    "EVENT_TYPES",
    "MASKED",
    "PROVIDERS",
    "ProviderDefinition",
    "ProviderParameter",
]

MASKED = "*****"
"""What a secret parameter reads as in every answer (Unleash's ``MASKED_VALUE``); sent
back unchanged in an update, it keeps the stored value."""

# Unleash's webhook events (webhook-definition.ts), then the types flagcore writes that
# Unleash names differently or adds (segments, projects, integrations themselves).
EVENT_TYPES: tuple[str, ...] = (
    "feature-created",
    "feature-updated",
    "feature-archived",
    "feature-revived",
    "feature-stale-on",
    "feature-stale-off",
    "feature-completed",
    "feature-environment-enabled",
    "feature-environment-disabled",
    "feature-strategy-remove",
    "feature-strategy-update",
    "feature-strategy-add",
    "feature-metadata-updated",
    "feature-variants-updated",
    "feature-project-change",
    "feature-tagged",
    "feature-untagged",
    "change-request-created",
    "change-request-discarded",
    "change-added",
    "change-discarded",
    "change-request-approved",
    "change-request-approval-added",
    "change-request-cancelled",
    "change-request-sent-to-review",
    "change-request-applied",
    "change-request-scheduled",
    "change-request-scheduled-application-success",
    "change-request-scheduled-application-failure",
    "change-request-schedule-suspended",
    "feature-potentially-stale-on",
    "feature-potentially-stale-reminder",  # flagcore's daily one per project (issue 32)
    "release-plan-progressions-paused",
    "release-plan-progressions-resumed",
    "feature-deleted",
    "feature-environment-variants-updated",
    "feature-dependencies-updated",
    "feature-strategy-segments-updated",
    "feature-imported",
    "segment-created",
    "segment-updated",
    "segment-deleted",
    "project-created",
    "project-updated",
    "project-deleted",
    "addon-config-created",
    "addon-config-updated",
    "addon-config-deleted",
    "release-plan-added",
    "release-plan-removed",
    "release-plan-milestone-started",
)


@attrs.frozen
class ProviderParameter:
    """One parameter of a provider, as Unleash's ``addonParameterSchema`` describes it."""

    name: str
    display_name: str
    type: str  # "url", "text" or "textfield", as Unleash's UI draws it
    description: str
    required: bool
    sensitive: bool
    placeholder: str | None = None


@attrs.frozen
class ProviderDefinition:
    """A provider as Unleash's ``addonTypeSchema`` lists it."""

    name: str
    display_name: str
    description: str
    documentation_url: str
    how_to: str
    parameters: tuple[ProviderParameter, ...]
    events: tuple[str, ...] = EVENT_TYPES

    @property
    def sensitive(self) -> frozenset[str]:
        """The parameters that are secrets: written, never answered."""
        return frozenset(p.name for p in self.parameters if p.sensitive)


_HEADERS = ProviderParameter(
    "customHeaders",
    "Extra HTTP Headers",
    "textfield",
    "(Optional) Extra HTTP headers for each request: a JSON object of strings.",
    required=False,
    sensitive=True,
    placeholder='{\n"ISTIO_USER_KEY": "hunter2"\n}',
)


def _url(description: str, *, sensitive: bool, required: bool = True) -> ProviderParameter:
    return ProviderParameter(
        "url", "URL", "url", description, required=required, sensitive=sensitive
    )


def _template(description: str) -> ProviderParameter:
    return ProviderParameter(
        "bodyTemplate", "Body template", "textfield", description, required=False, sensitive=False
    )


_DEFINITIONS = (
    ProviderDefinition(
        "webhook",
        "Webhook",
        "A Webhook is a generic way to post messages from Unleash to third party services.",
        "https://docs.getunleash.io/integrate/webhook",
        "Posts each chosen event to a URL, signed with the Standard Webhooks scheme.",
        (
            _url("(Required) The URL each event is posted to.", sensitive=True),
            ProviderParameter(
                "contentType",
                "Content-Type",
                "text",
                '(Optional) The Content-Type header to use. Defaults to "application/json".',
                required=False,
                sensitive=False,
                placeholder="application/json",
            ),
            ProviderParameter(
                "authorization",
                "Authorization",
                "text",
                "(Optional) The Authorization header to use. Not used if left blank.",
                required=False,
                sensitive=True,
            ),
            _HEADERS,
            _template(
                "(Optional) A Mustache template for the body: {{event.type}}, "
                "{{event.createdBy}}, {{{eventJson}}} (the whole event), {{eventMarkdown}}."
            ),
        ),
    ),
    ProviderDefinition(
        "slack",
        "Slack",
        "Allows Unleash to post updates to Slack.",
        "https://docs.getunleash.io/integrate/slack",
        "Posts a Block Kit message to a Slack incoming webhook.",
        (
            _url("(Required) The Slack incoming webhook URL.", sensitive=True),
            ProviderParameter(
                "username",
                "Username",
                "text",
                "The username to use when posting messages to slack. Defaults to 'Unleash'.",
                required=False,
                sensitive=False,
                placeholder="Unleash",
            ),
            ProviderParameter(
                "emojiIcon",
                "Emoji Icon",
                "text",
                "The emoji_icon to use when posting messages to slack. Defaults to ':unleash:'.",
                required=False,
                sensitive=False,
                placeholder=":unleash:",
            ),
            ProviderParameter(
                "defaultChannel",
                "Channel",
                "text",
                "(Required) Default channel to post updates to if not specified in the slack tag.",
                required=True,
                sensitive=False,
            ),
            _HEADERS,
        ),
    ),
    ProviderDefinition(
        "teams",
        "Microsoft Teams",
        "Allows Unleash to post updates to Microsoft Teams.",
        "https://docs.getunleash.io/integrate/teams",
        "Posts a message card to a Microsoft Teams incoming webhook.",
        (_url("(Required) The Teams incoming webhook URL.", sensitive=True), _HEADERS),
    ),
    ProviderDefinition(
        "datadog",
        "Datadog",
        "Allows Unleash to post updates to Datadog.",
        "https://docs.getunleash.io/integrate/datadog",
        "Posts an event to Datadog's events API.",
        (
            _url(
                "Default URL: https://api.datadoghq.com/api/v1/events. Needs to be changed "
                "if you are not using the US1 site.",
                sensitive=False,
                required=False,
            ),
            ProviderParameter(
                "apiKey",
                "Datadog API key",
                "text",
                "(Required) API key to connect to Datadog",
                required=True,
                sensitive=True,
            ),
            ProviderParameter(
                "sourceTypeName",
                "Datadog Source Type Name",
                "text",
                "(Optional) source_type_name parameter to be included in Datadog events.",
                required=False,
                sensitive=False,
            ),
            _HEADERS,
            _template("(Optional) A Mustache template for the event's text."),
        ),
    ),
    ProviderDefinition(
        "new-relic",
        "New Relic",
        "Allows Unleash to post updates to New Relic Event API.",
        "https://docs.getunleash.io/integrate/new-relic",
        "Posts a custom event (UnleashServiceEvent) to New Relic's Event API.",
        (
            _url(
                "(Required) New Relic Event URL: https://insights-collector.newrelic.com/v1/"
                "accounts/{account_id}/events",
                sensitive=False,
            ),
            ProviderParameter(
                "licenseKey",
                "New Relic License Key",
                "text",
                "(Required) License key to connect to New Relic",
                required=True,
                sensitive=True,
            ),
            _HEADERS,
            _template("(Optional) A Mustache template for the event's text."),
        ),
    ),
)

PROVIDERS: Mapping[str, ProviderDefinition] = {d.name: d for d in _DEFINITIONS}
"""Every provider by name, in the order the addons answer lists them."""
