"""Compiling Unleash's client JSON straight into predicates, without model objects.

Reading 20,000 flags into `flagcore.model` first cost more time than compiling them, and
the model, kept for later, held most of the engine's memory. So the compiler reads each
flag's JSON once, checks the type of every field it uses, and keeps only closures and
the values they compare against (long IN lists as one joined string: see
`flagcore.operators.membership_predicate`). At the first surprise it raises `NotFast`; the
engine then reads that flag with `flagcore.wire` (which explains what is wrong, or
normalises what it can, such as numbers as parameters) and compiles its canonical JSON.
JSON keys come from `flagcore.wire.fields`, bound at import time.
Fields the engine never evaluates (description, project, ids, titles) are not checked.

Strategies reach segments through a `SegmentSlot`, so a delta that changes a segment
replaces its predicate in place and the flags that use it need no recompiling (their JSON
is gone by then).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from flagcore.context import Readable
from flagcore.operators import (
    BrokenRule,
    Predicate,
    always,
    constraint_predicate,
    field_reader,
    membership_predicate,
    never,
)
from flagcore.strategies import StrategyBuilder
from flagcore.variants import (
    ResultCache,
    VariantPicker,
    VariantResult,
    compile_variant_picker,
    variants_stickiness,
)
from flagcore.wire.fields import (
    CONSTRAINTS,
    DEPENDENCIES,
    ENABLED,
    FEATURE,
    IMPRESSION_DATA,
    NAME,
    PARAMETER_GROUP_ID,
    PARAMETER_STICKINESS,
    PARAMETERS,
    SEGMENTS,
    STRATEGIES,
    VALUES,
    VARIANTS,
)
from flagcore.wire.reading import (
    NotFast,
    as_bool_or,
    as_list,
    as_str,
    as_strings,
    constraint_fields,
)

__all__ = [
    "CompiledFlag",
    "RuleCompiler",
    "SegmentSlot",
    "all_of",
    "any_of",
    "dependency_allows",
    "matching_picker",
    "variant_of_matching_strategy",
]


def all_of(checks: tuple[Predicate, ...], then: Predicate = always) -> Predicate:
    """Every check, then ``then``, in order, stopping at the first that fails.

    The predicates built here bind what they use as default arguments (one tuple, not a
    cell per variable: see `flagcore.operators`); callers pass only the context.
    """
    if not checks:
        return then
    if len(checks) == 1:
        (only,) = checks
        if then is always:
            return only

        def one(ctx: Readable, only: Predicate = only, then: Predicate = then) -> bool:
            return only(ctx) and then(ctx)

        return one

    def every(
        ctx: Readable, checks: tuple[Predicate, ...] = checks, then: Predicate = then
    ) -> bool:
        for check in checks:
            if not check(ctx):
                return False
        return then(ctx)

    return every


def any_of(predicates: tuple[Predicate, ...]) -> Predicate:
    """Any predicate; none at all means everyone (an enabled flag without strategies)."""
    if not predicates:
        return always
    if len(predicates) == 1:
        return predicates[0]

    def any_on(ctx: Readable, predicates: tuple[Predicate, ...] = predicates) -> bool:
        for predicate in predicates:
            if predicate(ctx):
                return True
        return False

    return any_on


class SegmentSlot:
    """One segment as strategies see it; updated in place when the segment changes."""

    __slots__ = ("call", "check", "problem", "segment_id", "users")

    def __init__(self, segment_id: int) -> None:
        self.segment_id = segment_id
        self.check: Predicate = never
        # Why the segment cannot be used (missing, unreadable, a broken constraint): every
        # flag using it is then off, as in Unleash.
        self.problem: str | None = None
        self.users: set[str] = set()  # names of the compiled flags that use it
        slot = self

        def call(ctx: Readable) -> bool:
            return slot.check(ctx)

        self.call: Predicate = call


Dependency = tuple[str, bool, tuple[str, ...]]  # (parent flag, must be enabled, variants)
Rule = tuple[Predicate, VariantPicker | None]  # a strategy: its predicate, its own variants


@attrs.define(eq=False)
class CompiledFlag:
    """What evaluation needs of one flag. The effective fields follow its segments."""

    name: str
    declared_enabled: bool
    impression_data: bool
    dependencies: tuple[Dependency, ...]
    variants: VariantPicker | None
    rules: tuple[Rule, ...]
    slots: tuple[SegmentSlot, ...]
    # Why the flag's own rules cannot be evaluated; None when they compiled.
    rule_problem: str | None
    # Dependencies on other flags, checked before the strategies (set by the engine).
    gate: Predicate | None = None
    # Effective state, recomputed by `refresh`:
    enabled: bool = False
    is_on: Predicate = never
    strategies: tuple[Rule, ...] = ()
    problem: str | None = None

    def refresh(self) -> None:
        """Recompute the effective state (after compiling, or when a segment changed)."""
        problem = self.rule_problem
        if problem is None:
            for slot in self.slots:
                if slot.problem is not None:
                    problem = slot.problem
                    break
        self.problem = problem
        # Ordered for threads evaluating meanwhile: turning off, `enabled` goes first;
        # turning on, it goes last, once the rules it guards are in place.
        if problem is not None:
            # Off, but its dependencies and variants still count for children, as in Unleash.
            self.enabled = False
            self.is_on, self.strategies = never, ()
            return
        rules = self.rules
        if len(rules) == 1:
            is_on = rules[0][0]
        elif rules:
            is_on = any_of(tuple([rule[0] for rule in rules]))
        else:
            is_on = always  # enabled without strategies: on for everyone
        if self.gate is not None:
            is_on = all_of((self.gate,), is_on)
        self.strategies = rules
        self.is_on = is_on if self.declared_enabled else never
        self.enabled = self.declared_enabled


def matching_picker(compiled: CompiledFlag, ctx: Readable) -> tuple[bool, VariantPicker | None]:
    """Whether a strategy matches, and whose variants apply: the first matching strategy's
    own, else the flag's (as in Unleash's engine). No strategies counts as a match."""
    picker = compiled.variants
    for predicate, strategy_variants in compiled.strategies:
        if predicate(ctx):
            return True, strategy_variants if strategy_variants is not None else picker
    return not compiled.strategies, picker


def variant_of_matching_strategy(compiled: CompiledFlag, ctx: Readable) -> VariantResult | None:
    """The variant from the first matching strategy's variants, else the flag's."""
    _matched, picker = matching_picker(compiled, ctx)
    return picker(ctx) if picker is not None else None


def dependency_allows(
    parent: CompiledFlag | None, enabled: bool, variants: tuple[str, ...], ctx: Readable
) -> bool:
    """Whether one dependency on ``parent`` is satisfied (the engine's gate and
    `flagcore.explain` both ask this)."""
    # Unleash allows one level only: a parent that has parents itself never satisfies.
    if parent is None or parent.dependencies:
        return False
    if variants:
        # As in Unleash: the parent's variant counts even when the parent is off,
        # and a parent without variants satisfies any variant list.
        variant = variant_of_matching_strategy(parent, ctx)
        if variant is not None and variant.name not in variants:
            return False
    return parent.is_on(ctx) is enabled


class RuleCompiler:
    """Compiles one snapshot's flags and segments; equal variant answers are shared."""

    def __init__(self, builders: Mapping[str, StrategyBuilder]) -> None:
        self._builders = builders
        self._results: ResultCache = {}

    def release_caches(self) -> None:
        """Forget the variant answers flags share (once every flag is compiled, the cache
        only holds memory)."""
        self._results = {}

    def constraint(self, data: Any) -> Predicate:
        context_name, operator, value, inverted, case_insensitive = constraint_fields(data)
        values = data.get(VALUES)
        if values is None:
            values = []
        elif type(values) is not list:
            raise NotFast
        try:
            # A join checks, in C, that every value is a string: membership_predicate's
            # own for IN and NOT_IN, this one for the rest.
            if operator == "IN" or operator == "NOT_IN":
                return membership_predicate(
                    field_reader(context_name), values, operator == "NOT_IN", inverted
                )
            "".join(values)
        except TypeError:
            raise NotFast from None
        return constraint_predicate(
            context_name, operator, values, value, inverted, case_insensitive
        )

    def segment(self, data: Any) -> Predicate:
        """All of a segment's constraints, as one predicate."""
        if type(data) is not dict:
            raise NotFast
        return all_of(tuple(self.constraint(c) for c in as_list(data.get(CONSTRAINTS))))

    def strategy(
        self,
        data: Any,
        flag_name: str,
        slot: Callable[[int], SegmentSlot],
        slots: list[SegmentSlot],
    ) -> Rule:
        if type(data) is not dict:
            raise NotFast
        get = data.get
        name = get(NAME)
        parameters = get(PARAMETERS)
        constraints = get(CONSTRAINTS)
        segments = get(SEGMENTS)
        variants = get(VARIANTS)
        if type(name) is not str:
            raise NotFast
        if parameters is None:
            parameters = {}
        elif type(parameters) is not dict:
            raise NotFast
        else:
            try:
                "".join(parameters.values())  # checks, in C, that every value is a string
            except TypeError:
                raise NotFast from None  # numbers as parameters: the wire reads them as text
        if constraints is None:
            checks = []
        elif type(constraints) is list:
            constraint = self.constraint
            checks = [constraint(c) for c in constraints]
        else:
            raise NotFast
        if segments:
            for segment_id in as_list(segments):
                if type(segment_id) is not int:
                    raise NotFast
                used = slot(segment_id)
                slots.append(used)
                checks.append(used.call)
        elif segments is not None and type(segments) is not list:
            raise NotFast
        picker = None
        if variants:
            picker = compile_variant_picker(
                as_list(variants),
                parameters.get(PARAMETER_GROUP_ID, flag_name),
                parameters.get(PARAMETER_STICKINESS),
                with_overrides=False,
                results=self._results,
            )
        elif variants is not None and type(variants) is not list:
            raise NotFast
        builder = self._builders.get(name)
        if builder is None:
            return never, picker  # unknown strategies are off in every Unleash SDK
        return all_of(tuple(checks), builder(parameters, flag_name)), picker

    def flag(self, data: Any, slot: Callable[[int], SegmentSlot]) -> CompiledFlag:
        """Compile one flag; `NotFast` if its JSON is not plainly well-typed."""
        if type(data) is not dict:
            raise NotFast
        get = data.get
        name = get(NAME)
        enabled = get(ENABLED, False)
        impression_data = get(IMPRESSION_DATA)
        variants = get(VARIANTS)
        dependencies = get(DEPENDENCIES)
        strategies = get(STRATEGIES)
        if (
            type(name) is not str
            or type(enabled) is not bool
            or (impression_data is not None and type(impression_data) is not bool)
        ):
            raise NotFast
        picker = None
        if variants:
            picker = compile_variant_picker(
                as_list(variants), name, variants_stickiness(variants), results=self._results
            )
        elif variants is not None and type(variants) is not list:
            raise NotFast
        slots: list[SegmentSlot] = []
        rule_problem = None
        rules_list = []
        if strategies:
            strategy = self.strategy
            for data_strategy in as_list(strategies):
                try:
                    rules_list.append(strategy(data_strategy, name, slot, slots))
                except BrokenRule as exc:
                    # Off; the remaining strategies are still read, so JSON that cannot be
                    # read anywhere in the flag is reported as such (`NotFast`).
                    if rule_problem is None:
                        rule_problem = str(exc)
        elif strategies is not None and type(strategies) is not list:
            raise NotFast
        return CompiledFlag(
            name,
            enabled,
            impression_data is True,
            tuple([_dependency(d) for d in as_list(dependencies)])
            if dependencies is not None
            else (),
            picker,
            () if rule_problem is not None else tuple(rules_list),
            tuple(slots) if slots else (),
            rule_problem,
        )


def _dependency(data: Any) -> Dependency:
    if type(data) is not dict:
        raise NotFast
    return (
        as_str(data.get(FEATURE)),
        as_bool_or(data.get(ENABLED), True),
        as_strings(data.get(VARIANTS)),
    )
