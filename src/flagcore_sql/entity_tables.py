"""Tables whose columns follow an entity's attrs fields: the mapping is derived, not written.

An `EntityTable` reads the entity's fields once, at import, and gives each a column of
the same name with the conversion its type asks for (text and numbers as they are,
booleans, enums by value, times as ISO text, anything else as JSON through the wire
converter). So a new plain field of such an entity needs its migration and nothing here:
the row mapping, the column list, the upsert and the queries of
`flagcore_sql.parts.records` follow. A field whose column is spelled or kept differently
names its own `Column`; a field holding another attrs value can be ``flatten``-ed into
that value's columns (a `SegmentDefinition` keeps its `Segment`'s fields beside its own).
A ``document`` table keeps its key in columns and the whole entity in one JSON column
(through the wire converter), so a new field of it needs no migration either.
"""

from __future__ import annotations

import datetime as dt
import enum
import operator
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs
import orjson

from flagcore.tables import IS_NULL, NOT_NULL, Below, Table
from flagcore.wire import converter
from flagcore_sql import mapping

__all__ = ["Column", "EntityTable", "free_json", "nested_json"]

_T = TypeVar("_T")


@attrs.frozen
class Column:
    """One attribute (by path: ``segment.name``) kept in one column: how it is written
    and read back."""

    attribute: str
    name: str
    to_sql: Callable[[Any], Any]
    from_sql: Callable[[Any], Any]
    boolean: bool = False
    """Spelled ``{bool}`` in the migrations (SQLite integers, PostgreSQL ``BOOLEAN``)."""


def _same(value: Any) -> Any:
    return value


def _bool_from_sql(value: Any) -> bool:
    return bool(value)  # SQLite gives 0/1, PostgreSQL a bool


def free_json(attribute: str, name: str, *, null: bool) -> Column:
    """A column of any JSON value, as it is (``null``: None is SQL NULL, not ``"null"``)."""

    def to_sql(value: Any) -> Any:
        return None if null and value is None else mapping.dumps(value)

    def from_sql(text: Any) -> Any:
        return None if text is None else orjson.loads(text)

    return Column(attribute, name, to_sql, from_sql)


def _column_for(attribute: str, name: str, kind: Any) -> Column:
    union = typing.get_origin(kind) in (typing.Union, types.UnionType)
    optional = union and type(None) in typing.get_args(kind)
    base = next((a for a in typing.get_args(kind) if a is not type(None)), kind) if union else kind
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return Column(attribute, name, operator.attrgetter("value"), base)
    if base in (str, int, float):
        return Column(attribute, name, _same, _same)
    if base is bool:
        return Column(attribute, name, _same, _bool_from_sql, boolean=True)
    if base is dt.datetime:
        read_time = mapping.parse_time if optional else mapping.required_time
        return Column(attribute, name, mapping.time_text, read_time)
    if base is Any:
        return free_json(attribute, name, null=True)

    def to_json(value: Any) -> Any:
        return None if value is None else mapping.dumps(converter.unstructure(value, kind))

    def from_json(text: Any) -> Any:
        return None if text is None else converter.structure(mapping.loads_list(text), kind)

    return Column(attribute, name, to_json, from_json)


# The wire converter, and times as the columns keep them (ISO-8601 text in UTC).
_DOCUMENTS = converter.copy()
_DOCUMENTS.register_unstructure_hook(dt.datetime, mapping.time_text)
_DOCUMENTS.register_structure_hook(dt.datetime, lambda text, _: mapping.required_time(text))


_SQL = {"=": "= ?", "<": "< ?", "null": "IS NULL", "not null": "IS NOT NULL"}


def _kind(condition: Any) -> str:
    if condition is IS_NULL:
        return "null"
    if condition is NOT_NULL:
        return "not null"
    return "<" if isinstance(condition, Below) else "="


def _value(condition: Any) -> Any:
    return condition.value if isinstance(condition, Below) else condition


def _document_column(name: str, cls: Any) -> Column:
    """The whole entity (attribute path ``""``) as the wire converter writes it."""
    return Column(
        "",
        name,
        lambda entity: mapping.dumps(_DOCUMENTS.unstructure(entity, cls)),
        lambda text: _DOCUMENTS.structure(orjson.loads(text), cls),
    )


def nested_json(attribute: str, kind: Any) -> Column:
    """A column of nested values (attrs classes holding times) as JSON, written and read
    as `document` tables write theirs."""
    return Column(
        attribute,
        attribute,
        lambda value: mapping.dumps(_DOCUMENTS.unstructure(value, kind)),
        lambda text: _DOCUMENTS.structure(orjson.loads(text), kind),
    )


def _compiled_writer(columns: Sequence[Column]) -> Callable[[Any], list[Any]]:
    """``entity`` → the values of ``columns``, as one generated list display."""
    scope: dict[str, Any] = {}
    items = []
    for index, column in enumerate(columns):
        attribute = f"e.{column.attribute}" if column.attribute else "e"
        if column.to_sql is _same:
            items.append(attribute)
        else:
            scope[f"t{index}"] = column.to_sql
            items.append(f"t{index}({attribute})")
    exec(f"def values(e):\n    return [{', '.join(items)}]\n", scope)
    writer: Callable[[Any], list[Any]] = scope["values"]
    return writer


def _fields(cls: Any) -> list[tuple[str, Any]]:
    hints = typing.get_type_hints(cls)
    return [(field.name, hints[field.name]) for field in attrs.fields(cls)]


class EntityTable(Generic[_T]):
    """The columns of ``table`` (a `flagcore.tables.Table`): one per field of its entity
    unless ``columns`` (by attribute path) says otherwise, or per field of a ``flatten``-ed
    attribute's value; ``kept`` names the columns an update leaves as they were."""

    def __init__(
        self,
        table: Table[_T],
        *,
        kept: Sequence[str] = (),
        columns: Mapping[str, Column] | None = None,
        flatten: Mapping[str, type] | None = None,
        document: str | None = None,
    ) -> None:
        given = dict(columns or {})
        nested = dict(flatten or {})
        self.name = table.name
        self._cls: Any = table.entity
        self._plan: list[tuple[str, Any]] = []
        self._document = document
        found: list[Column] = []
        if document is not None:
            hints = dict(_fields(self._cls))
            found = [_column_for(path, path, hints[path]) for path in table.key]
            found.append(_document_column(document, self._cls))
        for field_name, kind in [] if document is not None else _fields(self._cls):
            inner = nested.get(field_name)
            self._plan.append((field_name, inner))
            if inner is None:
                found.append(given.get(field_name) or _column_for(field_name, field_name, kind))
                continue
            for inner_name, inner_kind in _fields(inner):
                path = f"{field_name}.{inner_name}"
                found.append(given.get(path) or _column_for(path, inner_name, inner_kind))
        self.columns = tuple(found)
        self._by_path = {column.attribute: column for column in self.columns}
        self.key = tuple(self._by_path[path].name for path in table.key)
        # Key parts written as their columns write them (a time is ISO text, not the
        # driver's own spelling of a datetime); plain values go as they are.
        self._key_writers = tuple(
            None if self._by_path[path].to_sql is _same else self._by_path[path].to_sql
            for path in table.key
        )
        self._order = ", ".join(
            f"{self._by_path[path.lstrip('-')].name}{' DESC' if path.startswith('-') else ''}"
            for path in table.order
        )
        names = ", ".join(column.name for column in self.columns)
        marks = ", ".join("?" for _ in self.columns)
        updates = ", ".join(
            f"{column.name} = excluded.{column.name}"
            for column in self.columns
            if column.name not in self.key and column.name not in kept
        )
        conflict = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
        self.upsert = (
            f"INSERT INTO {table.name} ({names}) VALUES ({marks}) "
            f"ON CONFLICT({', '.join(self.key)}) {conflict}"
        )
        fresh = [column for column in self.columns if column.name not in self.key]
        self.insert = (
            f"INSERT INTO {table.name} ({', '.join(c.name for c in fresh)}) "
            f"VALUES ({', '.join('?' for _ in fresh)})"
        )
        key_where = " AND ".join(f"{name} = ?" for name in self.key)
        self.by_key = f"SELECT * FROM {table.name} WHERE {key_where}"
        """``SELECT`` of the row of one key (parameters: `key_params`)."""
        self.delete = f"DELETE FROM {table.name} WHERE {key_where}"
        """``DELETE`` of the row of one key (parameters: `key_params`)."""
        self._selects: dict[tuple[tuple[str, str], ...], str] = {}
        # Rows are read for every flag of a client snapshot: the mapping is generated once
        # as plain code (as attrs writes ``__init__``), no loop or lookup per column.
        self.from_row: Callable[[Any], _T] = self._compiled_reader()
        self.values: Callable[[_T], list[Any]] = _compiled_writer(self.columns)
        """The parameters of `upsert` for an entity."""
        self.fresh_values: Callable[[_T], list[Any]] = _compiled_writer(fresh)
        """The parameters of `insert` (every column but the key, which the database gives)."""

    def _compiled_reader(self) -> Callable[[Any], _T]:
        scope: dict[str, Any] = {"cls": self._cls}

        def read(path: str) -> str:
            column = self._by_path[path]
            if column.from_sql is _same:
                return f"row[{column.name!r}]"
            converter_name = f"f{len(scope)}"
            scope[converter_name] = column.from_sql
            return f"{converter_name}(row[{column.name!r}])"

        if self._document is not None:
            body = read("")
        else:
            arguments = []
            for name, inner in self._plan:
                if inner is None:
                    arguments.append(f"{name}={read(name)}")
                    continue
                scope[f"n_{name}"] = inner
                inner_arguments = ", ".join(
                    f"{inner_name}={read(f'{name}.{inner_name}')}"
                    for inner_name, _ in _fields(inner)
                )
                arguments.append(f"{name}=n_{name}({inner_arguments})")
            body = f"cls({', '.join(arguments)})"
        exec(f"def from_row(row):\n    return {body}\n", scope)
        reader: Callable[[Any], _T] = scope["from_row"]
        return reader

    def key_params(self, key: Any) -> list[Any]:
        values = list(key) if len(self.key) > 1 else [key]
        if any(self._key_writers):
            return [
                value if write is None else write(value)
                for write, value in zip(self._key_writers, values, strict=True)
            ]
        return values

    def select(self, where: Mapping[str, Any] | None = None) -> tuple[str, list[Any]]:
        """``SELECT`` of the rows matching ``where`` (see `flagcore.ports.Records`), in order.

        The statement depends only on which paths are asked and how: it is built once per
        such shape."""
        shape = tuple((path, _kind(condition)) for path, condition in (where or {}).items())
        sql = self._selects.get(shape)
        if sql is None:
            clauses = [f"{self._by_path[path].name} {_SQL[kind]}" for path, kind in shape]
            where_sql = " AND ".join(clauses) or "1 = 1"
            sql = f"SELECT * FROM {self.name} WHERE {where_sql} ORDER BY {self._order}"
            self._selects[shape] = sql
        params = [
            self._by_path[path].to_sql(_value(condition))
            for path, condition in (where or {}).items()
            if condition is not IS_NULL and condition is not NOT_NULL
        ]
        return sql, params
