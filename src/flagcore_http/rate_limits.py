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
- Rows metrics posts (and frontend registrations) may add to the store are budgeted an
  hour per (token, address), and per frontend token from every address (`RowBudget`):
  reserved before the post is counted, the unused part given back.
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
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import attrs
from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.errors import ErrorDetail
from flagcore.wire import ErrorAnswer, write_answer
from flagcore_http.closing import closing_when_sent
from flagcore_http.config import ServerConfig
from flagcore_http.keys import CONFIG, TOKEN

__all__ = [
    "RATE_LIMITS",
    "RateLimiter",
    "RateLimits",
    "RowBudget",
    "client_address",
    "metrics_row_budget",
    "refusal",
    "sdk_write_burst",
    "tarpit_auth_failure",
    "too_many_requests",
]

# How many keys each limiter remembers; the least recently seen is forgotten first (its
# bucket starts full again if it comes back). 10,000 buckets cost about 3 MB.
MAX_KEYS = 10_000


class RateLimiter:
    """Token buckets per key: ``per_minute`` requests a minute (a ``period`` of other
    seconds: that many per period), bursts of up to as many, or of ``burst`` when given
    (the average rate is the same; a smaller burst spreads a flood evenly over the minute).

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
        period: float = 60.0,
        burst: float | None = None,
    ) -> None:
        self.capacity = float(per_minute if burst is None else min(per_minute, burst))
        self._rate = per_minute / period  # tokens a second
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

    def wait(self, key: Hashable) -> float:
        """The seconds until ``key`` could take one (0.0: now), taking nothing."""
        bucket = self._buckets.get(key)
        if not self.capacity or bucket is None:
            return 0.0
        tokens = min(self.capacity, bucket[0] + (self._clock() - bucket[1]) * self._rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self._rate

    def reserve(self, key: Hashable, most: int) -> int | None:
        """Take up to ``most`` whole tokens for ``key`` at once and say how many (None when
        the limiter is off): a budget spent by work whose cost is known only afterwards,
        the unspent part given back with `refund`."""
        if not self.capacity:
            return None
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_keys:
                self._buckets.popitem(last=False)
            bucket = self._buckets[key] = [self.capacity, now]
        self._buckets.move_to_end(key)
        tokens = min(self.capacity, bucket[0] + (now - bucket[1]) * self._rate)
        taken = max(0, min(most, math.floor(tokens)))
        bucket[0], bucket[1] = tokens - taken, now
        return taken

    def refund(self, key: Hashable, count: int) -> None:
        """Give back ``count`` tokens `reserve` took and the work did not use."""
        bucket = self._buckets.get(key)
        if bucket is not None and count > 0:
            bucket[0] = min(self.capacity, bucket[0] + count)

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
    metrics_new_rows: RateLimiter
    frontend_metrics_new_rows: RateLimiter
    frontend_metrics_new_rows_per_token: RateLimiter
    auth_failures: RateLimiter
    auth_failure_delay: float

    @classmethod
    def from_config(cls, config: ServerConfig) -> RateLimits:
        def sdk_writes(per_minute: int) -> RateLimiter:
            return RateLimiter(per_minute, burst=sdk_write_burst(per_minute, config))

        return cls(
            metrics=sdk_writes(config.metrics_rate_limit),
            register=sdk_writes(config.register_rate_limit),
            frontend_metrics=sdk_writes(config.frontend_metrics_rate_limit),
            frontend_register=sdk_writes(config.frontend_register_rate_limit),
            new_instances=RateLimiter(config.new_instances_rate_limit),
            metrics_new_rows=RateLimiter(config.metrics_new_rows_per_hour, period=3600.0),
            frontend_metrics_new_rows=RateLimiter(
                config.frontend_metrics_new_rows_per_hour, period=3600.0
            ),
            frontend_metrics_new_rows_per_token=RateLimiter(
                config.frontend_metrics_new_rows_per_hour_per_token, period=3600.0
            ),
            auth_failures=RateLimiter(config.auth_failures_free_per_minute),
            auth_failure_delay=config.auth_failure_delay,
        )


def sdk_write_burst(per_minute: int, config: ServerConfig) -> float:
    """How many SDK writes one (token, address) may send at once: what it may send in
    ``FLAGCORE_SDK_WRITE_BURST_SECONDS`` at its average rate, but never fewer than 10 (a few
    pods of one fleet starting together) nor more than its minute's allowance. Unleash
    lets the whole minute's 6,000 through at once; flagcore's default (1 s: 100) keeps the
    same average while a flood from one client costs the server a hundredth of a core's
    share at a time rather than the minute's in a burst (docs/security.md)."""
    return max(min(10.0, float(per_minute)), per_minute * config.sdk_write_burst_seconds / 60)


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
    body = write_answer(ErrorAnswer.of("RateLimitedError", message, tuple(details)))
    headers = {"Retry-After": str(max(1, math.ceil(wait)))}
    return closing_when_sent(request, web.json_response(body, status=429, headers=headers))


class RowBudget:
    """What a metrics post may add to the store: whole tokens reserved from each limiter
    that applies (keyed by token and address, or by token alone) before the post is
    counted, the unused part refunded after."""

    def __init__(self, grants: Sequence[tuple[RateLimiter, Hashable]], most: int) -> None:
        self._taken: list[tuple[RateLimiter, Hashable, int]] = []
        for limiter, key in grants:
            taken = limiter.reserve(key, most)
            if taken is not None:
                self._taken.append((limiter, key, taken))

    @property
    def rows(self) -> int | None:
        """The rows the post may create (None: no limit applies)."""
        return min((taken for _l, _k, taken in self._taken), default=None)

    def spent(self, created: int) -> None:
        """Keep ``created`` of each reservation, give the rest back."""
        for limiter, key, taken in self._taken:
            limiter.refund(key, taken - created)


def metrics_row_budget(request: web.Request, most: int, *, frontend: bool) -> RowBudget:
    """The budget of new rows for a metrics post that could create ``most``: per (token,
    address), and for a frontend token (public in every browser bundle) per token too.
    Only what the post could use is reserved, so posts of other browsers sharing the
    token are not starved while it is counted."""
    limits = request.app[RATE_LIMITS]
    token = _token_key(request)
    per_client = (token, client_address(request))
    if not frontend:
        return RowBudget([(limits.metrics_new_rows, per_client)], most)
    return RowBudget(
        [
            (limits.frontend_metrics_new_rows, per_client),
            (limits.frontend_metrics_new_rows_per_token, token),
        ],
        most,
    )


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
