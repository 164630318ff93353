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

import copy
import datetime as dt
import functools
import socket
from collections.abc import Callable, Sequence
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
    "istanbul",
    "straße",
    "STRASSE",
    "ΣΑΣ",
    "σας",
    "a\nb",  # "$" and "^" differ across lines
    "abc\n",
    " pad ",
    "a" * 40 + "!",  # ^(a+)+$ would take hours to refuse with backtracking
    "a" * 40,
    "\u0663\u0664",  # Unicode digits: \d in Rust's dialect
    "\u00a0",  # Unicode white space
    "x_y-z",
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
    " 2024-01-01T00:00:00Z ",
    "2024-01-01T00:00:00\tZ",
    "٢٠٢٤-01-01T00:00:00Z",
    "junk",
    "",
)
# Unusual forms chrono reads (and some it refuses): contexts aim these at DATE constraints.
UNUSUAL_DATES = (
    "24-1-1T0:0:0Z",
    "0-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "+12024-01-01T00:00:00Z",
    "-0001-12-31T23:59:59Z",
    "2024-01-01T00:00:00.000000001Z",
    "2023-12-31T23:59:60Z",
    "2023-12-31T23:59:60.5Z",
    "2024-01-01 00:00:00 UTC",
    "2024-01-01T00:00:00 utc",
    "2024 - 01 - 01T00 : 00 : 00Z",
    "2024-01-01T02:00:00+02: 00",
    "2023-12-31T23:00:00\u221201:00",
    "2024-01-01T 00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2024-02-29T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T00:00:00+24:00",
    "12024-01-01T00:00:00Z",
    "\x1c2024-01-01T00:00:00Z",
    "\u30002024-01-01T00:00:00Z",
    # More digits than Python's int() reads (4,300): leading zeros are read, a year is not.
    "+" + "0" * 5000 + "2024-01-01T00:00:00Z",
    "+" + "1" * 5000 + "-01-01T00:00:00Z",
)
DATES = DATES + UNUSUAL_DATES
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
    "1.2.3junk",
    "1.0.0-alpha..1",
    "18446744073709551615.0.0",
    "1.0.0-",
    # More digits than Python's int() reads (4,300): a valid pre-release, an overflow.
    "1.0.0-1" + "0" * 5000,
    "1.0.0-" + "9" * 5000,
    "1.0." + "9" * 5000,
    "1.0.0-1" + "0" * 20,
    "1.0.0-" + "9" * 20,
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
    # Netmasks: IPv4 only, one bits contiguous.
    "10.0.0.0/255.0.0.0",
    "10.0.0.0/255.255.255.0",
    "10.0.0.0/255.255.0.0",
    "10.0.0.0/0.0.0.0",
    "10.0.0.0/255.0.255.0",
    "10.0.0.0/255.000.0.0",
    "2001:db8::/ffff:ffff::",
    "::1/255.0.0.0",
    "10.0.0.0/008",
    "10.0.0.0/8/8",
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
    "\\Qabc",
    "^\\w+$",
    "(?i)i",
    # Catastrophic for a backtracking engine; linear in Rust's and RE2.
    "^(a+)+$",
    "^(a|aa)+$",
    "(a*)*b",
    # Unicode shorthands, escapes and repetitions RE2 spells otherwise.
    "^\\d+$",
    "\\s",
    "^[\\w-]+$",
    "^\\W",
    "[^\\d]",
    "[a\\S]",
    "\\u0061",
    "\\U{62}",
    "x\\_y",
    "a**",
    "a*+",
    "a{2}{3}",
    "(?U)a+",
    "\\p{Greek}",
    "(?i)\\p{Lu}",
    # Rust refuses these; RE2 would read them.
    "\\p{^Greek}",
    "x{abc}",
    "a{,3}",
    "\\0",
    "\\C",
    "\\x{D800}",
    "(?i-)a",
    # Rust forms RE2 lacks, translated: verbose mode (white space and comments ignored,
    # scoped like any flag) and class set operations (nested classes, &&, --, ~~).
    "(?x) a b c ",
    "(?x)^a # a comment\n b$",
    "(?x:a b)c d",
    "a b(?x) c d",
    "(?x)a\\ b",
    "(?x)[a b]+$",
    "(?ix) A B C",
    "(?x)^a{1 2}$",
    "(?x)(?-x: )a",
    "(?x)(? :a)",
    "^a{ 2 }$",
    "^[a-z&&[^aeiou]]+$",
    "[a-y&&xyz]",
    "^[0-9--4]+$",
    "^[a-g~~b-h]+$",
    "[a&&b]",
    "^[a[0-9]]+$",
    "[^[^a]]",
    "[[:foo:]]",
    "^[\\pL--\\p{Greek}]+$",
    "[\\w&&\\d]",
    "^[^\\W]+$",
    "(?i)^[a-z--k]+$",
    "[\\p{Greek}&&\\p{Ll}]",
    "[z-a&&a]",
    "(?x)^a+ ?$",
    "(?x)^a{1} ?$",
    "(?x)^[[: alpha:]]+$",
    "a(?x)*",
    "[\\d-z]",
    "a\\\tb",
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
# yggdrasil 2.0.0 never matches a hostname; flagcore follows Unleash's documented rule, so
# only names that are not this machine's are drawn (docs/engine.md lists the difference).
HOSTNAMES = tuple(
    name for name in ("localhost", "other-host", "") if name.lower() != HOSTNAME.lower()
)
ROLLOUTS = ("0", "1", "33", "50", "99", "100")
ROLLOUTS_JUNK = ("101", "255", "256", "-1", " 50", "50.5", "1e2", "+50", "", "abc", "050")
GROUP_IDS = ("g1", "g2", "", "a b", "ünï")
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
CONTEXT_NAMES = (*TOP_LEVEL_POOLS, *PROPERTY_POOLS, "missing")
# Per operator family: the context fields whose values are of the right kind.
_TYPED_FIELDS: dict[str, tuple[str, ...]] = {
    "NUM": ("num",),
    "DATE": ("currentTime", "date"),
    "SEMVER": ("version",),
    "IN_CIDR": ("remoteAddress", "ip"),
}
_STRING_FIELDS = ("userId", "sessionId", "environment", "appName", "tenant", "email")


# ---------------------------------------------------------------------------------------
# Drawing economically. Shrinking time grows with the number of choices in an example, so
# most decisions are a single draw from a weighted tuple (a value repeated k times is k
# times as likely) whose first entry is the plainest choice, the one shrinking goes to.
# The strategies are built once, here: building them inside the composites costs more
# than the evaluation itself.

_ABSENT: Any = object()  # "leave the key out", as Unleash may


def _pool(field: str) -> Sequence[str]:
    return TOP_LEVEL_POOLS.get(field) or PROPERTY_POOLS.get(field) or STRINGS


def _weighted(*parts: tuple[Sequence[Any], int]) -> st.SearchStrategy[Any]:
    """One draw from the concatenation of ``parts``, each repeated its weight times."""
    return st.sampled_from(tuple(value for values, weight in parts for value in [*values] * weight))


def _set(draw: st.DrawFn, target: JSON, key: str, values: st.SearchStrategy[Any]) -> None:
    value = draw(values)
    if value is not _ABSENT:
        target[key] = copy.deepcopy(value)  # the pools' lists and dicts are shared


def _usually(values: Sequence[Any]) -> st.SearchStrategy[Any]:
    """Absent one time in five, else one of ``values``."""
    return _weighted(([_ABSENT], len(values)), (values, 4))


# A context value: usually from the field's own pool, else from any pool.
_FIELD_VALUES = {field: _weighted((_pool(field), 6), (ALL_VALUES, 1)) for field in CONTEXT_NAMES}
_STRING_ELEMENTS = {
    field: _weighted((FRAGMENTS, 4), (_pool(field), 4), (ALL_VALUES, 1)) for field in CONTEXT_NAMES
}


_RARELY = {n: st.integers(1, n) for n in (4, 10)}


def _rarely(draw: st.DrawFn, one_in: int) -> bool:
    """True once in ``one_in`` draws; shrinks to False, so minimal examples stay plain."""
    return draw(_RARELY[one_in]) == one_in


# ---------------------------------------------------------------------------------------
# Contexts

_TOP_LEVEL = tuple(TOP_LEVEL_POOLS)
_PROPERTIES = tuple(PROPERTY_POOLS)
# Which fields a context carries, as bits; one more bit sends an empty "properties".
_TOP_LEVEL_MASKS = st.integers(0, 2 ** len(_TOP_LEVEL) - 1)
_PROPERTY_MASKS = st.integers(0, 2 ** (len(_PROPERTIES) + 1) - 1)
# Now and then a standard field sent as a property (as some SDKs do), or a custom field
# sent at the top level instead of under "properties".
_MISPLACED = _weighted(
    ([None], 2 * (len(_TOP_LEVEL) + len(_PROPERTIES))),
    ([("properties", field) for field in _TOP_LEVEL], 1),
    ([("top", field) for field in _PROPERTIES], 1),
)


@st.composite
def contexts(draw: st.DrawFn) -> JSON:
    """An Unleash context in its wire form: camelCase, every value a string."""
    top, props = draw(_TOP_LEVEL_MASKS), draw(_PROPERTY_MASKS)
    context: JSON = {
        field: draw(_FIELD_VALUES[field]) for i, field in enumerate(_TOP_LEVEL) if top >> i & 1
    }
    properties = {
        field: draw(_FIELD_VALUES[field]) for i, field in enumerate(_PROPERTIES) if props >> i & 1
    }
    misplaced = draw(_MISPLACED)
    if misplaced is not None:
        where, field = misplaced
        (properties if where == "properties" else context)[field] = draw(_FIELD_VALUES[field])
    if properties or props >> len(_PROPERTIES):
        context["properties"] = properties
    return context


def _present_fields(context: JSON) -> frozenset[str]:
    # A standard field under "properties" counts: both engines read it there when it is
    # absent from the top level.
    properties = context.get("properties") or {}
    return frozenset({key for key in TOP_LEVEL_POOLS if key in context} | set(properties))


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

# Constraint values both engines accept: most constraints should be usable, since a
# constraint that cannot be read turns its whole flag off and hides everything else.
_WELL_FORMED: dict[str, Sequence[str]] = {
    "NUM": ("5", "0", "-0", "0.0", "1", "1.0", "+1", "12", "-1", "2.5", "1e3", "1000", "5."),
    "DATE": (
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00.000Z",
        "2024-01-01T00:00:00+00:00",
        "2024-01-01T01:00:00+01:00",
        "2023-12-31T23:59:59Z",
        "2024-01-01T00:00:00.001Z",
        "2020-06-15T12:00:00Z",
        "2099-01-01T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "2023-12-31T23:59:60Z",
        "9999-12-31T23:59:59.999+23:59",
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
    "REGEX": REGEXES,
}
_ANY_VALUE: dict[str, Sequence[str]] = {
    "NUM": NUMBERS,
    "DATE": DATES,
    "SEMVER": SEMVERS,
    "REGEX": REGEXES,
}
# A literal of another family: NUM_*, DATE_* and SEMVER_* compare by the value's look.
_CROSS_FAMILY: dict[str, Sequence[str]] = {
    "NUM": (*_WELL_FORMED["DATE"][:3], *_WELL_FORMED["SEMVER"][:4], "1.2.3junk"),
    "DATE": (*_WELL_FORMED["NUM"][:6], *_WELL_FORMED["SEMVER"][:4], "2024-01-01"),
    "SEMVER": (*_WELL_FORMED["NUM"], *_WELL_FORMED["DATE"][:3]),
    "REGEX": REGEXES,
}
# Mostly well formed; else anything of the family; now and then a literal of another
# family (a number for a date operator, a date for a semver one...).
_SINGLE_VALUES = {
    family: _weighted(
        (_WELL_FORMED[family], 700 // len(_WELL_FORMED[family])),
        (_ANY_VALUE[family], 250 // len(_ANY_VALUE[family])),
        (_CROSS_FAMILY[family], max(1, 100 // len(_CROSS_FAMILY[family]))),
    )
    for family in _ANY_VALUE
}
# The unknown operator (last) turns the whole flag off, so it comes up less often.
_OPERATORS = _weighted((OPERATORS[:-1], 3), (OPERATORS[-1:], 1))
_CONSTRAINT_FIELDS = {
    fields: _weighted((fields, 12 // len(fields)), (CONTEXT_NAMES, 1))
    for fields in (*_TYPED_FIELDS.values(), _STRING_FIELDS)
}
# Unleash sends single-value operators a "value"; older payloads carry "values".
_VALUE_SHAPES = _weighted((["value"], 12), (["values", "both", "value, values null"], 1))
_CIDR_ELEMENTS = st.sampled_from(CIDRS)
_LIST_SIZES = _weighted(([1], 3), ([2, 3], 2), ([0], 1))  # no values breaks STR_* and IN_CIDR
_INVERSIONS = st.sampled_from(
    [(inverted, folded) for inverted in (_ABSENT, False, True) for folded in (_ABSENT, False, True)]
)


@st.composite
def constraints(draw: st.DrawFn) -> JSON:
    operator = draw(_OPERATORS)
    family = next((prefix for prefix in _SINGLE_VALUES if operator.startswith(prefix)), "")
    typed = _TYPED_FIELDS.get(family) or _TYPED_FIELDS.get(operator) or _STRING_FIELDS
    context_name = draw(_CONSTRAINT_FIELDS[typed])
    constraint: JSON = {"contextName": context_name, "operator": operator}
    if family:
        value = draw(_SINGLE_VALUES[family])
        shape = draw(_VALUE_SHAPES)
        if shape != "values":
            constraint["value"] = value
        if shape in ("values", "both"):
            constraint["values"] = [value]
        elif shape == "value, values null":
            constraint["values"] = None
    else:
        if operator == "IN_CIDR":
            element = _CIDR_ELEMENTS
        elif operator.startswith("STR_"):
            element = _STRING_ELEMENTS[context_name]
        else:
            element = _FIELD_VALUES[context_name]
        constraint["values"] = [draw(element) for _ in range(draw(_LIST_SIZES))]
        if _rarely(draw, 10):
            constraint["value"] = draw(element)  # ignored by list operators
    inverted, folded = draw(_INVERSIONS)
    if inverted is not _ABSENT:
        constraint["inverted"] = inverted
    if folded is not _ABSENT:
        constraint["caseInsensitive"] = folded
    return constraint


_CONSTRAINTS = constraints()
# Mostly one constraint: with several, all must hold, and one that differs seldom shows.
_CONSTRAINT_COUNTS = _weighted(([0], 2), ([1], 3), ([2], 1))


def _constraint_list(draw: st.DrawFn) -> list[JSON]:
    return [draw(_CONSTRAINTS) for _ in range(draw(_CONSTRAINT_COUNTS))]


# Segments 1 and 2 usually exist, 3 seldom: strategies refer to all three (and to 99).
_SEGMENT_IDS = _weighted(([[]], 1), ([[1, 2]], 6), ([[1], [2], [1, 2, 3], [3]], 1))


@st.composite
def segments(draw: st.DrawFn) -> list[JSON]:
    return [
        {"id": segment_id, "name": f"segment-{segment_id}", "constraints": _constraint_list(draw)}
        for segment_id in draw(_SEGMENT_IDS)
    ]


_SEGMENT_LISTS = segments()

# ---------------------------------------------------------------------------------------
# Variants

_COUNTS = st.integers(0, 3)
_WEIGHTS = st.sampled_from(WEIGHTS)
_VARIANT_NAMES = st.sampled_from(VARIANT_NAMES)
_WEIGHT_TYPES = _usually(("variable", "fix"))
_PAYLOADS = _usually(PAYLOADS)
_PAYLOADS_OR_NULL = _usually((*PAYLOADS, None))
_VARIANT_STICKINESS = st.sampled_from(
    (None, "default", "userId", "sessionId", "tenant", "num", "random")
)
_OVERRIDE_FIELDS = st.sampled_from(CONTEXT_NAMES)
_OVERRIDE_SHAPES = _weighted(([_ABSENT, "list"], 2), (["empty list", "null"], 1))


def _weights(draw: st.DrawFn, count: int) -> list[int]:
    weights = [draw(_WEIGHTS) for _ in range(count)]
    # A list whose weights add up to 0 makes yggdrasil panic: not a reference answer.
    if weights and sum(weights) == 0:
        weights[-1] = 1
    return weights


def _overrides(draw: st.DrawFn) -> Any:
    shape = draw(_OVERRIDE_SHAPES)
    if shape is _ABSENT or shape == "null":
        return None if shape == "null" else _ABSENT
    out = []
    for _ in range(0 if shape == "empty list" else draw(_LIST_SIZES)):
        field = draw(_OVERRIDE_FIELDS)
        values = [draw(_FIELD_VALUES[field]) for _ in range(draw(_LIST_SIZES))]
        out.append({"contextName": field, "values": values})
    return out


def _feature_variants(draw: st.DrawFn, pinning: _Pinning) -> list[JSON]:
    count = draw(_COUNTS)
    stickiness = draw(_VARIANT_STICKINESS)
    if count >= 2 and not pinning.variants(stickiness):
        count = 1  # a single variant is picked whatever the hash says
    variants = []
    for weight in _weights(draw, count):
        variant: JSON = {"name": draw(_VARIANT_NAMES), "weight": weight}
        _set(draw, variant, "weightType", _WEIGHT_TYPES)
        if stickiness is not None:
            variant["stickiness"] = stickiness
        _set(draw, variant, "payload", _PAYLOADS_OR_NULL)
        overrides = _overrides(draw)
        if overrides is not _ABSENT:
            variant["overrides"] = overrides
        variants.append(variant)
    return variants


def _strategy_variants(draw: st.DrawFn, pinned: bool) -> list[JSON]:
    count = draw(_COUNTS)
    if count >= 2 and not pinned:
        count = 1
    variants = []
    for weight in _weights(draw, count):
        variant: JSON = {"name": draw(_VARIANT_NAMES), "weight": weight}
        _set(draw, variant, "weightType", _WEIGHT_TYPES)
        _set(draw, variant, "payload", _PAYLOADS)
        variants.append(variant)
    return variants


# ---------------------------------------------------------------------------------------
# Activation strategies

# Half of them "default", which is on unless its constraints say otherwise.
_STRATEGY_NAMES = _weighted((["default"], len(STRATEGY_NAMES)), (STRATEGY_NAMES, 1))
_PERCENTAGES = _weighted((ROLLOUTS, 2), (ROLLOUTS_JUNK, 1))
# Anything strictly between 0 and 100 is a coin toss where the hash is random.
_WHOLE_PERCENTAGES = st.sampled_from(
    tuple(p for p in (*ROLLOUTS, *ROLLOUTS_JUNK) if not _is_partial(p))
)
_GROUP_IDS = _usually(GROUP_IDS)
_ROLLOUT_STICKINESS = st.sampled_from(
    (None, "default", "userId", "sessionId", "tenant", "random", "")
)
_DEFAULT_STICKINESS = _weighted(([None], 3), (["default", "userId", "tenant"], 1))
_SEPARATORS = st.sampled_from((",", ", "))
_PARTS = {
    # Entries are trimmed of Unicode white space (NBSP), not of \x1c, as in Rust.
    "userIds": st.sampled_from((*USER_IDS, 'a"b', "\x1c1", "1\u00a0", "\u30007")),
    "IPs": st.sampled_from((*CIDRS, *IPS, "\x1c10.0.0.1", "10.0.0.0/8\u00a0")),
    "hostNames": st.sampled_from(HOSTNAMES),
}
_PART_COUNTS = _weighted(([_ABSENT], 1), ([1], 4), ([0, 2, 3], 1))
_SEGMENT_REFERENCES = _weighted(
    ([_ABSENT, []], 12), ([[1], [2], [1, 2]], 2), ([[3], [MISSING_SEGMENT_ID], None], 1)
)
_STRATEGY_VARIANTS = _weighted(([_ABSENT, "list"], 2), ([None], 1))
# Keys that Unleash's schema has and servers seldom send.
_QUIRKS = _weighted(
    ([None], 24),
    ([("constraints", None), ("disabled", False), ("disabled", True)], 1),
    ([("sortOrder", n) for n in (-1, 0, 1, 2)], 1),
)


def _join(draw: st.DrawFn, parameters: dict[str, str], key: str) -> None:
    count = draw(_PART_COUNTS)
    if count is not _ABSENT:
        parts = [draw(_PARTS[key]) for _ in range(count)]
        parameters[key] = draw(_SEPARATORS).join(parts)


@st.composite
def _activation_strategies(draw: st.DrawFn, pinning: _Pinning) -> JSON:
    name = draw(_STRATEGY_NAMES)
    parameters: dict[str, str] = {}
    stickiness: str | None = None
    if name == "userWithId":
        _join(draw, parameters, "userIds")
    elif name in ("gradualRolloutUserId", "gradualRolloutSessionId"):
        parameters["percentage"] = draw(_PERCENTAGES)
        _set(draw, parameters, "groupId", _GROUP_IDS)
    elif name == "gradualRolloutRandom":
        parameters["percentage"] = draw(_WHOLE_PERCENTAGES)
    elif name == "flexibleRollout":
        stickiness = draw(_ROLLOUT_STICKINESS)
        if stickiness is not None:
            parameters["stickiness"] = stickiness
        pinned = pinning.rollout(stickiness)
        parameters["rollout"] = draw(_PERCENTAGES if pinned else _WHOLE_PERCENTAGES)
        _set(draw, parameters, "groupId", _GROUP_IDS)
    elif name == "remoteAddress":
        _join(draw, parameters, "IPs")
    elif name == "applicationHostname":
        _join(draw, parameters, "hostNames")
    elif name == "myCustomStrategy":
        parameters["anything"] = "goes"
    else:
        # The default strategy ignores parameters; a stickiness here still steers variants.
        stickiness = draw(_DEFAULT_STICKINESS)
        if stickiness is not None:
            parameters["stickiness"] = stickiness
            _set(draw, parameters, "groupId", _GROUP_IDS)

    strategy: JSON = {"name": name, "parameters": parameters}
    if listed := _constraint_list(draw):
        strategy["constraints"] = listed
    _set(draw, strategy, "segments", _SEGMENT_REFERENCES)
    variants = draw(_STRATEGY_VARIANTS)
    if variants == "list":
        strategy["variants"] = _strategy_variants(draw, pinning.variants(stickiness))
    elif variants is None:
        strategy["variants"] = None  # null where a list is expected: same as none
    quirk = draw(_QUIRKS)
    if quirk is not None:
        key, value = quirk
        strategy[key] = value
    return strategy


# ---------------------------------------------------------------------------------------
# Flags and whole payloads

_FLAG_NAMES = ("f0", "f1", "f2", "f3")
_ODD_FLAG_NAMES = ("flåg.ünï", 'f"q', "f 2", "f-3")
# Parents are named whether or not a flag of that name is drawn: a missing parent is fine.
_PARENTS = st.sampled_from((*_FLAG_NAMES, *_ODD_FLAG_NAMES, "missing-parent"))
_DEPENDENCY_COUNTS = _weighted(([0], 3), ([1], 2), ([2], 1))
_DEPENDENCY_ENABLED = _weighted(([_ABSENT], 2), ([True, False], 4), ([None], 1))
_DEPENDENCY_VARIANTS = _weighted(
    ([_ABSENT], 4), ([[], ["a"], ["b"], ["a", "b"], ["disabled"]], 1), ([None], 1)
)
_ENABLED = _weighted(([True], 5), ([False], 1))


def _dependencies(draw: st.DrawFn) -> list[JSON]:
    out = []
    for _ in range(draw(_DEPENDENCY_COUNTS)):
        dependency: JSON = {"feature": draw(_PARENTS)}
        _set(draw, dependency, "enabled", _DEPENDENCY_ENABLED)
        _set(draw, dependency, "variants", _DEPENDENCY_VARIANTS)
        out.append(dependency)
    return out


@st.composite
def _flags(draw: st.DrawFn, pinning: _Pinning) -> JSON:
    return {
        "name": "",  # named by position, in scenarios()
        "type": "release",
        "enabled": draw(_ENABLED),
        "strategies": draw(_strategy_lists(pinning)),
        "variants": _feature_variants(draw, pinning),
        "dependencies": _dependencies(draw),
    }


@functools.cache
def _strategy_lists(pinning: _Pinning) -> st.SearchStrategy[list[JSON]]:
    return st.lists(_activation_strategies(pinning), max_size=3)


@functools.cache
def _flag_lists(pinning: _Pinning) -> st.SearchStrategy[list[JSON]]:
    return st.lists(_flags(pinning), min_size=1, max_size=len(_FLAG_NAMES))


_CONTEXT_LISTS = st.lists(contexts(), min_size=1, max_size=3)


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
    drawn = tuple(draw(_CONTEXT_LISTS))
    pinning = _Pinning(frozenset.intersection(*(_present_fields(c) for c in drawn)))
    features = draw(_flag_lists(pinning))
    names = _ODD_FLAG_NAMES if _rarely(draw, 4) else _FLAG_NAMES
    for name, flag in zip(names, features, strict=False):
        flag["name"] = name
    payload: JSON = {"version": 2, "features": features, "segments": draw(_SEGMENT_LISTS)}
    return Scenario(payload, drawn + _aimed_contexts(draw, payload, drawn))


_UNTYPED_OPERATORS = frozenset(
    {"IN", "NOT_IN", "STR_CONTAINS", "STR_STARTS_WITH", "STR_ENDS_WITH", "NOT_A_REAL_OPERATOR"}
)
_AIMED_COUNTS = _weighted(([0], 1), ([1], 1), ([2], 1), ([3], 1))
# Texts on which Rust's regex dialect and a naive translation part ways (Unicode classes,
# case folding, escapes, long runs for catastrophic patterns).
REGEX_TEXTS = (
    "straße",
    "ünï-1",
    "ΣΑΣ",
    "σας",
    "αβγ",
    "\u0663\u0664",
    "\u00a0",
    "a\u3000b",
    "a" * 40 + "!",
    "a" * 40,
    "aaab",
    "x_y-z",
    "xaaay",
    "AB",
    "ab",
    "x{abc}",
    "\\",
    # For verbose patterns and class set operations (U+212A is the Kelvin sign, U+017F a
    # long s: both fold to ASCII letters).
    "a b c",
    "abc",
    "aaaaaaaaaaaa",
    "bcdf",
    "k",
    "\u212a",
    "\u017f",
    "xyz",
    "ω",
    "4",
    "0123",
    ":pal",
    "a\tb",
)
# Values to aim at a constraint of each family, from that family's whole pool.
_AIMED_VALUES = {
    # Each ordinal family may compare any of the three kinds (by the value's look).
    "NUM": st.sampled_from((*NUMBERS, *SEMVERS[:12], *DATES[:6])),
    "DATE": _weighted((DATES, 1), (UNUSUAL_DATES, 2), ((*NUMBERS[:8], *SEMVERS[:6]), 1)),
    "SEMVER": st.sampled_from((*SEMVERS, *NUMBERS[:12], *DATES[:4])),
    "REGEX": _weighted(((*STRINGS, *EMAILS), 1), (REGEX_TEXTS, 4)),
    "IN_CIDR": st.sampled_from(IPS),
}
# An address from a range: itself, or its last IPv4 octet changed (in or out of the range).
_NEIGHBOURS: st.SearchStrategy[Callable[[str], str]] = st.sampled_from(
    (str, lambda address: address.rpartition(".")[0] + ".77" if "." in address else address)
)
# A STR_* constraint's own value, as is or changed so that only case folding matches it.
_STRING_TWISTS: st.SearchStrategy[Callable[[str], str]] = st.sampled_from(
    (str, str.upper, str.lower, str.swapcase, "x{}".format, "{}x".format, "{0}{0}".format)
)


def _aimed_contexts(draw: st.DrawFn, payload: JSON, drawn: Sequence[JSON]) -> tuple[JSON, ...]:
    """Copies of drawn contexts with the field of one of the payload's constraints set.

    Random contexts seldom carry the one value that tells two parsers apart; these aim a
    value of the constraint's own kind at it. A copy only adds or changes a field, so
    every field the drawn contexts all carry (see `_Pinning`) is still there.
    """
    targets = [c for segment in payload["segments"] for c in segment["constraints"]]
    for flag in payload["features"]:
        for strategy in flag["strategies"]:
            targets.extend(strategy.get("constraints") or ())
            if strategy["name"] == "remoteAddress" and strategy["parameters"].get("IPs"):
                # The strategy's ranges, aimed at like an IN_CIDR constraint's.
                ranges = [part.strip() for part in strategy["parameters"]["IPs"].split(",")]
                targets.append(
                    {"operator": "IN_CIDR", "contextName": "remoteAddress", "values": ranges}
                )
    # Typed constraints (dates, versions, numbers, patterns, ranges) three times as often:
    # their parsers are where two engines part ways.
    targets += [t for t in targets if t["operator"] not in _UNTYPED_OPERATORS] * 2
    aimed: list[JSON] = []
    for _ in range(draw(_AIMED_COUNTS) if targets else 0):
        context = copy.deepcopy(drawn[draw(st.integers(0, len(drawn) - 1))])
        target = targets[draw(st.integers(0, len(targets) - 1))]
        operator, field = target["operator"], target["contextName"]
        family = next((f for f in _AIMED_VALUES if operator.startswith(f)), None)
        if family == "IN_CIDR" and target.get("values") and draw(st.booleans()):
            # A range's own address (or one next to it) is inside it, whatever its notation.
            chosen = target["values"][draw(st.integers(0, len(target["values"]) - 1))]
            value = draw(_NEIGHBOURS)(chosen.partition("/")[0])
        elif family is not None:
            value = draw(_AIMED_VALUES[family])
        elif target.get("values"):
            value = target["values"][draw(st.integers(0, len(target["values"]) - 1))]
            if operator.startswith("STR_"):
                value = draw(_STRING_TWISTS)(value)
        else:
            continue
        if field in TOP_LEVEL_POOLS:
            context[field] = value
        else:
            context.setdefault("properties", {})[field] = value
        aimed.append(context)
    return tuple(aimed)
