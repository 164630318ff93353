"""Writing a checked import plan (`flagcore.service.import_plan`) in the transaction it
was planned in: shared by a file import (`flagcore.service.importing`) and a whole-instance
copy (`flagcore.service.instance_copy`), so neither imports the other for it."""

from __future__ import annotations

from typing import Protocol

import attrs

from flagcore.entities import FlagEnvironment, StrategyPlacement
from flagcore.ports import KeptWrite, StrategyWrite, TagWrite
from flagcore.service.context import ServiceContext
from flagcore.service.context_fields import create_context_field_in
from flagcore.service.import_plan import FlagPlan, ImportPlan
from flagcore.wire.event_data import FlagImportedData, NameData

__all__ = ["apply_import"]


class _FlagImport(StrategyWrite, TagWrite, Protocol):
    """A flag written with its rules in each environment and its tags, and its event."""


class _ImportWrite(_FlagImport, KeptWrite, Protocol):
    """A checked plan written: tag types, context fields, flags."""


def apply_import(
    context: ServiceContext, tx: _ImportWrite, plan: ImportPlan, *, actor: str
) -> tuple[list[str], list[str], list[str]]:
    """Write a checked plan: the new tag types and context fields, then each flag to
    create or update (parents before children). Returns the names created, updated and
    left unchanged."""
    for tag_type in plan.tag_types:
        tx.save_tag_type(tag_type)
        context.record_event(tx, "tag-type-created", actor, data=NameData(tag_type.name))
    for field in plan.context_fields:
        create_context_field_in(context, tx, field, actor=actor)
    created: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    for flag_plan in sorted(plan.flags, key=lambda p: bool(p.definition.dependencies)):
        name = flag_plan.definition.name
        if flag_plan.action == "unchanged":
            unchanged.append(name)
            continue
        (created if flag_plan.action == "create" else updated).append(name)
        _write_flag(context, tx, flag_plan, actor)
    return created, updated, unchanged


def _write_flag(context: ServiceContext, tx: _FlagImport, plan: FlagPlan, actor: str) -> None:
    definition = plan.definition
    if plan.action == "create":
        definition = attrs.evolve(definition, created_at=context.clock())
    name = definition.name
    tx.save_flag(definition)
    for environment, rules in plan.environments.items():
        for placement in tx.list_strategies(flag=name, environment=environment):
            tx.delete_strategy(placement.id)
        for strategy in rules.strategies:
            tx.save_strategy(StrategyPlacement(name, environment, strategy))
        tx.save_flag_environment(FlagEnvironment(name, environment, rules.enabled, rules.variants))
    current = [tag for _n, tag in tx.list_flag_tags(name)]
    for tag in current:
        if tag not in plan.tags:
            tx.remove_flag_tag(name, tag)
    for tag in plan.tags:
        if tag not in current:
            tx.add_flag_tag(name, tag)
    context.record_event(
        tx,
        "feature-imported",
        actor,
        flag=definition,
        data=FlagImportedData(
            plan.action,
            tuple(plan.environments),
            {e: len(r.strategies) for e, r in plan.environments.items()},
            len(plan.tags),
        ),
    )
