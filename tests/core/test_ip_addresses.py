"""Context addresses read exactly as the standard library's `ipaddress` reads them (the
dotted-quad fast path must not accept or refuse anything it would not)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flagcore import Engine
from flagcore.operators import parse_ip_address, parse_network

_OCTET = st.one_of(
    st.integers(min_value=0, max_value=300).map(str),
    st.sampled_from(["00", "01", "010", "0255", "1234", "", "+1", "-1", " 1", "1 ", "٣", "0x1"]),
)
_DOTTED = st.lists(_OCTET, min_size=1, max_size=6).map(".".join)


def _standard(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in text:
        return None  # zone ids are refused, as in Unleash
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


@given(st.one_of(_DOTTED, st.text(alphabet="0123456789.:abcdef%", max_size=24)))
@example("10.0.0.1")
@example("010.0.0.1")
@example("256.1.1.1")
@example("255.255.255.255")
@example("::ffff:10.0.0.1")
def test_an_address_reads_as_ipaddress_reads_it(text: str) -> None:
    parse_ip_address.cache_clear()
    assert parse_ip_address(text) == _standard(text)


@pytest.mark.parametrize(
    ("text", "network"),
    [
        ("10.0.0.0/255.0.0.0", "10.0.0.0/8"),
        ("10.1.2.3/255.255.255.0", "10.1.2.0/24"),
        ("10.0.0.0/255.128.0.0", "10.0.0.0/9"),
        ("10.0.0.0/0.0.0.0", "0.0.0.0/0"),
        ("10.0.0.7/255.255.255.255", "10.0.0.7/32"),
        ("10.0.0.0/+8", "10.0.0.0/8"),
        ("10.0.0.0/008", "10.0.0.0/8"),
        ("2001:db8::1/32", "2001:db8::/32"),
    ],
)
def test_networks_read_in_every_notation_unleash_accepts(text: str, network: str) -> None:
    assert parse_network(text) == ipaddress.ip_network(network)


@pytest.mark.parametrize(
    "text",
    [
        "10.0.0.0/255.0.255.0",  # not contiguous
        "10.0.0.0/0.255.255.255",  # a host mask
        "10.0.0.0/255.000.0.0",  # a netmask is an address: no leading zeros
        "2001:db8::/ffff:ffff::",  # IPv6 takes a prefix length only
        "::1/255.0.0.0",
        "10.0.0.0/33",
        "10.0.0.0/-8",
        "10.0.0.0/8/8",
        "10.0.0.0/ 8",
        "fe80::/10%eth0",
    ],
)
def test_networks_unleash_rejects_are_refused(text: str) -> None:
    assert parse_network(text) is None


def _remote_address_flags(ips: str) -> dict[str, object]:
    strategy = {"name": "remoteAddress", "parameters": {"IPs": ips}}
    constraint = {"contextName": "remoteAddress", "operator": "IN_CIDR", "values": ips.split(",")}
    return {
        "version": 2,
        "features": [
            {"name": "by-strategy", "enabled": True, "strategies": [strategy]},
            {
                "name": "by-constraint",
                "enabled": True,
                "strategies": [{"name": "default", "constraints": [constraint]}],
            },
        ],
    }


def test_a_netmask_in_a_remote_address_strategy_or_cidr_constraint_selects_its_network() -> None:
    # Unreadable entries are skipped, the rest still count (as in Unleash).
    engine = Engine.from_client_features(_remote_address_flags("junk,10.0.0.0/255.255.0.0"))
    for flag in ("by-strategy", "by-constraint"):
        assert engine.is_enabled(flag, {"remoteAddress": "10.0.200.1"})
        assert not engine.is_enabled(flag, {"remoteAddress": "10.1.0.1"})
        assert not engine.is_enabled(flag, {"remoteAddress": "::ffff:10.0.0.1"})


def test_remote_address_entries_are_trimmed_of_unicode_spaces_only() -> None:
    # Rust's trim: NBSP and ideographic spaces go, the \x1c separator (Python's) stays.
    engine = Engine.from_client_features(_remote_address_flags("10.0.0.0/8\u00a0,\x1c127.0.0.1"))
    assert engine.is_enabled("by-strategy", {"remoteAddress": "10.1.2.3"})
    assert not engine.is_enabled("by-strategy", {"remoteAddress": "127.0.0.1"})
