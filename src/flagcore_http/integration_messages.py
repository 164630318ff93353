"""What each provider is sent for one event: the body, its content type, and headers.

Built as each service documents its incoming messages: Slack's Block Kit (an incoming
webhook), a Microsoft Teams message card, a Datadog event (``POST /api/v1/events``), a
New Relic custom event (the Event API, gzipped), and for the generic webhook the event
as the events API answers it, or a Mustache body template rendered as Unleash renders it.
Each message says who changed which flag, in which environment and project, with a
link to the flag in the UI.
"""

from __future__ import annotations

import gzip
import json
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pystache
from pystache.parser import ParsingError

from flagcore.entities import Event, Integration
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.service import REMINDER_EVENT, custom_headers
from flagcore.wire import EventsAnswer, write_answer

__all__ = ["Message", "check_template", "event_json", "event_markdown", "message_for"]

_SLACK_TEXT_MAX = 3_000  # Slack's bound on a section's text (and Unleash's cut)


@attrs.frozen
class Message:
    """One request's body and headers (``content_type`` apart: the webhook's is set)."""

    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = attrs.field(factory=dict)


def event_json(event: Event) -> dict[str, Any]:
    """The event as ``GET /api/admin/events`` answers it (Unleash's event shape)."""
    written: dict[str, Any] = write_answer(EventsAnswer(event.id, (event,)))["events"][0]
    return written


def flag_link(event: Event, ui_url: str) -> str:
    """The UI page of the event's flag, or the event log when it names none."""
    if event.feature_name:
        return f"{ui_url}/ui/flags/{urllib.parse.quote(event.feature_name, safe='')}"
    return f"{ui_url}/ui"


_REMINDER_NAMES_SHOWN = 20  # in a reminder's line; the webhook's JSON has up to 500


def _reminder_markdown(event: Event, data: Mapping[str, Any]) -> str:
    """flagcore's daily reminder: how many flags of the project are potentially stale, and
    the first of them by name."""
    names = [str(name) for name in data.get("features") or ()]
    given = data.get("count")
    count = given if isinstance(given, int) else len(names)
    shown = ", ".join(names[:_REMINDER_NAMES_SHOWN])
    more = count - min(len(names), _REMINDER_NAMES_SHOWN)
    if more > 0:
        shown += f" and {more} more"
    noun = "flag is" if count == 1 else "flags are"
    where = f"in project *{event.project}*"
    return f"*{event.created_by}*: {count} {noun} potentially stale {where}: {shown}"


def event_markdown(event: Event, ui_url: str) -> str:
    """One line: who did what to which flag, where (Unleash's markdown formatter's gist)."""
    if event.type == REMINDER_EVENT and isinstance(event.data, Mapping):
        return _reminder_markdown(event, event.data)
    what = event.type.replace("-", " ")
    if event.feature_name:
        what += f" [{event.feature_name}]({flag_link(event, ui_url)})"
    if event.environment:
        what += f" in the *{event.environment}* environment"
    if event.project:
        what += f" of project *{event.project}*"
    return f"*{event.created_by}*: {what}"


def check_template(template: str | None) -> None:
    """A body template that Mustache parses, or `InvalidInput` at its parameter."""
    if not template:
        return
    try:
        pystache.parse(template)
    except (ParsingError, ValueError) as error:
        raise InvalidInput(
            f"bodyTemplate is not a Mustache template: {str(error)[:200]}",
            [ErrorDetail("a Mustache template", "$.parameters.bodyTemplate")],
        ) from None


def _render(template: str, context: Mapping[str, Any]) -> str:
    rendered: str = pystache.Renderer(missing_tags="ignore").render(template, context)
    return rendered


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _webhook(integration: Integration, event: Event, ui_url: str) -> Message:
    parameters = integration.parameters
    template = parameters.get("bodyTemplate")
    written = event_json(event)
    if template and len(template) > 1:
        markdown = event_markdown(event, ui_url)
        body = _render(
            template,
            {
                "event": written,
                # Stringified twice, as Unleash does, so {{{eventJson}}} is JSON text.
                "eventJson": json.dumps(json.dumps(written)),
                "eventMarkdown": markdown,
            },
        ).encode()
    else:
        body = _json(written)
    headers = {}
    if parameters.get("authorization"):
        headers["Authorization"] = parameters["authorization"]
    return Message(body, parameters.get("contentType") or "application/json", headers)


def _slack(integration: Integration, event: Event, ui_url: str) -> Message:
    parameters = integration.parameters
    text = event_markdown(event, ui_url)
    if event.feature_name:  # Slack's mrkdwn links: <url|text>
        link = flag_link(event, ui_url)
        text = text.replace(f"[{event.feature_name}]({link})", f"<{link}|{event.feature_name}>")
    text = text[:_SLACK_TEXT_MAX]
    body = {
        "username": parameters.get("username") or "Unleash",
        "icon_emoji": parameters.get("emojiIcon") or ":unleash:",
        "channel": "#" + parameters["defaultChannel"].lstrip("#"),
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Open in flagcore"},
                        "url": flag_link(event, ui_url),
                        "style": "primary",
                        "action_id": "open-flag",
                    }
                ],
            },
        ],
    }
    return Message(_json(body))


def _teams(integration: Integration, event: Event, ui_url: str) -> Message:
    facts = [{"name": "User", "value": event.created_by}, {"name": "Action", "value": event.type}]
    if event.environment:
        facts.append({"name": "Environment", "value": event.environment})
    if event.project:
        facts.append({"name": "Project", "value": event.project})
    body = {
        "@type": "MessageCard",
        "@context": "https://schema.org/extensions",
        "themeColor": "0076D7",
        "summary": f"{event.type} by {event.created_by}",
        "sections": [
            {
                "activityTitle": event_markdown(event, ui_url),
                "activitySubtitle": "Unleash notification update",
                "facts": facts,
            }
        ],
        "potentialAction": [
            {
                "@type": "OpenUri",
                "name": "Go to feature",
                "targets": [{"os": "default", "uri": flag_link(event, ui_url)}],
            }
        ],
    }
    return Message(_json(body))


def _templated_text(integration: Integration, event: Event, ui_url: str) -> str:
    template = integration.parameters.get("bodyTemplate")
    if template and len(template) > 1:
        return _render(template, {"event": event_json(event)})
    return f"%%% \n {event_markdown(event, ui_url)} \n %%% "


def _datadog(integration: Integration, event: Event, ui_url: str) -> Message:
    parameters = integration.parameters
    tags = [f"event:{event.type}"]
    if event.project:
        tags.append(f"project:{event.project}")
    if event.environment:
        tags.append(f"environment:{event.environment}")
    if event.feature_name:
        tags.append(f"flag:{event.feature_name}")
    body: dict[str, Any] = {
        "title": "Unleash notification update",
        "text": _templated_text(integration, event, ui_url),
        "tags": tags,
    }
    if parameters.get("sourceTypeName"):
        body["source_type_name"] = parameters["sourceTypeName"]
    return Message(_json(body), headers={"DD-API-KEY": parameters["apiKey"]})


def _new_relic(integration: Integration, event: Event, ui_url: str) -> Message:
    data = event.data if isinstance(event.data, Mapping) else {}
    body = {
        # The event's data first: Unleash spreads it after, we keep our keys authoritative.
        **{k: v for k, v in data.items() if isinstance(v, (str, int, float, bool))},
        "eventType": "UnleashServiceEvent",
        "unleashEventType": event.type,
        "featureName": event.feature_name,
        "environment": event.environment,
        "project": event.project,
        "createdBy": event.created_by,
        "createdAt": int(event.created_at.timestamp() * 1000),
        "link": flag_link(event, ui_url),
        "text": _templated_text(integration, event, ui_url),
    }
    return Message(
        gzip.compress(_json(body)),
        headers={"Api-Key": integration.parameters["licenseKey"], "Content-Encoding": "gzip"},
    )


_BUILDERS: Mapping[str, Callable[[Integration, Event, str], Message]] = {
    "webhook": _webhook,
    "slack": _slack,
    "teams": _teams,
    "datadog": _datadog,
    "new-relic": _new_relic,
}


def message_for(integration: Integration, event: Event, ui_url: str) -> Message:
    """What ``integration`` is sent for ``event``, its custom headers added (they may
    not replace the signature's or the body's own)."""
    made = _BUILDERS[integration.provider](integration, event, ui_url)
    extra = custom_headers(integration.parameters.get("customHeaders"))
    return attrs.evolve(made, headers={**extra, **made.headers})
