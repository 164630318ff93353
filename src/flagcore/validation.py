"""Rules an admin input must follow before it is stored.

The engine is lenient with what it reads (a broken rule turns a flag off); the admin side
is strict, so a broken rule is refused with a message and a JSON path before it can
reach an SDK. Constraints are checked by compiling them with the engine itself: whatever
the service accepts, the engine evaluates as intended.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import attrs

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.limits import Limits, enforce
from flagcore.model import Constraint, Strategy, Variant, WeightType
from flagcore.operators import (
    OPERATORS,
    BrokenRule,
    compile_constraint,
    parse_network,
    rule_value_problem,
)
from flagcore.regex_dialect import UnsupportedPattern, compile_rust_pattern
from flagcore.strategies import parse_percentage

__all__ = [
    "LIST_OPERATORS",
    "SINGLE_VALUE_OPERATORS",
    "check_constraints",
    "check_name",
    "check_strategy",
    "check_variants",
    "normalise_variant_weights",
]

_URL_FRIENDLY = re.compile(r"[A-Za-z0-9_.~-]+")
MAX_NAME_LENGTH = 255
LIST_OPERATORS = frozenset(
    {"IN", "NOT_IN", "STR_CONTAINS", "STR_STARTS_WITH", "STR_ENDS_WITH", "IN_CIDR"}
)
SINGLE_VALUE_OPERATORS = frozenset(OPERATORS) - LIST_OPERATORS
_PERCENTAGE_PARAMETERS = {
    "flexibleRollout": "rollout",
    "gradualRolloutUserId": "percentage",
    "gradualRolloutSessionId": "percentage",
    "gradualRolloutRandom": "percentage",
}
VARIANT_WEIGHT_TOTAL = 1000


def check_name(name: object, what: str, path: str = "$.name") -> str:
    """Names appear in URLs: letters, digits, ``-``, ``_``, ``.``, ``~`` (Unleash's rule)."""
    if not isinstance(name, str) or not _URL_FRIENDLY.fullmatch(name):
        raise InvalidInput(
            f"{what} name must be URL-friendly (letters, digits, -, _, ., ~); got {name!r}",
            [ErrorDetail(f"{what} name must be URL-friendly", path)],
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"{what} name is longer than {MAX_NAME_LENGTH} characters",
            [ErrorDetail(f"at most {MAX_NAME_LENGTH} characters", path)],
        )
    return name


def _constraint_problems(constraint: Constraint, path: str) -> list[ErrorDetail]:
    operator = constraint.operator
    if operator not in OPERATORS:
        allowed = ", ".join(sorted(OPERATORS))
        return [
            ErrorDetail(f"unknown operator {operator!r}; use one of {allowed}", f"{path}.operator")
        ]
    if not constraint.context_name:
        return [ErrorDetail("contextName must not be empty", f"{path}.contextName")]
    if operator in LIST_OPERATORS:
        if not constraint.values:
            return [ErrorDetail(f"{operator} needs at least one value", f"{path}.values")]
        if operator == "IN_CIDR":
            return [
                ErrorDetail(f"{value!r} is not an IP address or CIDR range", f"{path}.values[{i}]")
                for i, value in enumerate(constraint.values)
                if parse_network(value) is None
            ]
        return []
    if constraint.value is None:
        return [ErrorDetail(f"{operator} needs a value", f"{path}.value")]
    if operator == "REGEX":
        try:
            compile_rust_pattern(constraint.value)
        except UnsupportedPattern as exc:
            return [ErrorDetail(f"invalid regular expression: {exc}", f"{path}.value")]
        return []
    # The engine compares by the value's look (SEMVER_EQ "1.2" as numbers), as Unleash's
    # does; the admin API refuses a value not of the operator's own type, as Unleash's does.
    problem = rule_value_problem(operator, constraint.value)
    if problem is not None:
        return [ErrorDetail(problem, f"{path}.value")]
    try:
        compile_constraint(constraint)
    except BrokenRule as exc:
        return [ErrorDetail(str(exc), f"{path}.value")]
    return []


def check_constraints(constraints: Iterable[Constraint], limits: Limits, path: str) -> None:
    """Refuse constraints the engine could not evaluate, and those over the limits."""
    problems: list[ErrorDetail] = []
    for index, constraint in enumerate(constraints):
        here = f"{path}[{index}]"
        problems.extend(_constraint_problems(constraint, here))
        count = len(constraint.values)
        enforce(limits, "constraint_values", count, "values in one constraint")
    if problems:
        raise InvalidInput(problems[0].message, problems)


def check_variants(variants: Iterable[Variant], path: str) -> None:
    problems: list[ErrorDetail] = []
    names: set[str] = set()
    for index, variant in enumerate(variants):
        here = f"{path}[{index}]"
        if not variant.name:
            problems.append(ErrorDetail("a variant needs a name", f"{here}.name"))
        elif variant.name in names:
            problems.append(ErrorDetail(f"variant {variant.name!r} appears twice", f"{here}.name"))
        names.add(variant.name)
        if not 0 <= variant.weight <= VARIANT_WEIGHT_TOTAL:
            problems.append(
                ErrorDetail(
                    f"weight must be between 0 and {VARIANT_WEIGHT_TOTAL}", f"{here}.weight"
                )
            )
    if problems:
        raise InvalidInput(problems[0].message, problems)


def normalise_variant_weights(variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """Give ``variable`` variants equal shares of what the ``fix`` ones leave, as Unleash does.

    Weights add up to 1000; the remainder of an uneven split goes to the first variants.
    """
    if not variants:
        return variants
    fixed = sum(v.weight for v in variants if v.weight_type == WeightType.FIX)
    variable = [i for i, v in enumerate(variants) if v.weight_type != WeightType.FIX]
    if not variable:
        if fixed != VARIANT_WEIGHT_TOTAL:
            raise InvalidInput(
                f"fixed variant weights add up to {fixed}, not {VARIANT_WEIGHT_TOTAL}",
                [
                    ErrorDetail(
                        "with only fixed variants, weights must add up to 1000", "$.variants"
                    )
                ],
            )
        return variants
    left = VARIANT_WEIGHT_TOTAL - fixed
    if left < 0:
        raise InvalidInput(
            f"fixed variant weights add up to {fixed}, over {VARIANT_WEIGHT_TOTAL}",
            [ErrorDetail("fixed weights leave nothing for the variable variants", "$.variants")],
        )
    share, remainder = divmod(left, len(variable))
    out = list(variants)
    for position, index in enumerate(variable):
        weight = share + (1 if position < remainder else 0)
        out[index] = _with_weight(variants[index], weight)
    return tuple(out)


def _with_weight(variant: Variant, weight: int) -> Variant:
    return attrs.evolve(variant, weight=weight, weight_type=WeightType.VARIABLE)


def check_strategy(
    strategy: Strategy, known_strategies: Mapping[str, object], limits: Limits
) -> None:
    """Refuse unknown strategies, percentages outside 0–100, and broken constraints."""
    if strategy.name not in known_strategies:
        raise InvalidInput(
            f"unknown strategy {strategy.name!r}; define it first",
            [ErrorDetail(f"unknown strategy {strategy.name!r}", "$.name")],
        )
    parameter = _PERCENTAGE_PARAMETERS.get(strategy.name)
    if parameter is not None and parameter in strategy.parameters:
        percentage = parse_percentage(strategy.parameters[parameter])
        if percentage is None or percentage > 100:
            raise InvalidInput(
                f"{parameter} must be a whole number from 0 to 100",
                [ErrorDetail("a whole number from 0 to 100", f"$.parameters.{parameter}")],
            )
    enforce(
        limits, "constraints_per_strategy", len(strategy.constraints), "constraints on one strategy"
    )
    enforce(limits, "segments_per_strategy", len(strategy.segments), "segments on one strategy")
    check_constraints(strategy.constraints, limits, "$.constraints")
    check_variants(strategy.variants, "$.variants")
