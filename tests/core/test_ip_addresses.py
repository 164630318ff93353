"""Context addresses read exactly as the standard library's `ipaddress` reads them (the
dotted-quad fast path must not accept or refuse anything it would not)."""

from __future__ import annotations

import ipaddress

from hypothesis import example, given
from hypothesis import strategies as st

from flagcore.operators import parse_ip_address

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
