"""One delivery attempt to an integration, and the checks before one is configured.

An attempt resolves and checks the target again (`flagcore_http.integration_targets`),
connects to the checked address only, signs the body with the Standard Webhooks scheme
(``webhook-id`` is the same for every attempt of one event, so a receiver can drop a
repeat), sends it with connect and read timeouts, never follows a redirect, and reads at
most `RESPONSE_READ_BYTES` of the answer. What it returns says whether to try again:
timeouts, connection errors, 408, 429 (with its ``Retry-After``) and 5xx are retried;
any other answer is final.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import logging
import math
import secrets
from collections.abc import Mapping

import aiohttp
import attrs
from aiohttp import web
from standardwebhooks.webhooks import Webhook

from flagcore.entities import Event, Integration, IntegrationDelivery
from flagcore.errors import FlagcoreError
from flagcore.service import ResendWork
from flagcore_http.calls import actor, call, service
from flagcore_http.config import ServerConfig
from flagcore_http.integration_messages import check_template, message_for
from flagcore_http.integration_targets import (
    DEFAULT_DATADOG_URL,
    AllowList,
    PinnedResolver,
    TargetRefused,
    resolve_target,
)
from flagcore_http.keys import CONFIG

__all__ = [
    "RESPONSE_READ_BYTES",
    "Attempt",
    "check_targets",
    "resend_delivery",
    "resent",
    "send_once",
    "target_url",
    "webhook_id",
]

RESPONSE_READ_BYTES = 4_096
"""At most this much of a receiver's answer is read (the rest is dropped unread)."""

_RETRY_AFTER_MAX_S = 3_600.0
_log = logging.getLogger("flagcore_http.integrations")


@attrs.frozen
class Attempt:
    """What one attempt came to: ``delivered``, or whether (and when) to try again."""

    delivered: bool
    status_code: int | None
    detail: str
    retry: bool = False
    retry_after: float | None = None


def target_url(integration: Integration) -> str:
    """Where an integration posts (Datadog's default site when its URL is left out)."""
    url = integration.parameters.get("url")
    if url is None and integration.provider == "datadog":
        return DEFAULT_DATADOG_URL
    return url or ""


def webhook_id(integration: Integration, event: Event) -> str:
    """The Standard Webhooks message id: one per integration and event, on every node
    (a test event, id 0, gets a fresh one each time: a receiver must not drop it)."""
    if event.id == 0:
        return f"msg_{integration.id}_test_{secrets.token_hex(8)}"
    return f"msg_{integration.id}_{event.id}"


async def check_targets(app: web.Application, provider: str, parameters: Mapping[str, str]) -> None:
    """The URL an integration will post to passes the SSRF rules, and its body template
    parses; else a 400 naming the parameter."""
    check_template(parameters.get("bodyTemplate"))
    url = parameters.get("url") or (DEFAULT_DATADOG_URL if provider == "datadog" else None)
    if url is not None:
        await resolve_target(url, AllowList.of(app[CONFIG].integration_allow_list))


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (a number of seconds or an HTTP date), bounded."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return min(float(text), _RETRY_AFTER_MAX_S)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    seconds = (when - dt.datetime.now(dt.UTC)).total_seconds()
    return min(max(seconds, 0.0), _RETRY_AFTER_MAX_S) if math.isfinite(seconds) else None


def _signed(integration: Integration, event: Event, body: bytes) -> dict[str, str]:
    message_id = webhook_id(integration, event)
    now = dt.datetime.now(dt.UTC)
    headers = {"webhook-id": message_id, "webhook-timestamp": str(int(now.timestamp()))}
    try:
        text = body.decode()
    except UnicodeDecodeError:  # a gzipped body (New Relic): the id alone
        return headers
    headers["webhook-signature"] = Webhook(integration.signing_secret).sign(message_id, now, text)
    return headers


def _outcome(status: int, reason: str | None) -> Attempt:
    detail = f"HTTP {status} {reason or ''}".strip()
    if 200 <= status < 300:
        return Attempt(True, status, detail)
    if 300 <= status < 400:
        return Attempt(False, status, detail + " (redirects are not followed)")
    retry = status in (408, 429) or status >= 500
    return Attempt(False, status, detail, retry=retry)


async def send_once(integration: Integration, event: Event, config: ServerConfig) -> Attempt:
    """One attempt to send ``event`` to ``integration``; never raises for the receiver's
    or the network's faults (they are the returned `Attempt`)."""
    try:
        target = await resolve_target(
            target_url(integration), AllowList.of(config.integration_allow_list)
        )
        message = message_for(integration, event, config.integration_ui_url)
    except TargetRefused as refused:
        return Attempt(False, None, f"target refused: {refused.message}")
    except FlagcoreError as error:
        return Attempt(False, None, f"message not built: {error}")
    except Exception as error:  # a template's fault (pystache), not the receiver's
        return Attempt(False, None, f"message not built: {type(error).__name__}")
    headers = {
        "Content-Type": message.content_type,
        "User-Agent": "flagcore-integrations",
        **message.headers,
        **_signed(integration, event, message.body),
    }
    timeout = aiohttp.ClientTimeout(
        total=None,
        connect=config.integration_timeout,
        sock_connect=config.integration_timeout,
        sock_read=config.integration_timeout,
    )
    connector = aiohttp.TCPConnector(
        resolver=PinnedResolver(target), use_dns_cache=False, force_close=True, limit=1
    )
    try:
        async with (
            aiohttp.ClientSession(
                connector=connector, timeout=timeout, auto_decompress=False, trust_env=False
            ) as session,
            session.post(
                target.url, data=message.body, headers=headers, allow_redirects=False
            ) as response,
        ):
            await asyncio.wait_for(
                response.content.read(RESPONSE_READ_BYTES), config.integration_timeout
            )
            attempt = _outcome(response.status, response.reason)
            if response.status == 429:
                attempt = attrs.evolve(
                    attempt, retry_after=_retry_after(response.headers.get("Retry-After"))
                )
            return attempt
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        kind = "timed out" if isinstance(error, TimeoutError) else type(error).__name__
        return Attempt(False, None, f"no answer: {kind}", retry=True)
    except ValueError as error:  # a request aiohttp refuses to write: trying again won't help
        return Attempt(False, None, f"not sent: {type(error).__name__}")


def resent(work: ResendWork, attempt: Attempt) -> IntegrationDelivery:
    """The log entry of a delivery sent again by hand."""
    return IntegrationDelivery(
        0,
        work.integration.id,
        work.event.id,
        work.event.type,
        "delivered" if attempt.delivered else "failed",
        1,
        attempt.status_code,
        "sent again by hand: " + attempt.detail,
    )


async def resend_delivery(request: web.Request, work: ResendWork) -> IntegrationDelivery:
    """Send a logged delivery's event once more, now, and log the outcome."""
    attempt = await send_once(work.integration, work.event, request.app[CONFIG])
    _log.info(
        "integration %d: event %d sent again by hand: %s",
        work.integration.id,
        work.event.id,
        attempt.detail,
    )
    return await call(
        request,
        service(request).integration_outbox.record_integration_resend,
        resent(work, attempt),
        actor=actor(request),
    )
