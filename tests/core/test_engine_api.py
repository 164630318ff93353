"""The engine's public API: defaults, contexts, custom strategies, warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flagcore import Context, Engine

PAYLOAD: dict[str, Any] = {
    "version": 2,
    "features": [
        {"name": "on", "enabled": True, "strategies": []},
        {"name": "off", "enabled": False, "strategies": []},
        {
            "name": "custom",
            "enabled": True,
            "strategies": [{"name": "tenant", "parameters": {"tenants": "acme,globex"}}],
        },
        {
            "name": "crashy",
            "enabled": True,
            "strategies": [{"name": "explodes", "parameters": {}}],
        },
        {
            "name": "beta-users",
            "enabled": True,
            "strategies": [{"name": "userWithId", "parameters": {"userIds": "1, 2,3"}}],
            "variants": [
                {"name": "blue", "weight": 1000, "payload": {"type": "string", "value": "b"}}
            ],
        },
    ],
}


def _tenant(parameters: Mapping[str, str], context: Context) -> bool:
    return context.properties.get("tenant") in parameters["tenants"].split(",")


def _explodes(parameters: Mapping[str, str], context: Context) -> bool:
    raise RuntimeError("boom")


def test_unknown_flags_answer_the_callers_default() -> None:
    engine = Engine.from_client_features(PAYLOAD)
    assert engine.is_enabled("nope") is False
    assert engine.is_enabled("nope", default=True) is True
    assert engine.is_enabled("off", default=True) is False
    assert engine.get_variant("nope").to_mapping() == {
        "name": "disabled",
        "enabled": False,
        "feature_enabled": False,
    }


def test_a_context_object_and_a_camel_case_mapping_are_equivalent() -> None:
    engine = Engine.from_client_features(PAYLOAD)
    for user in ("1", "2", "3", "4", " 2"):
        as_object = engine.get_variant("beta-users", Context(user_id=user))
        as_mapping = engine.get_variant("beta-users", {"userId": user})
        assert as_object == as_mapping
        assert engine.is_enabled("beta-users", Context(user_id=user)) is as_mapping.feature_enabled


def test_user_ids_are_trimmed_and_the_variant_carries_its_payload() -> None:
    engine = Engine.from_client_features(PAYLOAD)
    assert engine.is_enabled("beta-users", {"userId": "2"})
    variant = engine.get_variant("beta-users", {"userId": "2"})
    assert (variant.name, variant.enabled, variant.payload) == (
        "blue",
        True,
        {"type": "string", "value": "b"},
    )


def test_unregistered_custom_strategies_are_off_and_registered_ones_decide() -> None:
    plain = Engine.from_client_features(PAYLOAD)
    assert not plain.is_enabled("custom", {"properties": {"tenant": "acme"}})
    engine = Engine.from_client_features(
        PAYLOAD, custom_strategies={"tenant": _tenant, "explodes": _explodes}
    )
    assert engine.is_enabled("custom", {"properties": {"tenant": "acme"}})
    assert not engine.is_enabled("custom", {"properties": {"tenant": "initech"}})
    # A custom strategy that raises means off, not an exception in the caller.
    assert engine.is_enabled("crashy") is False


def test_an_enabled_flag_without_variants_answers_disabled_with_the_flag_on() -> None:
    engine = Engine.from_client_features(PAYLOAD)
    assert engine.get_variant("on").to_mapping() == {
        "name": "disabled",
        "enabled": False,
        "feature_enabled": True,
    }


def test_context_none_is_an_empty_context() -> None:
    engine = Engine.from_client_features(PAYLOAD)
    assert engine.is_enabled("on", None)
    assert not engine.is_enabled("beta-users", None)


def test_a_payload_that_is_not_an_object_is_an_input_error() -> None:
    import pytest

    from flagcore import InvalidInput

    with pytest.raises(InvalidInput):
        Engine.from_client_features(["not", "an", "object"])  # type: ignore[arg-type]


_FIELDS = ("userId", "sessionId", "remoteAddress", "environment", "appName", "currentTime")


def _mapping_contexts() -> Any:
    from hypothesis import strategies as st

    values = st.one_of(st.none(), st.text(max_size=3), st.integers(), st.booleans())
    names = st.sampled_from([*_FIELDS, "custom", "properties"])
    properties = st.one_of(st.none(), st.text(), st.dictionaries(names, values, max_size=4))
    return st.fixed_dictionaries(
        {}, optional={**dict.fromkeys(_FIELDS, values), "custom": values, "properties": properties}
    )


def test_a_mapping_is_read_lazily_exactly_as_from_mapping_builds_it() -> None:
    from hypothesis import given, settings

    from flagcore.context import MappingContext

    @settings(max_examples=300)
    @given(_mapping_contexts())
    def check(data: dict[str, Any]) -> None:
        lazy, eager = MappingContext(data), Context.from_mapping(data)
        for field in (
            "user_id",
            "session_id",
            "remote_address",
            "environment",
            "app_name",
            "current_time",
            "properties",
        ):
            assert getattr(lazy, field) == getattr(eager, field), field

    check()


def test_custom_fields_read_the_same_from_a_mapping_and_from_a_context() -> None:
    from hypothesis import given, settings

    from flagcore.context import MappingContext

    @settings(max_examples=300)
    @given(_mapping_contexts())
    def check(data: dict[str, Any]) -> None:
        lazy, eager = MappingContext(data), Context.from_mapping(data)
        for name in ("custom", "userId", "properties", "other"):
            assert lazy.property_value(name) == eager.property_value(name), name

    check()
