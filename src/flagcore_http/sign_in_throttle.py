"""Failed password sign-ins, counted per account and per address (issue 28).

Each failure takes one token from two buckets (`flagcore_http.rate_limits.RateLimiter`,
an LRU bounded by count, so neither the number of accounts tried nor of addresses makes
the server keep more): the account's (its login folded to lower case) and the address's.
While either is empty, a sign-in for that account or from that address is refused before
the password is checked (429, ``Retry-After``): guessing costs no hashing, and the
account's owner learns why they cannot get in. A success takes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from aiohttp import web

from flagcore_http.config import ServerConfig
from flagcore_http.rate_limits import RateLimiter, client_address

__all__ = [
    "MAX_LOGIN_LENGTH",
    "SIGN_IN_THROTTLE",
    "WINDOW_SECONDS",
    "SignInThrottle",
    "too_many_sign_ins",
]

WINDOW_SECONDS = 15 * 60.0
MAX_LOGIN_LENGTH = 320
"""The longest email (or username) looked up; longer ones name nobody."""


def too_many_sign_ins(wait: float) -> str:
    minutes = max(1, math.ceil(wait / 60))
    return (
        "Too many failed sign-ins for this account or from this address. "
        f"Try again in {minutes} minute{'s' if minutes > 1 else ''}."
    )


class SignInThrottle:
    def __init__(self, per_account: int, per_address: int) -> None:
        self._accounts = RateLimiter(per_account, period=WINDOW_SECONDS)
        self._addresses = RateLimiter(per_address, period=WINDOW_SECONDS)

    @classmethod
    def from_config(cls, config: ServerConfig) -> SignInThrottle:
        return cls(config.sign_in_failures_per_account, config.sign_in_failures_per_address)

    def wait(self, request: web.Request, login: str) -> float:
        """0.0 if a sign-in for ``login`` from this request's address may be checked now,
        else the seconds until one may."""
        return max(
            self._accounts.wait(_account(login)),
            self._addresses.wait(client_address(request)),
        )

    def failed(self, request: web.Request, login: str) -> None:
        self._accounts.take(_account(login))
        self._addresses.take(client_address(request))


def _account(login: str) -> Hashable:
    return login.casefold()[:MAX_LOGIN_LENGTH]


SIGN_IN_THROTTLE = web.AppKey("sign_in_throttle", SignInThrottle)
