"""Rules an admin input must follow before it is stored.

The engine is lenient with what it reads (a broken rule turns a flag off); the admin side
is strict, so a broken rule is refused with a message and a JSON path before it can
reach an SDK. Constraints are checked by compiling them with the engine itself: whatever
the service accepts, the engine evaluates as intended.
"""

from __future__ import annotations

import enum
import functools
import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

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
from flagcore.wire import INT32_MAX, INT32_MIN, json_type, wire_name

__all__ = [
    "LIST_OPERATORS",
    "SORT_ORDER_MAX",
    "SORT_ORDER_MIN",
    "check_constraints",
    "check_model",
    "check_name",
    "check_sort_order",
    "check_strategy",
    "check_variants",
    "is_text",
    "next_sort_order",
    "normalise_variant_weights",
]

_URL_FRIENDLY = re.compile(r"[A-Za-z0-9_.~-]+")
_DOT_SEGMENTS = frozenset({".", ".."})
MAX_NAME_LENGTH = 255
LIST_OPERATORS = frozenset(
    {"IN", "NOT_IN", "STR_CONTAINS", "STR_STARTS_WITH", "STR_ENDS_WITH", "IN_CIDR"}
)
_PERCENTAGE_PARAMETERS = {
    "flexibleRollout": "rollout",
    "gradualRolloutUserId": "percentage",
    "gradualRolloutSessionId": "percentage",
    "gradualRolloutRandom": "percentage",
}
VARIANT_WEIGHT_TOTAL = 1000
# A sort order is stored in an SQL ``integer`` column, which PostgreSQL keeps in 32 bits:
# the range both stores hold, for the orders people give and those the service computes.
SORT_ORDER_MIN = INT32_MIN
SORT_ORDER_MAX = INT32_MAX


def check_name(name: object, what: str, path: str = "$.name") -> str:
    """Names appear in URLs: letters, digits, ``-``, ``_``, ``.``, ``~`` (Unleash's rule),
    but not ``.`` or ``..``, which clients resolve as path segments and so cannot address."""
    if type(name) is not str:
        raise InvalidInput(
            f"{what} name must be a string; got {type(name).__name__}",
            [ErrorDetail(f"{what} name must be a string", path)],
        )
    if not _URL_FRIENDLY.fullmatch(name):
        raise InvalidInput(
            f"{what} name must be URL-friendly (letters, digits, -, _, ., ~); got {name[:80]!r}",
            [ErrorDetail(f"{what} name must be URL-friendly", path)],
        )
    if name in _DOT_SEGMENTS:
        raise InvalidInput(
            f"{what} name cannot be {name!r}: URLs cannot address it",
            [ErrorDetail(f"{what} name cannot be . or ..", path)],
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"{what} name is longer than {MAX_NAME_LENGTH} characters",
            [ErrorDetail(f"at most {MAX_NAME_LENGTH} characters", path)],
        )
    return name


MAX_TEXT_LENGTH = 10_000  # descriptions and display names: text people read, not data


def check_text(value: object, path: str, *, optional: bool = True) -> None:
    """Free text (a description, a display name) given in Python or over HTTP: a string
    that can be stored and written as UTF-8, of bounded length (``None`` when optional).

    The HTTP reader refuses wrong JSON types already; in-process callers get the same rule,
    so a wrong type or a lone surrogate never reaches a store or a client payload."""
    if value is None and optional:
        return
    if type(value) is not str:
        raise InvalidInput(
            f"{path} must be a string; got {type(value).__name__}",
            [ErrorDetail("must be a string", path)],
        )
    if len(value) > MAX_TEXT_LENGTH:
        raise InvalidInput(
            f"{path} is longer than {MAX_TEXT_LENGTH} characters",
            [ErrorDetail(f"at most {MAX_TEXT_LENGTH} characters", path)],
        )
    if not is_text(value):
        raise InvalidInput(
            f"{path} holds a lone surrogate", [ErrorDetail("not valid Unicode text", path)]
        )


def check_sort_order(value: int, path: str) -> int:
    """A sort order both stores can keep (PostgreSQL's 32-bit ``integer``)."""
    if type(value) is not int or not SORT_ORDER_MIN <= value <= SORT_ORDER_MAX:
        raise InvalidInput(
            f"{path} must be a whole number from {SORT_ORDER_MIN} to {SORT_ORDER_MAX}; "
            f"got {str(value)[:40]}",
            [ErrorDetail(f"a whole number from {SORT_ORDER_MIN} to {SORT_ORDER_MAX}", path)],
        )
    return value


def next_sort_order(orders: Iterable[int], path: str, *, start: int = 0) -> int:
    """The order after the largest of ``orders`` (``start`` when there is none), as Unleash
    numbers new strategies and environments; refused rather than stored past the range,
    with the way out (give one, or reorder) in the message."""
    largest = max(orders, default=start - 1)
    if largest >= SORT_ORDER_MAX:
        raise InvalidInput(
            f"the largest sort order in use is {largest}, so the next one would be past "
            f"{SORT_ORDER_MAX}: give {path.removeprefix('$.')} explicitly, or reorder first",
            [ErrorDetail(f"needed: the next sort order is past {SORT_ORDER_MAX}", path)],
        )
    return largest + 1


def check_flag_value(value: object, path: str) -> None:
    """An optional boolean setting (``None`` keeps what is there): exactly a bool."""
    if value is not None and type(value) is not bool:
        raise InvalidInput(
            f"{path} must be true or false; got {type(value).__name__}",
            [ErrorDetail("must be a boolean", path)],
        )


def check_model(value: object, cls: type, path: str = "$") -> None:
    """Refuse a model value built in Python with fields of the wrong type.

    The HTTP layer's reader already refuses wrong JSON types; this is the same rule for
    in-process callers, so a ``Constraint("v", "SEMVER_EQ", None, "v1.2.3")`` is an
    `InvalidInput` naming ``$.values``, not a ``TypeError`` deep in a later check. Paths
    use the JSON names (``contextName``), like every other error of the service.
    """
    problems: list[ErrorDetail] = []
    _type_problems(value, cls, path, problems)
    if problems:
        raise InvalidInput(f"{problems[0].path}: {problems[0].message}", problems)


def _as_tuple(values: object, path: str) -> tuple[object, ...]:
    """A list or tuple the service was given, as a tuple; anything else (a string would
    iterate as characters) is refused."""
    if type(values) not in (list, tuple):
        raise InvalidInput(
            f"{path}: expected a list, got {json_type(values)}",
            [ErrorDetail(f"expected a list, got {json_type(values)}", path)],
        )
    return tuple(typing.cast("Iterable[object]", values))


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, wire_name(cls, f.name), hints[f.name]) for f in attrs.fields(cls))


def _type_problems(value: object, type_: Any, path: str, out: list[ErrorDetail]) -> None:
    origin = typing.get_origin(type_)
    if origin is types.UnionType or origin is typing.Union:
        options = typing.get_args(type_)
        if value is None and type(None) in options:
            return
        (type_,) = [option for option in options if option is not type(None)]
        origin = typing.get_origin(type_)
    if origin is tuple:
        if type(value) is not tuple:
            out.append(ErrorDetail(f"expected a tuple, got {json_type(value)}", path))
            return
        item_type = typing.get_args(type_)[0]
        for index, item in enumerate(value):
            _type_problems(item, item_type, f"{path}[{index}]", out)
    elif origin is Mapping or type_ is Mapping:
        if not isinstance(value, Mapping) or not all(
            type(k) is str and type(v) is str and is_text(k) and is_text(v)
            for k, v in value.items()
        ):
            out.append(ErrorDetail("expected a mapping of text to text", path))
    elif attrs.has(type_):
        if type(value) is not type_:
            out.append(ErrorDetail(f"expected a {type_.__name__}, got {json_type(value)}", path))
            return
        for name, wire, field_type in _fields(type_):
            _type_problems(getattr(value, name), field_type, f"{path}.{wire}", out)
    elif isinstance(type_, type) and issubclass(type_, enum.Enum):
        if not isinstance(value, type_):
            out.append(ErrorDetail(f"expected a {type_.__name__}, got {json_type(value)}", path))
    elif type_ is int:
        if type(value) is not int:
            out.append(ErrorDetail(f"expected an integer, got {json_type(value)}", path))
    elif type_ in (str, bool) and not isinstance(value, type_):
        expected = "a string" if type_ is str else "a boolean"
        out.append(ErrorDetail(f"expected {expected}, got {json_type(value)}", path))
    elif type_ is str and not is_text(typing.cast(str, value)):
        out.append(ErrorDetail("a lone surrogate (\\ud800-\\udfff) is not text", path))


def is_text(value: str) -> bool:
    """Whether ``value`` can be written as UTF-8 (JSON, SQLite): no lone surrogates."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
            # As the engine will compile it: folding changes what a class set costs.
            compile_rust_pattern(constraint.value, case_insensitive=constraint.case_insensitive)
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
    check_model(_as_tuple(constraints, path), tuple[Constraint, ...], path)
    problems: list[ErrorDetail] = []
    for index, constraint in enumerate(constraints):
        here = f"{path}[{index}]"
        problems.extend(_constraint_problems(constraint, here))
        count = len(constraint.values)
        enforce(limits, "constraint_values", count, "values in one constraint", f"{here}.values")
    if problems:
        raise InvalidInput(problems[0].message, problems)


def check_variants(variants: Iterable[Variant], path: str) -> None:
    check_model(_as_tuple(variants, path), tuple[Variant, ...], path)
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
    check_model(strategy, Strategy)
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
    if strategy.sort_order is not None:
        check_sort_order(strategy.sort_order, "$.sortOrder")
    enforce(
        limits,
        "constraints_per_strategy",
        len(strategy.constraints),
        "constraints on one strategy",
        "$.constraints",
    )
    enforce(
        limits,
        "segments_per_strategy",
        len(strategy.segments),
        "segments on one strategy",
        "$.segments",
    )
    check_constraints(strategy.constraints, limits, "$.constraints")
    check_variants(strategy.variants, "$.variants")
