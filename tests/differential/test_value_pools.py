"""Every constraint value of a pool against every context value of a pool, in both engines.

The random payloads of ``test_against_yggdrasil`` seldom put one particular pattern next to
the one text that tells two regex dialects apart; these cross products do, exhaustively:
each REGEX against each text (with and without ``caseInsensitive``), each range against
each address (as an ``IN_CIDR`` constraint and as a ``remoteAddress`` strategy), each
date, version and number against each context value of the three kinds, under every
ordinal operator. A second strategy that is on for one user shows whether a value that
Unleash cannot read turns the whole flag off (it does) or only its constraint.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from yggdrasil_engine.engine import UnleashEngine

from flagcore import Engine
from tests.differential.flag_strategies import (
    CIDRS,
    DATES,
    IPS,
    NUMBERS,
    REGEX_TEXTS,
    REGEXES,
    SEMVERS,
    STRINGS,
    UNUSUAL_DATES,
)

JSON = dict[str, Any]
_OTHER_USER = "the-other-strategy-is-on-for-me"


def _flag(name: str, strategy: JSON) -> JSON:
    fallback = {"name": "userWithId", "parameters": {"userIds": _OTHER_USER}}
    return {"name": name, "enabled": True, "strategies": [strategy, fallback]}


def _constrained(constraint: JSON) -> JSON:
    return {"name": "default", "parameters": {}, "constraints": [constraint]}


def _differences(
    strategies: Sequence[JSON], contexts: Iterable[JSON]
) -> list[tuple[JSON, JSON, bool, bool]]:
    payload = {
        "version": 2,
        "features": [_flag(f"f{i}", strategy) for i, strategy in enumerate(strategies)],
    }
    wire = json.dumps(payload)
    reference = UnleashEngine()
    reference.take_state(wire)
    engine = Engine.from_client_features(json.loads(wire))
    found = []
    for context in contexts:
        for user in ("someone", _OTHER_USER):
            asked = {**context, "userId": user}
            for i, strategy in enumerate(strategies):
                theirs = reference.check_enabled(f"f{i}", asked).is_enabled
                ours = engine.is_enabled(f"f{i}", asked)
                if ours != theirs:
                    found.append((strategy, asked, ours, theirs))
    return found


def test_every_pattern_matches_every_text_as_in_unleash() -> None:
    strategies = [
        _constrained(
            {
                "contextName": "text",
                "operator": "REGEX",
                "value": pattern,
                "caseInsensitive": folded,
                "inverted": inverted,
            }
        )
        for pattern in REGEXES
        for folded in (False, True)
        for inverted in (False, True)
    ]
    texts = sorted({*REGEX_TEXTS, *STRINGS})
    found = _differences(strategies, ({"properties": {"text": text}} for text in texts))
    assert not found, found[:5]


def test_every_range_holds_every_address_as_in_unleash() -> None:
    constraints = [
        _constrained({"contextName": "remoteAddress", "operator": "IN_CIDR", "values": [cidr]})
        for cidr in CIDRS
    ]
    strategies = [{"name": "remoteAddress", "parameters": {"IPs": cidr}} for cidr in CIDRS]
    addresses = sorted({*IPS, *(cidr.partition("/")[0] for cidr in CIDRS)})
    found = _differences(
        [*constraints, *strategies], ({"remoteAddress": address} for address in addresses)
    )
    assert not found, found[:5]


_ORDINAL_OPERATORS = (
    "NUM_EQ",
    "NUM_LT",
    "NUM_GTE",
    "DATE_AFTER",
    "DATE_BEFORE",
    "SEMVER_EQ",
    "SEMVER_GT",
    "SEMVER_LTE",
)


@pytest.mark.parametrize("operator", _ORDINAL_OPERATORS)
def test_every_ordinal_value_compares_every_context_value_as_in_unleash(operator: str) -> None:
    values = sorted({*DATES[:8], *UNUSUAL_DATES[:6], *SEMVERS, *NUMBERS})
    strategies = [
        _constrained(
            {"contextName": "x", "operator": operator, "value": value, "inverted": inverted}
        )
        for value in values
        for inverted in (False, True)
    ]
    context_values = sorted({*DATES, *SEMVERS[:14], *NUMBERS[:16]})
    found = _differences(strategies, ({"properties": {"x": v}} for v in context_values))
    assert not found, found[:5]


def test_every_context_date_is_read_as_in_unleash() -> None:
    targets = ("2024-01-01T00:00:00Z", "2023-12-31T23:59:60Z", "0000-01-01T00:00:00Z")
    strategies = [
        _constrained({"contextName": "currentTime", "operator": operator, "value": target})
        for target in targets
        for operator in ("DATE_AFTER", "DATE_BEFORE", "NUM_EQ")
    ]
    found = _differences(strategies, ({"currentTime": date} for date in DATES))
    assert not found, found[:5]
