"""Variant names sort as Unleash sorts them: JavaScript's ``localeCompare`` (ICU)."""

from __future__ import annotations

import random

from flagcore.collation import locale_compare_key

# Node 20's `names.sort((a, b) => a.localeCompare(b))` (ICU, en-US), recorded once: the
# order Unleash stores variants in.
NODE_ORDER = [
    "_control",
    "10",
    "9",
    "a",
    "a b",
    "a-b",
    "a.b",
    "ab",
    "aB",
    "Ab",
    "alpha",
    "Alpha",
    "B",
    "beta",
    "control",
    "Control",
    "control_1",
    "control-2",
    "eclair",
    "Eclair",
    "éclair",
    "ésprit",
    "ore",
    "øre",
    "oz",
    "ss",
    "SS",
    "ß",
    "zeta",
]


def test_names_sort_as_javascript_locale_compare_does() -> None:
    shuffled = NODE_ORDER[:]
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled, key=locale_compare_key) == NODE_ORDER


def test_case_only_decides_between_names_equal_without_it() -> None:
    # Code points put every capital first ("Beta" < "alpha"); ICU reads letters first.
    assert sorted(["Beta", "alpha", "Alpha"], key=locale_compare_key) == ["alpha", "Alpha", "Beta"]


def test_underscore_sorts_before_hyphen_and_both_before_digits_and_letters() -> None:
    names = ["control-a", "control1", "controla", "control_b"]
    assert sorted(names, key=locale_compare_key) == [
        "control_b",
        "control-a",
        "control1",
        "controla",
    ]
