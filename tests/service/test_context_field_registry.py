"""The context-field registry's rules over every store flagcore ships (PostgreSQL too)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.entities import ContextField, LegalValue
from flagcore.errors import Conflict, NameConflict
from flagcore.model import Constraint, Strategy
from flagcore.ports import Store
from flagcore.service import Service
from tests.service.store_factories import FACTORIES

PLAN = ContextField("plan", "billing plan", (LegalValue("free"), LegalValue("pro", "paying")), True)


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store: Store = FACTORIES[request.param](tmp_path)
    yield Service(store)
    store.close()


def test_a_field_is_kept_edited_and_deleted_with_an_event_each(service: Service) -> None:
    created = service.context_fields.create_context_field(PLAN, actor="ann")
    assert created.created_at is not None
    assert service.context_fields.get_context_field("plan") == created
    service.context_fields.update_context_field(
        "plan", description="tier", legal_values=(LegalValue("gold"),), stickiness=False
    )
    edited = service.context_fields.get_context_field("plan")
    assert (edited.description, edited.legal_values, edited.created_at) == (
        "tier",
        (LegalValue("gold"),),
        created.created_at,
    )
    service.context_fields.delete_context_field("plan")
    assert "plan" not in [f.name for f in service.context_fields.list_context_fields()]
    kinds = [e.type for e in service.events.list_events()]
    assert kinds[:3] == ["context-field-deleted", "context-field-updated", "context-field-created"]


def test_an_edited_built_in_keeps_its_place_and_cannot_be_created_again(service: Service) -> None:
    service.context_fields.update_context_field(
        "appName", description="app", legal_values=(LegalValue("web"),), stickiness=False
    )
    names = [f.name for f in service.context_fields.list_context_fields()]
    assert names.index("appName") == 2
    with pytest.raises(NameConflict):
        service.context_fields.create_context_field(ContextField("appName"))
    with pytest.raises(Conflict):
        service.context_fields.delete_context_field("appName")


def test_a_field_a_strategy_constrains_on_cannot_be_deleted(service: Service) -> None:
    service.context_fields.create_context_field(PLAN)
    service.flags.create_flag("default", "paid")
    strategy = Strategy("default", constraints=(Constraint("plan", "IN", ("pro",)),))
    service.strategies.add_strategy("default", "paid", "development", strategy)
    with pytest.raises(Conflict) as refused:
        service.context_fields.delete_context_field("plan")
    assert "paid" in refused.value.details[0].message
    assert service.context_fields.get_context_field("plan").name == "plan"
