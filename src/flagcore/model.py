"""Frozen value objects of the domain: what a flag is, independent of any wire format.

Attribute names are snake_case; Unleash's camelCase lives only in `flagcore.wire`.
Collections are tuples so values stay immutable and hashable; strategy parameters are a
mapping (Unleash sends them as an object of strings) and are left out of hashing.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

__all__ = [
    "ClientFeatures",
    "Constraint",
    "Dependency",
    "Flag",
    "FlagType",
    "Override",
    "Payload",
    "Segment",
    "Strategy",
    "Variant",
    "WeightType",
]


class FlagType(enum.StrEnum):
    """Unleash's flag types: they say what a flag is for; evaluation ignores them."""

    RELEASE = "release"
    EXPERIMENT = "experiment"
    OPERATIONAL = "operational"
    KILL_SWITCH = "kill-switch"
    PERMISSION = "permission"


class WeightType(enum.StrEnum):
    """``fix`` keeps its weight; ``variable`` variants share what the fixed ones leave."""

    VARIABLE = "variable"
    FIX = "fix"


@attrs.frozen
class Constraint:
    """A condition on one context field.

    ``operator`` is kept as sent, so an unknown one stays representable (and is false).
    """

    context_name: str
    operator: str
    values: tuple[str, ...] = ()
    value: str | None = None
    inverted: bool = False
    case_insensitive: bool = False


@attrs.frozen
class Segment:
    """A named, reusable list of constraints that strategies reference by id."""

    id: int
    name: str = ""
    constraints: tuple[Constraint, ...] = ()
    description: str | None = None
    project: str | None = None


@attrs.frozen
class Payload:
    """What a variant carries to the application: ``type`` (string, json, csv, number)
    and the ``value`` as text, as Unleash sends it."""

    type: str
    value: str


@attrs.frozen
class Override:
    """Pins the users whose ``context_name`` is one of ``values`` to a variant."""

    context_name: str
    values: tuple[str, ...] = ()


@attrs.frozen
class Variant:
    """One variant of a flag: its share of ``weight`` (out of 1000), how users stick to
    it, the payload it carries, and the users pinned to it."""

    name: str
    weight: int = 0
    weight_type: WeightType = WeightType.VARIABLE
    stickiness: str = "default"
    payload: Payload | None = None
    overrides: tuple[Override, ...] = ()


@attrs.frozen
class Strategy:
    """An activation strategy; parameters are strings, as Unleash stores them."""

    name: str
    parameters: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    constraints: tuple[Constraint, ...] = ()
    segments: tuple[int, ...] = ()
    variants: tuple[Variant, ...] = ()
    disabled: bool = False
    id: str | None = None
    title: str | None = None
    sort_order: int | None = None


@attrs.frozen
class Dependency:
    """On only if ``feature`` is on (off, if not ``enabled``), maybe with one of ``variants``."""

    feature: str
    enabled: bool = True
    variants: tuple[str, ...] = ()


@attrs.frozen
class Flag:
    """A flag as an SDK sees it in one environment: whether it is on there, and its rules."""

    name: str
    enabled: bool = False
    type: str = FlagType.RELEASE.value
    description: str | None = None
    project: str = "default"
    stale: bool = False
    impression_data: bool = False
    strategies: tuple[Strategy, ...] = ()
    variants: tuple[Variant, ...] = ()
    dependencies: tuple[Dependency, ...] = ()


@attrs.frozen
class ClientFeatures:
    """What an SDK gets from ``/api/client/features``: flags plus the segments they reference."""

    features: tuple[Flag, ...] = ()
    segments: tuple[Segment, ...] = ()
