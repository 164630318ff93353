"""In-process callers get the HTTP API's rules for free text and booleans: a wrong type or
a lone surrogate is `InvalidInput` naming the field, and nothing is stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flagcore.errors import InvalidInput
from flagcore.memory import MemoryStore
from flagcore.service import Service

_CALLS: dict[str, tuple[Callable[[Service, Any], object], str]] = {
    "create flag": (
        lambda s, v: s.flags.create_flag("default", "f", description=v),
        "$.description",
    ),
    "update flag": (
        lambda s, v: s.flags.update_flag("default", "kept", description=v),
        "$.description",
    ),
    "create project": (lambda s, v: s.projects.create_project("p", "P", v), "$.description"),
    "rename project": (lambda s, v: s.projects.update_project("default", name=v), "$.name"),
    "create segment": (
        lambda s, v: s.segments.create_segment("s", [], description=v),
        "$.description",
    ),
    "create endpoint": (
        lambda s, v: s.signals.create_signal_endpoint("e", description=v),
        "$.description",
    ),
}


@pytest.mark.parametrize("value", [5, ["text"], "a\ud800b", "x" * 10_001])
@pytest.mark.parametrize("call", sorted(_CALLS))
def test_text_fields_refuse_wrong_types_and_unwritable_text(call: str, value: object) -> None:
    service = Service(MemoryStore())
    service.flags.create_flag("default", "kept")
    revision = service.store.revision()
    operation, path = _CALLS[call]
    with pytest.raises(InvalidInput) as refused:
        operation(service, value)
    assert refused.value.details[0].path == path
    assert service.store.revision() == revision  # nothing stored


def test_flag_booleans_must_be_booleans() -> None:
    service = Service(MemoryStore())
    with pytest.raises(InvalidInput) as refused:
        service.flags.create_flag("default", "f", impression_data=1)  # type: ignore[arg-type]
    assert refused.value.details[0].path == "$.impressionData"
    service.flags.create_flag("default", "g")
    with pytest.raises(InvalidInput) as refused:
        service.flags.update_flag("default", "g", stale="yes")  # type: ignore[arg-type]
    assert refused.value.details[0].path == "$.stale"
    assert service.flags.list_flags("default")[0].stale is False
