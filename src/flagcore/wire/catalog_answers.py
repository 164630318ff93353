"""The answers of the instance-wide catalogues: one tag type, and Unleash's flag search
across every project (``/api/admin/search/features``), as typed values with their rows."""

from __future__ import annotations

import datetime as dt

import attrs

from flagcore.entities import Tag, TagType
from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "FeatureSearchAnswer",
    "SearchedEnvironmentAnswer",
    "SearchedFlagAnswer",
    "TagTypeAnswer",
]


@answer(AnswerField("version", "version"), AnswerField("tag_type", "tagType"))
@attrs.frozen
class TagTypeAnswer:
    """``GET /api/admin/tag-types/<name>``: Unleash's ``{"version": 1, "tagType": ...}``."""

    version: int
    tag_type: TagType


@answer(
    AnswerField("name", "name"),
    AnswerField("environment", "environment"),
    AnswerField("type", "type"),
    AnswerField("enabled", "enabled"),
    AnswerField("sort_order", "sortOrder"),
)
@attrs.frozen
class SearchedEnvironmentAnswer:
    """One environment of a searched flag (Unleash names it twice: name and environment)."""

    name: str
    environment: str
    type: str
    enabled: bool
    sort_order: int


@answer(
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("type", "type"),
    AnswerField("project", "project"),
    AnswerField("stale", "stale"),
    AnswerField("impression_data", "impressionData"),
    AnswerField("created_at", "createdAt"),
    AnswerField("archived_at", "archivedAt"),
    AnswerField("environments", "environments"),
    AnswerField("tags", "tags"),
)
@attrs.frozen
class SearchedFlagAnswer:
    """One flag of a search, in Unleash's ``featureSearchResponseSchema`` keys (those
    flagcore keeps: no favourites, last-seen times or segment names per flag)."""

    name: str
    description: str | None
    type: str
    project: str
    stale: bool
    impression_data: bool
    created_at: dt.datetime
    archived_at: dt.datetime | None
    environments: tuple[SearchedEnvironmentAnswer, ...]
    tags: tuple[Tag, ...]


@answer(AnswerField("features", "features"), AnswerField("total", "total"))
@attrs.frozen
class FeatureSearchAnswer:
    """``{"features": [...], "total": n}``: one page, and how many flags match in all."""

    features: tuple[SearchedFlagAnswer, ...]
    total: int
