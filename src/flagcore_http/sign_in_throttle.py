"""Failed password sign-ins, counted per account and per address (issue 28).

Each failure takes one token from two buckets (`flagcore_http.rate_limits.RateLimiter`,
an LRU bounded by count, so neither the number of accounts tried nor of addresses makes
the server keep more): the account's (its login folded to lower case) and the address's.
While either is empty, a sign-in for that account or from that address is refused before
the password is checked (429, ``Retry-After``): guessing costs no hashing, and the
account's owner learns why they cannot get in. A success takes nothing. An IPv6 caller is
counted by its /64. The buckets live in each process's memory and are bounded: past 10,000
accounts the least recently failed are forgotten (docs/security.md, "People").
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Hashable
from typing import NamedTuple

from aiohttp import web

from flagcore_http.config import ServerConfig
from flagcore_http.rate_limits import RateLimiter, client_address

__all__ = [
    "MAX_LOGIN_LENGTH",
    "SIGN_IN_THROTTLE",
    "WINDOW_SECONDS",
    "OwnPassword",
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

    def wait(self, request: web.Request, login: str | OwnPassword) -> float:
        """0.0 if a sign-in for ``login`` from this request's address may be checked now,
        else the seconds until one may."""
        return max(
            self._accounts.wait(_account(login)),
            self._addresses.wait(_address(request)),
        )

    def failed(self, request: web.Request, login: str | OwnPassword) -> None:
        self._accounts.take(_account(login))
        self._addresses.take(_address(request))


class OwnPassword(NamedTuple):
    """The account key of a signed-in user changing their own password: apart from every
    login, so no sign-in attempt under a made-up name can lock them out of it."""

    user_id: int


def _account(login: str | OwnPassword) -> Hashable:
    return login if isinstance(login, OwnPassword) else login.casefold()[:MAX_LOGIN_LENGTH]


def _address(request: web.Request) -> Hashable:
    """The caller's address; an IPv6 one by its /64, the block one host is given, so a
    host cannot spread its guesses over the addresses it owns."""
    address = client_address(request)
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is None:
        return ipaddress.ip_network((int(ip) >> 64 << 64, 64))
    return address


SIGN_IN_THROTTLE = web.AppKey("sign_in_throttle", SignInThrottle)
