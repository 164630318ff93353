"""The test-data builder: the flags a test defines answer through the real engine."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from flagcore import Constraint, Context, Engine, Flag, InvalidInput, Segment, Strategy
from flagcore.testkit import (
    FakeFlagClient,
    FlagsBuilder,
    RecordingEngine,
    UndefinedFlagError,
    variant,
)
from flagcore_client import FlagClient

DATA = Path(__file__).parent / "data"
EXPORT = DATA / "unleash-export-sample.json"
SEGMENTS = DATA / "unleash-segments-sample.json"
EXPECTED = json.loads((DATA / "unleash-export-sample.expected.json").read_text())


def _users(count: int) -> list[dict[str, Any]]:
    return [{"userId": f"user-{n}"} for n in range(count)]


def test_enable_and_disable_answer_for_everyone(flags: FlagsBuilder) -> None:
    flags.enable("checkout").disable("legacy-cart")
    engine = flags.engine()
    assert all(engine.is_enabled("checkout", u) for u in _users(50))
    assert not any(engine.is_enabled("legacy-cart", u) for u in _users(50))
    assert engine.is_enabled("checkout")  # no context at all


def test_disable_keeps_the_rules_of_a_flag_defined_before(flags: FlagsBuilder) -> None:
    flags.enable_for_users("beta", "42").disable("beta")
    assert not flags.engine().is_enabled("beta", {"userId": "42"})
    flag = flags.snapshot().features[0]
    assert flag.strategies[0].constraints == (Constraint("userId", "IN", ("42",)),)


def test_enable_for_users_is_on_for_those_users_only(flags: FlagsBuilder) -> None:
    engine = flags.enable_for_users("beta", "42", "43").engine()
    assert engine.is_enabled("beta", {"userId": "42"})
    assert engine.is_enabled("beta", Context(user_id="43"))
    assert not engine.is_enabled("beta", {"userId": "44"})
    assert not engine.is_enabled("beta")


def test_rollout_turns_on_about_its_share_of_users(flags: FlagsBuilder) -> None:
    engine = flags.rollout("new-search", 30).engine()
    on = sum(engine.is_enabled("new-search", u) for u in _users(2000))
    assert 500 <= on <= 700  # 30% of 2000, with room for the hash's unevenness


def test_rollout_sticks_to_the_stickiness_field(flags: FlagsBuilder) -> None:
    engine = flags.rollout("tenant-feature", 50, stickiness="tenantId").engine()
    for tenant in (f"t-{n}" for n in range(40)):
        answers = {
            engine.is_enabled(
                "tenant-feature", {"userId": f"u-{n}", "properties": {"tenantId": tenant}}
            )
            for n in range(10)
        }
        assert len(answers) == 1, tenant  # every user of a tenant gets the same answer
    tenants_on = sum(
        engine.is_enabled("tenant-feature", {"properties": {"tenantId": f"t-{n}"}})
        for n in range(400)
    )
    assert 140 <= tenants_on <= 260


def test_rollouts_with_one_group_id_pick_the_same_users(flags: FlagsBuilder) -> None:
    flags.rollout("a", 40, group_id="launch").rollout("b", 40, group_id="launch")
    engine = flags.engine()
    for user in _users(300):
        assert engine.is_enabled("a", user) == engine.is_enabled("b", user)


def test_rollout_refuses_a_share_outside_0_to_100(flags: FlagsBuilder) -> None:
    for wrong in (-1, 101, 12.5, "50"):
        with pytest.raises(InvalidInput) as raised:
            flags.rollout("x", wrong)  # type: ignore[arg-type]
        assert raised.value.details[0].path == "$.parameters.rollout"
    assert not flags.defines("x")


def test_variants_carry_their_payloads(flags: FlagsBuilder) -> None:
    flags.enable(
        "theme",
        variants=[variant("dark", {"bg": "#000"}), variant("light", "white"), variant("n", 3)],
    )
    engine = flags.engine()
    seen = {}
    for user in _users(300):
        chosen = engine.get_variant("theme", user)
        assert chosen.enabled
        assert chosen.feature_enabled
        seen[chosen.name] = chosen.payload
    assert seen == {
        "dark": {"type": "json", "value": '{"bg":"#000"}'},
        "light": {"type": "string", "value": "white"},
        "n": {"type": "number", "value": "3"},
    }


def test_variant_weights_and_pinned_users(flags: FlagsBuilder) -> None:
    flags.enable(
        "pricing",
        variants=[variant("old", weight=900), variant("new", users=["vip-1"]), "plain"],
    )
    engine = flags.engine()
    assert engine.get_variant("pricing", {"userId": "vip-1"}).name == "new"
    names = [engine.get_variant("pricing", u).name for u in _users(1000)]
    assert 850 <= names.count("old") <= 950  # a fixed 90%; the rest shared by the others
    assert {"new", "plain"} <= set(names)


def test_a_disabled_flag_gives_the_disabled_variant(flags: FlagsBuilder) -> None:
    flags.enable("theme", variants=["dark"]).disable("theme")
    chosen = flags.engine().get_variant("theme", {"userId": "1"})
    assert (chosen.name, chosen.enabled, chosen.feature_enabled) == ("disabled", False, False)


def test_variants_are_checked_as_the_service_checks_them(flags: FlagsBuilder) -> None:
    with pytest.raises(InvalidInput, match="appears twice"):
        flags.enable("theme", variants=["dark", "dark"])
    with pytest.raises(InvalidInput, match="payload"):
        variant("x", object())  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="not JSON"):
        variant("x", {"when": object()})
    with pytest.raises(InvalidInput, match="not JSON"):
        variant("x", float("nan"))
    with pytest.raises(InvalidInput, match="add up to 1200"):
        flags.enable("theme", variants=[variant("a", weight=600), variant("b", weight=600)])


def test_a_model_flag_and_segment_can_be_added_as_they_are(flags: FlagsBuilder) -> None:
    flags.add_segment(Segment(7, "norway", (Constraint("country", "IN", ("NO",)),)))
    flags.add(Flag("nordic", enabled=True, strategies=(Strategy("default", segments=(7,)),)))
    engine = flags.engine()
    assert engine.is_enabled("nordic", {"properties": {"country": "NO"}})
    assert not engine.is_enabled("nordic", {"properties": {"country": "SE"}})


def test_custom_strategies_answer_through_the_given_implementation() -> None:
    def tenants(parameters: Any, context: Context) -> bool:
        return context.property_value("tenantId") in parameters["ids"].split(",")

    flags = FlagsBuilder(custom_strategies={"tenants": tenants})
    flags.add(Flag("f", enabled=True, strategies=(Strategy("tenants", {"ids": "a,b"}),)))
    engine = flags.engine()
    assert engine.is_enabled("f", {"properties": {"tenantId": "b"}})
    assert not engine.is_enabled("f", {"properties": {"tenantId": "c"}})


def test_a_disabled_strategy_counts_for_nothing_as_on_a_server(flags: FlagsBuilder) -> None:
    rules = (Strategy("default", disabled=True), Strategy("userWithId", {"userIds": "1"}))
    flags.add(Flag("f", enabled=True, strategies=rules))
    engine = flags.engine()
    assert engine.is_enabled("f", {"userId": "1"})
    assert not engine.is_enabled("f", {"userId": "2"})
    assert [s["name"] for s in flags.client_features()["features"][0]["strategies"]] == [
        "userWithId"
    ]
    assert flags.snapshot().features[0].strategies == rules  # kept, as a server keeps them


def test_flag_names_follow_the_servers_rule(flags: FlagsBuilder) -> None:
    for wrong in ("", "with space", "..", "x" * 256, 7):
        with pytest.raises(InvalidInput, match="flag name"):
            flags.enable(wrong)  # type: ignore[arg-type]
    assert flags.snapshot().features == ()


def test_engines_follow_changes_made_after_they_were_made(flags: FlagsBuilder) -> None:
    engine = flags.enable("checkout").engine()
    client = flags.client()
    assert engine.is_enabled("checkout")
    assert client.is_enabled("checkout")
    flags.disable("checkout")
    assert not engine.is_enabled("checkout")
    assert not client.is_enabled("checkout")


def test_client_features_json_round_trips_through_a_plain_engine(flags: FlagsBuilder) -> None:
    flags.enable_for_users("beta", "42").rollout("r", 50, variants=[variant("a", "x")])
    payload = flags.client_features()
    assert [f["name"] for f in payload["features"]] == ["beta", "r"]
    plain = Engine.from_client_features(payload)
    engine = FlagsBuilder().load_client_features(payload).engine()
    for user in _users(200):
        for name in ("beta", "r"):
            assert engine.is_enabled(name, user) == plain.is_enabled(name, user)
            assert engine.get_variant(name, user) == plain.get_variant(name, user)


def test_client_features_load_from_a_file(flags: FlagsBuilder, tmp_path: Path) -> None:
    path = tmp_path / "features.json"
    path.write_text(json.dumps(FlagsBuilder().enable_for_users("beta", "7").client_features()))
    engine = flags.load_client_features(path).engine()
    assert engine.is_enabled("beta", {"userId": "7"})
    assert not engine.is_enabled("beta", {"userId": "8"})


def test_a_flag_that_cannot_be_read_fails_the_load_with_its_path(flags: FlagsBuilder) -> None:
    payload = {"features": [{"name": "ok"}, {"name": "bad", "strategies": "all"}]}
    with pytest.raises(InvalidInput) as raised:
        flags.load_client_features(payload)
    assert [d.path for d in raised.value.details] == ["$.strategies"]
    assert "bad" in raised.value.details[0].message
    assert not flags.defines("ok")  # nothing half loaded
    with pytest.raises(InvalidInput, match="URL-friendly"):
        flags.load_client_features({"features": [{"name": "fine"}, {"name": "not fine"}]})
    assert not flags.defines("fine")


@pytest.mark.parametrize(
    ("content", "problem"),
    [("{not json", "is not JSON"), ("[1, 2]", "not the object"), (None, "cannot read")],
)
def test_a_bad_file_is_a_clear_error(
    flags: FlagsBuilder, tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "features.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InvalidInput, match=problem):
        flags.load_client_features(path)


def test_an_unleash_export_answers_as_unleash_did(flags: FlagsBuilder) -> None:
    # 350 answers Unleash 8.2 gave for 7 exported flags, among them variable weights an
    # export writes unevenly (333/334/333), a disabled strategy, segments and a dependency.
    engine = flags.load_unleash_export(EXPORT, segments=SEGMENTS).engine()
    assert engine.warnings == ()
    contexts = EXPECTED["contexts"]
    for expected in EXPECTED["evaluations"]:
        context = contexts[expected["context"]]
        assert engine.is_enabled(expected["flag"], context) is expected["enabled"], expected
        assert engine.get_variant(expected["flag"], context).name == expected["variant"]


def test_an_export_without_segment_constraints_is_refused_by_name(flags: FlagsBuilder) -> None:
    with pytest.raises(InvalidInput, match="uses segment 3, whose constraints"):
        flags.load_unleash_export(EXPORT)


def test_an_export_of_several_environments_needs_one_named(flags: FlagsBuilder) -> None:
    export: dict[str, Any] = {
        "features": [{"name": "f"}],
        "featureEnvironments": [
            {"featureName": "f", "environment": "development", "enabled": True},
            {"featureName": "f", "environment": "production", "enabled": False},
        ],
        "featureStrategies": [
            {"featureName": "f", "environment": "development", "name": "default"},
            {"featureName": "f", "environment": "production", "name": "default"},
        ],
    }
    with pytest.raises(InvalidInput, match="development, production: name one"):
        flags.load_unleash_export(export)
    with pytest.raises(InvalidInput, match='no environment "staging"'):
        flags.load_unleash_export(export, environment="staging")
    assert flags.load_unleash_export(export, environment="development").engine().is_enabled("f")
    assert (
        not FlagsBuilder()
        .load_unleash_export(export, environment="production")
        .engine()
        .is_enabled("f")
    )


def test_an_export_with_a_wrong_type_names_the_path(flags: FlagsBuilder) -> None:
    export = {
        "features": [{"name": "f"}],
        "featureStrategies": [{"featureName": "f", "name": "default", "constraints": "x"}],
    }
    with pytest.raises(InvalidInput) as raised:
        flags.load_unleash_export(export)
    assert raised.value.details[0].path == "$.constraints"
    assert "$.featureStrategies[0]" in raised.value.message


def test_recording_does_not_change_any_answer() -> None:
    flags = FlagsBuilder().load_unleash_export(EXPORT, segments=SEGMENTS)
    flags.rollout("r", 35, stickiness="sessionId", variants=["a", variant("b", weight=100)])
    recording = flags.engine()
    plain = Engine.from_client_features(flags.client_features())  # the data as SDKs get it
    names = [*plain.flag_names(), "never-defined"]
    # Contexts with every field the rules stick to: without one, Unleash picks at random.
    sticky = Context(user_id="u-1", session_id="s-1", properties={"tenantId": "t-1"})
    for context in [*EXPECTED["contexts"], sticky, sticky.to_mapping()]:
        for name in names:
            assert recording.is_enabled(name, context) == plain.is_enabled(name, context)
            assert recording.is_enabled(name, context, default=True) == plain.is_enabled(
                name, context, default=True
            )
            assert recording.get_variant(name, context) == plain.get_variant(name, context)
    assert len(flags.evaluations) == len(names) * (len(EXPECTED["contexts"]) + 2) * 3


def test_every_evaluation_is_recorded_with_its_context_and_answer(flags: FlagsBuilder) -> None:
    engine = flags.enable_for_users("beta", "42").engine()
    context = {"userId": "42", "properties": {"plan": "pro"}}
    engine.is_enabled("beta", context)
    context["userId"] = "changed later"  # the record keeps what was asked
    context["properties"]["plan"] = "free"  # type: ignore[index]
    properties = {"plan": "team"}
    engine.get_variant("beta", Context(user_id="7", properties=properties))
    properties["plan"] = "changed"
    first, second = flags.evaluations
    assert (first.flag, first.method, first.answer) == ("beta", "is_enabled", True)
    assert first.context == Context(user_id="42", properties={"plan": "pro"})
    assert (second.method, second.answer.name) == ("get_variant", "disabled")  # type: ignore[union-attr]
    assert second.context == Context(user_id="7", properties={"plan": "team"})
    assert flags.asked("beta", userId="42", plan="pro")
    assert flags.asked("beta", properties={"plan": "pro"})
    assert not flags.asked("beta", userId="43")
    assert not flags.asked("checkout")
    flags.assert_asked("beta", userId="7", plan="team")
    with pytest.raises(AssertionError) as raised:
        flags.assert_asked("beta", userId="43")
    assert str(raised.value) == (
        "flag \"beta\" was never evaluated with userId='43'; it was asked with:\n"
        '  {"properties": {"plan": "pro"}, "userId": "42"}\n'
        '  {"properties": {"plan": "team"}, "userId": "7"}'
    )
    with pytest.raises(AssertionError, match=r'"checkout" was never evaluated$'):
        flags.assert_asked("checkout")
    flags.clear_evaluations()
    assert flags.evaluations == ()


def test_undefined_flags_are_listed_and_answer_like_unknown_flags(flags: FlagsBuilder) -> None:
    engine = flags.enable("known").engine()
    assert engine.is_enabled("typo", default=True) is True  # as the engine answers
    assert engine.get_variant("typo").name == "disabled"
    engine.is_enabled("known")
    assert flags.undefined_flags == ("typo",)
    assert [e.defined for e in flags.evaluations] == [False, False, True]


def test_strict_mode_raises_at_the_call_for_an_undefined_flag() -> None:
    flags = FlagsBuilder(strict=True).enable("known")
    engine = flags.engine()
    assert engine.is_enabled("known")
    with pytest.raises(UndefinedFlagError, match='"typo", which this test never defined'):
        engine.is_enabled("typo")
    with pytest.raises(UndefinedFlagError):
        flags.client().get_variant("other")
    assert flags.undefined_flags == ("typo", "other")


def test_the_client_double_adds_its_app_name_like_the_real_client(flags: FlagsBuilder) -> None:
    flags.enable("checkout", variants=["a"])
    with flags.client(app_name="shop", environment="production") as client:
        assert client.ready
        assert client.flag_names == ["checkout"]
        assert client.is_enabled("checkout", {"userId": "1"})
        assert client.get_variant("checkout").name == "a"
        assert not client.is_enabled("unknown")
        assert client.is_enabled("unknown", default=True)
    assert client.closed
    first, second, *_ = flags.evaluations
    assert first.context == Context(user_id="1", app_name="shop", environment="production")
    assert second.context == Context(app_name="shop", environment="production")


def test_the_client_double_has_the_real_clients_evaluation_methods() -> None:
    for name in ("is_enabled", "get_variant", "close", "__enter__", "__exit__"):
        real = inspect.signature(getattr(FlagClient, name))
        double = inspect.signature(getattr(FakeFlagClient, name))
        assert list(real.parameters) == list(double.parameters), name
    for name in ("ready", "flag_names"):
        assert isinstance(getattr(FlagClient, name), property)
        assert isinstance(getattr(FakeFlagClient, name), property)


def test_the_recording_engine_has_the_engines_evaluation_methods() -> None:
    for name in ("is_enabled", "get_variant", "is_impression_data_enabled", "flag_names"):
        real = inspect.signature(getattr(Engine, name))
        recording = inspect.signature(getattr(RecordingEngine, name))
        assert list(real.parameters) == list(recording.parameters), name
