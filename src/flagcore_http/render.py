"""Admin API response bodies, in Unleash's shapes (camelCase, ISO times)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from flagcore.entities import (
    ApiToken,
    EnvironmentState,
    Event,
    FlagDefinition,
    FlagDetails,
    Project,
    SegmentDefinition,
    SegmentDetails,
    StrategyDefinition,
    StrategyPlacement,
)
from flagcore.errors import ErrorDetail
from flagcore.model import Segment, Strategy
from flagcore.wire import converter

__all__ = [
    "error_body",
    "event",
    "flag",
    "flag_details",
    "placement",
    "project",
    "segment",
    "segment_with_usage",
    "strategy",
    "strategy_definition",
    "time",
    "token",
]


def time(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def flag(definition: FlagDefinition) -> dict[str, Any]:
    return {
        "name": definition.name,
        "description": definition.description,
        "type": definition.type,
        "project": definition.project,
        "stale": definition.stale,
        "createdAt": time(definition.created_at),
        "impressionData": definition.impression_data,
        "archived": definition.archived,
        "archivedAt": time(definition.archived_at),
        "dependencies": converter.unstructure(definition.dependencies),
    }


def strategy(value: Strategy) -> dict[str, Any]:
    return {
        "id": value.id,
        "name": value.name,
        "title": value.title,
        "disabled": value.disabled,
        "sortOrder": value.sort_order,
        "constraints": converter.unstructure(value.constraints),
        "parameters": dict(value.parameters),
        "variants": converter.unstructure(value.variants),
        "segments": list(value.segments),
    }


def _environment(state: EnvironmentState) -> dict[str, Any]:
    return {
        "name": state.environment.name,
        "enabled": state.enabled,
        "type": state.environment.type,
        "sortOrder": state.environment.sort_order,
        "strategies": [strategy(s) for s in state.strategies],
        "variants": converter.unstructure(state.variants),
    }


def flag_details(details: FlagDetails) -> dict[str, Any]:
    return {
        **flag(details.flag),
        "environments": [_environment(e) for e in details.environments],
        "tags": [{"type": t.type, "value": t.value} for t in details.tags],
    }


def segment(value: SegmentDefinition) -> dict[str, Any]:
    """A segment as Unleash's create and read answers show it (``project`` only if set)."""
    rule: Segment = value.segment
    out: dict[str, Any] = {
        "id": rule.id,
        "name": rule.name,
        "description": rule.description,
        "constraints": converter.unstructure(rule.constraints),
    }
    if rule.project is not None:
        out["project"] = rule.project
    out["createdBy"] = value.created_by
    out["createdAt"] = time(value.created_at)
    return out


def segment_with_usage(value: SegmentDetails) -> dict[str, Any]:
    """A segment as Unleash's segment list shows it: with the counts of its users."""
    return {
        **segment(value.definition),
        "usedInProjects": value.used_in_projects,
        "usedInFeatures": value.used_in_features,
    }


def placement(value: StrategyPlacement, project: str | None) -> dict[str, Any]:
    return {
        "id": value.id,
        "projectId": project,
        "featureName": value.flag,
        "strategyName": value.strategy.name,
        "environment": value.environment,
    }


def project(value: Project) -> dict[str, Any]:
    return {
        "id": value.id,
        "name": value.name,
        "description": value.description,
        "createdAt": time(value.created_at),
    }


def token(value: ApiToken, secret: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": value.id,
        "tokenName": value.name,
        "type": value.type.value,
        "projects": list(value.projects),
        "project": value.projects[0] if len(value.projects) == 1 else "[]",
        "environment": value.environment or "*",
        "createdAt": time(value.created_at),
        "secretHint": value.secret_hint,
    }
    if secret is not None:
        out["secret"] = secret
    return out


def event(value: Event) -> dict[str, Any]:
    return {
        "id": value.id,
        "type": value.type,
        "createdBy": value.created_by,
        "createdAt": time(value.created_at),
        "featureName": value.feature_name,
        "project": value.project,
        "environment": value.environment,
        "data": value.data,
        "preData": value.pre_data,
    }


def strategy_definition(value: StrategyDefinition) -> dict[str, Any]:
    return {
        "name": value.name,
        "displayName": value.title,
        "title": value.title,
        "description": value.description,
        "editable": value.editable,
        "deprecated": value.deprecated,
        "parameters": [
            {"name": p.name, "type": p.type, "description": p.description, "required": p.required}
            for p in value.parameters
        ],
    }


def error_body(name: str, message: str, details: Sequence[ErrorDetail] = ()) -> dict[str, Any]:
    """The JSON error shape ``{"name", "message", "details": [...]}``: at least one detail
    (the message itself when there is none)."""
    body_details = [
        {"message": d.message, **({"path": d.path} if d.path else {})} for d in details
    ] or [{"message": message}]
    return {"name": name, "message": message, "details": body_details}
