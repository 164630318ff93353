"""The event log's diff: only the paths whose values moved, added and removed ones
marked, values shown as JSON text."""

from __future__ import annotations

from flagcore_http.ui.event_diff import Change, changes


def test_only_changed_paths_are_listed_with_their_before_and_after() -> None:
    before = {"name": "f", "description": "old", "strategies": [{"parameters": {"rollout": "10"}}]}
    after = {"name": "f", "description": "new", "strategies": [{"parameters": {"rollout": "50"}}]}
    assert changes(before, after) == [
        Change("description", '"old"', '"new"'),
        Change("strategies[0].parameters.rollout", '"10"', '"50"'),
    ]


def test_a_created_thing_lists_every_value_added_and_a_deleted_one_every_value_removed() -> None:
    created = changes(None, {"name": "f", "tags": []})
    assert [(c.path, c.kind, c.after) for c in created] == [
        ("name", "added", '"f"'),
        ("tags", "added", "[]"),
    ]
    deleted = changes({"name": "f"}, None)
    assert [(c.path, c.kind, c.before) for c in deleted] == [("name", "removed", '"f"')]


def test_a_key_that_appears_or_goes_is_marked_and_a_plain_value_has_a_path() -> None:
    found = changes({"a": 1, "gone": True}, {"a": 1, "new": None})
    assert [(c.path, c.kind) for c in found] == [("new", "added"), ("gone", "removed")]
    assert changes("x", "y") == [Change("(value)", '"x"', '"y"')]
    assert changes({"a": "<b>"}, {"a": "<i>"})[0].after == '"<i>"'  # text; the page escapes
