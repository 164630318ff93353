"""Why a flag is on or off for one context: the engine's decision, step by step.

`Engine.explain` answers with a `FlagExplanation`: whether the flag exists and is enabled
in the environment, each dependency, each strategy in order (parameters, constraints
with the context value each compared, segments, the rollout's stickiness value and
bucket), and how the variant was chosen. It agrees with `Engine.is_enabled` and
`Engine.get_variant` because it is built from the same parts: the compiled flag's own
strategy predicates and variant pickers decide, and each constraint, segment, strategy
and rollout is shown by running the very rule code the compiler builds them with
(`RuleCompiler.constraint`, the strategy builders, `rollout_plan`, the variant hash).
Nothing here runs unless asked: evaluation never pays for it.

Every explanation turns into plain JSON (`FlagExplanation.to_json`), the base of the
command line's ``flagcore explain`` and of Unleash's playground API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from flagcore.compiler import (
    CompiledFlag,
    RuleCompiler,
    dependency_allows,
    variant_of_matching_strategy,
)
from flagcore.context import Readable
from flagcore.errors import InvalidInput
from flagcore.hashing import percentage_bucket
from flagcore.model import Flag, Segment, Strategy
from flagcore.operators import BrokenRule, field_reader
from flagcore.strategies import StrategyBuilder, rollout_plan
from flagcore.variants import (
    DISABLED_VARIANT,
    OverrideMatch,
    VariantPicker,
    VariantResult,
    VariantTrace,
    trace_variant_choice,
    variants_stickiness,
)
from flagcore.wire import (
    AnswerField,
    answer,
    structure_flag,
    structure_segment,
    write_answer,
    write_constraint,
    write_flag,
)
from flagcore.wire.fields import PARAMETER_GROUP_ID, PARAMETER_STICKINESS, VARIANTS

__all__ = [
    "ConstraintResult",
    "DependencyResult",
    "ExplainSources",
    "ExplainedIn",
    "FlagExplanation",
    "NotExplainable",
    "RolloutResult",
    "SegmentResult",
    "StrategyResult",
    "VariantChoice",
    "explain_flag",
    "explain_strategy",
    "unknown_flag",
]

JSON = dict[str, Any]
# An enabled flag whose matching strategy and flag have no variants (as `get_variant`).
_ENABLED_NO_VARIANT = VariantResult("disabled", False, True)


class NotExplainable(RuntimeError):
    """The engine let go of its flags' JSON; build it with ``explainable=True``."""


@answer(
    AnswerField("context_name", "contextName"),
    AnswerField("operator", "operator"),
    AnswerField("values", "values"),
    AnswerField("value", "value", omitted_when_none=True),
    AnswerField("inverted", "inverted"),
    AnswerField("case_insensitive", "caseInsensitive"),
    AnswerField("context_value", "contextValue"),
    AnswerField("result", "result"),
    AnswerField("problem", "problem", omitted_when_none=True),
)
@attrs.frozen
class ConstraintResult:
    """One constraint, the context value it read and whether it held."""

    context_name: str
    operator: str
    values: tuple[str, ...]
    value: str | None
    inverted: bool
    case_insensitive: bool
    context_value: str | None
    result: bool
    problem: str | None = None  # why the constraint cannot be evaluated (the flag is off)

    def to_json(self) -> JSON:
        return write_answer(self)


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("result", "result"),
    AnswerField("constraints", "constraints"),
    AnswerField("problem", "problem", omitted_when_none=True),
)
@attrs.frozen
class SegmentResult:
    """One segment a strategy uses: all its constraints must hold."""

    id: int
    name: str | None  # None when the segment does not exist
    result: bool
    constraints: tuple[ConstraintResult, ...]
    problem: str | None = None

    def to_json(self) -> JSON:
        return write_answer(self)


@answer(
    AnswerField("stickiness", "stickiness"),
    AnswerField("group_id", "groupId"),
    AnswerField("percentage", "percentage"),
    AnswerField("stickiness_value", "stickinessValue"),
    AnswerField("bucket", "bucket"),
    AnswerField("random", "random"),
)
@attrs.frozen
class RolloutResult:
    """A sticky rollout: what it hashed and where that landed (1..100)."""

    stickiness: str
    group_id: str | None
    percentage: int | None
    stickiness_value: str | None  # None: missing (off) or drawn at random
    bucket: int | None  # None when nothing was hashed
    random: bool  # no sticky value: Unleash draws a random bucket

    def to_json(self) -> JSON:
        return write_answer(self)


# The engine's own values, answered as they are (the variant keeps the client
# specification's snake_case ``feature_enabled``).
answer(
    ("name", "name"),
    ("enabled", "enabled"),
    ("feature_enabled", "feature_enabled"),
    AnswerField("payload", "payload", omitted_when_none=True),
)(VariantResult)
answer(("context_name", "contextName"), ("value", "value"))(OverrideMatch)
answer(
    ("how", "how"),
    ("stickiness", "stickiness"),
    ("stickiness_value", "stickinessValue"),
    ("total_weight", "totalWeight"),
    ("bucket", "bucket"),
    AnswerField("override", "override", omitted_when_none=True),
)(VariantTrace)


@answer(
    ("variant", "variant"),
    ("origin", "origin"),
    AnswerField("strategy_index", "strategyIndex", omitted_when_none=True),
    AnswerField("trace", "", spread=True),
)
@attrs.frozen
class VariantChoice:
    """How a variant was chosen: whose variants (a strategy's or the flag's) and how
    (an override, a sticky weight bucket, a random bucket, or no variant at all); the
    trace's keys sit beside the variant's."""

    variant: VariantResult
    origin: str  # "strategy", "flag" or "none" (neither has variants)
    strategy_index: int | None  # the strategy whose variants were used
    trace: VariantTrace | None

    def to_json(self) -> JSON:
        return write_answer(self)


@answer(
    ("index", "index"),
    ("name", "name"),
    ("id", "id"),
    ("title", "title"),
    ("disabled", "disabled"),
    ("parameters", "parameters"),
    ("known", "known"),
    ("constraints", "constraints"),
    ("constraints_result", "constraintsResult"),
    ("segments", "segments"),
    ("segments_result", "segmentsResult"),
    ("strategy_result", "strategyResult"),
    ("rollout", "rollout"),
    ("result", "result"),
    ("variant", "variant"),
    ("variants", "variants"),
    AnswerField("problem", "problem", omitted_when_none=True),
)
@attrs.frozen
class StrategyResult:
    """One strategy, in order. ``result`` is what the engine decided for it."""

    index: int
    name: str
    id: str | None
    title: str | None
    disabled: bool  # the client API leaves it out; an engine given one counts it
    parameters: Mapping[str, str]
    known: bool  # an implementation exists (unknown strategies are off)
    constraints: tuple[ConstraintResult, ...]
    constraints_result: bool
    segments: tuple[SegmentResult, ...]
    segments_result: bool
    strategy_result: bool | None  # the strategy's own rule (None: unknown or unusable)
    rollout: RolloutResult | None
    result: bool
    variant: VariantChoice | None  # when the strategy has variants of its own
    variants: tuple[JSON, ...]
    problem: str | None = None

    def to_json(self) -> JSON:
        return write_answer(self)


@answer(
    AnswerField("feature", "feature"),
    AnswerField("required_enabled", "requiredEnabled"),
    AnswerField("required_variants", "requiredVariants"),
    AnswerField("found", "found"),
    AnswerField("parent_enabled", "parentEnabled"),
    AnswerField("parent_variant", "parentVariant"),
    AnswerField("satisfied", "satisfied"),
)
@attrs.frozen
class DependencyResult:
    """One parent flag this flag requires (on or off, maybe with one of some variants)."""

    feature: str
    required_enabled: bool
    required_variants: tuple[str, ...]
    found: bool
    parent_enabled: bool | None
    parent_variant: str | None
    satisfied: bool

    def to_json(self) -> JSON:
        return write_answer(self)


@answer(
    AnswerField("name", "name"),
    AnswerField("exists", "exists"),
    AnswerField("project", "project"),
    AnswerField("enabled_in_environment", "enabledInEnvironment"),
    AnswerField("problem", "problem"),
    AnswerField("dependencies", "dependencies"),
    AnswerField("dependencies_satisfied", "dependenciesSatisfied"),
    AnswerField("strategies", "strategies"),
    AnswerField("strategies_result", "strategiesResult"),
    AnswerField("matched_strategy", "matchedStrategy"),
    AnswerField("enabled", "enabled"),
    AnswerField("variant", "variant"),
    AnswerField("variant_choice", "variantChoice"),
    AnswerField("variants", "variants"),
)
@attrs.frozen
class FlagExplanation:
    """The whole decision on one flag for one context.

    ``enabled`` and ``variant`` are what `Engine.is_enabled` and `Engine.get_variant`
    answer; the rest says why.
    """

    name: str
    exists: bool
    project: str | None
    enabled_in_environment: bool  # the flag's switch in the environment
    problem: str | None  # why the flag cannot be evaluated (it is off)
    dependencies: tuple[DependencyResult, ...]
    dependencies_satisfied: bool
    strategies: tuple[StrategyResult, ...]
    # Whether some strategy matched (True without strategies: on for everyone).
    strategies_result: bool
    matched_strategy: int | None  # index of the first strategy that matched
    enabled: bool
    variant: VariantResult
    variant_choice: VariantChoice | None  # None when the flag is off
    variants: tuple[JSON, ...]  # the flag's own variants, as Unleash's JSON

    def to_json(self) -> JSON:
        """The explanation as plain JSON (Unleash's camelCase keys)."""
        return write_answer(self)


@answer(("environment", "environment"), AnswerField("explanation", "", spread=True))
@attrs.frozen
class ExplainedIn:
    """An explanation answered with the environment it was asked about (the admin
    API's explain route), the explanation's keys beside ``environment``."""

    environment: str
    explanation: FlagExplanation


@attrs.frozen
class ExplainSources:
    """What the explainer reads of an engine: its strategy implementations, its segments'
    JSON (or models) by id, and its compiled flags by name (for parents)."""

    builders: Mapping[str, StrategyBuilder]
    segment: Callable[[int], Any]
    flag: Callable[[str], CompiledFlag | None]


def unknown_flag(name: str) -> FlagExplanation:
    """A flag the engine does not know: off, as `is_enabled` answers by default."""
    return FlagExplanation(
        name, False, None, False, None, (), True, (), False, None, False, DISABLED_VARIANT, None, ()
    )


def explain_flag(
    source: Any, compiled: CompiledFlag, sources: ExplainSources, ctx: Readable
) -> FlagExplanation:
    """Explain ``compiled`` (read from ``source``, its JSON or model) for ``ctx``."""
    try:
        flag = source if isinstance(source, Flag) else structure_flag(source)
    except InvalidInput as unreadable:
        problem = "; ".join(f"{d.path}: {d.message}" for d in unreadable.details)
        return attrs.evolve(unknown_flag(compiled.name), exists=True, problem=problem)
    data = write_flag(flag)
    dependencies = tuple(
        _dependency(dependency, sources, ctx) for dependency in compiled.dependencies
    )
    dependencies_satisfied = all(d.satisfied for d in dependencies)
    strategies = _strategies(flag, data, compiled, sources, ctx)
    matched = next((s.index for s in strategies if s.result), None)
    strategies_result = matched is not None or not strategies
    # As `CompiledFlag.is_on`: off in the environment or unusable is off for everyone.
    enabled = compiled.enabled and dependencies_satisfied and strategies_result
    variant, choice = DISABLED_VARIANT, None
    if enabled:
        choice = _flag_variant(flag, data, compiled, strategies, matched, ctx)
        variant = choice.variant
    return FlagExplanation(
        name=flag.name,
        exists=True,
        project=flag.project,
        enabled_in_environment=compiled.declared_enabled,
        problem=compiled.problem,
        dependencies=dependencies,
        dependencies_satisfied=dependencies_satisfied,
        strategies=strategies,
        strategies_result=strategies_result,
        matched_strategy=matched,
        enabled=enabled,
        variant=variant,
        variant_choice=choice,
        variants=tuple(data[VARIANTS]),
    )


def _dependency(
    dependency: tuple[str, bool, tuple[str, ...]], sources: ExplainSources, ctx: Readable
) -> DependencyResult:
    feature, enabled, variants = dependency
    parent = sources.flag(feature)
    parent_enabled = parent_variant = None
    if parent is not None:
        parent_enabled = parent.is_on(ctx)
        chosen = variant_of_matching_strategy(parent, ctx)
        parent_variant = None if chosen is None else chosen.name
    return DependencyResult(
        feature,
        enabled,
        variants,
        parent is not None,
        parent_enabled,
        parent_variant,
        dependency_allows(parent, enabled, variants, ctx),
    )


def _strategies(
    flag: Flag, data: JSON, compiled: CompiledFlag, sources: ExplainSources, ctx: Readable
) -> tuple[StrategyResult, ...]:
    compiler = RuleCompiler(sources.builders)
    # The compiled rules are the strategies, in order (none if one is unusable). A
    # strategy marked disabled counts like any other, as in Unleash's engine: the client
    # API leaves disabled strategies out, so SDKs never see one.
    rules = compiled.rules if len(compiled.rules) == len(flag.strategies) else None
    return tuple(
        _strategy(
            index,
            flag.name,
            strategy,
            strategy_data,
            None if rules is None else rules[index],
            compiler,
            sources,
            ctx,
        )
        for index, (strategy, strategy_data) in enumerate(
            zip(flag.strategies, data["strategies"], strict=True)
        )
    )


def explain_strategy(
    flag_name: str, strategy: Strategy, sources: ExplainSources, ctx: Readable, index: int = 0
) -> StrategyResult:
    """One strategy on its own, outside any flag's evaluation: what its parts say for
    ``ctx`` (the playground shows disabled strategies this way, as Unleash does)."""
    data = write_flag(Flag(flag_name, strategies=(strategy,)))["strategies"][0]
    return _strategy(
        index, flag_name, strategy, data, None, RuleCompiler(sources.builders), sources, ctx
    )


def _strategy(
    index: int,
    flag_name: str,
    strategy: Strategy,
    data: JSON,
    rule: tuple[Callable[[Readable], bool], VariantPicker | None] | None,
    compiler: RuleCompiler,
    sources: ExplainSources,
    ctx: Readable,
) -> StrategyResult:
    constraints = tuple(_constraint(compiler, c, ctx) for c in data["constraints"])
    segments = tuple(
        _segment(compiler, segment_id, sources, ctx) for segment_id in strategy.segments
    )
    problem = next((c.problem for c in constraints if c.problem is not None), None)
    if problem is None:
        problem = next((s.problem for s in segments if s.problem is not None), None)
    builder = sources.builders.get(strategy.name)
    strategy_result: bool | None = None
    rollout = None
    try:
        if builder is not None:
            strategy_result = builder(strategy.parameters, flag_name)(ctx)
        rollout = _rollout(strategy, flag_name, ctx)
    except BrokenRule as broken:
        problem = problem or str(broken)
        strategy_result = None
    constraints_result = all(c.result for c in constraints)
    segments_result = all(s.result for s in segments)
    if rule is not None:
        result = rule[0](ctx)  # the engine's own predicate decides
    else:
        # No compiled rule (the flag is unusable, or the strategy stands alone): what its
        # parts say.
        result = bool(constraints_result and segments_result and strategy_result)
    variant = None
    if strategy.variants:
        variant = _strategy_variant(index, flag_name, strategy, data, rule, ctx)
    return StrategyResult(
        index=index,
        name=strategy.name,
        id=strategy.id,
        title=strategy.title,
        disabled=strategy.disabled,
        parameters=dict(strategy.parameters),
        known=builder is not None,
        constraints=constraints,
        segments=segments,
        constraints_result=constraints_result,
        segments_result=segments_result,
        strategy_result=strategy_result,
        rollout=rollout,
        result=result,
        variant=variant,
        variants=tuple(data[VARIANTS]),
        problem=problem,
    )


def _constraint(compiler: RuleCompiler, data: JSON, ctx: Readable) -> ConstraintResult:
    problem = None
    try:
        result = compiler.constraint(data)(ctx)
    except BrokenRule as broken:
        result, problem = False, str(broken)
    return ConstraintResult(
        context_name=data["contextName"],
        operator=data["operator"],
        values=tuple(data["values"]),
        value=data["value"],
        inverted=data["inverted"],
        case_insensitive=data["caseInsensitive"],
        context_value=field_reader(data["contextName"])(ctx),
        result=result,
        problem=problem,
    )


def _segment(
    compiler: RuleCompiler, segment_id: int, sources: ExplainSources, ctx: Readable
) -> SegmentResult:
    raw = sources.segment(segment_id)
    if raw is None:
        return SegmentResult(segment_id, None, False, (), f"segment {segment_id} does not exist")
    try:
        segment = raw if isinstance(raw, Segment) else structure_segment(raw)
    except InvalidInput:
        return SegmentResult(segment_id, None, False, (), f"segment {segment_id} could not be read")
    constraints = tuple(
        _constraint(compiler, write_constraint(c), ctx) for c in segment.constraints
    )
    problem = next((c.problem for c in constraints if c.problem is not None), None)
    return SegmentResult(
        segment.id, segment.name, all(c.result for c in constraints), constraints, problem
    )


_read_user_id = field_reader("userId")
_read_session_id = field_reader("sessionId")


def _rollout(strategy: Strategy, flag_name: str, ctx: Readable) -> RolloutResult | None:
    plan = rollout_plan(strategy.name, strategy.parameters, flag_name)
    if plan is None:
        return None
    random = plan.stickiness == "random" or (
        plan.stickiness == "default"
        and _read_user_id(ctx) is None
        and _read_session_id(ctx) is None
    )
    value = None if random else plan.identify(ctx)
    bucket = None
    if value is not None and plan.group_id is not None:
        bucket = percentage_bucket(plan.group_id, value)
    return RolloutResult(plan.stickiness, plan.group_id, plan.percentage, value, bucket, random)


def _strategy_variant(
    index: int,
    flag_name: str,
    strategy: Strategy,
    data: JSON,
    rule: tuple[Callable[[Readable], bool], VariantPicker | None] | None,
    ctx: Readable,
) -> VariantChoice | None:
    picker = None if rule is None else rule[1]
    if picker is None:
        return None  # weights add up to nothing: the flag's variants apply instead
    parameters = strategy.parameters
    trace = trace_variant_choice(
        data[VARIANTS],
        parameters.get(PARAMETER_GROUP_ID, flag_name),
        parameters.get(PARAMETER_STICKINESS),
        ctx,
        with_overrides=False,
    )
    chosen = picker(ctx) or _ENABLED_NO_VARIANT
    return VariantChoice(chosen, "strategy", index, trace)


def _flag_variant(
    flag: Flag,
    data: JSON,
    compiled: CompiledFlag,
    strategies: tuple[StrategyResult, ...],
    matched: int | None,
    ctx: Readable,
) -> VariantChoice:
    """As `Engine.get_variant`: the matching strategy's variants, else the flag's."""
    if matched is not None and strategies[matched].variant is not None:
        choice = strategies[matched].variant
        assert choice is not None
        return choice
    picker = compiled.variants
    if picker is None:
        return VariantChoice(_ENABLED_NO_VARIANT, "none", None, None)
    variants = data[VARIANTS]
    trace = trace_variant_choice(variants, flag.name, variants_stickiness(variants), ctx)
    return VariantChoice(picker(ctx) or _ENABLED_NO_VARIANT, "flag", None, trace)
