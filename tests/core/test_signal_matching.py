"""Action-set filters: Unleash's payload paths, and the engine's operators exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import attrs
import pytest

from flagcore import Engine
from flagcore.entities import Action, ActionKind, ActionSet
from flagcore.model import Constraint
from flagcore.signal_matching import match_action_sets, matching_action_sets, payload_fields


def _action_set(*filters: Constraint, source: int = 1, enabled: bool = True) -> ActionSet:
    enable = (Action(ActionKind.TOGGLE_FEATURE_ON, "f", "development"),)
    return ActionSet(1, "a", "default", source, enable, filters, enabled)


def test_payload_paths_are_flattened_as_unleash_does() -> None:
    payload = {
        "a": 1,
        "b": {"c": 2, "d": [3, {"e": 4}], "f": {"g": None}},
        "list": [[5, 6]],
    }
    wanted = ["a", "b.c", "b.d[0]", "b.d[1].e", "b.f.g", "list[0].1", "b", "b.d", "nope"]
    assert payload_fields(payload, wanted) == {
        "a": 1,
        "b.c": 2,
        "b.d[0]": 3,
        "b.d[1].e": 4,
        "b.f.g": None,
        "list[0].1": 6,
    }


def test_a_literal_dotted_key_written_later_wins_over_the_nested_one() -> None:
    assert payload_fields({"a": {"b": 1}, "a.b": 2}, ["a.b"]) == {"a.b": 2}
    assert payload_fields({"a.b": 2, "a": {"b": 1}}, ["a.b"]) == {"a.b": 1}


def test_only_an_object_payload_has_fields() -> None:
    for payload in (None, "text", 3, [{"a": 1}]):
        assert payload_fields(payload, ["a", "0", "[0].a"]) == {}


def test_the_walk_skips_what_no_filter_can_reach() -> None:
    # 50,000 nested levels would cost ~1.25e9 characters of paths if every leaf were named.
    deep: dict[str, Any] = {"leaf": 1}
    for _ in range(50_000):
        deep = {"x": deep}
    wide = {"data": {str(i): i for i in range(50_000)}, "deep": deep}
    assert payload_fields(wide, ["data.49999", "deep.y"]) == {"data.49999": 49999}


def test_only_enabled_sets_of_the_signals_endpoint_match() -> None:
    listening = _action_set(Constraint("s", "IN", ("x",)))
    other_endpoint = _action_set(source=2)
    disabled = _action_set(enabled=False)
    sets = [listening, other_endpoint, disabled]
    assert matching_action_sets(sets, {"s": "x"}, source=1) == [listening]
    assert matching_action_sets(sets, {"s": "y"}, source=1) == []
    no_filters = _action_set()
    assert matching_action_sets([no_filters], None, source=1) == [no_filters]


def test_a_set_whose_filters_raise_fails_alone_and_the_others_still_match() -> None:
    # Values that are not text (past validation only through a bug) make building raise.
    broken = attrs.evolve(_action_set(Constraint("s", "IN", (1,))), id=2)  # type: ignore[arg-type]
    fine = _action_set()
    verdicts = match_action_sets([broken, fine], {"s": "x"}, source=1)
    assert [(a.id, p is None) for a, p in verdicts] == [(2, False), (1, True)]
    assert "could not be evaluated" in (verdicts[0][1] or "")
    assert matching_action_sets([broken, fine], {"s": "x"}, source=1) == [fine]


def test_a_huge_version_in_a_payload_is_compared_as_unleash_compares_it() -> None:
    older = _action_set(Constraint("v", "SEMVER_LT", (), "1.0.1"))
    assert matching_action_sets([older], {"v": "1.0.0-1" + "0" * 5000}, source=1) == [older]
    assert matching_action_sets([older], {"v": "0.0." + "9" * 5000}, source=1) == []


def _c(
    operator: str,
    values: tuple[str, ...] = (),
    value: str | None = None,
    *,
    inverted: bool = False,
    fold: bool = False,
) -> Constraint:
    return Constraint("alert.field", operator, values, value, inverted, fold)


# (constraint, leaf value in the payload, or _MISSING)
_MISSING = object()
_CASES = [
    (_c("IN", ("critical", "high")), "critical"),
    (_c("IN", ("critical",)), "low"),
    (_c("IN", ("critical",), inverted=True), _MISSING),
    (_c("NOT_IN", ("critical",)), _MISSING),
    (_c("NOT_IN", ("critical",)), "critical"),
    (_c("IN", ("true",)), True),
    (_c("IN", ("42",)), 42),
    (_c("STR_CONTAINS", ("DOWN",), fold=True), "service is down"),
    (_c("STR_CONTAINS", ("DOWN",)), "service is down"),
    (_c("STR_STARTS_WITH", ("prod-",)), "prod-eu"),
    (_c("STR_ENDS_WITH", ("-eu",), inverted=True), "prod-eu"),
    (_c("NUM_GT", value="90"), 95.5),
    (_c("NUM_GTE", value="90"), "90"),
    (_c("NUM_LT", value="10"), "not a number"),
    (_c("NUM_LTE", value="10"), 10),
    (_c("NUM_EQ", value="3"), 3.0),
    (_c("DATE_AFTER", value="2024-01-01T00:00:00Z"), "2025-06-01T12:00:00Z"),
    (_c("DATE_BEFORE", value="2024-01-01T00:00:00Z"), "2025-06-01T12:00:00Z"),
    (_c("SEMVER_GTE", value="1.2.0"), "1.10.0"),
    (_c("SEMVER_LT", value="1.2.0"), "1.2.0-beta.1"),
    (_c("SEMVER_EQ", value="1.2.0"), "v1.2.0"),
    (_c("REGEX", value=r"^db-\d+$"), "db-12"),
    (_c("REGEX", value=r"^db-\d+$", inverted=True), "web-1"),
    (_c("REGEX", value="(?i)^DB"), "db-1"),
    (_c("REGEX", value="^DB", fold=True), "db-1"),
    (_c("REGEX", value="(unclosed"), "anything"),
    (_c("IN_CIDR", ("10.0.0.0/8",)), "10.1.2.3"),
    (_c("IN_CIDR", ("10.0.0.0/8",)), "192.168.0.1"),
    (_c("IN", ("x",)), {"nested": "object"}),
]


@pytest.mark.parametrize(("constraint", "leaf"), _CASES)
def test_a_filter_answers_as_the_same_constraint_in_flag_evaluation(
    constraint: Constraint, leaf: object
) -> None:
    payload: dict[str, Any] = {"alert": {} if leaf is _MISSING else {"field": leaf}}
    engine = Engine.from_client_features(
        {
            "version": 2,
            "features": [
                {
                    "name": "f",
                    "enabled": True,
                    "strategies": [
                        {
                            "name": "default",
                            "constraints": [
                                {
                                    "contextName": "alert.field",
                                    "operator": constraint.operator,
                                    "values": list(constraint.values),
                                    "value": constraint.value,
                                    "inverted": constraint.inverted,
                                    "caseInsensitive": constraint.case_insensitive,
                                }
                            ],
                        }
                    ],
                }
            ],
        }
    )
    properties = {} if leaf is _MISSING else {"alert.field": leaf}
    expected = engine.is_enabled("f", {"properties": properties})
    matched = matching_action_sets([_action_set(constraint)], payload, source=1)
    assert bool(matched) == expected


def test_a_catastrophic_regex_filter_answers_in_linear_time() -> None:
    """``^(a+)+$`` against 40 ``a`` and a ``!`` takes a backtracking engine ~2^40 steps.

    Run in a child process: a backtracking engine holds the GIL, so in-process the test
    could never time out; here it fails at the bound instead of hanging the suite.
    """
    script = textwrap.dedent(
        """
        import json, time
        from flagcore.entities import Action, ActionKind, ActionSet
        from flagcore.model import Constraint
        from flagcore.signal_matching import matching_action_sets
        enable = (Action(ActionKind.TOGGLE_FEATURE_ON, "f", "development"),)
        def action_set(inverted):
            return ActionSet(1, "a", "p", 1, enable,
                             (Constraint("msg", "REGEX", (), "^(a+)+$", inverted),))
        payload = {"msg": "a" * 40 + "!"}
        started = time.monotonic()
        plain = matching_action_sets([action_set(False)], payload, source=1)
        inverted = matching_action_sets([action_set(True)], payload, source=1)
        print(json.dumps([len(plain), len(inverted), time.monotonic() - started]))
        """
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=10, check=True
        )
    except subprocess.TimeoutExpired:
        pytest.fail("REGEX backtracked: the filter is not matched in linear time")
    plain, inverted, seconds = json.loads(done.stdout)
    assert (plain, inverted) == (0, 1)
    assert seconds < 2.0
