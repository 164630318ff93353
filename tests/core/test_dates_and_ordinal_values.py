"""Dates, numbers and versions in constraints are read as Unleash's engine reads them."""

from __future__ import annotations

from typing import Any

import pytest

from flagcore import Engine, Limits
from flagcore.date_reading import parse_chrono_date, parse_rule_date
from flagcore.errors import InvalidInput
from flagcore.model import Constraint
from flagcore.validation import check_constraints

_EPOCH_2024 = 1_704_067_200  # 2024-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("2024-01-01T00:00:00Z", (_EPOCH_2024, 0)),
        ("2024-01-01T01:00:00+01:00", (_EPOCH_2024, 0)),
        ("2024-1-1T0:0:0Z", (_EPOCH_2024, 0)),
        ("2024-01-01t00:00:00z", (_EPOCH_2024, 0)),
        ("2024-01-01 00:00:00 UTC", (_EPOCH_2024, 0)),
        ("  2024 - 01 - 01T00 : 00 : 00 Z ", (_EPOCH_2024, 0)),
        ("2024-01-01T02:00:00+0200", (_EPOCH_2024, 0)),
        ("2024-01-01T02:00:00+02: 00", (_EPOCH_2024, 0)),
        ("2023-12-31T23:00:00\u221201:00", (_EPOCH_2024, 0)),  # U+2212 MINUS SIGN
        ("2024-01-01T00:00:00.123456789Z", (_EPOCH_2024, 123_456_789)),
        ("2024-01-01T00:00:00.1234567891234Z", (_EPOCH_2024, 123_456_789)),
        ("2023-12-31T23:59:60.5Z", (_EPOCH_2024 - 1, 1_500_000_000)),  # a leap second
        ("0-01-01T00:00:00Z", (-62_167_219_200, 0)),  # years of fewer than four digits
        ("24-01-01T00:00:00Z", (-61_409_836_800, 0)),
        ("+12024-01-01T00:00:00Z", (317_273_587_200, 0)),
        ("2024-01-01T 00:00:00Z", (_EPOCH_2024, 0)),  # chrono trims before each number
        ("-0001-01-01T00:00:00Z", (-62_198_755_200, 0)),
    ],
)
def test_context_dates_read_as_chrono_reads_them(text: str, key: tuple[int, int]) -> None:
    assert parse_chrono_date(text) == key


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-01T24:00:00Z",
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:61Z",
        "2024-01-01T00:00:00+24:00",
        "2024-01-01T00:00:00+01:60",
        "2024-01-01T00:00:00",
        "2024-01-01",
        "12024-01-01T00:00:00Z",  # more than four digits need a sign
        "+262144-01-01T00:00:00Z",  # beyond chrono's range
        "2024-01-01T00:00:00.Z",
        "2024-01-01T00:00:00 GMT",
        "\x1c2024-01-01T00:00:00Z",  # whitespace to Python, not to Rust
        "٢٠٢٤-01-01T00:00:00Z",
    ],
)
def test_context_dates_chrono_refuses_are_not_dates(text: str) -> None:
    assert parse_chrono_date(text) is None


def test_a_rule_date_needs_the_grammar_shape_and_a_real_day() -> None:
    assert parse_rule_date(" 2024-01-01T00:00:00.000+00:00\t") == (_EPOCH_2024, 0)
    assert parse_rule_date("0000-01-01T00:00:00Z") == (-62_167_219_200, 0)
    for text in ("2024-02-30T00:00:00Z", "2024-1-1T00:00:00Z", "2024-01-01T00:00:00.12Z"):
        assert parse_rule_date(text) is None


def _flag(constraint: dict[str, Any], *, also_for_user: str | None = None) -> Engine:
    strategies: list[dict[str, Any]] = [{"name": "default", "constraints": [constraint]}]
    if also_for_user is not None:
        strategies.append({"name": "userWithId", "parameters": {"userIds": also_for_user}})
    flag = {"name": "f", "enabled": True, "strategies": strategies}
    return Engine.from_client_features({"version": 2, "features": [flag]})


def test_a_context_date_beyond_year_9999_is_after_every_rule_date() -> None:
    engine = _flag(
        {"contextName": "currentTime", "operator": "DATE_AFTER", "value": "9999-12-31T23:59:59Z"}
    )
    assert engine.is_enabled("f", {"currentTime": "+10000-01-01T00:00:00Z"})
    assert not engine.is_enabled("f", {"currentTime": "9999-12-31T23:59:59Z"})


def test_dates_differing_below_a_microsecond_compare_apart() -> None:
    engine = _flag(
        {"contextName": "currentTime", "operator": "DATE_AFTER", "value": "2024-01-01T00:00:00Z"}
    )
    assert engine.is_enabled("f", {"currentTime": "2024-01-01T00:00:00.000000001Z"})
    assert not engine.is_enabled("f", {"currentTime": "2024-01-01T00:00:00.000000000Z"})


@pytest.mark.parametrize(
    ("operator", "value", "context", "enabled"),
    [
        # The value's look decides what is compared, as in Unleash's rule grammar.
        ("SEMVER_EQ", "1.2", "1.2", True),  # numbers
        ("SEMVER_EQ", "1.2", "1.2.0", False),  # "1.2.0" is no number
        ("SEMVER_GT", "5", "10", True),
        ("NUM_GT", "1.2.3", "1.10.0", True),  # versions
        ("NUM_EQ", "2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", True),  # dates
        ("DATE_BEFORE", "2", "1", True),  # numbers
        ("DATE_AFTER", "1.0.0", "1.0.1", True),  # versions
    ],
)
def test_ordinal_constraints_compare_by_the_look_of_their_value(
    operator: str, value: str, context: str, enabled: bool
) -> None:
    engine = _flag({"contextName": "x", "operator": operator, "value": value})
    assert engine.is_enabled("f", {"properties": {"x": context}}) is enabled
    assert not engine.warnings


@pytest.mark.parametrize(
    ("operator", "value"),
    [
        ("SEMVER_EQ", "junk"),
        ("SEMVER_EQ", "01.0.0"),
        ("SEMVER_EQ", " v1.0.0"),
        ("SEMVER_EQ", "1.2.3junk"),
        ("NUM_EQ", "abc"),
        ("NUM_EQ", ""),
        ("NUM_EQ", "2024-01-01"),
        ("DATE_AFTER", "2024-02-30T00:00:00Z"),
        ("DATE_AFTER", "yesterday"),
    ],
)
@pytest.mark.parametrize("inverted", [False, True])
def test_an_ordinal_value_unleash_cannot_read_turns_the_whole_flag_off(
    operator: str, value: str, inverted: bool
) -> None:
    # Unleash's engine (yggdrasil 2.0.0) cannot compile the flag's rule text: every
    # strategy is off, the other strategy included, inverted or not.
    constraint = {"contextName": "x", "operator": operator, "value": value, "inverted": inverted}
    engine = _flag(constraint, also_for_user="u1")
    assert not engine.is_enabled("f", {"userId": "u1", "properties": {"x": "1.0.0"}})
    assert [warning.flag for warning in engine.warnings] == ["f"]


@pytest.mark.parametrize("inverted", [False, True])
def test_a_version_written_with_a_v_is_false_and_leaves_other_strategies_on(
    inverted: bool,
) -> None:
    constraint = {"contextName": "x", "operator": "SEMVER_EQ", "value": "v1.0.0"}
    engine = _flag({**constraint, "inverted": inverted}, also_for_user="u1")
    assert not engine.is_enabled("f", {"userId": "u2", "properties": {"x": "1.0.0"}})
    assert engine.is_enabled("f", {"userId": "u1", "properties": {"x": "1.0.0"}})


@pytest.mark.parametrize(
    ("operator", "value"),
    [
        ("SEMVER_EQ", "1.2"),
        ("SEMVER_GT", "v1.2.3"),
        ("NUM_EQ", "1.2.3"),
        ("NUM_GT", "2024-01-01T00:00:00Z"),
        ("DATE_AFTER", "5"),
        ("DATE_AFTER", "2024-02-30T00:00:00Z"),
        ("DATE_BEFORE", "2024-01-01"),
    ],
)
def test_the_admin_side_refuses_a_value_not_of_the_operators_own_type(
    operator: str, value: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        check_constraints([Constraint("x", operator, value=value)], Limits(), "$.constraints")
    assert raised.value.details[0].path == "$.constraints[0].value"
