"""Properties of rollouts, constraints and variants that users rely on, for any input."""

from __future__ import annotations

import logging
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flagcore import Context, Engine


def _engine(*features: dict[str, Any], segments: list[dict[str, Any]] | None = None) -> Engine:
    return Engine.from_client_features(
        {"version": 2, "features": list(features), "segments": segments or []}
    )


def _rollout_flag(name: str, rollout: int, stickiness: str = "userId") -> dict[str, Any]:
    return {
        "name": name,
        "enabled": True,
        "strategies": [
            {
                "name": "flexibleRollout",
                "parameters": {"rollout": str(rollout), "stickiness": stickiness, "groupId": name},
            }
        ],
    }


@settings(max_examples=25, deadline=None)
@given(rollout=st.integers(min_value=0, max_value=100), flag=st.text(min_size=1, max_size=20))
def test_a_rollout_of_n_percent_enables_about_n_percent_of_users(rollout: int, flag: str) -> None:
    engine = _engine(_rollout_flag(flag, rollout))
    users = 4000
    on = sum(engine.is_enabled(flag, Context(user_id=f"user-{i}")) for i in range(users))
    # Binomial standard deviation at 4,000 users is at most 0.8 points; allow 4 points.
    assert abs(on / users * 100 - rollout) <= 4
    if rollout == 0:
        assert on == 0
    if rollout == 100:
        assert on == users


@given(
    rollout=st.integers(min_value=0, max_value=100),
    user=st.text(max_size=30),
    flag=st.text(min_size=1, max_size=20),
)
def test_the_same_user_always_gets_the_same_answer(rollout: int, user: str, flag: str) -> None:
    engine = _engine(_rollout_flag(flag, rollout))
    first = engine.is_enabled(flag, {"userId": user})
    assert all(engine.is_enabled(flag, {"userId": user}) is first for _ in range(5))
    # A fresh engine over the same payload agrees: the answer depends on data, not state.
    assert _engine(_rollout_flag(flag, rollout)).is_enabled(flag, {"userId": user}) is first


@given(low=st.integers(min_value=0, max_value=100), high=st.integers(min_value=0, max_value=100))
def test_raising_a_rollout_never_turns_a_user_off(low: int, high: int) -> None:
    low, high = min(low, high), max(low, high)
    narrow = _engine(_rollout_flag("g", low))
    wide = _engine(_rollout_flag("g", high))
    for i in range(300):
        ctx = Context(user_id=str(i))
        if narrow.is_enabled("g", ctx):
            assert wide.is_enabled("g", ctx)


_OPERATORS_AND_VALUES = st.sampled_from(
    [
        ("IN", {"values": ["a", "b", "c"]}),
        ("NOT_IN", {"values": ["a", "b"]}),
        ("STR_CONTAINS", {"values": ["x", "Y"]}),
        ("STR_STARTS_WITH", {"values": ["pre"]}),
        ("STR_ENDS_WITH", {"values": ["fix"]}),
        ("NUM_EQ", {"value": "5"}),
        ("NUM_GT", {"value": "5"}),
        ("NUM_GTE", {"value": "5.5"}),
        ("NUM_LT", {"value": "-1"}),
        ("NUM_LTE", {"value": "1e3"}),
        ("DATE_AFTER", {"value": "2024-01-01T00:00:00Z"}),
        ("DATE_BEFORE", {"value": "2024-01-01T00:00:00.000+02:00"}),
        ("SEMVER_EQ", {"value": "1.2.3"}),
        ("SEMVER_GT", {"value": "1.2.3-rc.1"}),
        ("SEMVER_LT", {"value": "2.0.0"}),
        ("REGEX", {"value": "^a.+z$"}),
        ("IN_CIDR", {"values": ["10.0.0.0/8", "::1"]}),
    ]
)
_CONTEXT_VALUES = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "a",
            "b",
            "x",
            "prefix",
            "suffix",
            "5",
            "5.5",
            "1000",
            "-3",
            "1.2.3",
            "1.2.3-rc.2",
            "2.0.0",
            "2023-12-31T23:59:59Z",
            "2024-06-01T00:00:00+01:00",
            "abcz",
            "10.1.2.3",
            "::1",
        ]
    ),
    st.text(max_size=12),
)


@given(operator=_OPERATORS_AND_VALUES, value=_CONTEXT_VALUES, case_insensitive=st.booleans())
def test_an_inverted_constraint_is_the_negation_of_the_plain_one(
    operator: tuple[str, dict[str, Any]], value: str | None, case_insensitive: bool
) -> None:
    name, values = operator

    def flag(flag_name: str, inverted: bool) -> dict[str, Any]:
        constraint = {
            "contextName": "field",
            "operator": name,
            "inverted": inverted,
            "caseInsensitive": case_insensitive,
            **values,
        }
        return {
            "name": flag_name,
            "enabled": True,
            "strategies": [{"name": "default", "parameters": {}, "constraints": [constraint]}],
        }

    engine = _engine(flag("plain", False), flag("inverted", True))
    ctx = {"properties": {} if value is None else {"field": value}, "currentTime": "2024-01-01"}
    assert engine.is_enabled("inverted", ctx) is not engine.is_enabled("plain", ctx)


@settings(max_examples=20, deadline=None)
@given(weights=st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=5))
def test_variant_shares_follow_their_weights(weights: list[int]) -> None:
    variants = [
        {"name": f"v{i}", "weight": weight, "stickiness": "userId"}
        for i, weight in enumerate(weights)
    ]
    engine = _engine({"name": "f", "enabled": True, "strategies": [], "variants": variants})
    users = 4000
    counts: dict[str, int] = {}
    for i in range(users):
        name = engine.get_variant("f", Context(user_id=f"u{i}")).name
        counts[name] = counts.get(name, 0) + 1
    total = sum(weights)
    if total == 0:
        assert counts == {"disabled": users}
        return
    for i, weight in enumerate(weights):
        share = counts.get(f"v{i}", 0) / users
        assert abs(share - weight / total) <= 0.05
        if weight == 0:
            assert f"v{i}" not in counts


_ODD_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(),
        st.binary(max_size=10),
        st.datetimes(),
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=8,
)
_ODD_CONTEXTS = st.one_of(
    st.none(),
    _ODD_VALUES,
    st.dictionaries(
        st.sampled_from(
            [
                "userId",
                "sessionId",
                "remoteAddress",
                "environment",
                "appName",
                "currentTime",
                "properties",
            ]
        ),
        st.one_of(_ODD_VALUES, st.dictionaries(st.text(max_size=8), _ODD_VALUES, max_size=4)),
    ),
    st.builds(
        Context,
        user_id=_ODD_VALUES,
        session_id=_ODD_VALUES,
        remote_address=_ODD_VALUES,
        current_time=_ODD_VALUES,
        properties=st.dictionaries(st.text(max_size=8), _ODD_VALUES, max_size=4),
    ),
)


def _every_shape_engine() -> Engine:
    single_values = {
        "NUM_EQ": "1",
        "NUM_GT": "-1.5e3",
        "DATE_AFTER": "2024-01-01T00:00:00Z",
        "DATE_BEFORE": "2024-01-01T00:00:00.000+02:00",
        "SEMVER_EQ": "1.2.3",
        "SEMVER_GT": "1.2.3-rc.1",
        "REGEX": "^a|[[:digit:]]$",
    }
    list_operators = ("IN", "NOT_IN", "STR_CONTAINS", "STR_STARTS_WITH", "STR_ENDS_WITH", "IN_CIDR")
    constraints = [
        {"contextName": field, "operator": operator, "value": value, "caseInsensitive": True}
        for field in ("userId", "remoteAddress", "currentTime", "weird", "properties")
        for operator, value in single_values.items()
    ] + [
        {"contextName": field, "operator": operator, "values": ["a", "1", "10.0.0.0/8"]}
        for field in ("userId", "remoteAddress", "currentTime", "weird", "properties")
        for operator in list_operators
    ]
    strategies = [
        {
            "name": name,
            "parameters": {"rollout": "50", "percentage": "50", "IPs": "10.0.0.0/8"},
            "constraints": [constraint],
        }
        for name in ("flexibleRollout", "gradualRolloutUserId", "remoteAddress", "userWithId")
        for constraint in constraints
    ]
    return _engine(
        {
            "name": "everything",
            "enabled": True,
            "strategies": strategies,
            "variants": [
                {
                    "name": "v",
                    "weight": 1,
                    "stickiness": "weird",
                    "overrides": [{"contextName": "userId", "values": ["a"]}],
                }
            ],
        }
    )


_EVERY_SHAPE = _every_shape_engine()


@settings(max_examples=300)
@given(context=_ODD_CONTEXTS)
def test_no_context_makes_evaluation_raise(context: Any) -> None:
    caught = _RecordingHandler()
    logger = logging.getLogger("flagcore")
    logger.addHandler(caught)
    logger.setLevel(logging.DEBUG)
    try:
        assert _EVERY_SHAPE.warnings == ()
        assert isinstance(_EVERY_SHAPE.is_enabled("everything", context), bool)
        variant = _EVERY_SHAPE.get_variant("everything", context)
        assert variant.name in {"v", "disabled"}
    finally:
        logger.removeHandler(caught)
        logger.setLevel(logging.NOTSET)
    # The engine's last-resort guard logs what it catches: nothing may reach it.
    assert caught.messages == []


class _RecordingHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
