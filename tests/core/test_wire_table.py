"""The wire table is the one source of Unleash's JSON keys: readers, writers and the
converter all follow it, and it cannot drift from the model."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from flagcore import wire
from flagcore.model import (
    Constraint,
    Dependency,
    Flag,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
    WeightType,
)
from flagcore.wire import fields, reading, writing

_VARIANT = Variant(
    "blue", 40, WeightType.FIX, "sessionId", Payload("json", "{}"), (Override("userId", ("u",)),)
)
_CONSTRAINT = Constraint("country", "STR_STARTS_WITH", ("N",), "x", True, True)
_FLAG = Flag(
    "everything",
    True,
    "experiment",
    "about",
    "web",
    True,
    True,
    (Strategy("default", {"a": "1"}, (_CONSTRAINT,), (3,), (_VARIANT,), True, "i", "t", 7),),
    (_VARIANT,),
    (Dependency("parent", False, ("blue",)),),
)
_SEGMENT = Segment(3, "beta", (_CONSTRAINT,), "about", "web")


def _keys_in_order(cls: type) -> list[str]:
    return [field.key for field in fields.FIELDS[cls]]


def test_every_model_attribute_has_exactly_one_row_in_the_table() -> None:
    for cls, rows in fields.FIELDS.items():
        assert [row.attribute for row in rows] == [f.name for f in attrs.fields(cls)], cls


def test_a_table_that_misses_or_misorders_an_attribute_fails_at_import() -> None:
    with pytest.raises(TypeError, match="does not match"):
        fields._table(Payload, ("type", fields.TYPE))  # "value" missing
    with pytest.raises(TypeError, match="does not match"):
        fields._table(Payload, ("value", fields.VALUE), ("type", fields.TYPE))


def test_the_table_carries_the_model_defaults_as_the_json_defaults() -> None:
    by_attribute = {row.attribute: row for row in fields.FIELDS[Variant]}
    assert by_attribute["name"].required
    assert by_attribute["weight_type"].default is WeightType.VARIABLE
    assert by_attribute["stickiness"].default == "default"
    assert by_attribute["overrides"].default == ()
    parameters = next(r for r in fields.FIELDS[Strategy] if r.attribute == "parameters")
    assert parameters.default == {}  # a factory's value, not the factory


@pytest.mark.parametrize(
    ("value", "write"),
    [(_FLAG, writing.write_flag), (_SEGMENT, writing.write_segment)],
    ids=["flag", "segment"],
)
def test_the_fast_writer_writes_the_table_keys_in_the_table_order(value: Any, write: Any) -> None:
    written = write(value)
    assert list(written) == _keys_in_order(type(value))
    assert written == wire.converter.unstructure(value)


def test_the_fast_writer_nests_every_class_with_its_own_table_keys() -> None:
    written = writing.write_flag(_FLAG)
    strategy = written["strategies"][0]
    assert list(strategy) == _keys_in_order(Strategy)
    assert list(strategy["constraints"][0]) == _keys_in_order(Constraint)
    assert list(written["variants"][0]) == _keys_in_order(Variant)
    assert list(written["variants"][0]["payload"]) == _keys_in_order(Payload)
    assert list(written["variants"][0]["overrides"][0]) == _keys_in_order(Override)
    assert list(written["dependencies"][0]) == _keys_in_order(Dependency)


def test_what_the_fast_writer_writes_both_readers_read_back_unchanged() -> None:
    data = writing.write_flag(_FLAG)
    assert reading.read_flag(data) == _FLAG
    assert wire.converter.structure(data, Flag) == _FLAG
    segment = writing.write_segment(_SEGMENT)
    assert reading.read_segment(segment) == _SEGMENT
    assert wire.converter.structure(segment, Segment) == _SEGMENT


def test_the_fast_reader_reads_null_and_absence_as_the_table_default() -> None:
    nulls: dict[str, Any] = {row.key: None for row in fields.FIELDS[Variant]}
    nulls["name"] = "v"
    absent = {"name": "v"}
    expected = Variant("v")
    assert reading.read_variants([nulls, absent]) == (expected, expected)
    assert wire.converter.structure(nulls, Variant) == expected


def test_the_fast_reader_leaves_a_wrongly_typed_field_to_the_converter() -> None:
    for bad in ({"name": "f", "impressionData": "yes"}, {"name": 1}, {"name": "f", "stale": 0}):
        with pytest.raises(reading.NotFast):
            reading.read_flag(bad)
    with pytest.raises(reading.NotFast):
        reading.read_variants([{"name": "v", "weightType": "heavy"}])
    with pytest.raises(reading.NotFast):
        reading.read_segment({"id": 1, "name": "s", "constraints": [{"contextName": "c"}]})
