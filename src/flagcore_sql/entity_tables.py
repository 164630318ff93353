"""Tables whose columns follow an entity's attrs fields: the mapping is derived, not written.

An `EntityTable` reads the entity's fields once, at import, and gives each a column of
the same name with the conversion its type asks for (text, booleans, times as ISO text,
anything else as JSON through the wire converter). So a new plain field of such an
entity needs its migration and nothing here: the row mapping, the column list and the
upsert follow. A field whose column is spelled or kept differently names its own `Column`.
"""

from __future__ import annotations

import datetime as dt
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

from flagcore.wire import converter
from flagcore_sql import mapping

__all__ = ["Column", "EntityTable"]

_T = TypeVar("_T")


@attrs.frozen
class Column:
    """One attribute kept in one column: how it is written and read back."""

    attribute: str
    name: str
    to_sql: Callable[[Any], Any]
    from_sql: Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _bool_from_sql(value: Any) -> bool:
    return bool(value)  # SQLite gives 0/1, PostgreSQL a bool


def _column_for(attribute: str, kind: Any) -> Column:
    optional = type(None) in typing.get_args(kind)
    base = next((a for a in typing.get_args(kind) if a is not type(None)), kind)
    if base in (str, int, float):
        return Column(attribute, attribute, _same, _same)
    if base is bool:
        return Column(attribute, attribute, _same, _bool_from_sql)
    if base is dt.datetime:
        return Column(
            attribute,
            attribute,
            mapping.time_text,
            mapping.parse_time if optional else mapping.required_time,
        )

    def to_json(value: Any) -> Any:
        return None if value is None else mapping.dumps(converter.unstructure(value, kind))

    def from_json(text: Any) -> Any:
        return None if text is None else converter.structure(mapping.loads_list(text), kind)

    return Column(attribute, attribute, to_json, from_json)


class EntityTable(Generic[_T]):
    """The columns of ``table`` for entity ``cls``: one per field unless ``columns`` says
    otherwise; ``key`` names the conflict target, ``kept`` the columns an update leaves."""

    def __init__(
        self,
        cls: type[_T],
        table: str,
        *,
        key: Sequence[str],
        kept: Sequence[str] = (),
        columns: Mapping[str, Column] | None = None,
    ) -> None:
        hints = typing.get_type_hints(cls)
        given = dict(columns or {})
        self._cls = cls
        self.columns = tuple(
            given.get(field.name) or _column_for(field.name, hints[field.name])
            for field in attrs.fields(typing.cast(Any, cls))
        )
        names = ", ".join(column.name for column in self.columns)
        marks = ", ".join("?" for _ in self.columns)
        updates = ", ".join(
            f"{column.name} = excluded.{column.name}"
            for column in self.columns
            if column.name not in key and column.name not in kept
        )
        self.upsert = (
            f"INSERT INTO {table} ({names}) VALUES ({marks}) "
            f"ON CONFLICT({', '.join(key)}) DO UPDATE SET {updates}"
        )

    def values(self, entity: _T) -> list[Any]:
        """The parameters of `upsert` for ``entity``."""
        return [column.to_sql(getattr(entity, column.attribute)) for column in self.columns]

    def from_row(self, row: Any) -> _T:
        return self._cls(
            **{column.attribute: column.from_sql(row[column.name]) for column in self.columns}
        )
