"""The evaluation engine: compile a snapshot once, then answer from closures.

Every flag becomes two closures at compile time (is it on? which variant?), so an
evaluation is a dictionary lookup and a few calls, with nothing parsed or allocated on
the way. A flag that cannot be read or compiled evaluates to off and is listed in
`Engine.warnings`; evaluation itself never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from flagcore.codec import ClientFeaturesReading, apply_delta, read_client_features
from flagcore.context import Context
from flagcore.model import ClientFeatures, Flag, Segment, Strategy
from flagcore.operators import Predicate, compile_constraint
from flagcore.strategies import (
    BUILTIN_STRATEGIES,
    CustomStrategy,
    StrategyBuilder,
    custom_strategy_builder,
)
from flagcore.variants import DISABLED_VARIANT, VariantPicker, VariantResult, compile_variant_picker

__all__ = ["Engine", "EngineWarning", "compile_snapshot"]

_log = logging.getLogger(__name__)
ContextLike = Context | Mapping[str, Any] | None
_EMPTY_CONTEXT = Context()
_ENABLED_NO_VARIANT = VariantResult("disabled", False, True)


@attrs.frozen
class EngineWarning:
    """A flag (or a part of one) that could not be compiled; it evaluates to off."""

    flag: str
    message: str


def _always(_ctx: Context) -> bool:
    return True


def _never(_ctx: Context) -> bool:
    return False


def _all_of(checks: tuple[Predicate, ...], then: Predicate) -> Predicate:
    if not checks:
        return then
    if len(checks) == 1:
        (only,) = checks

        def one(ctx: Context) -> bool:
            return only(ctx) and then(ctx)

        return one

    def every(ctx: Context) -> bool:
        for check in checks:
            if not check(ctx):
                return False
        return then(ctx)

    return every


@attrs.define
class _CompiledFlag:
    """What evaluation needs of one flag, prepared."""

    flag: Flag
    has_dependencies: bool
    is_on: Predicate
    # Dependencies on other flags, checked before the strategies; None when there are none.
    gate: Predicate | None
    # (strategy predicate, its own variants) in evaluation order; used by get_variant.
    strategies: tuple[tuple[Predicate, VariantPicker | None], ...]
    variants: VariantPicker | None


class _Compiler:
    def __init__(
        self, segments: Mapping[int, Segment], builders: Mapping[str, StrategyBuilder]
    ) -> None:
        self._builders = builders
        self._segments = {
            segment_id: tuple(compile_constraint(c) for c in segment.constraints)
            for segment_id, segment in segments.items()
        }

    def strategy(self, strategy: Strategy, flag_name: str) -> Predicate:
        builder = self._builders.get(strategy.name)
        if builder is None:
            return _never  # unknown strategies are off in every Unleash SDK
        checks: list[Predicate] = []
        for segment_id in strategy.segments:
            segment = self._segments.get(segment_id)
            if segment is None:
                return _never  # a strategy pointing at a missing segment can never match
            checks.extend(segment)
        checks.extend(compile_constraint(c) for c in strategy.constraints)
        return _all_of(tuple(checks), builder(strategy, flag_name))

    def flag(self, flag: Flag, lookup: Callable[[str], _CompiledFlag | None]) -> _CompiledFlag:
        active = [s for s in flag.strategies if not s.disabled]
        strategies = tuple(
            (
                self.strategy(strategy, flag.name),
                compile_variant_picker(
                    strategy.variants,
                    strategy.parameters.get("groupId") or flag.name,
                    strategy.parameters.get("stickiness"),
                ),
            )
            for strategy in active
        )
        variants = compile_variant_picker(
            flag.variants, flag.name, flag.variants[0].stickiness if flag.variants else None
        )
        is_on = _strategies_on(tuple(predicate for predicate, _ in strategies))
        gate = _dependencies_gate(flag, lookup) if flag.dependencies else None
        if gate is not None:
            is_on = _all_of((gate,), is_on)
        if not flag.enabled:
            is_on = _never
        return _CompiledFlag(flag, bool(flag.dependencies), is_on, gate, strategies, variants)


def _strategies_on(predicates: tuple[Predicate, ...]) -> Predicate:
    if not predicates:
        return _always  # an enabled flag without strategies is on for everyone
    if len(predicates) == 1:
        return predicates[0]

    def any_on(ctx: Context) -> bool:
        for predicate in predicates:
            if predicate(ctx):
                return True
        return False

    return any_on


def _dependencies_gate(flag: Flag, lookup: Callable[[str], _CompiledFlag | None]) -> Predicate:
    dependencies = flag.dependencies

    def parents_allow(ctx: Context) -> bool:
        for dependency in dependencies:
            parent = lookup(dependency.feature)
            # Unleash allows one level only: a parent that has parents itself never satisfies.
            if parent is None or parent.has_dependencies:
                return False
            if dependency.enabled:
                if not parent.is_on(ctx):
                    return False
                if (
                    dependency.variants
                    and _pick_variant(parent, ctx).name not in dependency.variants
                ):
                    return False
            elif parent.is_on(ctx):
                return False
        return True

    return parents_allow


def _pick_variant(compiled: _CompiledFlag, ctx: Context) -> VariantResult:
    # One pass over the strategies: the first that matches decides both "on" and whose
    # variants apply (its own, else the flag's), as in Unleash's engine.
    if not compiled.flag.enabled or (compiled.gate is not None and not compiled.gate(ctx)):
        return DISABLED_VARIANT
    picker = compiled.variants
    if compiled.strategies:
        for predicate, strategy_variants in compiled.strategies:
            if predicate(ctx):
                if strategy_variants is not None:
                    picker = strategy_variants
                break
        else:
            return DISABLED_VARIANT
    if picker is None:
        return _ENABLED_NO_VARIANT
    return picker(ctx) or _ENABLED_NO_VARIANT


def _off(name: str) -> _CompiledFlag:
    """Stand-in for a flag that could not be read or compiled: known, and off."""
    return _CompiledFlag(Flag(name, enabled=False), False, _never, None, (), None)


def compile_snapshot(
    snapshot: ClientFeatures,
    custom_strategies: Mapping[str, CustomStrategy] | None = None,
) -> Engine:
    """Compile a snapshot of flags and segments into an `Engine`."""
    return Engine(snapshot, custom_strategies=custom_strategies)


class Engine:
    """Answers "is this flag on for this context?" for one snapshot of flags.

    Build it with `Engine.from_client_features` (Unleash's client payload or a delta) or
    from a `ClientFeatures` snapshot. `is_enabled` and `get_variant` never raise.
    """

    def __init__(
        self,
        snapshot: ClientFeatures | None = None,
        *,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
    ) -> None:
        self._builders: dict[str, StrategyBuilder] = dict(BUILTIN_STRATEGIES)
        for name, implementation in (custom_strategies or {}).items():
            self._builders[name] = custom_strategy_builder(implementation)
        self._reading = ClientFeaturesReading(snapshot or ClientFeatures())
        self._flags: dict[str, _CompiledFlag] = {}
        self._warnings: tuple[EngineWarning, ...] = ()
        self._compile()

    @classmethod
    def from_client_features(
        cls,
        payload: Mapping[str, Any],
        *,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
    ) -> Engine:
        """Compile Unleash's ``/api/client/features`` payload, or a delta that hydrates."""
        engine = cls(custom_strategies=custom_strategies)
        engine._reading = read_client_features(payload)
        engine._compile()
        return engine

    def apply_delta(self, payload: Mapping[str, Any]) -> None:
        """Apply delta events: ``hydration``, ``feature-*`` and ``segment-*`` changes."""
        self._reading = apply_delta(self._reading, payload)
        self._compile()

    @property
    def snapshot(self) -> ClientFeatures:
        return self._reading.snapshot

    @property
    def warnings(self) -> tuple[EngineWarning, ...]:
        return self._warnings

    def flag_names(self) -> tuple[str, ...]:
        return tuple(self._flags)

    def _compile(self) -> None:
        snapshot = self._reading.snapshot
        warnings = [
            EngineWarning(
                name,
                "; ".join(f"{d.path}: {d.message}" for d in problem.details) or problem.message,
            )
            for name, problem in self._reading.problems
        ]
        compiler = _Compiler({segment.id: segment for segment in snapshot.segments}, self._builders)
        flags: dict[str, _CompiledFlag] = {}
        lookup = flags.get
        for flag in snapshot.features:
            try:
                flags[flag.name] = compiler.flag(flag, lookup)
            except Exception as exc:  # a flag that cannot compile is off, never fatal
                warnings.append(EngineWarning(flag.name, f"could not compile: {exc}"))
                flags[flag.name] = _off(flag.name)
        for name, _problem in self._reading.problems:
            flags.setdefault(name, _off(name))
        self._flags = flags
        self._warnings = tuple(warnings)

    def is_enabled(self, name: str, context: ContextLike = None, *, default: bool = False) -> bool:
        """Whether ``name`` is on for ``context``; ``default`` if the flag is unknown."""
        compiled = self._flags.get(name)
        if compiled is None:
            return default
        try:
            if type(context) is not Context:
                context = _as_context(context)
            return compiled.is_on(context)
        except Exception:
            _log.debug("evaluating %r failed; answering off", name, exc_info=True)
            return False

    def get_variant(self, name: str, context: ContextLike = None) -> VariantResult:
        """The variant of ``name`` for ``context``; ``disabled`` when none applies."""
        compiled = self._flags.get(name)
        if compiled is None:
            return DISABLED_VARIANT
        try:
            if type(context) is not Context:
                context = _as_context(context)
            return _pick_variant(compiled, context)
        except Exception:
            _log.debug("picking a variant of %r failed; answering disabled", name, exc_info=True)
            return DISABLED_VARIANT

    def is_impression_data_enabled(self, name: str) -> bool:
        compiled = self._flags.get(name)
        return compiled is not None and compiled.flag.impression_data


def _as_context(context: Any) -> Context:
    if context is None:
        return _EMPTY_CONTEXT
    if isinstance(context, Context):
        return context
    if isinstance(context, Mapping):
        return Context.from_mapping(context)
    return _EMPTY_CONTEXT
