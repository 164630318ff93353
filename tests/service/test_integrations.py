"""Integrations (issue 31) and the event log as their outbox, over every store: the rules
an integration is made with, secrets kept, and the cursor and lease deliveries go by."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from flagcore.entities import IntegrationDelivery
from flagcore.errors import InvalidInput, NotFound
from flagcore.integration_providers import MASKED
from flagcore.service import IntegrationSpec, Service
from flagcore.service.integration_outbox import OutboxBounds
from tests.service.store_factories import FACTORIES

LEASE = dt.timedelta(seconds=30)
HOOK = IntegrationSpec(
    "webhook",
    True,
    {"url": "https://hooks.example.com/in", "authorization": "Bearer s3cret"},
    ("feature-created", "feature-environment-enabled"),
)


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        made = Service(store)
        made.projects.create_project("alpha", "Alpha")
        yield made
    finally:
        store.close()


def _details(error: pytest.ExceptionInfo[InvalidInput]) -> list[str | None]:
    return [d.path for d in error.value.details]


def test_an_integration_is_kept_with_its_secret_and_a_signing_secret(service: Service) -> None:
    made = service.integrations.create_integration(HOOK)
    assert made.signing_secret.startswith("whsec_")
    got = service.integrations.get_integration(made.id)
    assert got == made
    assert got.parameters["authorization"] == "Bearer s3cret"
    (event,) = [e for e in service.events.list_events() if e.type == "addon-config-created"]
    assert "parameters" not in (event.data or {})
    assert "s3cret" not in repr(event.data)


def test_an_update_sending_the_mask_keeps_the_stored_secret(service: Service) -> None:
    made = service.integrations.create_integration(HOOK)
    changed = attrs.evolve(
        HOOK, parameters={"url": MASKED, "authorization": MASKED}, description="ops"
    )
    updated = service.integrations.update_integration(made.id, changed)
    assert updated.parameters == HOOK.parameters
    assert updated.description == "ops"
    assert updated.signing_secret == made.signing_secret


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        (attrs.evolve(HOOK, provider="pager"), "$.provider"),
        (attrs.evolve(HOOK, parameters={"authorization": "x"}), "$.parameters.url"),
        (attrs.evolve(HOOK, parameters={"url": "ftp://x.example.com/"}), "$.parameters.url"),
        (attrs.evolve(HOOK, parameters={"url": "http://u:p@x.example.com/"}), "$.parameters.url"),
        (
            attrs.evolve(HOOK, parameters={"url": "https://a.io", "colour": "red"}),
            "$.parameters.colour",
        ),
        (
            attrs.evolve(HOOK, parameters={"url": "https://a.io", "customHeaders": "[1]"}),
            "$.parameters.customHeaders",
        ),
        (
            attrs.evolve(
                HOOK, parameters={"url": "https://a.io", "customHeaders": '{"webhook-id": "x"}'}
            ),
            "$.parameters.customHeaders",
        ),
        (attrs.evolve(HOOK, events=("feature-created", "no-such-event")), "$.events[1]"),
        (
            attrs.evolve(HOOK, parameters={"url": "https://a.io", "authorization": "a\r\nX: y"}),
            "$.parameters.authorization",
        ),
        (attrs.evolve(HOOK, projects=("bad name",)), "$.projects[0]"),
        (attrs.evolve(HOOK, parameters={"url": MASKED}), "$.parameters.url"),
    ],
)
def test_an_integration_breaking_a_rule_is_refused_naming_where(
    service: Service, spec: IntegrationSpec, path: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        service.integrations.create_integration(spec)
    assert path in _details(refused)
    assert service.integrations.list_integrations() == []


def test_deleting_an_integration_takes_its_cursor_and_log_with_it(service: Service) -> None:
    made = service.integrations.create_integration(HOOK)
    service.flags.create_flag("alpha", "f")
    leased = service.integration_outbox.lease_integration(made.id, "node-a", LEASE)
    assert leased is not None
    (event,) = leased.events
    service.integration_outbox.record_integration_delivery(
        "node-a", IntegrationDelivery(0, made.id, event.id, event.type, "delivered", 1, 200)
    )
    service.integrations.delete_integration(made.id)
    with pytest.raises(NotFound):
        service.integration_outbox.list_integration_deliveries(made.id)
    assert service.integration_outbox.integrations_due("node-a") == []


def test_an_integration_is_owed_only_the_events_it_chose_after_it_was_made(
    service: Service,
) -> None:
    service.flags.create_flag("alpha", "before")
    made = service.integrations.create_integration(attrs.evolve(HOOK, projects=("alpha",)))
    outbox = service.integration_outbox
    assert outbox.integrations_due("node-a") == []
    service.projects.create_project("beta", "Beta")
    service.flags.create_flag("beta", "elsewhere")
    service.flags.create_flag("alpha", "mine")
    service.flags.update_flag("alpha", "mine", description="not chosen")
    assert outbox.integrations_due("node-a") == [made.id]
    leased = outbox.lease_integration(made.id, "node-a", LEASE)
    assert leased is not None
    assert [(e.type, e.feature_name) for e in leased.events] == [("feature-created", "mine")]


def test_a_second_node_gets_no_lease_while_the_first_holds_it(service: Service) -> None:
    made = service.integrations.create_integration(HOOK)
    service.flags.create_flag("alpha", "f")
    outbox = service.integration_outbox
    assert outbox.lease_integration(made.id, "node-a", LEASE) is not None
    assert outbox.lease_integration(made.id, "node-b", LEASE) is None
    assert outbox.integrations_due("node-b") == []
    assert outbox.renew_integration_lease(made.id, "node-a", LEASE)
    assert not outbox.renew_integration_lease(made.id, "node-b", LEASE)


def test_a_lease_run_out_passes_to_another_node_which_resends_the_unacknowledged_event(
    tmp_path: Path,
) -> None:
    now = [dt.datetime(2026, 11, 25, 8, 0, tzinfo=dt.UTC)]
    store = FACTORIES["sqlite-file"](tmp_path)
    try:
        service = Service(store, clock=lambda: now[0])
        made = service.integrations.create_integration(HOOK)
        service.flags.create_flag("default", "f")
        outbox = service.integration_outbox
        first = outbox.lease_integration(made.id, "node-a", LEASE)
        assert first is not None
        now[0] += LEASE + dt.timedelta(seconds=1)  # node-a died without an answer
        second = outbox.lease_integration(made.id, "node-b", LEASE)
        assert second is not None
        assert second.events == first.events
        (event,) = second.events
        late = IntegrationDelivery(0, made.id, event.id, event.type, "delivered", 1, 200)
        assert not outbox.record_integration_delivery("node-a", late)
        assert outbox.record_integration_delivery("node-b", late)
        again = outbox.lease_integration(made.id, "node-b", LEASE)
        assert again is not None
        assert again.events == ()
        (logged,) = outbox.list_integration_deliveries(made.id)
        assert (logged.event_id, logged.state) == (event.id, "delivered")
    finally:
        store.close()


def test_past_the_pending_cap_the_oldest_events_are_skipped_and_logged(service: Service) -> None:
    service.integration_outbox.bounds = OutboxBounds(batch=10, pending_cap=3)
    made = service.integrations.create_integration(HOOK)
    for index in range(6):
        service.flags.create_flag("alpha", f"f{index}")
    leased = service.integration_outbox.lease_integration(made.id, "node-a", LEASE)
    assert leased is not None
    assert [e.feature_name for e in leased.events] == ["f3", "f4", "f5"]
    (overflow,) = service.integration_outbox.list_integration_deliveries(made.id)
    assert overflow.state == "overflow"
    assert "more than 3" in overflow.detail


def test_an_integration_turned_on_again_is_not_sent_what_happened_while_off(
    service: Service,
) -> None:
    made = service.integrations.create_integration(attrs.evolve(HOOK, enabled=False))
    service.flags.create_flag("alpha", "while-off")
    assert service.integration_outbox.integrations_due("node-a") == []
    service.integrations.update_integration(
        made.id, attrs.evolve(HOOK, parameters={"url": MASKED, "authorization": MASKED})
    )
    service.flags.create_flag("alpha", "after")
    leased = service.integration_outbox.lease_integration(made.id, "node-a", LEASE)
    assert leased is not None
    assert [e.feature_name for e in leased.events] == ["after"]
