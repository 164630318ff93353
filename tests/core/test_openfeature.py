"""flagcore.openfeature (issue #17): the in-process provider through the real openfeature-sdk."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from openfeature import api as openfeature_api
from openfeature.client import OpenFeatureClient
from openfeature.evaluation_context import EvaluationContext
from openfeature.event import EventDetails, ProviderEvent
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason

from flagcore import Engine
from flagcore.memory import MemoryStore
from flagcore.model import Constraint, Payload, Strategy, Variant
from flagcore.openfeature import FlagcoreProvider
from flagcore.service import Service

_domains = itertools.count()


def _flag(
    service: Service, name: str, *variants: Variant, constraints: tuple[Constraint, ...] = ()
) -> None:
    service.flags.create_flag("default", name)
    service.strategies.add_strategy(
        "default", name, "production", Strategy("default", {}, constraints)
    )
    service.environments.set_environment_enabled("default", name, "production", True)
    if variants:
        service.variants.set_flag_variants("default", name, "production", list(variants))


@pytest.fixture
def service() -> Service:
    service = Service(MemoryStore())
    _flag(service, "checkout", constraints=(Constraint("userId", "IN", ("alice",)),))
    _flag(service, "banner", Variant("wide", 1000, payload=Payload("string", "Hello")))
    _flag(service, "retries", Variant("three", 1000, payload=Payload("number", "3")))
    _flag(service, "layout", Variant("grid", 1000, payload=Payload("json", '{"columns": 3}')))
    _flag(service, "plain")
    _flag(service, "named", Variant("bare", 1000))
    service.flags.create_flag("default", "dormant")
    return service


@pytest.fixture
def provider(service: Service) -> FlagcoreProvider:
    return FlagcoreProvider(service.client.engine("production", poll_interval=60))


@pytest.fixture
def client(provider: FlagcoreProvider) -> Iterator[OpenFeatureClient]:
    domain = f"flagcore-{next(_domains)}"
    openfeature_api.set_provider(provider, domain)
    yield openfeature_api.get_client(domain)
    openfeature_api.clear_providers()


def test_boolean_resolution_follows_targeting_with_reasons(client: OpenFeatureClient) -> None:
    alice = client.get_boolean_details("checkout", False, EvaluationContext("alice"))
    assert (alice.value, alice.reason, alice.variant) == (True, Reason.TARGETING_MATCH, "enabled")
    bob = client.get_boolean_details("checkout", True, EvaluationContext("bob"))
    assert (bob.value, bob.reason, bob.variant) == (False, Reason.DISABLED, "disabled")
    banner = client.get_boolean_details("banner", False)
    assert (banner.value, banner.variant) == (True, "wide")


def test_typed_payloads_resolve_to_their_values(client: OpenFeatureClient) -> None:
    assert client.get_string_details("banner", "x").value == "Hello"
    assert client.get_integer_details("retries", 0).value == 3
    retries_as_float = client.get_float_details("retries", 0.0)
    assert retries_as_float.value == 3.0
    assert isinstance(retries_as_float.value, float)
    assert client.get_object_details("layout", {}).value == {"columns": 3}
    named = client.get_string_details("named", "x")
    assert (named.value, named.variant, named.reason) == ("bare", "bare", Reason.TARGETING_MATCH)


def test_defaults_say_why_disabled_default_or_error(client: OpenFeatureClient) -> None:
    dormant = client.get_string_details("dormant", "fallback")
    assert (dormant.value, dormant.reason) == ("fallback", Reason.DISABLED)
    plain = client.get_string_details("plain", "fallback")  # on, but no variant to give
    assert (plain.value, plain.reason, plain.error_code) == ("fallback", Reason.DEFAULT, None)
    mismatch = client.get_integer_details("banner", 5)
    assert (mismatch.value, mismatch.reason, mismatch.error_code) == (
        5,
        Reason.ERROR,
        ErrorCode.TYPE_MISMATCH,
    )
    missing = client.get_boolean_details("no-such-flag", True)
    assert (missing.value, missing.reason, missing.error_code) == (
        True,
        Reason.ERROR,
        ErrorCode.FLAG_NOT_FOUND,
    )


def test_a_context_no_rule_can_read_is_invalid_context(client: OpenFeatureClient) -> None:
    details = client.get_boolean_details(
        "checkout", False, EvaluationContext("alice", {"teams": ["a", "b"]})
    )
    assert (details.value, details.error_code) == (False, ErrorCode.INVALID_CONTEXT)


def test_attributes_map_to_unleash_fields_and_properties(service: Service) -> None:
    _flag(service, "big", constraints=(Constraint("total", "NUM_GT", value="100"),))
    _flag(service, "mobile", constraints=(Constraint("appName", "IN", ("ios",)),))
    provider = FlagcoreProvider(service.client.engine("production"))
    big = provider.resolve_boolean_details("big", False, EvaluationContext("u", {"total": 250}))
    ios = provider.resolve_boolean_details(
        "mobile", False, EvaluationContext(None, {"appName": "ios"})
    )
    assert (big.value, ios.value) == (True, True)


def test_a_change_in_the_store_emits_configuration_changed(
    service: Service, client: OpenFeatureClient, provider: FlagcoreProvider
) -> None:
    seen: list[EventDetails] = []
    client.add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, seen.append)
    assert client.get_boolean_value("dormant", False) is False
    assert provider.check_for_changes() is False
    assert seen == []
    _flag(service, "fresh")
    # A write through the same service is seen by the next check (no poll interval wait).
    assert provider.check_for_changes() is True
    assert len(seen) == 1
    assert client.get_boolean_value("fresh", False) is True
    assert len(seen) == 1  # the same change is reported once


def test_a_fixed_engine_works_and_never_changes(service: Service) -> None:
    engine = Engine(service.client.client_features("production"))
    provider = FlagcoreProvider(engine)
    assert provider.resolve_boolean_details("plain", False).value is True
    assert provider.check_for_changes() is False
