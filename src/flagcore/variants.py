"""Variant selection: overrides first, then a sticky weighted bucket.

Unleash hashes ``"<groupId>:<stickiness value>"`` with the variant seed into
``1..total weight`` and walks the variants in order, adding weights until the running sum
reaches the bucket. A missing stickiness value falls back to a random one, as every SDK does.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

import attrs

from flagcore.context import Context
from flagcore.hashing import VARIANT_SEED, normalized_hash
from flagcore.model import Variant
from flagcore.operators import field_reader

__all__ = ["DISABLED_VARIANT", "VariantPicker", "VariantResult", "compile_variant_picker"]


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

VariantPicker = Callable[[Context], "VariantResult | None"]
"""Picks a variant of an enabled flag; ``None`` when none applies."""

_read_user_id = field_reader("userId")
_read_session_id = field_reader("sessionId")
_read_remote_address = field_reader("remoteAddress")


def _random_seed() -> str:
    return str(random.random())


def _seed_reader(stickiness: str | None) -> Callable[[Context], str]:
    if stickiness in (None, "", "default"):

        def default_seed(ctx: Context) -> str:
            return (
                _read_user_id(ctx)
                or _read_session_id(ctx)
                or _read_remote_address(ctx)
                or _random_seed()
            )

        return default_seed
    read = field_reader(stickiness)
    return lambda ctx: read(ctx) or _random_seed()


def _result(variant: Variant) -> VariantResult:
    payload = (
        None
        if variant.payload is None
        else {"type": variant.payload.type, "value": variant.payload.value}
    )
    return VariantResult(variant.name, True, True, payload)


def compile_variant_picker(
    variants: tuple[Variant, ...], group_id: str, stickiness: str | None
) -> VariantPicker | None:
    """Prepare selection among ``variants``; ``None`` if there is nothing to pick from."""
    total = sum(variant.weight for variant in variants)
    if not variants or total <= 0:
        return None
    results = [_result(variant) for variant in variants]
    thresholds: list[tuple[int, VariantResult]] = []
    running = 0
    for variant, result in zip(variants, results, strict=True):
        running += variant.weight
        thresholds.append((running, result))
    overrides = [
        (field_reader(override.context_name), frozenset(override.values), result)
        for variant, result in zip(variants, results, strict=True)
        for override in variant.overrides
    ]
    seed = _seed_reader(stickiness)
    group_prefix = group_id

    def pick(ctx: Context) -> VariantResult | None:
        for read, values, result in overrides:
            value = read(ctx)
            if value is not None and value in values:
                return result
        target = normalized_hash(group_prefix, seed(ctx), total, VARIANT_SEED)
        for threshold, result in thresholds:
            if target <= threshold:
                return result
        return None

    return pick
