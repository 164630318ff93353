"""Dates read exactly as Unleash's engine reads them, as comparable instants.

yggdrasil reads a context's ``currentTime`` (and any date a rule compares) with chrono's
``DateTime<Utc>::from_str``: a relaxed RFC 3339 that takes unpadded fields, years of one
to four digits (and any number with a sign, negative too), ``t``/``T``/space between date
and time, spaces between the parts, any number of fraction digits (nanoseconds kept),
``Z``/``z``/``UTC`` or an offset with or without a colon, and a leap second (``:60``).
Python's ``datetime`` takes neither years outside 1-9999 nor nanoseconds, so an instant
here is a `DateKey`: seconds since 1970 in UTC and the nanoseconds past them (1e9 and
more within a leap second, as chrono sorts it), ordered as chrono orders instants.

A DATE constraint's own value must first have the strict shape of Unleash's rule grammar
(four-digit year, two-digit fields, upper-case ``T``, none or three fraction digits, ``Z``
or ``±HH:MM``); chrono then reads it, so ``2024-02-30T00:00:00Z`` fits the shape and is
still refused.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

__all__ = ["RUST_WHITE_SPACE", "DateKey", "parse_chrono_date", "parse_rule_date"]

DateKey = tuple[int, int]
"""(seconds since 1970-01-01T00:00:00Z, nanoseconds past them); tuples order as instants."""

# Rust's char::is_whitespace (Unicode White_Space), which its str::trim strips too;
# Python's isspace and str.strip also take \x1c-\x1f.
RUST_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WHITE_SPACE = frozenset(RUST_WHITE_SPACE)
_DIGITS = frozenset("0123456789")
_MIN_YEAR, _MAX_YEAR = -262_144, 262_143  # chrono's NaiveDate range
_I32 = 2**31
_MAX_DIGITS = 18
_OUT_OF_RANGE = 10**_MAX_DIGITS  # larger than any year, month, day or fraction read
_DAY = 86_400
_NANOS = 1_000_000_000
_FRACTION_SCALE = (0, 10**8, 10**7, 10**6, 10**5, 10**4, 10**3, 100, 10, 1)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# The shape SDKs send (RFC 3339, upper-case T, up to nanoseconds), read by one match.
_CANONICAL = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(?:Z|([+-])([0-9]{2}):([0-5][0-9]))"
)
# Within _CANONICAL, what fromisoformat reads exactly as chrono does.
_ISO_SHAPE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"
    r"(?:Z|[+-][0-9]{2}:[0-5][0-9])"
)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_NO_OFFSET = dt.timedelta(0)
# Unleash's rule grammar for a date literal (strategy_grammar.pest), blanks around it.
_RULE_DATE = re.compile(
    r"[ \t]*([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2}))[ \t]*"
)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (any year)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


# chrono's first and last instants: dates beyond them do not parse.
_FIRST_SECOND = _days_from_civil(_MIN_YEAR, 1, 1) * _DAY
_LAST_SECOND = _days_from_civil(_MAX_YEAR, 12, 31) * _DAY + _DAY - 1


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _instant(
    year: int, month: int, day: int, hour: int, minute: int, second: int, nanos: int, offset: int
) -> DateKey | None:
    """The instant of a parsed date, or None where chrono refuses it (a day 30 in
    February, hour 24, an offset of a day or more, a year out of its range)."""
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59):
        return None
    if second > 60 or abs(offset) >= _DAY or not _MIN_YEAR <= year <= _MAX_YEAR:
        return None
    month_days = 29 if month == 2 and _is_leap(year) else _MONTH_DAYS[month - 1]
    if day > month_days:
        return None
    if second == 60:  # a leap second: chrono keeps :59 and counts 1e9 ns more
        second, nanos = 59, nanos + _NANOS
    seconds = _days_from_civil(year, month, day) * _DAY + hour * 3600 + minute * 60 + second
    seconds -= offset
    if not _FIRST_SECOND <= seconds <= _LAST_SECOND:
        return None
    return seconds, nanos


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITE_SPACE:
        i += 1
    return i


def _number(text: str, i: int, most: int) -> tuple[int, int] | None:
    """At least one and at most ``most`` ASCII digits at ``i``: (value, index after).

    Leading zeros are read (chrono reads ``+000…2024`` as 2024); a number of more than
    18 other digits, beyond every range read here, is `_OUT_OF_RANGE` (int() refuses
    more than 4,300 digits, and a context's date must never make evaluation raise)."""
    end = i
    while end < len(text) and end - i < most and text[end] in _DIGITS:
        end += 1
    if end == i:
        return None
    digits = text[i:end].lstrip("0")
    return (int(digits or "0") if len(digits) <= _MAX_DIGITS else _OUT_OF_RANGE), end


class _Reader:
    """chrono's parse_rfc3339_relaxed, step by step; `None` from any step means refused."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def field(self, most: int) -> int | None:
        self.i = _skip_space(self.text, self.i)  # chrono trims before every number
        read = _number(self.text, self.i, most)
        if read is None:
            return None
        value, self.i = read
        return value

    def year(self) -> int | None:
        self.i = _skip_space(self.text, self.i)
        sign = self.text[self.i : self.i + 1]
        if sign not in ("-", "+"):
            return self.field(4)  # without a sign, at most four digits
        self.i += 1
        read = _number(self.text, self.i, len(self.text))
        if read is None:
            return None
        value, self.i = read
        value = -value if sign == "-" else value
        return value if -_I32 <= value < _I32 else None

    def literal(self, char: str) -> bool:
        self.i = _skip_space(self.text, self.i)  # an Item::Space before each separator
        if self.text.startswith(char, self.i):
            self.i += 1
            return True
        return False

    def fraction(self) -> int | None:
        if not self.text.startswith(".", self.i):
            return 0
        start = self.i + 1
        read = _number(self.text, start, 9)
        if read is None:
            return None
        value, end = read
        value *= _FRACTION_SCALE[end - start]
        while end < len(self.text) and self.text[end] in _DIGITS:
            end += 1  # digits past nanoseconds are skipped
        self.i = end
        return value

    def offset(self) -> int | None:
        text = self.text
        self.i = _skip_space(text, self.i)
        if text[self.i : self.i + 3].lower() == "utc" and text[self.i : self.i + 3].isascii():
            self.i += 3
            return 0
        if text[self.i : self.i + 1] in ("Z", "z"):
            self.i += 1
            return 0
        sign = text[self.i : self.i + 1]
        if sign not in ("+", "-", "\u2212"):
            return None
        hours = text[self.i + 1 : self.i + 3]
        if len(hours) != 2 or not (hours[0] in _DIGITS and hours[1] in _DIGITS):
            return None
        i = self.i + 3
        while i < len(text) and (text[i] == ":" or text[i] in _WHITE_SPACE):
            i += 1  # chrono's colon_or_space: any run of colons and spaces
        minutes = text[i : i + 2]
        if len(minutes) != 2 or minutes[0] not in "012345" or minutes[1] not in _DIGITS:
            return None
        self.i = i + 2
        seconds = int(hours) * 3600 + int(minutes) * 60
        return -seconds if sign != "+" else seconds


def _relaxed(text: str) -> DateKey | None:
    r = _Reader(text)
    year = r.year()
    if year is None or not r.literal("-"):
        return None
    month = r.field(2)
    if month is None or not r.literal("-"):
        return None
    day = r.field(2)
    if day is None or text[r.i : r.i + 1] not in ("T", "t", " "):
        return None
    r.i += 1
    hour = r.field(2)
    if hour is None or not r.literal(":"):
        return None
    minute = r.field(2)
    if minute is None or not r.literal(":"):
        return None
    second = r.field(2)
    if second is None:
        return None
    nanos = r.fraction()
    if nanos is None:
        return None
    offset = r.offset()
    if offset is None or _skip_space(text, r.i) != len(text):
        return None
    return _instant(year, month, day, hour, minute, second, nanos, offset)


def _from_isoformat(text: str) -> DateKey | None:
    """The usual SDK shape (years 1-9999, up to microseconds, no leap second), read by
    Python's C parser: twice as quick as the groups of `_CANONICAL`, and every request
    brings a new ``currentTime``. None when it does not apply (year 0, offset ≥ 24 h, a
    day the month lacks): the general readers then decide."""
    if _ISO_SHAPE.fullmatch(text) is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = moment.utcoffset() or _NO_OFFSET
    seconds = (moment.toordinal() - _EPOCH_ORDINAL) * _DAY - offset.days * _DAY - offset.seconds
    seconds += moment.hour * 3600 + moment.minute * 60 + moment.second
    return seconds, moment.microsecond * 1000


@functools.lru_cache(maxsize=4096)
def parse_chrono_date(text: str) -> DateKey | None:
    """A context's date as Unleash's engine reads it, or None if it does not."""
    quick = _from_isoformat(text)
    if quick is not None:
        return quick
    canonical = _CANONICAL.fullmatch(text)
    if canonical is None:
        return _relaxed(text)
    year, month, day, hour, minute, second, fraction, sign, zone_h, zone_m = canonical.groups()
    offset = 0
    if sign is not None:
        offset = int(zone_h) * 3600 + int(zone_m) * 60
        if sign == "-":
            offset = -offset
    nanos = int(fraction) * _FRACTION_SCALE[len(fraction)] if fraction else 0
    return _instant(
        int(year), int(month), int(day), int(hour), int(minute), int(second), nanos, offset
    )


@functools.lru_cache(maxsize=4096)
def parse_rule_date(text: str) -> DateKey | None:
    """A date literal in a rule: None unless it has the grammar's shape and chrono reads it."""
    match = _RULE_DATE.fullmatch(text)
    return parse_chrono_date(match.group(1)) if match else None
