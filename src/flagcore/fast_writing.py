"""Hand-written writers from the model to Unleash's JSON: the client payload's hot path.

The cattrs converter writes the same dictionaries but at ~40 µs a flag; serving or
compiling 10,000 flags from a store paid 0.4 s for it. These build exactly what
``converter.unstructure`` builds (a test in ``tests/core/test_codec.py`` checks it), with
fresh lists and dictionaries, so callers may change the result.
"""

from __future__ import annotations

from typing import Any

from flagcore.model import Constraint, Dependency, Flag, Segment, Strategy, Variant

__all__ = ["write_constraint", "write_flag", "write_segment"]


def write_constraint(constraint: Constraint) -> dict[str, Any]:
    return {
        "contextName": constraint.context_name,
        "operator": constraint.operator,
        "values": list(constraint.values),
        "value": constraint.value,
        "inverted": constraint.inverted,
        "caseInsensitive": constraint.case_insensitive,
    }


def _variant(variant: Variant) -> dict[str, Any]:
    payload = variant.payload
    return {
        "name": variant.name,
        "weight": variant.weight,
        "weightType": variant.weight_type.value,
        "stickiness": variant.stickiness,
        "payload": None if payload is None else {"type": payload.type, "value": payload.value},
        "overrides": [
            {"contextName": override.context_name, "values": list(override.values)}
            for override in variant.overrides
        ],
    }


def _strategy(strategy: Strategy) -> dict[str, Any]:
    return {
        "name": strategy.name,
        "parameters": dict(strategy.parameters),
        "constraints": [write_constraint(c) for c in strategy.constraints],
        "segments": list(strategy.segments),
        "variants": [_variant(v) for v in strategy.variants],
        "disabled": strategy.disabled,
        "id": strategy.id,
        "title": strategy.title,
        "sortOrder": strategy.sort_order,
    }


def _dependency(dependency: Dependency) -> dict[str, Any]:
    return {
        "feature": dependency.feature,
        "enabled": dependency.enabled,
        "variants": list(dependency.variants),
    }


def write_flag(flag: Flag) -> dict[str, Any]:
    return {
        "name": flag.name,
        "enabled": flag.enabled,
        "type": flag.type,
        "description": flag.description,
        "project": flag.project,
        "stale": flag.stale,
        "impressionData": flag.impression_data,
        "strategies": [_strategy(s) for s in flag.strategies],
        "variants": [_variant(v) for v in flag.variants],
        "dependencies": [_dependency(d) for d in flag.dependencies],
    }


def write_segment(segment: Segment) -> dict[str, Any]:
    return {
        "id": segment.id,
        "name": segment.name,
        "constraints": [write_constraint(c) for c in segment.constraints],
        "description": segment.description,
        "project": segment.project,
    }
