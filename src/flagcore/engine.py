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

from flagcore.codec import (
    IndexedClientFeatures,
    apply_delta_events,
    index_client_features,
    structure_flag,
    structure_segment,
)
from flagcore.context import Context, MappingContext
from flagcore.errors import InvalidInput
from flagcore.gc_pause import gc_paused
from flagcore.model import ClientFeatures, Constraint, Flag, Segment, Strategy
from flagcore.operators import BrokenRule, Predicate, compile_constraint
from flagcore.operators import always as _always
from flagcore.operators import never as _never
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
        self, segments: Callable[[int], Segment | None], builders: Mapping[str, StrategyBuilder]
    ) -> None:
        self._builders = builders
        self._segments = segments
        self._compiled_segments: dict[int, tuple[Predicate, ...]] = {}
        # Equal constraints (shared lists, inlined segments) compile once per snapshot.
        self._constraints: dict[Constraint, Predicate] = {}

    def constraint(self, constraint: Constraint) -> Predicate:
        predicate = self._constraints.get(constraint)
        if predicate is None:
            predicate = self._constraints[constraint] = compile_constraint(constraint)
        return predicate

    def segment(self, segment_id: int) -> tuple[Predicate, ...]:
        compiled = self._compiled_segments.get(segment_id)
        if compiled is None:
            segment = self._segments(segment_id)
            if segment is None:
                raise BrokenRule(f"segment {segment_id} does not exist")
            # Compiled on first use: a broken segment breaks only the flags that use it.
            compiled = tuple(self.constraint(c) for c in segment.constraints)
            self._compiled_segments[segment_id] = compiled
        return compiled

    def strategy(self, strategy: Strategy, flag_name: str) -> Predicate:
        checks = [self.constraint(c) for c in strategy.constraints]
        for segment_id in strategy.segments:
            checks.extend(self.segment(segment_id))
        builder = self._builders.get(strategy.name)
        if builder is None:
            return _never  # unknown strategies are off in every Unleash SDK
        return _all_of(tuple(checks), builder(strategy, flag_name))

    def flag(self, flag: Flag, lookup: Callable[[str], _CompiledFlag | None]) -> _CompiledFlag:
        strategies = tuple(
            (
                self.strategy(strategy, flag.name),
                compile_variant_picker(
                    strategy.variants,
                    strategy.parameters.get("groupId", flag.name),
                    strategy.parameters.get("stickiness"),
                    with_overrides=False,
                ),
            )
            # Unleash's engine ignores `disabled` here: servers leave such strategies out.
            for strategy in flag.strategies
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
            if dependency.variants:
                # As in Unleash: the parent's variant counts even when the parent is off,
                # and a parent without variants satisfies any variant list.
                variant = _variant_of_matching_strategy(parent, ctx)
                if variant is not None and variant.name not in dependency.variants:
                    return False
            if parent.is_on(ctx) is not dependency.enabled:
                return False
        return True

    return parents_allow


def _matching_picker(compiled: _CompiledFlag, ctx: Context) -> tuple[bool, VariantPicker | None]:
    """Whether a strategy matches, and whose variants apply: the first matching strategy's
    own, else the flag's (as in Unleash's engine). No strategies counts as a match."""
    picker = compiled.variants
    for predicate, strategy_variants in compiled.strategies:
        if predicate(ctx):
            return True, strategy_variants if strategy_variants is not None else picker
    return not compiled.strategies, picker


def _variant_of_matching_strategy(compiled: _CompiledFlag, ctx: Context) -> VariantResult | None:
    """The variant from the first matching strategy's variants, else the flag's."""
    _matched, picker = _matching_picker(compiled, ctx)
    return picker(ctx) if picker is not None else None


def _pick_variant(compiled: _CompiledFlag, ctx: Context) -> VariantResult:
    if not compiled.flag.enabled or (compiled.gate is not None and not compiled.gate(ctx)):
        return DISABLED_VARIANT
    matched, picker = _matching_picker(compiled, ctx)
    if not matched:
        return DISABLED_VARIANT
    if picker is None:
        return _ENABLED_NO_VARIANT
    return picker(ctx) or _ENABLED_NO_VARIANT


def _off(name: str) -> _CompiledFlag:
    """Stand-in for a flag that could not be read or compiled: known, and off."""
    return _CompiledFlag(Flag(name, enabled=False), False, _never, None, (), None)


def _broken(flag: Flag) -> _CompiledFlag:
    """A flag whose rules cannot compile: off, but its parents and variants still count.

    Unleash keeps them: a child that requires this flag to be off, or one of its variants,
    is judged against them as for any other parent.
    """
    variants = compile_variant_picker(
        flag.variants, flag.name, flag.variants[0].stickiness if flag.variants else None
    )
    off = attrs.evolve(flag, enabled=False)
    return _CompiledFlag(off, bool(flag.dependencies), _never, None, (), variants)


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

    Loading only indexes the payload by flag name; each flag is read and compiled the
    first time it is evaluated (or by `compile_all`), so a process that asks about 50 of
    20,000 flags never pays for the rest.
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
        self._sources = IndexedClientFeatures()
        if snapshot is not None:
            self._sources.features.update((flag.name, flag) for flag in snapshot.features)
            self._sources.segments.update((segment.id, segment) for segment in snapshot.segments)
        self._reset()

    @classmethod
    def from_client_features(
        cls,
        payload: Mapping[str, Any],
        *,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
    ) -> Engine:
        """Load Unleash's ``/api/client/features`` payload, or a delta that hydrates."""
        engine = cls(custom_strategies=custom_strategies)
        engine._sources = index_client_features(payload)
        return engine

    def apply_delta(self, payload: Mapping[str, Any]) -> None:
        """Apply delta events: ``hydration``, ``feature-*`` and ``segment-*`` changes."""
        apply_delta_events(self._sources, payload)
        self._reset()

    def _reset(self) -> None:
        self._flags: dict[str, _CompiledFlag] = {}
        self._problems: dict[str, EngineWarning] = {
            where: _warning(where, problem) for where, problem in self._sources.unnamed
        }
        self._segments: dict[int, Segment | None] = {}
        self._compiler = _Compiler(self._segment, self._builders)

    def _segment(self, segment_id: int) -> Segment | None:
        if segment_id not in self._segments:
            raw = self._sources.segments.get(segment_id)
            try:
                self._segments[segment_id] = (
                    raw if raw is None or isinstance(raw, Segment) else structure_segment(raw)
                )
            except InvalidInput:
                self._segments[segment_id] = None  # strategies using it break, with a warning
        return self._segments[segment_id]

    def _compiled(self, name: str) -> _CompiledFlag | None:
        compiled = self._flags.get(name)
        if compiled is not None:
            return compiled
        raw = self._sources.features.get(name)
        if raw is None:
            return None
        with gc_paused():
            compiled = self._compile(name, raw)
        self._flags[name] = compiled
        return compiled

    def _compile(self, name: str, raw: Any) -> _CompiledFlag:
        try:
            flag = raw if isinstance(raw, Flag) else structure_flag(raw)
        except InvalidInput as problem:
            self._problems[name] = _warning(name, problem)
            return _off(name)
        try:
            compiled = self._compiler.flag(flag, self._compiled)
        except Exception as exc:  # a flag that cannot compile is off, never fatal
            self._problems[name] = EngineWarning(name, f"could not compile: {exc}")
            return _broken(flag)
        # The model is smaller than the JSON it came from; the JSON is not needed again.
        self._sources.features[name] = flag
        return compiled

    def compile_all(self) -> None:
        """Read and compile every flag now (loading does it lazily, flag by flag)."""
        with gc_paused():
            for name in self._sources.features:
                self._compiled(name)

    @property
    def snapshot(self) -> ClientFeatures:
        """The flags and segments as read (flags that could not be read are left out)."""
        features = tuple(
            compiled.flag
            for name in self._sources.features
            if (compiled := self._compiled(name)) is not None and name not in self._problems
        )
        segments = tuple(
            segment for i in self._sources.segments if (segment := self._segment(i)) is not None
        )
        return ClientFeatures(features, segments)

    @property
    def warnings(self) -> tuple[EngineWarning, ...]:
        """Flags that could not be read or compiled (they are off); compiles every flag."""
        self.compile_all()
        return tuple(self._problems.values())

    def flag_names(self) -> tuple[str, ...]:
        return tuple(self._sources.features)

    def is_enabled(self, name: str, context: ContextLike = None, *, default: bool = False) -> bool:
        """Whether ``name`` is on for ``context``; ``default`` if the flag is unknown."""
        compiled = self._flags.get(name) or self._compiled(name)
        if compiled is None:
            return default
        try:
            if type(context) is dict:
                context = MappingContext(context)
            elif type(context) is not Context:
                context = _as_context(context)
            return compiled.is_on(context)
        except Exception:
            _log.debug("evaluating %r failed; answering off", name, exc_info=True)
            return False

    def get_variant(self, name: str, context: ContextLike = None) -> VariantResult:
        """The variant of ``name`` for ``context``; ``disabled`` when none applies."""
        compiled = self._flags.get(name) or self._compiled(name)
        if compiled is None:
            return DISABLED_VARIANT
        try:
            if type(context) is dict:
                context = MappingContext(context)
            elif type(context) is not Context:
                context = _as_context(context)
            return _pick_variant(compiled, context)
        except Exception:
            _log.debug("picking a variant of %r failed; answering disabled", name, exc_info=True)
            return DISABLED_VARIANT

    def is_impression_data_enabled(self, name: str) -> bool:
        compiled = self._compiled(name)
        return compiled is not None and compiled.flag.impression_data


def _warning(where: str, problem: InvalidInput) -> EngineWarning:
    details = "; ".join(f"{d.path}: {d.message}" for d in problem.details)
    return EngineWarning(where, details or problem.message)


def _as_context(context: Any) -> Context:
    if context is None:
        return _EMPTY_CONTEXT
    if isinstance(context, Context):
        return context
    if isinstance(context, Mapping):
        return MappingContext(context)
    return _EMPTY_CONTEXT
