"""Flag-level variants of a flag in one environment, and the order Unleash stores
variants in (shared with strategy variants)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from flagcore.collation import locale_compare_key
from flagcore.entities import FlagEnvironment
from flagcore.model import Variant
from flagcore.ports import FlagWrite
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.validation import check_variants, normalise_variant_weights
from flagcore.wire.event_data import VariantNamesData

__all__ = ["FlagVariants", "variants_in_unleash_order"]


def variants_in_unleash_order(variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """Weights normalised, then sorted by name as Unleash stores variants.

    SDKs hand out buckets in the stored order, so the order decides which variant a user
    gets. Unleash normalises first (an uneven split's remainder goes to the first variants
    *as sent*), then sorts with JavaScript's ``localeCompare``; both steps are copied here,
    in that order, so a flag defined the same way on both servers gives the same answers.
    """
    normalised = normalise_variant_weights(variants)
    return tuple(sorted(normalised, key=lambda variant: locale_compare_key(variant.name)))


class FlagVariants:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def set_flag_variants(
        self,
        project: str,
        flag: str,
        environment: str,
        variants: Sequence[Variant],
        *,
        actor: Actor = SYSTEM,
    ) -> tuple[Variant, ...]:
        """Replace the flag-level variants in one environment (weights normalised to 1000,
        then put in name order, as for strategy variants)."""
        name = authorize(actor, "set_flag_variants", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            return self.set_flag_variants_in(tx, project, flag, environment, variants, actor=name)

    def set_flag_variants_in(
        self,
        tx: FlagWrite,
        project: str,
        flag: str,
        environment: str,
        variants: Sequence[Variant],
        *,
        actor: str,
    ) -> tuple[Variant, ...]:
        """`set_flag_variants` inside the caller's unit of work (a change request applied)."""
        check_variants(variants, "$")
        normalised = variants_in_unleash_order(tuple(variants))
        definition = active_flag(tx, project, flag)
        require_environment(tx, environment)
        state = tx.get_flag_environment(flag, environment) or FlagEnvironment(flag, environment)
        tx.save_flag_environment(attrs.evolve(state, variants=normalised))
        self._context.record_event(
            tx,
            "feature-environment-variants-updated",
            actor,
            flag=definition,
            environment=environment,
            data=VariantNamesData(tuple(v.name for v in normalised)),
        )
        return normalised
