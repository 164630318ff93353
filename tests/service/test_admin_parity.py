"""Admin rules that change what SDKs evaluate, as Unleash has them, through the Service
over the memory store."""

from __future__ import annotations

import datetime as dt

import attrs
import pytest

from flagcore.engine import Engine
from flagcore.entities import Tag
from flagcore.errors import InvalidInput, NotFound
from flagcore.memory import MemoryStore
from flagcore.model import ClientFeatures, Strategy, Variant, WeightType
from flagcore.service import Service

DEV = "development"
CREATED = dt.datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=dt.UTC)


@pytest.fixture
def service() -> Service:
    return Service(MemoryStore(), clock=lambda: CREATED)


def _names(variants: tuple[Variant, ...]) -> list[str]:
    return [v.name for v in variants]


def _enabled(service: Service, flag: str, environment: str = DEV) -> bool:
    details = service.flags.get_flag("default", flag)
    return next(e.enabled for e in details.environments if e.environment.name == environment)


def _event_types(service: Service, flag: str) -> list[str]:
    return [e.type for e in reversed(service.events.list_events(feature_name=flag))]


# --- variant order ---
def test_strategy_variants_are_stored_in_unleash_name_order(service: Service) -> None:
    service.flags.create_flag("default", "f")
    sent = tuple(Variant(name) for name in ("control-a", "Beta", "control_b", "alpha"))
    stored = service.strategies.add_strategy(
        "default", "f", DEV, Strategy("default", variants=sent)
    )
    expected = ["alpha", "Beta", "control_b", "control-a"]  # JavaScript's localeCompare
    assert _names(stored.variants) == expected
    assert _names(service.strategies.list_strategies("default", "f", DEV)[0].variants) == expected
    service.environments.set_environment_enabled("default", "f", DEV, True)
    (flag,) = service.client.client_features(DEV).features
    assert _names(flag.strategies[0].variants) == expected


def test_an_uneven_split_goes_to_the_first_variants_as_sent_before_sorting(
    service: Service,
) -> None:
    # Unleash normalises weights first (the remainder to the first variants sent), then
    # sorts: "c", sent first, keeps the extra point after moving to the end.
    service.flags.create_flag("default", "f")
    sent = (Variant("c"), Variant("b"), Variant("a"))
    stored = service.strategies.add_strategy(
        "default", "f", DEV, Strategy("default", variants=sent)
    )
    assert [(v.name, v.weight) for v in stored.variants] == [("a", 333), ("b", 333), ("c", 334)]


def test_updating_a_strategy_sorts_its_variants_too(service: Service) -> None:
    service.flags.create_flag("default", "f")
    first = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
    updated = service.strategies.update_strategy(
        "default",
        "f",
        DEV,
        first.id or "",
        Strategy("default", variants=(Variant("zeta"), Variant("Alpha", 100, WeightType.FIX))),
    )
    assert [(v.name, v.weight) for v in updated.variants] == [("Alpha", 100), ("zeta", 900)]


def test_flag_level_variants_are_stored_in_unleash_name_order(service: Service) -> None:
    service.flags.create_flag("default", "f")
    stored = service.variants.set_flag_variants(
        "default", "f", DEV, [Variant("red"), Variant("Green"), Variant("blue")]
    )
    assert _names(stored) == ["blue", "Green", "red"]
    (flag,) = service.client.client_features(DEV).features
    assert _names(flag.variants) == ["blue", "Green", "red"]


def test_the_same_user_gets_the_variant_unleash_would_give(service: Service) -> None:
    # Unleash serves these variants in name order, and buckets follow the served order.
    service.flags.create_flag("default", "f")
    sent = (Variant("zeta", 500), Variant("alpha", 500))
    service.strategies.add_strategy("default", "f", DEV, Strategy("default", variants=sent))
    service.environments.set_environment_enabled("default", "f", DEV, True)
    ours = Engine(service.client.client_features(DEV))
    (flag,) = service.client.client_features(DEV).features

    def served_with(variants: tuple[Variant, ...]) -> Engine:
        strategy = attrs.evolve(flag.strategies[0], variants=variants)
        return Engine(ClientFeatures((attrs.evolve(flag, strategies=(strategy,)),)))

    users = [{"userId": str(i)} for i in range(200)]
    answers = [ours.get_variant("f", user).name for user in users]
    unleash = served_with(sent[::-1])
    assert answers == [unleash.get_variant("f", user).name for user in users]
    # The order matters: served as sent, many users would get the other variant.
    as_sent = served_with(sent)
    assert answers != [as_sent.get_variant("f", user).name for user in users]


# --- the last strategy ---
def test_deleting_the_last_strategy_turns_the_environment_off(service: Service) -> None:
    service.flags.create_flag("default", "f")
    first = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
    second = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
    service.environments.set_environment_enabled("default", "f", DEV, True)
    service.strategies.delete_strategy("default", "f", DEV, first.id or "")
    assert _enabled(service, "f")
    service.strategies.delete_strategy("default", "f", DEV, second.id or "")
    assert not _enabled(service, "f")
    (flag,) = service.client.client_features(DEV).features
    assert not flag.enabled
    assert not Engine(service.client.client_features(DEV)).is_enabled("f", {"userId": "anyone"})
    assert _event_types(service, "f")[-2:] == [
        "feature-strategy-remove",
        "feature-environment-disabled",
    ]


def test_deleting_the_last_active_strategy_turns_the_environment_off(service: Service) -> None:
    service.flags.create_flag("default", "f")
    service.strategies.add_strategy("default", "f", DEV, Strategy("default", disabled=True))
    active = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
    service.environments.set_environment_enabled("default", "f", DEV, True)
    service.strategies.delete_strategy("default", "f", DEV, active.id or "")
    assert not _enabled(service, "f")


def test_disabling_the_last_active_strategy_turns_the_environment_off(service: Service) -> None:
    service.flags.create_flag("default", "f")
    only = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
    service.environments.set_environment_enabled("default", "f", DEV, True)
    service.strategies.update_strategy(
        "default", "f", DEV, only.id or "", Strategy("default", disabled=True)
    )
    assert not _enabled(service, "f")
    assert _event_types(service, "f")[-1] == "feature-environment-disabled"


def test_deleting_a_strategy_of_an_environment_that_is_off_writes_no_switch_event(
    service: Service,
) -> None:
    service.flags.create_flag("default", "f")
    only = service.strategies.add_strategy("default", "f", DEV, Strategy("default"))
    service.strategies.delete_strategy("default", "f", DEV, only.id or "")
    assert "feature-environment-disabled" not in _event_types(service, "f")


def test_enabling_with_only_disabled_strategies_adds_a_full_rollout(service: Service) -> None:
    service.flags.create_flag("default", "f")
    service.strategies.add_strategy("default", "f", DEV, Strategy("default", disabled=True))
    service.environments.set_environment_enabled("default", "f", DEV, True)
    disabled, added = service.strategies.list_strategies("default", "f", DEV)
    assert disabled.disabled
    assert (added.name, added.parameters["rollout"], added.sort_order) == (
        "flexibleRollout",
        "100",
        1,
    )


# --- optional fields ---
def test_a_flag_created_without_a_description_has_none(service: Service) -> None:
    created = service.flags.create_flag("default", "f")
    assert created.description is None
    assert service.flags.get_flag("default", "f").flag.description is None
    (flag,) = service.client.client_features(DEV).features
    assert flag.description is None


# --- tags when creating a flag ---
def test_a_flag_created_with_an_unknown_tag_type_is_refused_and_not_created(
    service: Service,
) -> None:
    revision = service.store.revision()
    with pytest.raises(InvalidInput) as refused:
        service.flags.create_flag(
            "default", "f", tags=[Tag("simple", "ok"), Tag("team", "core")], actor="alice"
        )
    assert '"team"' in refused.value.message
    assert [(d.path, d.message) for d in refused.value.details] == [
        ("$.tags[1].type", 'unknown tag type "team"')
    ]
    assert service.flags.list_flags() == []
    assert service.store.revision() == revision


def test_a_flag_created_with_known_tags_has_them(service: Service) -> None:
    service.tags.create_tag_type("team")
    service.flags.create_flag("default", "f", tags=[Tag("team", " core "), Tag("simple", "web")])
    assert set(service.tags.list_flag_tags("f")) == {Tag("team", "core"), Tag("simple", "web")}
    assert _event_types(service, "f").count("feature-tagged") == 2


def test_a_tag_value_out_of_bounds_names_its_place_in_the_create_body(service: Service) -> None:
    with pytest.raises(InvalidInput) as refused:
        service.flags.create_flag("default", "f", tags=[Tag("simple", "x")])
    assert refused.value.details[0].path == "$.tags[0].value"
    assert service.flags.list_flags() == []


# --- unknown projects ---
@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.flags.list_flags("nope"),
        lambda s: s.archive.list_archived_flags("nope"),
        lambda s: s.flags.get_flag("nope", "f"),
        lambda s: s.flags.get_flag("nope", "missing"),
        lambda s: s.flags.create_flag("nope", "g"),
        lambda s: s.flags.update_flag("nope", "f", description="x"),
        lambda s: s.archive.archive_flag("nope", "f"),
        lambda s: s.strategies.list_strategies("nope", "f", DEV),
        lambda s: s.strategies.add_strategy("nope", "f", DEV, Strategy("default")),
        lambda s: s.environments.set_environment_enabled("nope", "f", DEV, True),
        lambda s: s.variants.set_flag_variants("nope", "f", DEV, [Variant("a")]),
        lambda s: s.projects.get_project("nope"),
        lambda s: s.segments.create_segment("s", [], project="nope"),
    ],
)
def test_a_call_naming_an_unknown_project_says_the_project_is_unknown(
    service: Service, call: object
) -> None:
    service.flags.create_flag("default", "f")
    with pytest.raises(NotFound) as refused:
        call(service)  # type: ignore[operator]
    assert refused.value.message == 'there is no project "nope"'


def test_an_existing_project_without_flags_lists_none(service: Service) -> None:
    service.projects.create_project("empty", "Empty")
    assert service.flags.list_flags("empty") == []
    assert service.archive.list_archived_flags("empty") == []


# --- segments ---
def test_a_segment_records_who_created_it_and_when(service: Service) -> None:
    created = service.segments.define_segment("beta", [], actor="token:admin")
    assert (created.created_at, created.created_by) == (CREATED, "token:admin")
    assert service.segments.get_segment_definition(created.id) == created
    service.segments.update_segment(created.id, "beta-users", [], actor="someone-else")
    after = service.segments.get_segment_definition(created.id)
    assert (after.segment.name, after.created_at, after.created_by) == (
        "beta-users",
        CREATED,
        "token:admin",
    )


def test_the_segment_list_counts_projects_and_active_flags_using_each_segment(
    service: Service,
) -> None:
    service.projects.create_project("other", "Other")
    used = service.segments.create_segment("used", [])
    unused = service.segments.create_segment("unused", [])
    for project, flag in (("default", "a"), ("default", "b"), ("other", "c"), ("other", "gone")):
        service.flags.create_flag(project, flag)
        service.strategies.add_strategy(
            project, flag, DEV, Strategy("default", segments=(used.id,))
        )
    # Two strategies of one flag count once; an archived flag does not count.
    service.strategies.add_strategy(
        "default", "a", "production", Strategy("default", segments=(used.id,))
    )
    service.archive.archive_flag("other", "gone")
    counts = {
        d.definition.segment.name: (d.used_in_projects, d.used_in_features)
        for d in service.segments.list_segment_details()
    }
    assert counts == {"used": (2, 3), "unused": (0, 0)}
    assert [d.definition.id for d in service.segments.list_segment_details()] == [
        used.id,
        unused.id,
    ]
