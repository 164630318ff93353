"""`flagcore.ports.TagRepository`: tag types and flags' tags."""

from __future__ import annotations

from collections.abc import Sequence

from flagcore.entities import (
    Tag,
    TagType,
)
from flagcore_sql.parts.base import SqlPart

__all__ = ["TagQueries"]


class TagQueries(SqlPart):
    """The queries of `flagcore.ports.TagRepository`."""

    def get_tag_type(self, name: str) -> TagType | None:
        row = self._one("SELECT * FROM tag_types WHERE name = ?", [name])
        return None if row is None else TagType(row["name"], row["description"])

    def list_tag_types(self) -> Sequence[TagType]:
        return [
            TagType(row["name"], row["description"])
            for row in self._rows("SELECT * FROM tag_types ORDER BY name")
        ]

    def save_tag_type(self, tag_type: TagType) -> None:
        self._run(
            "INSERT INTO tag_types (name, description) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET description = excluded.description",
            [tag_type.name, tag_type.description],
        )

    def delete_tag_type(self, name: str) -> None:
        self._run("DELETE FROM tag_types WHERE name = ?", [name])

    def list_flag_tags(self, flag: str | None = None) -> Sequence[tuple[str, Tag]]:
        if flag is None:
            rows = self._rows("SELECT * FROM flag_tags ORDER BY flag, tag_type, value")
        else:
            rows = self._rows(
                "SELECT * FROM flag_tags WHERE flag = ? ORDER BY tag_type, value", [flag]
            )
        return [(row["flag"], Tag(row["tag_type"], row["value"])) for row in rows]

    def add_flag_tag(self, flag: str, tag: Tag) -> None:
        self._run(
            "INSERT INTO flag_tags (flag, tag_type, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [flag, tag.type, tag.value],
        )

    def remove_flag_tag(self, flag: str, tag: Tag) -> None:
        self._run(
            "DELETE FROM flag_tags WHERE flag = ? AND tag_type = ? AND value = ?",
            [flag, tag.type, tag.value],
        )
