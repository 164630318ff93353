"""The playground page's form read into a `PlaygroundRequest`, with errors at the field.

The context is read into the API's typed value (`flagcore.wire.PlaygroundContext`) and
held to the playground's own `check_context` (the API's and ``flagcore explain``'s rule:
at most 2,000 characters a value, at most 100 properties, an RFC 3339 ``currentTime``);
this module only turns the form's fields into that value and turns the JSON paths of its
errors back into the fields on screen
(``$.context.properties.plan`` is the row typed ``plan``). A blank field is a field not
set, as an empty box in Unleash's playground is.
"""

from __future__ import annotations

import attrs
from multidict import MultiDict

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.service.playground import (
    MAX_CONTEXT_NAME_LENGTH,
    MAX_CONTEXT_PROPERTIES,
    PlaygroundRequest,
    check_context,
)
from flagcore.wire import PlaygroundContext
from flagcore_http.ui.forms import MAX_ROWS
from flagcore_http.wire import structure

__all__ = ["CONTEXT_INPUTS", "PlaygroundForm", "read_form", "to_request"]

# Unleash's context fields the form has a box for, in the order shown. ``environment``
# is the environment picked above (Unleash's playground sets it the same way).
CONTEXT_INPUTS = ("userId", "sessionId", "remoteAddress", "appName", "currentTime")


@attrs.frozen
class PlaygroundForm:
    """The form as typed: redrawn as it is after an error, so a row keeps its number."""

    environment: str
    project: str  # "" for every project
    fields: dict[str, str]  # CONTEXT_INPUTS as typed
    properties: list[tuple[str, str]]  # name/value rows, blank rows left out


def read_form(posted: MultiDict[str]) -> PlaygroundForm:
    rows = []
    for index in range(MAX_ROWS):
        name_key, value_key = f"properties-{index}-name", f"properties-{index}-value"
        if name_key not in posted and value_key not in posted:
            break
        name, value = posted.get(name_key, ""), posted.get(value_key, "")
        if name.strip() or value.strip():
            rows.append((name, value))
    return PlaygroundForm(
        posted.get("environment", ""),
        posted.get("project", ""),
        {field: posted.get(field, "") for field in CONTEXT_INPUTS},
        rows,
    )


def _invalid(message: str, path: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(message, path)])


def to_request(typed: PlaygroundForm) -> PlaygroundRequest:
    """The request the form asks for; `InvalidInput` whose paths name the form's fields
    (``$.userId``, ``$.properties[2].value``, ``$.environment``)."""
    if not typed.environment:
        raise _invalid("pick an environment", "$.environment")
    if len(typed.properties) > MAX_CONTEXT_PROPERTIES:
        raise _invalid(
            f"at most {MAX_CONTEXT_PROPERTIES} properties ({len(typed.properties)} typed)",
            "$.properties",
        )
    context: dict[str, object] = {
        field: value for field, value in typed.fields.items() if value.strip()
    }
    properties: dict[str, str] = {}
    row_of: dict[str, int] = {}
    for index, (raw_name, value) in enumerate(typed.properties):
        name = raw_name.strip()
        here = f"$.properties[{index}].name"
        if not name:
            raise _invalid("a property needs a name", here)
        if len(name) > MAX_CONTEXT_NAME_LENGTH:
            raise _invalid(f"a property name is at most {MAX_CONTEXT_NAME_LENGTH} characters", here)
        if name in row_of:
            raise _invalid(f"{name!r} is already property {row_of[name] + 1}", here)
        row_of[name] = index
        properties[name] = value
    if properties:
        context["properties"] = properties
    try:
        checked = check_context(structure(context, PlaygroundContext, "the context"))
    except InvalidInput as problem:
        raise _on_form(problem, row_of) from None
    return PlaygroundRequest(
        (typed.environment,), (typed.project,) if typed.project else None, checked
    )


def form_error(problem: InvalidInput) -> InvalidInput:
    """The playground's own refusals (an unknown environment or project) at the field."""
    details = [
        ErrorDetail(d.message, "$.project" if (d.path or "").startswith("$.projects") else d.path)
        for d in problem.details
    ]
    return InvalidInput(problem.message, details)


def _on_form(problem: InvalidInput, row_of: dict[str, int]) -> InvalidInput:
    details = []
    for detail in problem.details:
        path = detail.path or ""
        name = path.removeprefix("$.context.properties.")
        if name != path and name in row_of:
            path = f"$.properties[{row_of[name]}].value"
        else:
            path = "$" + path.removeprefix("$.context")
        details.append(ErrorDetail(detail.message, path))
    return InvalidInput(problem.message, details)
