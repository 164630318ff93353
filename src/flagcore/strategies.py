"""Activation strategies: Unleash's built-ins and a registry for custom ones.

A strategy is prepared once per flag into a predicate over the context; parameters are
parsed here, at compile time, never while evaluating. Unknown strategies are off, as in
every Unleash SDK, until an implementation is registered under their name.
"""

from __future__ import annotations

import ipaddress
import random
import socket
from collections.abc import Callable, Mapping

from flagcore.context import Context
from flagcore.hashing import percentage_bucket
from flagcore.model import Strategy
from flagcore.operators import Predicate, field_reader

__all__ = [
    "BUILTIN_STRATEGIES",
    "CustomStrategy",
    "StrategyBuilder",
    "parse_percentage",
    "stickiness_reader",
]

StrategyBuilder = Callable[[Strategy, str], Predicate]
"""Builds the predicate of one strategy of the flag named by the second argument."""

CustomStrategy = Callable[[Mapping[str, str], Context], bool]
"""A user's strategy: gets the strategy's parameters and the context, answers on/off."""

_read_user_id = field_reader("userId")
_read_session_id = field_reader("sessionId")
_read_remote_address = field_reader("remoteAddress")


def _always(_ctx: Context) -> bool:
    return True


def _never(_ctx: Context) -> bool:
    return False


def _random_bucket() -> int:
    return random.randint(1, 100)


def parse_percentage(raw: object) -> int | None:
    """Read a percentage parameter as Unleash does; ``None`` if it is not a number."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return int(raw)
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return int(float(text))
    except ValueError:
        return None


def stickiness_reader(stickiness: str | None) -> Callable[[Context], str | None]:
    """The identifier a rollout hashes; ``default`` is userId, else sessionId, else random."""
    if stickiness in (None, "", "default"):

        def default_identifier(ctx: Context) -> str | None:
            return _read_user_id(ctx) or _read_session_id(ctx) or str(_random_bucket())

        return default_identifier
    if stickiness == "random":
        return lambda _ctx: str(_random_bucket())
    return field_reader(stickiness)


def _rollout(
    percentage: int | None, group_id: str, identify: Callable[[Context], str | None]
) -> Predicate:
    if percentage is None or percentage <= 0:
        return _never
    if percentage >= 100:
        return lambda ctx: identify(ctx) is not None

    def predicate(ctx: Context) -> bool:
        identifier = identify(ctx)
        return identifier is not None and percentage_bucket(group_id, identifier) <= percentage

    return predicate


def _default(_strategy: Strategy, _flag: str) -> Predicate:
    return _always


def _user_with_id(strategy: Strategy, _flag: str) -> Predicate:
    user_ids = frozenset(part.strip() for part in strategy.parameters.get("userIds", "").split(","))

    def predicate(ctx: Context) -> bool:
        user_id = _read_user_id(ctx)
        return user_id is not None and user_id in user_ids

    return predicate


def _gradual_rollout(read: Callable[[Context], str | None]) -> StrategyBuilder:
    def build(strategy: Strategy, flag: str) -> Predicate:
        parameters = strategy.parameters
        return _rollout(
            parse_percentage(parameters.get("percentage")), parameters.get("groupId", flag), read
        )

    return build


def _gradual_rollout_random(strategy: Strategy, _flag: str) -> Predicate:
    percentage = parse_percentage(strategy.parameters.get("percentage"))
    if percentage is None or percentage <= 0:
        return _never
    return lambda _ctx: _random_bucket() <= percentage


def _flexible_rollout(strategy: Strategy, flag: str) -> Predicate:
    parameters = strategy.parameters
    group_id = parameters.get("groupId") or flag
    return _rollout(
        parse_percentage(parameters.get("rollout")),
        group_id,
        stickiness_reader(parameters.get("stickiness")),
    )


def _remote_address(strategy: Strategy, _flag: str) -> Predicate:
    networks = []
    for raw in strategy.parameters.get("IPs", "").split(","):
        try:
            networks.append(ipaddress.ip_network(raw.strip(), strict=False))
        except ValueError:
            continue

    def predicate(ctx: Context) -> bool:
        raw = _read_remote_address(ctx)
        if raw is None:
            return False
        try:
            address = ipaddress.ip_address(raw.strip())
        except ValueError:
            return False
        return any(address in network for network in networks)

    return predicate


def _application_hostname(strategy: Strategy, _flag: str) -> Predicate:
    host_names = {
        part.strip().lower() for part in strategy.parameters.get("hostNames", "").split(",")
    }
    enabled = socket.gethostname().lower() in host_names
    return _always if enabled else _never


BUILTIN_STRATEGIES: Mapping[str, StrategyBuilder] = {
    "default": _default,
    "userWithId": _user_with_id,
    "gradualRolloutUserId": _gradual_rollout(_read_user_id),
    "gradualRolloutSessionId": _gradual_rollout(_read_session_id),
    "gradualRolloutRandom": _gradual_rollout_random,
    "flexibleRollout": _flexible_rollout,
    "remoteAddress": _remote_address,
    "applicationHostname": _application_hostname,
}


def custom_strategy_builder(implementation: CustomStrategy) -> StrategyBuilder:
    """Wrap a user's strategy so a failure in it means off, never an exception."""

    def build(strategy: Strategy, _flag: str) -> Predicate:
        parameters = dict(strategy.parameters)

        def predicate(ctx: Context) -> bool:
            try:
                return bool(implementation(parameters, ctx))
            except Exception:
                return False

        return predicate

    return build
