"""The playground page: every flag's answer for a context typed in a form, each with its
explanation (the tree ``flagcore explain`` prints).

The answers and explanations are `flagcore.service.playground.explain_every_flag`'s:
`Engine.explain` over the snapshot the client API serves, the same code the playground API
and the CLI use; read on the store worker, explained on another thread.
The form is POSTed (with the CSRF token, as every UI form): a context can hold what
people would rather not see in access logs and browser history, such as user ids.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from flagcore.errors import FlagcoreError, InvalidInput
from flagcore.explain import FlagExplanation
from flagcore.service.playground import (
    MAX_CONTEXT_PROPERTIES,
    MAX_CONTEXT_VALUE_LENGTH,
    Playground,
    PlaygroundRequest,
    explain_every_flag,
)
from flagcore_http.calls import call
from flagcore_http.decision_tree import decision_tree
from flagcore_http.ui.pages import field_errors, form, form_status, page, render, svc
from flagcore_http.ui.views.playground_form import (
    CONTEXT_INPUTS,
    PlaygroundForm,
    form_error,
    read_form,
    to_request,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

# Rows drawn with their explanation; past this the page says so (a project filter
# narrows it). Every flag is still evaluated, as the playground API does.
MAX_ROWS_SHOWN = 1_000

_EMPTY = PlaygroundForm("", "", dict.fromkeys(CONTEXT_INPUTS, ""), [])


def _playground(request: web.Request) -> Playground:
    current = svc(request)
    return Playground(current.context, current.client)


def _row(explanation: FlagExplanation) -> dict[str, Any]:
    """What one row shows: the answer, and the explanation as the CLI's tree."""
    variant = explanation.variant
    return {
        "name": explanation.name,
        "project": explanation.project,
        "enabled": explanation.enabled,
        "variant": variant.name,  # "disabled" when none applies, as SDKs answer
        "payload": None if variant.payload is None else dict(variant.payload),
        "tree": decision_tree(explanation.to_json()),
    }


async def _page(
    request: web.Request,
    typed: PlaygroundForm,
    *,
    asked: PlaygroundRequest | None = None,
    explanations: list[FlagExplanation] | None = None,
    error: FlagcoreError | None = None,
    extra: int = 1,
) -> web.Response:
    environments = await call(request, svc(request).environments.list_environments)
    projects = await call(request, svc(request).projects.list_projects)
    rows = [_row(e) for e in (explanations or [])[:MAX_ROWS_SHOWN]]
    return render(
        request,
        "playground.html",
        {
            "typed": typed,
            "environments": environments,
            "projects": projects,
            "context_inputs": CONTEXT_INPUTS,
            "extra": extra,
            "asked": asked,
            "context_json": None
            if asked is None
            else json.dumps(asked.context, ensure_ascii=False, sort_keys=True),
            "rows": rows if explanations is not None else None,
            "total": len(explanations or []),
            "max_rows": MAX_ROWS_SHOWN,
            "max_value": MAX_CONTEXT_VALUE_LENGTH,
            "max_properties": MAX_CONTEXT_PROPERTIES,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get("/ui/playground")
@page()
async def playground_form(request: web.Request) -> web.Response:
    return await _page(request, _EMPTY)


@routes.post("/ui/playground")
@page()
async def playground_answers(request: web.Request) -> web.Response:
    typed = read_form(form(request))
    if form(request).get("_more"):
        return await _page(request, typed, extra=2)
    try:
        asked = to_request(typed)
        # Read on the store worker, explained on another thread (as the playground API
        # does): explaining every flag must not hold up SDK cache misses and writes.
        data = await call(request, _playground(request).read, asked)
        explanations = await asyncio.to_thread(explain_every_flag, data, asked)
    except InvalidInput as problem:
        return await _page(request, typed, error=form_error(problem))
    return await _page(request, typed, asked=asked, explanations=explanations)
