"""Hypothesis strategies: random Unleash client-features payloads and the contexts to ask.

One `Scenario` is a payload with a handful of flags and segments plus a few contexts; every
flag is evaluated against every context. Values come from small pools in which the
constraint side and the context side overlap, so constraints really do match (and only
just miss: equal numbers and dates, pre-release semvers, CIDR edges, case variants).

The contexts are drawn first. Where yggdrasil deliberately answers at random, the flags are
generated so that the randomness cannot show for *any* of the drawn contexts (see
`_Pinning`); everything else is fair game, junk included.
"""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = ["HOSTNAME", "Scenario", "contexts", "scenarios"]

JSON = dict[str, Any]

HOSTNAME = socket.gethostname()

# ---------------------------------------------------------------------------------------
# Value pools. Context fields and constraint values draw from the same pools.

USER_IDS = ("", "1", "2", "7", "42", "123", "alice", "Alice", "bob", "user-7", " 1", "1 ", "ü")
SESSION_IDS = ("", "s1", "s2", "abc", "1", "42")
ENVIRONMENTS = ("prod", "Prod", "PROD", "dev", "staging", "")
APP_NAMES = ("web", "Web", "ios", "")
STRINGS = (
    "",
    "a",
    "A",
    "abc",
    "ABC",
    "acme",
    "Acme",
    "ACME",
    "acme-corp",
    "x,y",
    '"q"',
    "back\\slash",
    "trail\\",
    "İstanbul",
    "istanbul",
    "straße",
    "STRASSE",
    "ΣΑΣ",
    "σας",
    "ı",
    "e\u0301",
    "½",
    " pad ",
)
EMAILS = ("bob@example.com", "BOB@Example.COM", "alice@test.org", "@example.com", "example.com")
NUMBERS = (
    "0",
    "-0",
    "0.0",
    "1",
    "1.0",
    "+1",
    "5",
    " 5",
    "5 ",
    "-1",
    "2.5",
    "12",
    "1e3",
    "1E3",
    "1000",
    ".5",
    "5.",
    "abc",
    "",
    "1e-20",
    "inf",
    "-inf",
    "NaN",
    "0x10",
    "1_000",
    "9007199254740993",
    "1e400",
)
DATES = (
    "2024-01-01T00:00:00Z",
    "2024-01-01T00:00:00.000Z",
    "2024-01-01T00:00:00+00:00",
    "2024-01-01T01:00:00+01:00",
    "2023-12-31T23:59:59Z",
    "2024-01-01T00:00:00.001Z",
    "2024-01-01T00:00:00.123456789Z",
    "2024-01-01T00:00:00.1234567Z",
    "2024-01-01 00:00:00Z",
    "2024-01-01t00:00:00z",
    "2024-01-01T00:00:00",
    "2024-01-01",
    "2024-01-01T00:00:00+0100",
    "2020-06-15T12:00:00Z",
    "2099-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "2024-01-01T00:00:00.000000001Z",
    " 2024-01-01T00:00:00Z ",
    "2024-01-01T00:00:00\tZ",
    "٢٠٢٤-01-01T00:00:00Z",
    "junk",
    "",
)
SEMVERS = (
    "1.0.0",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0-0",
    "1.0.0+build.1",
    "1.0.0-alpha+001",
    "1.2.3",
    "2.0.0",
    "0.0.1",
    "10.0.0",
    "1.2",
    "1",
    "1.0",
    "18446744073709551616.0.0",
    " v1.0.0",
    "v1.0.0",
    "01.0.0",
    "1.0.0-01",
    " 1.0.0",
    "1.0.0 ",
    "junk",
    "",
)
IPS = (
    "10.0.0.1",
    "10.0.0.255",
    "10.1.2.3",
    "192.168.1.1",
    "127.0.0.1",
    "::1",
    "2001:db8::1",
    "::ffff:10.0.0.1",
    "fe80::1%eth0",
    " 10.0.0.1",
    "10.0.0.1 ",
    "256.1.1.1",
    "010.0.0.1",
    "junk",
    "",
)
CIDRS = (
    "10.0.0.0/8",
    "10.0.0.0/24",
    "10.0.0.1",
    "10.0.0.1/8",
    "192.168.0.0/16",
    "127.0.0.1/32",
    "0.0.0.0/0",
    "::1",
    "::1/128",
    "2001:db8::/32",
    "::/0",
    " 10.0.0.0/8",
    "10.0.0.0/33",
    "10.0.0.0 / 8",
    "10.0.0.0/0.255.255.255",
    "10.0.0.0/+8",
    "::1%1/128",
    "junk",
    "",
)
# Rust's regex dialect: valid, valid-but-unlike-Python, and invalid patterns.
REGEXES = (
    "^a",
    "a$",
    "^abc$",
    "abc",
    "[0-9]+",
    "^\\d+$",
    "^[a-z]+$",
    "(?i)^acme",
    "^(?i)acme$",
    "acme|prod",
    "^$",
    "",
    ".*",
    "^.+$",
    "\\bbob\\b",
    "^\\w+@example\\.com$",
    "[[:alpha:]]+",
    "\\p{L}+",
    "\\d+$",
    "a\\z",
    "(?<n>ac)me",
    "(?P<n>ac)me",
    "\\x41",
    "\\x{41}",
    "[",
    "(",
    "a{2,1}",
    "(?=a)",
    "(a)\\1",
    "*",
    "a**",
    "(?x) a b c",
    "\\Qabc",
    "^\\w+$",
    "\\B",
    "(?i)i",
    "(?-u)\\w",
    "(?U)a+",
    "[a-z&&[^c]]",
    "\\pL",
)
# Substrings, prefixes, suffixes and case variants for the STR_* operators.
FRAGMENTS = (
    "",
    "a",
    "A",
    "ac",
    "AC",
    "me",
    "ME",
    "prod",
    "PROD",
    "@example.com",
    "@EXAMPLE.COM",
    "ß",
    "SS",
    "İ",
    "i̇",
    "σ",
    "Σ",
    "1",
    "10.",
    "2024",
    str(dt.datetime.now(dt.UTC).year),  # a missing currentTime reads as now
    "-",
    "T",
    "Z",
    "+00:00",
    ":00",
)
HOSTNAMES = (HOSTNAME, HOSTNAME.upper(), f" {HOSTNAME}", "localhost", "other-host", "")
ROLLOUTS = ("0", "1", "33", "50", "99", "100")
ROLLOUTS_JUNK = ("101", "255", "256", "-1", " 50", "50.5", "1e2", "+50", "", "abc", "050")
GROUP_IDS = ("g1", "g2", "", "a b", 'g"q', "ünï")
VARIANT_NAMES = ("a", "b", "c", "disabled", "ünï")
PAYLOADS = (
    {"type": "string", "value": "s"},
    {"type": "json", "value": '{"k": 1}'},
    {"type": "csv", "value": "a,b"},
    {"type": "number", "value": "42"},
)
WEIGHTS = (0, 1, 33, 50, 100, 1000)
SEGMENT_IDS = (1, 2, 3)
MISSING_SEGMENT_ID = 99
OPERATORS = (
    "IN",
    "NOT_IN",
    "STR_CONTAINS",
    "STR_STARTS_WITH",
    "STR_ENDS_WITH",
    "NUM_EQ",
    "NUM_GT",
    "NUM_GTE",
    "NUM_LT",
    "NUM_LTE",
    "DATE_AFTER",
    "DATE_BEFORE",
    "SEMVER_EQ",
    "SEMVER_GT",
    "SEMVER_GTE",
    "SEMVER_LT",
    "SEMVER_LTE",
    "REGEX",
    "IN_CIDR",
    "NOT_A_REAL_OPERATOR",
)
STRATEGY_NAMES = (
    "default",
    "userWithId",
    "gradualRolloutUserId",
    "gradualRolloutSessionId",
    "gradualRolloutRandom",
    "flexibleRollout",
    "remoteAddress",
    "applicationHostname",
    "myCustomStrategy",
)

TOP_LEVEL_POOLS: dict[str, Sequence[str]] = {
    "userId": USER_IDS,
    "sessionId": SESSION_IDS,
    "remoteAddress": IPS,
    "environment": ENVIRONMENTS,
    "appName": APP_NAMES,
    "currentTime": DATES,
}
PROPERTY_POOLS: dict[str, Sequence[str]] = {
    "tenant": STRINGS,
    "email": EMAILS,
    "num": NUMBERS,
    "version": SEMVERS,
    "date": DATES,
    "ip": IPS,
}
ALL_VALUES = tuple(
    sorted(
        {value for pool in (*TOP_LEVEL_POOLS.values(), *PROPERTY_POOLS.values()) for value in pool}
    )
)
# Context names a constraint may read, including ones that no context ever carries.
CONTEXT_NAMES = (*TOP_LEVEL_POOLS, *PROPERTY_POOLS, "missing", 'odd"name')
# Per operator family: the context fields whose values are of the right kind.
_TYPED_FIELDS: dict[str, tuple[str, ...]] = {
    "NUM": ("num",),
    "DATE": ("currentTime", "date"),
    "SEMVER": ("version",),
    "IN_CIDR": ("remoteAddress", "ip"),
}
_STRING_FIELDS = ("userId", "sessionId", "environment", "appName", "tenant", "email")


def _pool(field: str) -> Sequence[str]:
    return TOP_LEVEL_POOLS.get(field) or PROPERTY_POOLS.get(field) or STRINGS


def _field_value(field: str) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_pool(field)), st.sampled_from(ALL_VALUES))


def _maybe_key(draw: st.DrawFn, target: JSON, key: str, value: Any) -> None:
    """Set ``key`` most of the time; leave it out (as Unleash may) otherwise."""
    if draw(st.integers(0, 4)) > 0:
        target[key] = value


# ---------------------------------------------------------------------------------------
# Contexts


@st.composite
def contexts(draw: st.DrawFn) -> JSON:
    """An Unleash context in its wire form: camelCase, every value a string."""
    context: JSON = {}
    for field in TOP_LEVEL_POOLS:
        if draw(st.booleans()):
            context[field] = draw(_field_value(field))
    properties = {
        field: draw(_field_value(field)) for field in PROPERTY_POOLS if draw(st.booleans())
    }
    if draw(st.integers(0, 5)) == 0:
        # A standard field sent as a property, as some SDKs do.
        field = draw(st.sampled_from(tuple(TOP_LEVEL_POOLS)))
        properties[field] = draw(_field_value(field))
    if draw(st.integers(0, 5)) == 0:
        # A custom field sent at the top level instead of under "properties".
        field = draw(st.sampled_from(tuple(PROPERTY_POOLS)))
        context[field] = draw(_field_value(field))
    if properties or draw(st.booleans()):
        context["properties"] = properties
    return context


def _present_fields(context: JSON) -> set[str]:
    properties = context.get("properties") or {}
    return {key for key in TOP_LEVEL_POOLS if key in context} | set(properties)


@dataclass(frozen=True)
class _Pinning:
    """Which context fields every drawn context carries, so a hash over them is not random.

    yggdrasil falls back to a random number where the stickiness it hashes is missing:
    rollouts with ``default`` stickiness need userId or sessionId, variants with
    ``default`` stickiness need userId or sessionId (yggdrasil does not fall back to
    remoteAddress), variants on a custom field need that field; ``random`` is random.
    """

    present: frozenset[str]

    def rollout(self, stickiness: str | None) -> bool:
        if stickiness in (None, "", "default"):
            return bool(self.present & {"userId", "sessionId"})
        return stickiness != "random"

    def variants(self, stickiness: str | None) -> bool:
        if stickiness in (None, "default"):
            return bool(self.present & {"userId", "sessionId"})
        return stickiness != "random" and stickiness in self.present


def _is_partial(raw: str) -> bool:
    """Could either engine read ``raw`` as a percentage strictly between 0 and 100?"""
    readings: list[int] = []
    for read in (int, lambda text: int(float(text.strip()))):
        try:
            readings.append(read(raw))
        except (ValueError, OverflowError):
            continue
    return any(0 < reading < 100 for reading in readings)


# ---------------------------------------------------------------------------------------
# Constraints and segments


_SINGLE_VALUE_POOLS: dict[str, Sequence[str]] = {
    "NUM": NUMBERS,
    "DATE": DATES,
    "SEMVER": SEMVERS,
    "REGEX": REGEXES,
}

_ORDINAL_VALUES = (*NUMBERS, *DATES, *SEMVERS)
# Constraint values both engines accept: most constraints should be usable, since a
# constraint that cannot be read turns its whole flag off and hides everything else.
_WELL_FORMED: dict[str, Sequence[str]] = {
    "NUM": ("0", "-0", "0.0", "1", "1.0", "+1", "5", "12", "-1", "2.5", "1e3", "1000", "5."),
    "DATE": (
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00.000Z",
        "2024-01-01T00:00:00+00:00",
        "2024-01-01T01:00:00+01:00",
        "2023-12-31T23:59:59Z",
        "2024-01-01T00:00:00.001Z",
        "2020-06-15T12:00:00Z",
        "2099-01-01T00:00:00Z",
    ),
    "SEMVER": (
        "1.0.0",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0-0",
        "1.0.0+build.1",
        "1.2.3",
        "2.0.0",
        "0.0.1",
    ),
}


@st.composite
def constraints(draw: st.DrawFn) -> JSON:
    # The unknown operator (last) turns the whole flag off, so it comes up less often.
    operator = draw(st.sampled_from(OPERATORS[: -1 if draw(st.integers(0, 3)) else None]))
    family = next((prefix for prefix in _SINGLE_VALUE_POOLS if operator.startswith(prefix)), "")
    typed = _TYPED_FIELDS.get(family) or _TYPED_FIELDS.get(operator) or _STRING_FIELDS
    context_name = draw(st.one_of(st.sampled_from(typed), st.sampled_from(CONTEXT_NAMES)))
    constraint: JSON = {"contextName": context_name, "operator": operator}
    if family:
        pool = _SINGLE_VALUE_POOLS[family]
        dice = draw(st.integers(0, 9))
        if family != "REGEX" and dice == 0:
            pool = _ORDINAL_VALUES  # a number for a date operator, a date for a semver one...
        elif family in _WELL_FORMED and dice < 7:
            pool = _WELL_FORMED[family]
        value = draw(st.sampled_from(pool))
        # Unleash sends single-value operators a "value"; older payloads carry "values".
        shape = draw(st.sampled_from(("value",) * 8 + ("values", "both")))
        if shape in ("value", "both"):
            constraint["value"] = value
        if shape in ("values", "both"):
            constraint["values"] = [value]
    else:
        if operator == "IN_CIDR":
            element = st.sampled_from(CIDRS)
        elif operator.startswith("STR_"):
            element = st.one_of(st.sampled_from(FRAGMENTS), _field_value(context_name))
        else:
            element = _field_value(context_name)
        # An empty list breaks STR_* and IN_CIDR constraints: seldom.
        at_least = 0 if draw(st.integers(0, 5)) == 0 else 1
        constraint["values"] = draw(st.lists(element, min_size=at_least, max_size=3))
        if draw(st.integers(0, 9)) == 0:
            constraint["value"] = draw(element)  # ignored by list operators
    if "values" not in constraint and draw(st.integers(0, 9)) == 0:
        constraint["values"] = None
    _maybe_key(draw, constraint, "inverted", draw(st.booleans()))
    _maybe_key(draw, constraint, "caseInsensitive", draw(st.booleans()))
    return constraint


_constraint_lists = st.lists(constraints(), max_size=2)


@st.composite
def segments(draw: st.DrawFn) -> list[JSON]:
    # Segments 1 and 2 usually exist, 3 seldom: strategies refer to all three (and to 99).
    ids = [i for i in SEGMENT_IDS if draw(st.integers(0, 5 if i < 3 else 1)) > 0]
    return [
        {"id": segment_id, "name": f"segment-{segment_id}", "constraints": draw(_constraint_lists)}
        for segment_id in ids
    ]


# ---------------------------------------------------------------------------------------
# Variants


def _weights(draw: st.DrawFn, count: int) -> list[int]:
    weights = [draw(st.sampled_from(WEIGHTS)) for _ in range(count)]
    # A list whose weights add up to 0 makes yggdrasil panic: not a reference answer.
    if weights and sum(weights) == 0:
        weights[-1] = 1
    return weights


@st.composite
def _override(draw: st.DrawFn) -> JSON:
    field = draw(st.sampled_from(CONTEXT_NAMES))
    return {"contextName": field, "values": draw(st.lists(_field_value(field), max_size=3))}


_overrides = _override()


@st.composite
def feature_variants(draw: st.DrawFn, pinning: _Pinning) -> list[JSON]:
    count = draw(st.integers(0, 3))
    stickiness = draw(
        st.sampled_from((None, "default", "userId", "sessionId", "tenant", "num", "random"))
    )
    if count >= 2 and not pinning.variants(stickiness):
        count = 1  # a single variant is picked whatever the hash says
    variants = []
    for weight in _weights(draw, count):
        variant: JSON = {"name": draw(st.sampled_from(VARIANT_NAMES)), "weight": weight}
        _maybe_key(draw, variant, "weightType", draw(st.sampled_from(("variable", "fix"))))
        if stickiness is not None:
            variant["stickiness"] = stickiness
        _maybe_key(draw, variant, "payload", draw(st.sampled_from((*PAYLOADS, None))))
        overrides = draw(st.lists(_overrides, max_size=2))
        if overrides or draw(st.booleans()):
            variant["overrides"] = overrides
        elif draw(st.integers(0, 4)) == 0:
            variant["overrides"] = None
        variants.append(variant)
    return variants


@st.composite
def strategy_variants(draw: st.DrawFn, variant_pinned: bool) -> list[JSON]:
    count = draw(st.integers(0, 3))
    if count >= 2 and not variant_pinned:
        count = 1
    variants = []
    for weight in _weights(draw, count):
        variant: JSON = {"name": draw(st.sampled_from(VARIANT_NAMES)), "weight": weight}
        _maybe_key(draw, variant, "weightType", draw(st.sampled_from(("variable", "fix"))))
        _maybe_key(draw, variant, "payload", draw(st.sampled_from(PAYLOADS)))
        variants.append(variant)
    return variants


# ---------------------------------------------------------------------------------------
# Strategies


def _join(draw: st.DrawFn, pool: Sequence[str]) -> str:
    parts = draw(st.lists(st.sampled_from(pool), max_size=3))
    return draw(st.sampled_from((",", ", "))).join(parts)


@st.composite
def activation_strategies(draw: st.DrawFn, pinning: _Pinning) -> JSON:
    # Half of them "default", which is on unless its constraints say otherwise.
    name = draw(st.one_of(st.just("default"), st.sampled_from(STRATEGY_NAMES)))
    parameters: dict[str, str] = {}
    stickiness: str | None = None
    if name == "userWithId":
        _maybe_key(draw, parameters, "userIds", _join(draw, (*USER_IDS, 'a"b')))
    elif name in ("gradualRolloutUserId", "gradualRolloutSessionId"):
        parameters["percentage"] = draw(st.sampled_from((*ROLLOUTS, *ROLLOUTS_JUNK)))
        _maybe_key(draw, parameters, "groupId", draw(st.sampled_from(GROUP_IDS)))
    elif name == "gradualRolloutRandom":
        # Anything strictly between 0 and 100 is a coin toss in both engines.
        options = [p for p in (*ROLLOUTS, *ROLLOUTS_JUNK) if not _is_partial(p)]
        parameters["percentage"] = draw(st.sampled_from(options))
    elif name == "flexibleRollout":
        stickiness = draw(
            st.sampled_from((None, "default", "userId", "sessionId", "tenant", "random", ""))
        )
        if stickiness is not None:
            parameters["stickiness"] = stickiness
        options = [*ROLLOUTS, *ROLLOUTS_JUNK]
        if not pinning.rollout(stickiness):
            options = [p for p in options if not _is_partial(p)]
        parameters["rollout"] = draw(st.sampled_from(options))
        _maybe_key(draw, parameters, "groupId", draw(st.sampled_from(GROUP_IDS)))
    elif name == "remoteAddress":
        _maybe_key(draw, parameters, "IPs", _join(draw, (*CIDRS, *IPS)))
    elif name == "applicationHostname":
        _maybe_key(draw, parameters, "hostNames", _join(draw, HOSTNAMES))
    elif name == "myCustomStrategy":
        parameters["anything"] = "goes"
    else:
        # The default strategy ignores parameters; a stickiness here still steers variants.
        if draw(st.booleans()):
            stickiness = draw(st.sampled_from(("default", "userId", "tenant")))
            parameters["stickiness"] = stickiness
            _maybe_key(draw, parameters, "groupId", draw(st.sampled_from(GROUP_IDS)))

    strategy: JSON = {"name": name, "parameters": parameters}
    _maybe_key(draw, strategy, "constraints", draw(_constraint_lists))
    segment_ids = draw(st.sampled_from(([],) * 8 + ([1], [2], [1, 2], [3], [MISSING_SEGMENT_ID])))
    if segment_ids or draw(st.booleans()):
        strategy["segments"] = segment_ids
    if draw(st.booleans()):
        strategy["variants"] = draw(strategy_variants(pinning.variants(stickiness)))
    for key in ("constraints", "segments", "variants"):
        if not strategy.get(key, True) and draw(st.integers(0, 4)) == 0:
            strategy[key] = None  # null where a list is expected: same as empty
    if draw(st.integers(0, 9)) == 0:
        strategy["disabled"] = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:
        strategy["sortOrder"] = draw(st.integers(-1, 3))
    return strategy


# ---------------------------------------------------------------------------------------
# Flags and whole payloads


@st.composite
def dependencies(draw: st.DrawFn, names: Sequence[str]) -> list[JSON]:
    out = []
    for _ in range(draw(st.sampled_from((0, 0, 0, 1, 1, 2)))):
        dependency: JSON = {"feature": draw(st.sampled_from((*names, "missing-parent")))}
        _maybe_key(draw, dependency, "enabled", draw(st.booleans()))
        if draw(st.booleans()):
            dependency["variants"] = draw(st.lists(st.sampled_from(VARIANT_NAMES), max_size=2))
        elif draw(st.integers(0, 4)) == 0:
            dependency["variants"] = None
        out.append(dependency)
    return out


@st.composite
def flags(draw: st.DrawFn, name: str, names: Sequence[str], pinning: _Pinning) -> JSON:
    return {
        "name": name,
        "type": "release",
        "enabled": draw(st.integers(0, 5)) > 0,
        "strategies": draw(st.lists(activation_strategies(pinning), max_size=3)),
        "variants": draw(feature_variants(pinning)),
        "dependencies": draw(dependencies(names)),
    }


_FLAG_NAMES = ("f0", "f1", "f2", "f3", "f4", "flåg.ünï", "f-5")


@dataclass(frozen=True)
class Scenario:
    """A payload, the flags it defines, and the contexts to evaluate each of them against."""

    payload: JSON
    contexts: tuple[JSON, ...]

    @property
    def flag_names(self) -> tuple[str, ...]:
        return tuple(flag["name"] for flag in self.payload["features"])


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    drawn = tuple(draw(st.lists(contexts(), min_size=1, max_size=4)))
    present = frozenset.intersection(*(frozenset(_present_fields(c)) for c in drawn))
    pinning = _Pinning(present)
    count = draw(st.integers(1, 5))
    names = _FLAG_NAMES[:count] if draw(st.integers(0, 3)) else _FLAG_NAMES[-count:]
    payload: JSON = {
        "version": 2,
        "features": [draw(flags(name, names, pinning)) for name in names],
        "segments": draw(segments()),
    }
    return Scenario(payload, drawn)
