"""Activation strategies: Unleash's built-ins and a registry for custom ones.

A strategy is prepared once per flag into a predicate over the context; parameters are
parsed here, at compile time, never while evaluating. Unknown strategies are off, as in
every Unleash SDK, until an implementation is registered under their name.
"""

from __future__ import annotations

import functools
import os
import random
import re
import socket
from collections.abc import Callable, Mapping

import attrs

from flagcore.context import Context, MappingContext, Readable
from flagcore.date_reading import RUST_WHITE_SPACE  # entries are trimmed as Rust's trim does
from flagcore.hashing import percentage_bucket
from flagcore.operators import (
    BrokenRule,
    Predicate,
    always,
    field_reader,
    never,
    parse_ip_address,
    parse_network,
)

__all__ = [
    "BUILTIN_STRATEGIES",
    "CustomStrategy",
    "RolloutPlan",
    "StrategyBuilder",
    "parse_percentage",
    "rollout_plan",
    "stickiness_reader",
]

StrategyBuilder = Callable[[Mapping[str, str], str], Predicate]
"""Builds the predicate of one strategy from its parameters and the name of its flag."""

CustomStrategy = Callable[[Mapping[str, str], Context], bool]
"""A user's strategy: gets the strategy's parameters and the context, answers on/off."""

_read_user_id = field_reader("userId")
_read_session_id = field_reader("sessionId")
_read_remote_address = field_reader("remoteAddress")
_PERCENTAGE = re.compile(r"\+?[0-9]+")
_MAX_PERCENTAGE_DIGITS = 19  # Unleash reads percentages as a 64-bit unsigned integer


def _random_bucket() -> int:
    return random.randint(1, 100)


@functools.lru_cache(maxsize=1024)  # a payload repeats the same few percentages
def parse_percentage(raw: str | None) -> int | None:
    """Read a percentage as Unleash does: digits only (``"50.5"``, ``" 5"`` are not numbers)."""
    if raw is None or _PERCENTAGE.fullmatch(raw) is None:
        return None
    digits = raw.lstrip("+").lstrip("0")
    return int(digits or "0") if len(digits) <= _MAX_PERCENTAGE_DIGITS else None


def _sticky_percentage(parameters: Mapping[str, str], name: str) -> int | None:
    percentage = parse_percentage(parameters.get(name))
    if percentage is not None and percentage > 100:
        raise BrokenRule(f"{name} {percentage} is over 100%")
    return percentage


@functools.lru_cache(maxsize=1024)
def stickiness_reader(stickiness: str | None) -> Callable[[Readable], str | None]:
    """The identifier a rollout hashes; ``default`` is userId, else sessionId, else random.

    Any other stickiness names a field; when the context lacks it the rollout is off.
    """
    if stickiness is None or stickiness == "default":

        def default_identifier(ctx: Readable) -> str | None:
            user_id = _read_user_id(ctx)
            if user_id is not None:
                return user_id
            session_id = _read_session_id(ctx)
            return session_id if session_id is not None else str(_random_bucket())

        return default_identifier
    if stickiness == "random":
        return lambda _ctx: str(_random_bucket())
    return field_reader(stickiness)


def _rollout(
    percentage: int | None, group_id: str, identify: Callable[[Readable], str | None]
) -> Predicate:
    if percentage is None or percentage <= 0:
        return never  # buckets start at 1, so 0% is nobody

    # Bound as defaults, not closure cells: see flagcore.operators.
    def predicate(
        ctx: Readable,
        identify: Callable[[Readable], str | None] = identify,
        group_id: str = group_id,
        percentage: int = percentage,
    ) -> bool:
        identifier = identify(ctx)
        return identifier is not None and percentage_bucket(group_id, identifier) <= percentage

    return predicate


def _default(_parameters: Mapping[str, str], _flag: str) -> Predicate:
    return always


def _user_with_id(parameters: Mapping[str, str], _flag: str) -> Predicate:
    raw = parameters.get("userIds")
    if raw is None:
        return never
    user_ids = frozenset([part.strip(RUST_WHITE_SPACE) for part in raw.split(",")])

    def predicate(ctx: Readable) -> bool:
        user_id = _read_user_id(ctx)
        return user_id is not None and user_id in user_ids

    return predicate


@attrs.frozen
class RolloutPlan:
    """What a sticky rollout hashes: read by its builder and by `flagcore.explain` alike,
    so both see the same group, percentage and stickiness."""

    stickiness: str  # as written ("default" when unset), or the field a legacy rollout reads
    group_id: str | None  # None: a legacy rollout without a group, which is off
    percentage: int | None  # None: not a number, which is off
    identify: Callable[[Readable], str | None] = attrs.field(eq=False, repr=False)


_LEGACY_ROLLOUT_FIELDS = {"gradualRolloutUserId": "userId", "gradualRolloutSessionId": "sessionId"}


def rollout_plan(strategy: str, parameters: Mapping[str, str], flag: str) -> RolloutPlan | None:
    """The plan of a sticky rollout strategy, None for any other strategy.

    Raises `BrokenRule` for a percentage over 100, which turns the flag off.
    """
    if strategy == "flexibleRollout":
        stickiness = parameters.get("stickiness")
        return RolloutPlan(
            "default" if stickiness is None else stickiness,
            parameters.get("groupId", flag),
            _sticky_percentage(parameters, "rollout"),
            stickiness_reader(stickiness),
        )
    legacy_field = _LEGACY_ROLLOUT_FIELDS.get(strategy)
    if legacy_field is None:
        return None
    group_id = parameters.get("groupId")
    if group_id is None:
        # These legacy strategies have no default group (checked before the percentage).
        return RolloutPlan(legacy_field, None, None, field_reader(legacy_field))
    percentage = _sticky_percentage(parameters, "percentage")
    return RolloutPlan(legacy_field, group_id, percentage, field_reader(legacy_field))


def _planned_rollout(strategy: str) -> StrategyBuilder:
    def build(parameters: Mapping[str, str], flag: str) -> Predicate:
        plan = rollout_plan(strategy, parameters, flag)
        if plan is None or plan.group_id is None:
            return never
        return _rollout(plan.percentage, plan.group_id, plan.identify)

    return build


def _gradual_rollout_random(parameters: Mapping[str, str], _flag: str) -> Predicate:
    percentage = parse_percentage(parameters.get("percentage"))
    if percentage is None or percentage <= 1:
        return never
    # Unleash draws 1..99 and compares strictly: p% means a (p-1)/99 chance, 100% always.
    return lambda _ctx: random.randint(1, 99) < percentage


def _remote_address(parameters: Mapping[str, str], _flag: str) -> Predicate:
    raw_list = parameters.get("IPs")
    if raw_list is None:
        return never
    # Unleash skips entries it cannot read.
    entries = [raw.strip(RUST_WHITE_SPACE) for raw in raw_list.split(",")]
    networks = [n for raw in entries if (n := parse_network(raw)) is not None]
    if not networks:
        return never

    def predicate(ctx: Readable) -> bool:
        raw = _read_remote_address(ctx)
        address = parse_ip_address(raw) if raw is not None else None
        if address is None:
            return False
        for network in networks:
            if address in network:
                return True
        return False

    return predicate


def _application_hostname(parameters: Mapping[str, str], _flag: str) -> Predicate:
    # Unleash's documented rule: on when this machine's hostname is listed (case-insensitive).
    # HOSTNAME wins over the OS name, as in Unleash's SDKs.
    host_names = {
        part.strip(RUST_WHITE_SPACE).lower() for part in parameters.get("hostNames", "").split(",")
    }
    hostname = os.environ.get("HOSTNAME") or socket.gethostname()
    return always if hostname.lower() in host_names else never


BUILTIN_STRATEGIES: Mapping[str, StrategyBuilder] = {
    "default": _default,
    "userWithId": _user_with_id,
    "gradualRolloutUserId": _planned_rollout("gradualRolloutUserId"),
    "gradualRolloutSessionId": _planned_rollout("gradualRolloutSessionId"),
    "gradualRolloutRandom": _gradual_rollout_random,
    "flexibleRollout": _planned_rollout("flexibleRollout"),
    "remoteAddress": _remote_address,
    "applicationHostname": _application_hostname,
}


def custom_strategy_builder(implementation: CustomStrategy) -> StrategyBuilder:
    """Wrap a user's strategy so a failure in it means off, never an exception."""

    def build(strategy_parameters: Mapping[str, str], _flag: str) -> Predicate:
        parameters = dict(strategy_parameters)

        def predicate(ctx: Readable) -> bool:
            try:
                # Users' strategies get a Context, whatever the caller passed.
                context = MappingContext(ctx) if isinstance(ctx, dict) else ctx
                return bool(implementation(parameters, context))
            except Exception:
                return False

        return predicate

    return build
