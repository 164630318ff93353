"""The service is made of explicit parts (issue #13): each operation has one home, parts
are given what they call, and no part reaches another through a ``type: ignore``."""

from __future__ import annotations

import inspect
from pathlib import Path

import flagcore.service
from flagcore.memory import MemoryStore
from flagcore.model import Strategy
from flagcore.service import Service, ServiceContext

SERVICE_PACKAGE = Path(flagcore.service.__file__).parent


def _parts(service: Service) -> dict[str, object]:
    """The service's parts: its attributes made in `flagcore.service` (not the context)."""
    return {
        name: part
        for name, part in vars(service).items()
        if type(part).__module__.startswith("flagcore.service.")
        and not isinstance(part, ServiceContext)
    }


def _operations(part: object) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(type(part), inspect.isfunction)
        if not name.startswith("_")
    }


def test_no_service_part_needs_a_type_ignore() -> None:
    offenders = [
        f"{module.name}:{number}"
        for module in sorted(SERVICE_PACKAGE.glob("*.py"))
        for number, line in enumerate(module.read_text(encoding="utf-8").splitlines(), 1)
        if "type: ignore" in line
    ]
    assert offenders == []


def test_every_operation_has_exactly_one_part_and_no_part_is_named_like_one() -> None:
    service = Service(MemoryStore())
    parts = _parts(service)
    owners: dict[str, list[str]] = {}
    for part_name, part in parts.items():
        for operation in _operations(part):
            owners.setdefault(operation, []).append(part_name)
    shared = {operation: names for operation, names in owners.items() if len(names) > 1}
    assert shared == {}
    # `service.flags.create_flag` can never be read as a call of an operation `flags`.
    assert set(parts) & set(owners) == set()
    assert {"flags", "strategies", "environments", "variants", "actions", "client"} <= set(parts)


def test_operations_sit_in_the_part_their_name_suggests() -> None:
    service = Service(MemoryStore())
    assert "set_environment_enabled" in _operations(service.environments)
    assert "set_flag_variants" in _operations(service.variants)
    assert "set_dependencies" in _operations(service.dependencies)
    assert {"archive_flag", "revive_flag", "delete_flag"} <= _operations(service.archive)
    assert "create_strategy_definition" in _operations(service.strategy_definitions)
    assert "set_environment_enabled" not in _operations(service.strategies)
    assert {"register_client", "client_instances"} <= _operations(service.instances)


def test_a_write_through_any_part_is_seen_by_the_service_at_once() -> None:
    service = Service(MemoryStore())
    before = service.local_writes
    service.flags.create_flag("default", "checkout")
    service.strategies.add_strategy("default", "checkout", "development", Strategy("default"))
    service.environments.set_environment_enabled("default", "checkout", "development", True)
    assert service.local_writes == before + 3
    assert service.client.client_features("development").features[0].enabled
