"""Request bodies of the admin API, as attrs classes the codec reads (camelCase on the wire)."""

from __future__ import annotations

import attrs

from flagcore import codec
from flagcore.entities import StrategyParameter
from flagcore.model import Constraint

__all__ = [
    "CreateEnvironment",
    "CreateFlag",
    "CreateProject",
    "CreateStrategyDefinition",
    "CreateTagType",
    "CreateToken",
    "SegmentBody",
    "SortOrderItem",
    "StrategySegments",
    "TagBody",
    "UpdateFlag",
    "UpdateProject",
]


@attrs.frozen
class TagBody:
    type: str
    value: str


@attrs.frozen
class CreateFlag:
    name: str
    description: str | None = None
    type: str = "release"
    impression_data: bool = False
    tags: tuple[TagBody, ...] = ()


@attrs.frozen
class UpdateFlag:
    description: str | None = None
    type: str | None = None
    impression_data: bool | None = None
    stale: bool | None = None


@attrs.frozen
class SortOrderItem:
    id: str
    sort_order: int


@attrs.frozen
class SegmentBody:
    name: str
    constraints: tuple[Constraint, ...]
    description: str | None = None
    project: str | None = None


@attrs.frozen
class StrategySegments:
    strategy_id: str
    segment_ids: tuple[int, ...]
    project_id: str | None = None
    environment_id: str | None = None


@attrs.frozen
class CreateProject:
    id: str
    name: str
    description: str | None = None


@attrs.frozen
class UpdateProject:
    name: str | None = None
    description: str | None = None


@attrs.frozen
class CreateToken:
    token_name: str
    type: str
    environment: str | None = None
    projects: tuple[str, ...] = ()
    project: str | None = None


@attrs.frozen
class CreateTagType:
    name: str
    description: str | None = None


@attrs.frozen
class CreateEnvironment:
    name: str
    type: str = "development"
    sort_order: int | None = None


@attrs.frozen
class CreateStrategyDefinition:
    name: str
    description: str | None = None
    parameters: tuple[StrategyParameter, ...] = ()
    title: str | None = None


for _cls, _renames in (
    (TagBody, {}),
    (CreateFlag, {"impression_data": "impressionData"}),
    (UpdateFlag, {"impression_data": "impressionData"}),
    (SortOrderItem, {"sort_order": "sortOrder"}),
    (SegmentBody, {}),
    (
        StrategySegments,
        {
            "strategy_id": "strategyId",
            "segment_ids": "segmentIds",
            "project_id": "projectId",
            "environment_id": "environmentId",
        },
    ),
    (CreateProject, {}),
    (UpdateProject, {}),
    (CreateToken, {"token_name": "tokenName"}),
    (CreateTagType, {}),
    (CreateEnvironment, {"sort_order": "sortOrder"}),
    (StrategyParameter, {}),
    (CreateStrategyDefinition, {}),
):
    codec.register_wire_type(_cls, _renames)
