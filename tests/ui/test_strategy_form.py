"""The strategy editor's state without a browser: a stored strategy shown and saved again
is the same strategy, and a form refused for several fields says so for each."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from flagcore.errors import InvalidInput
from flagcore.model import Constraint, Override, Payload, Strategy, Variant, WeightType
from flagcore.service.strategy_definitions import BUILTIN_DEFINITIONS
from flagcore_http.ui.strategy_form import StrategyForm

ROLLOUT = BUILTIN_DEFINITIONS["flexibleRollout"]


def test_a_stored_strategy_shown_in_the_editor_and_saved_unchanged_is_the_same_strategy() -> None:
    stored = Strategy(
        "flexibleRollout",
        {"rollout": "10", "stickiness": "userId", "groupId": "g", "legacy": "kept"},
        constraints=(
            Constraint("appVersion", "SEMVER_GT", (), "1.0.0", inverted=True),
            Constraint("country", "IN", ("NO", "SE"), case_insensitive=True),
        ),
        segments=(3, 7),
        variants=(
            Variant(
                "a",
                300,
                WeightType.FIX,
                "userId",
                Payload("json", '{"x": 1}'),
                (Override("userId", ("u1", "u2")),),
            ),
            Variant("b", 0, WeightType.VARIABLE, "default", None),
        ),
        disabled=True,
        title="ten",
    )
    shown = StrategyForm.of(stored, ROLLOUT)
    assert shown.parameter_names(ROLLOUT) == ["rollout", "stickiness", "groupId", "legacy"]
    assert shown.to_strategy(ROLLOUT) == stored


def test_list_parameters_are_shown_one_per_line_and_stored_comma_separated() -> None:
    definition = BUILTIN_DEFINITIONS["userWithId"]
    shown = StrategyForm.of(Strategy("userWithId", {"userIds": "a,b,c"}), definition)
    assert shown.parameters["userIds"] == "a\nb\nc"
    posted = StrategyForm.posted(MultiDict({"name": "userWithId", "param-userIds": "a\r\nb\r\n"}))
    assert posted.to_strategy(definition).parameters == {"userIds": "a,b"}


def test_every_field_the_form_cannot_read_is_named_at_once() -> None:
    posted = StrategyForm.posted(
        MultiDict(
            {
                "name": "flexibleRollout",
                "param-rollout": " ",
                "param-stickiness": "",
                "param-groupId": "g",
                "constraints-0-context": "v",
                "constraints-0-operator": "SEMVER_GT",
                "constraints-0-values": "1.0.0\n2.0.0",
                "variants-0-name": "a",
                "variants-0-weight": "150",
                "variants-0-stickiness": "default",
                "variants-0-payload_type": "string",
            }
        )
    )
    with pytest.raises(InvalidInput) as refused:
        posted.to_strategy(ROLLOUT)
    assert [d.path for d in refused.value.details] == [
        "$.parameters.rollout",
        "$.parameters.stickiness",
        "$.constraints[0].value",
        "$.variants[0].weight",
    ]


def test_a_row_counts_when_any_column_differs_from_the_empty_row_drawn() -> None:
    posted = StrategyForm.posted(
        MultiDict(
            {
                "name": "default",
                "variants-0-name": "",
                "variants-0-weight": "",
                "variants-0-stickiness": "default",
                "variants-0-payload_type": "string",
                "variants-1-name": "",
                "variants-1-stickiness": "userId",  # changed alone: kept, then refused
                "variants-1-payload_type": "string",
            }
        )
    )
    assert [row["stickiness"] for row in posted.variants] == ["userId"]
