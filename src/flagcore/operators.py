"""Constraint operators, each prepared once into a predicate over a `Context`.

Everything that can be parsed ahead of time is (value sets, lowered strings, numbers,
dates, semvers, regexes, networks), so evaluating a constraint is a field read and a
comparison. The rules match Unleash's engine:

* a missing context field fails the operator, and ``inverted`` negates the whole result
  (so a missing field satisfies an inverted constraint, and ``NOT_IN``);
* an operator that is unknown, or whose constraint value cannot be parsed, is false
  whatever ``inverted`` says: a broken rule never turns a flag on.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections.abc import Callable, Mapping

import semver

from flagcore.context import Context, context_value
from flagcore.model import Constraint
from flagcore.regex_dialect import UnsupportedPattern, compile_rust_pattern

__all__ = [
    "OPERATORS",
    "FieldReader",
    "Predicate",
    "compile_constraint",
    "field_reader",
    "parse_date",
    "parse_number",
]

Predicate = Callable[[Context], bool]
FieldReader = Callable[[Context], "str | None"]
_ValueTest = Callable[[str], bool]

_TOP_LEVEL_FIELDS = {
    "userId": "user_id",
    "sessionId": "session_id",
    "remoteAddress": "remote_address",
    "environment": "environment",
    "appName": "app_name",
    "currentTime": "current_time",
}


def _never(_ctx: Context) -> bool:
    return False


def field_reader(context_name: str) -> FieldReader:
    """A reader for one context field: top-level for Unleash's standard names, else a property."""
    attribute = _TOP_LEVEL_FIELDS.get(context_name)
    if attribute is not None:
        return _attribute_reader(attribute)

    def read_property(ctx: Context) -> str | None:
        properties = ctx.properties
        value = properties.get(context_name) if isinstance(properties, Mapping) else None
        return value if type(value) is str else context_value(value)

    return read_property


def _attribute_reader(attribute: str) -> FieldReader:
    def read(ctx: Context) -> str | None:
        value = getattr(ctx, attribute)
        return value if type(value) is str else context_value(value)

    return read


# Rust's f64 parser: optional sign, decimal or scientific notation, inf/infinity/nan;
# no surrounding spaces, no underscores, no hex (all of which Python's float() would take).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:inf|infinity|nan)")


def parse_number(text: str) -> float | None:
    if _NUMBER.fullmatch(text) is None:
        return None
    return float(text)


_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})",
)


def parse_date(text: str) -> dt.datetime | None:
    """RFC 3339 with an offset (as Unleash requires); naive or partial timestamps are refused."""
    if _RFC3339.fullmatch(text) is None:
        return None
    head, _, rest = text.replace("z", "Z").replace("t", "T").partition(".")
    if rest:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        # Python takes at most microseconds; Unleash truncates nanoseconds the same way.
        text = f"{head}.{rest[:digits][:6].ljust(6, '0')}{rest[digits:]}"
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_semver(text: str) -> semver.Version | None:
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        return None


def _in(constraint: Constraint) -> _ValueTest | None:
    values = frozenset(constraint.values)
    return values.__contains__


def _not_in(constraint: Constraint) -> _ValueTest | None:
    values = frozenset(constraint.values)
    return lambda value: value not in values


def _string_operator(kind: str) -> Callable[[Constraint], _ValueTest | None]:
    def prepare(constraint: Constraint) -> _ValueTest | None:
        fold = constraint.case_insensitive
        values = tuple(v.lower() for v in constraint.values) if fold else constraint.values
        if kind == "starts":
            return (
                (lambda v: v.lower().startswith(values))
                if fold
                else (lambda v: v.startswith(values))
            )
        if kind == "ends":
            return (
                (lambda v: v.lower().endswith(values)) if fold else (lambda v: v.endswith(values))
            )

        def contains(value: str) -> bool:
            value = value.lower() if fold else value
            return any(needle in value for needle in values)

        return contains

    return prepare


def _single_value(constraint: Constraint) -> str | None:
    if constraint.value is not None:
        return constraint.value
    return constraint.values[0] if len(constraint.values) == 1 else None


def _number_operator(
    compare: Callable[[float, float], bool],
) -> Callable[[Constraint], _ValueTest | None]:
    def prepare(constraint: Constraint) -> _ValueTest | None:
        raw = _single_value(constraint)
        target = parse_number(raw) if raw is not None else None
        if target is None:
            return None

        def test(value: str) -> bool:
            number = parse_number(value)
            return number is not None and compare(number, target)

        return test

    return prepare


def _date_operator(after: bool) -> Callable[[Constraint], _ValueTest | None]:
    def prepare(constraint: Constraint) -> _ValueTest | None:
        raw = _single_value(constraint)
        target = parse_date(raw) if raw is not None else None
        if target is None:
            return None

        def test(value: str) -> bool:
            moment = parse_date(value)
            if moment is None:
                return False
            return moment > target if after else moment < target

        return test

    return prepare


def _semver_operator(compare: Callable[[int], bool]) -> Callable[[Constraint], _ValueTest | None]:
    def prepare(constraint: Constraint) -> _ValueTest | None:
        raw = _single_value(constraint)
        target = parse_semver(raw) if raw is not None else None
        if target is None:
            return None

        def test(value: str) -> bool:
            version = parse_semver(value)
            return version is not None and compare(version.compare(target))

        return test

    return prepare


def _regex(constraint: Constraint) -> _ValueTest | None:
    raw = _single_value(constraint)
    if raw is None:
        return None
    try:
        pattern = compile_rust_pattern(raw, case_insensitive=constraint.case_insensitive)
    except UnsupportedPattern:
        return None
    search = pattern.search
    return lambda value: search(value) is not None


def _in_cidr(constraint: Constraint) -> _ValueTest | None:
    networks = []
    for raw in constraint.values:
        try:
            networks.append(ipaddress.ip_network(raw.strip(), strict=False))
        except ValueError:
            continue  # Unleash skips entries it cannot read

    def test(value: str) -> bool:
        try:
            address = ipaddress.ip_address(value.strip())
        except ValueError:
            return False
        return any(address in network for network in networks)

    return test


OPERATORS: Mapping[str, Callable[[Constraint], _ValueTest | None]] = {
    "IN": _in,
    "NOT_IN": _not_in,
    "STR_CONTAINS": _string_operator("contains"),
    "STR_STARTS_WITH": _string_operator("starts"),
    "STR_ENDS_WITH": _string_operator("ends"),
    "NUM_EQ": _number_operator(lambda a, b: a == b),
    "NUM_GT": _number_operator(lambda a, b: a > b),
    "NUM_GTE": _number_operator(lambda a, b: a >= b),
    "NUM_LT": _number_operator(lambda a, b: a < b),
    "NUM_LTE": _number_operator(lambda a, b: a <= b),
    "DATE_AFTER": _date_operator(after=True),
    "DATE_BEFORE": _date_operator(after=False),
    "SEMVER_EQ": _semver_operator(lambda c: c == 0),
    "SEMVER_GT": _semver_operator(lambda c: c > 0),
    "SEMVER_GTE": _semver_operator(lambda c: c >= 0),
    "SEMVER_LT": _semver_operator(lambda c: c < 0),
    "SEMVER_LTE": _semver_operator(lambda c: c <= 0),
    "REGEX": _regex,
    "IN_CIDR": _in_cidr,
}
_MISSING_IS_TRUE = frozenset({"NOT_IN"})


def compile_constraint(
    constraint: Constraint, *, now: Callable[[], str] | None = None
) -> Predicate:
    """Prepare ``constraint`` into a predicate; an unusable constraint becomes always-false."""
    prepare = OPERATORS.get(constraint.operator)
    test = prepare(constraint) if prepare is not None else None
    if test is None:
        return _never
    read = field_reader(constraint.context_name)
    if constraint.operator.startswith("DATE_"):
        read = _with_default_now(read, now or _utc_now)
    missing = (constraint.operator in _MISSING_IS_TRUE) != constraint.inverted
    inverted = constraint.inverted

    def predicate(ctx: Context) -> bool:
        value = read(ctx)
        if value is None:
            return missing
        return test(value) != inverted

    return predicate


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _with_default_now(read: FieldReader, now: Callable[[], str]) -> FieldReader:
    def read_or_now(ctx: Context) -> str | None:
        value = read(ctx)
        return now() if value is None else value

    return read_or_now
