"""Who may send a signal, and what a signal may carry: the intake rules, pure and in memory.

The public signal endpoint is open to systems outside the admin's control, so these rules
are shaped for hostile senders: every check here runs without the store (an adapter can
refuse before queueing any storage work), and the payload rules keep anything no store,
encoder or SDK can hold out of the system. `Signals.accept_signal` applies them
again, with the store, when it stores a signal.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from typing import Any, NoReturn

import attrs

from flagcore.entities import SignalEndpoint, SignalEndpointToken
from flagcore.errors import (
    ErrorDetail,
    Forbidden,
    InvalidInput,
    NotFound,
    RateLimited,
    Unauthenticated,
)
from flagcore.limits import Limits, enforce
from flagcore.service.tokens import hash_secret

__all__ = [
    "BAD_TOKEN",
    "SIGNAL_PAYLOAD_MAX_DEPTH",
    "SignalCredentials",
    "SignalSender",
    "check_signal_payload",
    "check_signal_rate",
    "disabled_endpoint_message",
]

_NO_TOKEN = "a signal needs an endpoint token: Authorization: Bearer <token>"
BAD_TOKEN = "the signal endpoint token is not valid"
# Our secrets are 64 hex digits; anything this long is refused before it is hashed.
_MAX_SECRET_CHARS = 1024
# Payloads are free-form JSON, but no real one nests this deep; the bound keeps the
# stores' encoders (orjson stops at 255) and every later walk far from their limits.
SIGNAL_PAYLOAD_MAX_DEPTH = 64
_INT64 = range(-(2**63), 2**63)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _shown(name: str) -> str:
    """A name from the URL, cut short: an answer never echoes kilobytes of a sender's input."""
    return name if len(name) <= 100 else name[:100] + "…"


def disabled_endpoint_message(endpoint_name: str) -> str:
    """The one wording, whether the in-memory check or the transaction finds it disabled."""
    return f'signal endpoint "{endpoint_name}" is disabled'


@attrs.frozen
class SignalSender:
    """One endpoint token and the endpoint it belongs to, as they were read."""

    token: SignalEndpointToken
    endpoint: SignalEndpoint


@attrs.frozen
class SignalCredentials:
    """Every signal token digest with its endpoint: who may send where, decided in memory.

    An adapter keeps one of these per store revision (token and endpoint changes all move
    it), so a request without a valid token is refused with no storage work at all: a
    flood of bad tokens costs no transactions. The order of checks keeps endpoint names
    private: without a token that some endpoint accepts, every name gets the same 401,
    whether it exists or not.
    """

    by_digest: Mapping[str, SignalSender]
    endpoint_names: frozenset[str]

    def sender(self, endpoint_name: str, secret: str | None) -> SignalSender:
        """The sender of ``secret`` if it may send to ``endpoint_name``.

        No or unknown secret: `Unauthenticated`. Another endpoint's token: `Forbidden`,
        or `NotFound` if no endpoint has that name. A disabled endpoint: `Forbidden`.
        """
        if not secret:
            raise Unauthenticated(_NO_TOKEN)
        if len(secret) > _MAX_SECRET_CHARS:
            raise Unauthenticated(BAD_TOKEN)
        try:
            digest = hash_secret(secret)
        except UnicodeEncodeError:  # undecodable header bytes: no stored token matches
            raise Unauthenticated(BAD_TOKEN) from None
        # A dict lookup by SHA-256 digest: timing can reveal at most how much of a digest
        # matched, which says nothing usable about any secret.
        sender = self.by_digest.get(digest)
        if sender is None:
            raise Unauthenticated(BAD_TOKEN)
        if sender.endpoint.name != endpoint_name:
            if endpoint_name in self.endpoint_names:
                raise Forbidden(f'that token belongs to another endpoint, not "{endpoint_name}"')
            raise NotFound(f'there is no signal endpoint "{_shown(endpoint_name)}"')
        if not sender.endpoint.enabled:
            raise Forbidden(disabled_endpoint_message(endpoint_name))
        return sender


def check_signal_payload(payload: Any, limits: Limits) -> None:
    """Refuse a payload no store or response could hold, naming its JSON path; then its size.

    Payloads are free-form JSON, so the rules are about what JSON can carry everywhere:
    plain JSON types with string keys, nesting up to `SIGNAL_PAYLOAD_MAX_DEPTH`, integers
    within -2^63..2^63-1, finite numbers, strings without lone surrogates. The size is
    the payload's compact UTF-8 JSON, at most ``limits.signal_payload_bytes``.
    """
    stack: list[tuple[Any, str, int]] = [(payload, "$", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth == SIGNAL_PAYLOAD_MAX_DEPTH:
                _refuse(path, f"nested deeper than {SIGNAL_PAYLOAD_MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str) or _LONE_SURROGATE.search(key):
                        _refuse(path, f"the key {str(key)[:64]!r} is not a string of valid text")
                    stack.append((child, _key_path(path, key), depth + 1))
            else:
                stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item))
        elif isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                _refuse(path, "a string with a lone surrogate (not encodable as UTF-8)")
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if item not in _INT64:
                _refuse(path, "an integer outside -2^63..2^63-1")
        elif isinstance(item, float):
            if not math.isfinite(item):
                _refuse(path, "not a finite number")
        else:
            _refuse(path, f"{type(item).__name__} is not a JSON value")
    size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    enforce(limits, "signal_payload_bytes", size, "bytes of signal payload")


def _key_path(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key[:64])}]"


def check_signal_rate(
    endpoint_name: str, last_at: dt.datetime, now: dt.datetime, limits: Limits
) -> None:
    """`RateLimited` if a signal stored at ``last_at`` leaves no room for one at ``now``."""
    interval = 1.0 / limits.signals_per_second
    waited = (now - last_at).total_seconds()
    if waited < interval:
        raise RateLimited(
            f"signal endpoint {endpoint_name} accepts "
            f"{limits.signals_per_second:g} signal(s) per second",
            retry_after=min(interval, interval - waited),
        )


def _refuse(path: str, problem: str) -> NoReturn:
    raise InvalidInput(f"the signal payload at {path}: {problem}", [ErrorDetail(problem, path)])
