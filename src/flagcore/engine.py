"""The evaluation engine: compile a payload once, then answer from closures.

Every flag becomes closures at compile time (`flagcore.compiler`), so an evaluation is a
dictionary lookup and a few calls, with nothing parsed or allocated on the way. A flag
that cannot be read or compiled evaluates to off and is listed in `Engine.warnings`;
evaluation itself never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from flagcore.compiler import (
    CompiledFlag,
    RuleCompiler,
    SegmentSlot,
    dependency_allows,
    matching_picker,
)
from flagcore.context import Context, MappingContext, Readable
from flagcore.errors import InvalidInput
from flagcore.explain import (
    ExplainSources,
    FlagExplanation,
    NotExplainable,
    explain_flag,
    unknown_flag,
)
from flagcore.gc_pause import gc_paused
from flagcore.model import ClientFeatures, Flag, Segment
from flagcore.operators import Predicate
from flagcore.operators import never as _never
from flagcore.strategies import (
    BUILTIN_STRATEGIES,
    CustomStrategy,
    StrategyBuilder,
    custom_strategy_builder,
)
from flagcore.variants import DISABLED_VARIANT, VariantResult
from flagcore.wire import (
    IndexedClientFeatures,
    apply_delta_events,
    index_client_features,
    structure_flag,
    structure_segment,
    write_flag,
    write_segment,
)
from flagcore.wire.reading import NotFast

__all__ = ["Engine", "EngineWarning"]

_log = logging.getLogger(__name__)
ContextLike = Context | Mapping[str, Any] | None
_EMPTY_CONTEXT = Context()
_ENABLED_NO_VARIANT = VariantResult("disabled", False, True)
_BULK_BUILD = 1_000  # flags compiled at once before gc_paused(promote=True) is worth it


@attrs.frozen
class EngineWarning:
    """A flag (or a part of one) that could not be compiled; it evaluates to off."""

    flag: str
    message: str


def _dependencies_gate(
    flag: CompiledFlag, lookup: Callable[[str], CompiledFlag | None]
) -> Predicate:
    dependencies = flag.dependencies

    def parents_allow(ctx: Readable) -> bool:
        for feature, enabled, variants in dependencies:
            if not dependency_allows(lookup(feature), enabled, variants, ctx):
                return False
        return True

    return parents_allow


def _pick_variant(compiled: CompiledFlag, ctx: Readable) -> VariantResult:
    if not compiled.enabled or (compiled.gate is not None and not compiled.gate(ctx)):
        return DISABLED_VARIANT
    matched, picker = matching_picker(compiled, ctx)
    if not matched:
        return DISABLED_VARIANT
    if picker is None:
        return _ENABLED_NO_VARIANT
    return picker(ctx) or _ENABLED_NO_VARIANT


def _off(name: str) -> CompiledFlag:
    """Stand-in for a flag that could not be read: known, and off."""
    return CompiledFlag(name, False, False, (), None, (), (), None)


class Engine:
    """Answers "is this flag on for this context?" for one snapshot of flags.

    Build it with `Engine.from_client_features` (Unleash's client payload or a delta) or
    from a `ClientFeatures` snapshot. `is_enabled` and `get_variant` never raise.

    ``pause_gc=False`` keeps `compile_all` from pausing the process's cyclic garbage
    collector (see flagcore.gc_pause); pausing halves a bulk compile.

    Loading only indexes the payload by flag name; each flag is compiled the first time
    it is evaluated (or by `compile_all`), so a process that asks about 50 of 20,000 flags
    never pays for the rest. Once compiled, a flag's JSON is let go: the engine keeps only
    what evaluation needs.
    """

    def __init__(
        self,
        snapshot: ClientFeatures | None = None,
        *,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
        pause_gc: bool = True,
        explainable: bool = False,
    ) -> None:
        # Whether `compile_all` pauses the process's cyclic collector (flagcore.gc_pause).
        self._pause_gc = pause_gc
        # Whether each flag's JSON is kept after compiling, for `explain`.
        self._explainable = explainable
        self._builders: dict[str, StrategyBuilder] = dict(BUILTIN_STRATEGIES)
        for name, implementation in (custom_strategies or {}).items():
            self._builders[name] = custom_strategy_builder(implementation)
        self._sources = IndexedClientFeatures()
        if snapshot is not None:
            # Model values stay as they are until compiled, then become JSON one at a time.
            self._sources.features.update((flag.name, flag) for flag in snapshot.features)
            self._sources.segments.update((segment.id, segment) for segment in snapshot.segments)
        self._reset()

    @classmethod
    def from_client_features(
        cls,
        payload: Mapping[str, Any],
        *,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
        pause_gc: bool = True,
        explainable: bool = False,
    ) -> Engine:
        """Load Unleash's ``/api/client/features`` payload, or a delta that hydrates."""
        engine = cls(
            custom_strategies=custom_strategies, pause_gc=pause_gc, explainable=explainable
        )
        engine._sources = index_client_features(payload)
        engine._reset()
        return engine

    def apply_delta(self, payload: Mapping[str, Any]) -> None:
        """Apply delta events: ``hydration``, ``feature-*`` and ``segment-*`` changes.

        Other threads may evaluate meanwhile: each flag answers from its old or its new
        rules. Events apply in order; one that cannot be read raises `InvalidInput` and
        leaves the events before it applied.
        """
        try:
            apply_delta_events(self._sources, payload, self._changed)
        finally:
            for where, problem in self._sources.unnamed:
                self._problems.setdefault(where, _warning(where, problem))
            # Deltas are small: the cache of shared variant answers would only grow with them.
            self._compiler.release_caches()

    def _changed(self, kind: str, key: Any) -> None:
        if kind == "hydration":
            self._reset()
        elif kind == "feature":
            old = self._flags.pop(key, None)  # compiled again, from the new JSON, on first use
            self._problems.pop(key, None)
            if old is not None:
                for used in old.slots:
                    used.users.discard(key)
                    self._drop_if_unused(used)
        elif kind == "segment" and (changed := self._slots.get(key)) is not None:
            self._load_segment(key, changed)
            for name in tuple(changed.users):
                compiled = self._flags[name]  # users are always current: see above
                compiled.refresh()
                self._note_problem(compiled)

    def _drop_if_unused(self, slot: SegmentSlot) -> None:
        """Forget a slot no compiled flag uses (it is made again if a flag needs it)."""
        if not slot.users and self._slots.get(slot.segment_id) is slot:
            del self._slots[slot.segment_id]

    def _reset(self) -> None:
        self._flags: dict[str, CompiledFlag] = {}
        self._slots: dict[int, SegmentSlot] = {}
        self._problems: dict[str, EngineWarning] = {
            where: _warning(where, problem) for where, problem in self._sources.unnamed
        }
        self._compiler = RuleCompiler(self._builders)

    def _slot(self, segment_id: int) -> SegmentSlot:
        slot = self._slots.get(segment_id)
        if slot is None:
            slot = self._slots[segment_id] = SegmentSlot(segment_id)
            self._load_segment(segment_id, slot)
        return slot

    def _load_segment(self, segment_id: int, slot: SegmentSlot) -> None:
        # Worked out first and set together, so a concurrent evaluation sees the old
        # segment or the new one, never a half-made one.
        check: Predicate = _never
        problem: str | None = f"segment {segment_id} does not exist"
        raw = self._sources.segments.get(segment_id)
        if raw is not None:
            if isinstance(raw, Segment):
                raw = write_segment(raw)
            try:
                try:
                    check = self._compiler.segment(raw)
                except (NotFast, KeyError):
                    check = self._compiler.segment(write_segment(structure_segment(raw)))
                problem = None
            except InvalidInput as unreadable:
                problem = f"segment {segment_id} could not be read: {_details(unreadable)}"
            except Exception as exc:  # a segment that cannot compile turns its flags off
                problem = f"segment {segment_id}: {exc}"
        if problem is None:
            slot.check, slot.problem = check, None
        else:
            slot.problem, slot.check = problem, _never

    def _compiled(self, name: str) -> CompiledFlag | None:
        compiled = self._flags.get(name)
        if compiled is not None:
            return compiled
        if name not in self._sources.features:
            return None
        # No collector pause for one flag: it defers a few collections, saves none.
        return self._compile(name)

    def _compile(self, name: str) -> CompiledFlag:
        raw = self._sources.features[name]
        if type(raw) is not dict and isinstance(raw, Flag):
            raw = write_flag(raw)
        try:
            try:
                compiled = self._compiler.flag(raw, self._slot)
            except (NotFast, KeyError):
                # Not plainly well-typed: the codec explains what is wrong, or normalises
                # what it can (numbers as text), and its JSON compiles.
                compiled = self._compiler.flag(write_flag(structure_flag(raw)), self._slot)
        except InvalidInput as problem:
            self._problems[name] = _warning(name, problem)
            compiled = _off(name)
        except Exception as exc:  # a flag that cannot compile is off, never fatal
            self._problems[name] = EngineWarning(name, f"could not compile: {exc}")
            compiled = _off(name)
        else:
            if compiled.dependencies:
                compiled.gate = _dependencies_gate(compiled, self._compiled)
            compiled.refresh()
            for slot in compiled.slots:
                slot.users.add(name)
            if compiled.problem is not None or self._problems:
                self._note_problem(compiled)
        self._flags[name] = compiled
        if not self._explainable:
            # The compiled flag replaces its JSON, which only `explain` would need again.
            self._sources.features[name] = compiled
        return compiled

    def _note_problem(self, compiled: CompiledFlag) -> None:
        if compiled.problem is None:
            self._problems.pop(compiled.name, None)
        else:
            message = f"could not compile: {compiled.problem}"
            self._problems[compiled.name] = EngineWarning(compiled.name, message)

    def compile_all(self) -> None:
        """Compile every flag now (loading does it lazily, flag by flag)."""
        pending = [name for name in self._sources.features if name not in self._flags]
        # Promoting what was built to the oldest GC generation pays off for a bulk build
        # only; done often, it would keep young collections from ever running.
        with gc_paused(promote=len(pending) >= _BULK_BUILD, enabled=self._pause_gc):
            for name in pending:
                self._compile(name)
        # Every flag is compiled: the cache of shared variant answers would only hold memory.
        self._compiler.release_caches()

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
            # Plain dicts and Contexts are read as they are (see flagcore.context.Readable).
            if type(context) is not dict and type(context) is not Context:
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
            # Plain dicts and Contexts are read as they are (see flagcore.context.Readable).
            if type(context) is not dict and type(context) is not Context:
                context = _as_context(context)
            return _pick_variant(compiled, context)
        except Exception:
            _log.debug("picking a variant of %r failed; answering disabled", name, exc_info=True)
            return DISABLED_VARIANT

    def explain(self, name: str, context: ContextLike = None) -> FlagExplanation:
        """The whole decision on ``name`` for ``context``: environment, dependencies,
        each strategy with its constraints, segments and rollout bucket, and how the
        variant was chosen. It answers as `is_enabled` and `get_variant` do.

        Needs an engine built with ``explainable=True`` (which keeps each flag's JSON);
        otherwise raises `NotExplainable`. Evaluation never pays for it.
        """
        if not self._explainable:
            raise NotExplainable("explain needs an engine built with explainable=True")
        if type(context) is not dict and type(context) is not Context:
            context = _as_context(context)
        compiled = self._compiled(name)
        if compiled is None:
            return unknown_flag(name)
        return explain_flag(
            self._sources.features[name],
            compiled,
            ExplainSources(self._builders, self._sources.segments.get, self._compiled),
            context,
        )

    def is_impression_data_enabled(self, name: str) -> bool:
        """Whether ``name`` asks SDKs to emit impression events (Unleash's ``impressionData``)."""
        compiled = self._compiled(name)
        return compiled is not None and compiled.impression_data


def _details(problem: InvalidInput) -> str:
    return "; ".join(f"{d.path}: {d.message}" for d in problem.details) or problem.message


def _warning(where: str, problem: InvalidInput) -> EngineWarning:
    return EngineWarning(where, _details(problem))


def _as_context(context: Any) -> Readable:
    if context is None:
        return _EMPTY_CONTEXT
    if isinstance(context, Context):
        return context
    if isinstance(context, Mapping):
        return MappingContext(context)
    return _EMPTY_CONTEXT
