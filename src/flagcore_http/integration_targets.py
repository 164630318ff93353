"""Where an integration may send: the SSRF rules, and a connection pinned to the
address that was checked.

A target URL must be http or https. Its host is resolved, and every address it resolves
to must be public: loopback, private, link-local (cloud metadata at 169.254.169.254),
shared, documentation, multicast and reserved ranges, IPv4-mapped and 6to4 forms of
them, and the IPv6 equivalents (``::1``, ``fc00::/7`` with ``fd00::/8``, ``fe80::/10``)
are refused, unless the host or the address is in ``FLAGCORE_INTEGRATION_ALLOW_LIST``
(Unleash 8.2's ``UNLEASH_ALLOW_LIST_INTEGRATION``). The check runs when an integration is
written (a 400 naming ``$.parameters.url``) and again before every delivery, and the
delivery connects to the address checked (`PinnedResolver`): a DNS answer that changes
in between (rebinding) is never used. Redirects are not followed (`flagcore_http.
integration_sending`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable

import attrs
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from flagcore.errors import ErrorDetail, InvalidInput

__all__ = [
    "DEFAULT_DATADOG_URL",
    "AllowList",
    "PinnedResolver",
    "Target",
    "TargetRefused",
    "is_public",
    "resolve_target",
]

DEFAULT_DATADOG_URL = "https://api.datadoghq.com/api/v1/events"
_RESOLVE_TIMEOUT_S = 5.0

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Unleash's list (validate-url.ts), and NAT64 and site-local besides.
_NOT_PUBLIC = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "fe80::/10",
        "fec0::/10",
        "fc00::/7",
        "ff00::/8",
        "2001:db8::/32",
        "2002::/16",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "::ffff:0:0/96",
    )
)


class TargetRefused(InvalidInput):
    """A target URL the SSRF rules refuse (a 400 when an integration is written)."""


@attrs.frozen
class AllowList:
    """Hosts (by name, any case) and addresses an integration may reach though they are
    not public: the tests' receivers on 127.0.0.1, a team's internal service."""

    entries: frozenset[str] = frozenset()

    @classmethod
    def of(cls, entries: Iterable[str]) -> AllowList:
        normal = set()
        for entry in entries:
            try:
                normal.add(str(ipaddress.ip_address(entry.strip("[]"))))
            except ValueError:
                normal.add(entry.lower())
        return cls(frozenset(normal))

    def allows(self, host: str, address: _Address) -> bool:
        return host.lower() in self.entries or str(address) in self.entries


@attrs.frozen
class Target:
    """A checked URL and the one address its connection goes to."""

    url: URL
    address: str
    family: int


def is_public(address: _Address) -> bool:
    """Whether an address is on the public internet (every form of a local one is not)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return is_public(address.ipv4_mapped)
    return not any(
        address in network for network in _NOT_PUBLIC if network.version == address.version
    )


def _refused(message: str, path: str) -> TargetRefused:
    return TargetRefused(message, [ErrorDetail(message, path)])


async def _addresses(host: str, port: int, path: str) -> list[_Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        found = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), _RESOLVE_TIMEOUT_S
        )
    except (OSError, TimeoutError):
        raise _refused(f"the host {host} did not resolve", path) from None
    addresses = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise _refused(f"the host {host} did not resolve", path)
    return addresses


async def resolve_target(
    url: str, allow_list: AllowList, *, path: str = "$.parameters.url"
) -> Target:
    """``url`` checked by the rules above, with the address to connect to; else
    `TargetRefused` naming ``path``."""
    try:
        parsed = URL(url)
        port = parsed.port
    except ValueError:
        raise _refused("not a URL", path) from None
    if parsed.scheme not in ("http", "https") or not parsed.host or port is None:
        raise _refused("the URL must be http or https, with a host", path)
    host = parsed.host.strip("[]").lower()
    addresses = await _addresses(host, port, path)
    for address in addresses:
        if not is_public(address) and not allow_list.allows(host, address):
            raise _refused(
                f"{host} resolves to {address}, which is not a public address (allow it "
                "with FLAGCORE_INTEGRATION_ALLOW_LIST)",
                path,
            )
    pinned = addresses[0]
    family = socket.AF_INET6 if pinned.version == 6 else socket.AF_INET
    return Target(parsed, str(pinned), family)


class PinnedResolver(AbstractResolver):
    """An aiohttp resolver that answers the checked address for the target's host and
    nothing else: the connection cannot go where the check did not look."""

    def __init__(self, target: Target) -> None:
        self._target = target

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.strip("[]").lower() != (self._target.url.host or "").strip("[]").lower():
            raise OSError(f"{host} is not the checked target")
        return [
            ResolveResult(
                hostname=host,
                host=self._target.address,
                port=port,
                family=self._target.family,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None
