"""The admin update routes hand their request value on whole (`bodies.as_keywords`), so a
new field on a project, segment, flag or signal endpoint is added to its request class and
its service method, and the route needs no edit. These pin that every field of each such
body is a keyword its service method takes: a field added to one side only fails here,
named, before any request would fail."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from flagcore.service.flags import Flags
from flagcore.service.projects import Projects
from flagcore.service.segments import Segments
from flagcore.service.signals import Signals
from flagcore_http.bodies import as_keywords
from flagcore_http.wire import EndpointUpdate, SegmentBody, UpdateFlag, UpdateProject

HANDED_WHOLE: list[tuple[type, Callable[..., Any]]] = [
    (UpdateProject, Projects.update_project),
    (UpdateFlag, Flags.replace_flag),
    (SegmentBody, Segments.define_segment),
    (SegmentBody, Segments.update_segment),
    (EndpointUpdate, Signals.update_signal_endpoint),
]


@pytest.mark.parametrize(("body", "method"), HANDED_WHOLE, ids=lambda v: v.__qualname__)
def test_every_field_of_the_body_is_a_keyword_of_its_service_method(
    body: type, method: Callable[..., Any]
) -> None:
    taken = {
        name
        for name, parameter in inspect.signature(method).parameters.items()
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    }
    missing = [field.name for field in attrs.fields(body) if field.name not in taken]
    assert missing == [], f"{method.__qualname__} does not take {missing}"


def test_a_body_becomes_its_fields_by_name_not_recursively() -> None:
    project = UpdateProject(name="Checkout", description=None)
    assert as_keywords(project) == {"name": "Checkout", "description": None}
