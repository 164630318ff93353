"""Rate limits and the auth-failure tarpit: cheap, bounded, decided before a body is read.

Unleash limits its SDK write paths per client (``METRICS_RATE_LIMIT_PER_MINUTE``,
``REGISTER_CLIENT_RATE_LIMIT_PER_MINUTE``, ``FRONTEND_METRICS_RATE_LIMIT_PER_MINUTE``,
``REGISTER_FRONTEND_CLIENT_RATE_LIMIT_PER_MINUTE``: 6,000 a minute each). flagcore does
the same with a token bucket per key, the buckets kept in an LRU bounded by count, so
neither the number of clients nor their rate makes the server keep more (docs/security.md):

- SDK write paths (metrics, registrations, their Frontend API twins) are keyed by
  (token, client address): one abuser is throttled, another token or address is not, and
  a fleet of pods sharing a token but not an address shares nothing.
- New SDK instances noted from polls are limited per token (per address without
  authentication): past the limit the poll is still answered, the instance is just not
  tracked until a later poll.
- Presented secrets that are not valid (guesses) are counted per address; past the free
  allowance each further failure is answered only after a delay, an ``asyncio.sleep``
  that costs the server no CPU, while valid tokens from the same address are never
  delayed.

A refusal is 429 with ``Retry-After`` and the JSON error shape, answered from the headers
alone: if a body is still coming, the connection is closed after the answer so the body
is never read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import attrs
from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.errors import ErrorDetail
from flagcore_http import render
from flagcore_http.config import ServerConfig
from flagcore_http.keys import CONFIG, TOKEN

__all__ = [
    "RATE_LIMITS",
    "RateLimiter",
    "RateLimits",
    "client_address",
    "refusal",
    "tarpit_auth_failure",
    "too_many_requests",
]

# How many keys each limiter remembers; the least recently seen is forgotten first (its
# bucket starts full again if it comes back). 10,000 buckets cost about 3 MB.
MAX_KEYS = 10_000


class RateLimiter:
    """Token buckets per key: ``per_minute`` requests a minute, bursts of up to as many.

    A bucket is two floats in an `OrderedDict` bounded by ``max_keys``; taking from it is
    a dictionary lookup and a little arithmetic. ``per_minute == 0`` turns the limiter off.
    """

    __slots__ = ("_buckets", "_clock", "_max_keys", "_rate", "capacity")

    def __init__(
        self,
        per_minute: int,
        *,
        max_keys: int = MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = float(per_minute)
        self._rate = per_minute / 60.0  # tokens a second
        self._max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[Hashable, list[float]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def take(self, key: Hashable) -> float:
        """Take one request for ``key``: 0.0 if allowed, else the seconds until one is."""
        if not self.capacity:
            return 0.0
        now = self._clock()
        buckets = self._buckets
        bucket = buckets.get(key)
        if bucket is None:
            if len(buckets) >= self._max_keys:
                buckets.popitem(last=False)
            buckets[key] = [self.capacity - 1.0, now]
            return 0.0
        buckets.move_to_end(key)
        tokens = min(self.capacity, bucket[0] + (now - bucket[1]) * self._rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / self._rate

    def __len__(self) -> int:
        return len(self._buckets)


@attrs.define
class RateLimits:
    """The server's limiters, one per kind of request, built from its settings."""

    metrics: RateLimiter
    register: RateLimiter
    frontend_metrics: RateLimiter
    frontend_register: RateLimiter
    new_instances: RateLimiter
    auth_failures: RateLimiter
    auth_failure_delay: float

    @classmethod
    def from_config(cls, config: ServerConfig) -> RateLimits:
        return cls(
            metrics=RateLimiter(config.metrics_rate_limit),
            register=RateLimiter(config.register_rate_limit),
            frontend_metrics=RateLimiter(config.frontend_metrics_rate_limit),
            frontend_register=RateLimiter(config.frontend_register_rate_limit),
            new_instances=RateLimiter(config.new_instances_rate_limit),
            auth_failures=RateLimiter(config.auth_failures_free_per_minute),
            auth_failure_delay=config.auth_failure_delay,
        )


RATE_LIMITS = web.AppKey("rate_limits", RateLimits)


def client_address(request: web.Request) -> str:
    """Who is calling: the connection's address or, when that address is one of
    ``--trusted-proxies``, the last ``X-Forwarded-For`` entry not itself a trusted proxy
    (entries further left are whatever the client wrote, so they are never used)."""
    remote = request.remote or ""
    proxies = request.app[CONFIG].trusted_proxies
    if not proxies or not _is_trusted(remote, proxies):
        return remote
    forwarded = request.headers.get("X-Forwarded-For", "")
    if len(forwarded) > 4096:  # far more hops than any real chain
        return remote
    for entry in reversed(forwarded.split(",")):
        address = entry.strip()
        if not address or len(address) > 64:
            return remote
        if not _is_trusted(address, proxies):
            return address
    return remote


def _is_trusted(
    address: str, proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def _token_key(request: web.Request) -> Hashable:
    token: ApiToken | None = request.get(TOKEN)
    # The secret's hash identifies the token (names need not be unique).
    return token.secret_hash if token is not None else None


def refusal(request: web.Request, limiter: RateLimiter) -> web.Response | None:
    """None if the request may go on; else the 429 to answer at once, before the body."""
    if not limiter.enabled:
        return None
    wait = limiter.take((_token_key(request), client_address(request)))
    if not wait:
        return None
    message = "Too many requests from this client; try again after Retry-After seconds."
    return too_many_requests(request, message, wait)


def too_many_requests(
    request: web.Request, message: str, wait: float, details: Sequence[ErrorDetail] = ()
) -> web.Response:
    """429 with ``Retry-After`` (whole seconds, at least 1) and the JSON error shape.

    Answered without reading the body: if one is still coming, the connection is closed
    once the answer is written, instead of aiohttp reading the body to reuse it.
    """
    body = render.error_body("RateLimitedError", message, details)
    headers = {"Retry-After": str(max(1, math.ceil(wait)))}
    if request.body_exists and not request.content.is_eof():
        return _ClosingResponse(request, body, headers)
    return web.json_response(body, status=429, headers=headers)


class _ClosingResponse(web.Response):
    """A 429 after which the connection closes, its unread body never read."""

    def __init__(self, request: web.Request, body: object, headers: dict[str, str]) -> None:
        super().__init__(
            text=json.dumps(body), status=429, headers=headers, content_type="application/json"
        )
        self.force_close()  # "Connection: close"
        self._transport_to_close = request.transport

    async def write_eof(self, data: bytes = b"") -> None:
        await super().write_eof(data)
        # aiohttp would otherwise read (and drop) the rest of the body for up to 10 s
        # before closing; closing the transport sends what is written, then ends.
        if self._transport_to_close is not None:
            self._transport_to_close.close()


def allows_new_instance(request: web.Request, token: ApiToken | None) -> bool:
    """Whether a never-seen SDK instance polling now may be tracked (per ``token``, the
    one the request was authenticated with, or per address without one)."""
    limiter = request.app[RATE_LIMITS].new_instances
    if not limiter.enabled:
        return True
    key = token.secret_hash if token is not None else client_address(request)
    return not limiter.take(key)


async def tarpit_auth_failure(request: web.Request) -> None:
    """Count a refused secret from this address; past the free allowance, wait before
    the 401 goes out. The wait is a sleep: it holds the connection, not the CPU."""
    limits = request.app[RATE_LIMITS]
    if not limits.auth_failures.enabled or not limits.auth_failure_delay:
        return
    if limits.auth_failures.take(client_address(request)):
        await asyncio.sleep(limits.auth_failure_delay)
