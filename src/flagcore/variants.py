"""Variant selection: overrides first, then a sticky weighted bucket.

Unleash hashes ``"<groupId>:<stickiness value>"`` with the variant seed into
``1..total weight`` and walks the variants in order, adding weights until the running sum
reaches the bucket. A missing stickiness value means a random bucket, as in every SDK.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from flagcore.context import Readable
from flagcore.hashing import VARIANT_SEED, normalized_hash
from flagcore.model import WeightType
from flagcore.operators import field_reader
from flagcore.wire.fields import (
    CONTEXT_NAME,
    NAME,
    OVERRIDES,
    PAYLOAD,
    STICKINESS,
    TYPE,
    VALUE,
    VALUES,
    WEIGHT,
    WEIGHT_TYPE,
)
from flagcore.wire.reading import NotFast, as_list, as_opt_str, as_str, as_strings

__all__ = [
    "DISABLED_VARIANT",
    "OverrideMatch",
    "ResultCache",
    "VariantPicker",
    "VariantResult",
    "VariantTrace",
    "compile_variant_picker",
    "trace_variant_choice",
    "variants_stickiness",
]


@attrs.frozen
class VariantResult:
    """The answer of `Engine.get_variant`; ``disabled`` with no payload when no variant applies."""

    name: str
    enabled: bool
    feature_enabled: bool = False
    payload: Mapping[str, str] | None = attrs.field(default=None, hash=False)

    def to_mapping(self) -> dict[str, object]:
        """The spec's shape (snake_case ``feature_enabled``; no payload key when there is none)."""
        out: dict[str, object] = {
            "name": self.name,
            "enabled": self.enabled,
            "feature_enabled": self.feature_enabled,
        }
        if self.payload is not None:
            out["payload"] = dict(self.payload)
        return out


DISABLED_VARIANT = VariantResult("disabled", False, False)

VariantPicker = Callable[[Readable], "VariantResult | None"]
"""Picks a variant of an enabled flag; ``None`` when none applies."""

_read_user_id = field_reader("userId")
_read_session_id = field_reader("sessionId")
_U32 = 2**32  # Unleash sums weights as unsigned 32-bit integers, wrapping around


@functools.lru_cache(maxsize=1024)
def _seed_reader(stickiness: str | None) -> Callable[[Readable], str | None]:
    """The value a variant bucket hashes; None means "pick at random"."""
    if stickiness is None or stickiness == "default":

        def default_seed(ctx: Readable) -> str | None:
            user_id = _read_user_id(ctx)
            return user_id if user_id is not None else _read_session_id(ctx)

        return default_seed
    if stickiness == "currentTime":
        return lambda _ctx: None  # Unleash never makes variants sticky on time
    # userId, sessionId, environment, appName, remoteAddress are those fields; any other
    # name is a custom field (docs/engine.md: unlike Unleash, a top-level string counts
    # too, as it does for constraints).
    return field_reader(stickiness)


_Override = tuple[Callable[[Readable], "str | None"], frozenset[str], VariantResult]
# A tuple: `in` must not hash what it is given.
_WEIGHT_TYPES = tuple(member.value for member in WeightType)


# Equal variants (name and payload) across a snapshot's flags share one answer: a
# 20,000-flag payload has ~34,000 variants but ~6,000 distinct ones. Answers are read-only
# (the payload is typed as a Mapping), as each one is already returned on every call.
ResultCache = dict[object, VariantResult]


def _new_result(name: str, payload: dict[str, str] | None) -> VariantResult:
    copied = None if payload is None else {"type": payload[TYPE], "value": payload[VALUE]}
    return VariantResult(name, True, True, copied)


def variants_stickiness(variants: list[Any]) -> str | None:
    """The stickiness of a flag's variants: the first variant's, as in Unleash."""
    if not variants or type(variants[0]) is not dict:
        return None
    return as_opt_str(variants[0].get(STICKINESS))


def compile_variant_picker(
    variants: list[Any],
    group_id: str,
    stickiness: str | None,
    *,
    with_overrides: bool = True,
    results: ResultCache | None = None,
) -> VariantPicker | None:
    """Prepare selection among ``variants`` (Unleash's JSON); ``None`` if there is nothing
    to pick from. Raises `NotFast` on anything but plainly well-typed variants.

    Overrides come first and win even over a zero weight; Unleash honours them on flag
    variants only, not on strategy variants. ``results`` shares equal answers between
    pickers.
    """
    if not variants:
        return None
    override_rules, buckets, total = _prepare(variants, with_overrides, results)
    if total == 0 and not override_rules:
        return None
    seed = _seed_reader(stickiness)

    # Bound as defaults, not closure cells: see flagcore.operators.
    def pick(
        ctx: Readable,
        override_rules: tuple[_Override, ...] = override_rules,
        total: int = total,
        seed: Callable[[Readable], str | None] = seed,
        group_id: str = group_id,
        buckets: tuple[tuple[int, VariantResult], ...] = buckets,
    ) -> VariantResult | None:
        for read, values, result in override_rules:
            value = read(ctx)
            if value is not None and value in values:
                return result
        if total == 0:
            return None
        identifier = seed(ctx)
        if identifier is None:
            target = random.randint(1, total)
        else:
            target = normalized_hash(group_id, identifier, total, VARIANT_SEED)
        for threshold, result in buckets:
            if target <= threshold:
                return result
        return None

    return pick


def _prepare(
    variants: list[Any], with_overrides: bool, results: ResultCache | None
) -> tuple[tuple[_Override, ...], tuple[tuple[int, VariantResult], ...], int]:
    """Overrides, running weight thresholds and total weight of ``variants``: what the
    picker walks, and what `trace_variant_choice` walks to explain it."""
    if results is None:
        results = {}
    overrides: list[_Override] = []
    thresholds: list[tuple[int, VariantResult]] = []
    running = 0
    for variant in variants:
        if type(variant) is not dict:
            raise NotFast
        get = variant.get
        weight = get(WEIGHT, 0)
        weight_type = get(WEIGHT_TYPE)
        own_stickiness = get(STICKINESS)  # the first variant's counts: see variants_stickiness
        if (
            type(weight) is not int
            # A tuple: `in` compares, so a value of any type is simply not found.
            or (weight_type is not None and weight_type not in _WEIGHT_TYPES)
            or (own_stickiness is not None and type(own_stickiness) is not str)
        ):
            raise NotFast
        name = get(NAME)
        payload = get(PAYLOAD)
        if type(name) is not str:
            raise NotFast
        if payload is None:
            key: object = name
        elif type(payload) is dict:
            kind = payload.get(TYPE)
            value = payload.get(VALUE)
            if type(kind) is not str or type(value) is not str:
                raise NotFast
            key = (name, kind, value)
        else:
            raise NotFast
        result = results.get(key)
        if result is None:
            result = results[key] = _new_result(name, payload)
        variant_overrides = get(OVERRIDES)
        if variant_overrides is not None:
            for override in as_list(variant_overrides):
                if type(override) is not dict:
                    raise NotFast
                context_name = as_str(override.get(CONTEXT_NAME))
                values = as_strings(override.get(VALUES))
                if with_overrides:  # read either way: malformed JSON is reported wherever it is
                    overrides.append((field_reader(context_name), frozenset(values), result))
        running = (running + weight) % _U32
        thresholds.append((running, result))
    return tuple(overrides), tuple(thresholds), running


@attrs.frozen
class VariantTrace:
    """How a picker chooses for one context (`trace_variant_choice`)."""

    how: str  # "override", "hash" (sticky bucket), "random" (no stickiness value) or "none"
    stickiness: str
    stickiness_value: str | None
    total_weight: int
    bucket: int | None = None  # 1..total_weight, when hashed
    override: OverrideMatch | None = None  # the override that chose, if one did


@attrs.frozen
class OverrideMatch:
    """The context field a variant override matched on, and the value it matched."""

    context_name: str
    value: str


def trace_variant_choice(
    variants: list[Any],
    group_id: str,
    stickiness: str | None,
    ctx: Readable,
    *,
    with_overrides: bool = True,
) -> VariantTrace:
    """Why the picker compiled from the same arguments picks what it picks for ``ctx``:
    the same preparation and hash, walked without picking (the explanation takes the
    variant itself from the compiled picker)."""
    override_rules, _buckets, total = _prepare(variants, with_overrides, None)
    shown = "default" if stickiness is None else stickiness
    fields = (
        [
            as_str(override.get(CONTEXT_NAME))
            for variant in variants
            for override in as_list(variant.get(OVERRIDES) or [])
        ]
        if with_overrides
        else []
    )
    for (read, values, _result), field in zip(override_rules, fields, strict=True):
        value = read(ctx)
        if value is not None and value in values:
            return VariantTrace("override", shown, None, total, None, OverrideMatch(field, value))
    identifier = _seed_reader(stickiness)(ctx)
    if total == 0:
        return VariantTrace("none", shown, identifier, total)
    if identifier is None:
        return VariantTrace("random", shown, None, total)
    bucket = normalized_hash(group_id, identifier, total, VARIANT_SEED)
    return VariantTrace("hash", shown, identifier, total, bucket)
