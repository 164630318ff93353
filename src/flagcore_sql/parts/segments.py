"""`flagcore.ports.SegmentRepository`: segments and their creation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from flagcore.entities import (
    SegmentDefinition,
)
from flagcore.model import Constraint, Segment
from flagcore.wire import (
    converter,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["SegmentQueries"]


class SegmentQueries(SqlPart):
    """The queries of `flagcore.ports.SegmentRepository`."""

    def get_segment(self, segment_id: int) -> Segment | None:
        row = self._one("SELECT * FROM segments WHERE id = ?", [segment_id])
        return None if row is None else mapping.segment_from_row(row)

    def list_segments(self) -> Sequence[Segment]:
        return [
            mapping.segment_from_row(row)
            for row in self._rows("SELECT * FROM segments ORDER BY id")
        ]

    def get_segment_definition(self, segment_id: int) -> SegmentDefinition | None:
        row = self._one("SELECT * FROM segments WHERE id = ?", [segment_id])
        return None if row is None else mapping.segment_definition_from_row(row)

    def list_segment_definitions(self) -> Sequence[SegmentDefinition]:
        rows = self._rows("SELECT * FROM segments ORDER BY id")
        return [mapping.segment_definition_from_row(row) for row in rows]

    def create_segment(
        self,
        segment: Segment,
        *,
        created_by: str | None = None,
        created_at: dt.datetime | None = None,
    ) -> Segment:
        segment_id = self._insert(
            "INSERT INTO segments (name, description, project, constraints, created_at, "
            "created_by) VALUES (?, ?, ?, ?, ?, ?)",
            [
                segment.name,
                segment.description,
                segment.project,
                mapping.dumps(converter.unstructure(segment.constraints, tuple[Constraint, ...])),
                mapping.time_text(created_at or dt.datetime.now(dt.UTC)),
                created_by,
            ],
        )
        return Segment(
            segment_id, segment.name, segment.constraints, segment.description, segment.project
        )

    def save_segment(self, segment: Segment) -> None:
        self._run(
            "UPDATE segments SET name = ?, description = ?, project = ?, constraints = ? "
            "WHERE id = ?",
            [
                segment.name,
                segment.description,
                segment.project,
                mapping.dumps(converter.unstructure(segment.constraints, tuple[Constraint, ...])),
                segment.id,
            ],
        )

    def delete_segment(self, segment_id: int) -> None:
        self._run("DELETE FROM segments WHERE id = ?", [segment_id])
