"""Adding, editing, reordering and deleting a flag's strategies in one environment."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore import CONSTRAINT_OPERATORS, LIST_OPERATORS
from flagcore.entities import StrategyDefinition
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.model import Strategy
from flagcore_http.calls import call
from flagcore_http.ui.forms import (
    PAYLOAD_TYPES,
    constraint_rows,
    rows_of_constraints,
    rows_of_variants,
    strategy_from,
    variant_rows,
)
from flagcore_http.ui.pages import field_errors, form, page, redirect, render, svc, viewer
from flagcore_http.ui.views.flag import flag_url

__all__ = ["routes"]

routes = web.RouteTableDef()

STRATEGIES = "/ui/flags/{name}/environments/{environment}/strategies"
STRATEGY = STRATEGIES + "/{strategy_id}"
OPERATOR_NAMES = tuple(CONSTRAINT_OPERATORS)


def _where(request: web.Request) -> tuple[str, str]:
    return request.match_info["name"], request.match_info["environment"]


async def _definitions(request: web.Request) -> dict[str, StrategyDefinition]:
    return {
        d.name: d
        for d in await call(request, svc(request).strategy_definitions.list_strategy_definitions)
    }


async def _project_of(request: web.Request, name: str) -> str:
    return (await call(request, svc(request).flags.get_flag, None, name)).flag.project


async def _editor(
    request: web.Request,
    strategy: Strategy,
    *,
    strategy_id: str | None,
    constraints: list[dict[str, str]],
    variants: list[dict[str, str]],
    extra_constraints: int = 1,
    extra_variants: int = 1,
    error: FlagcoreError | None = None,
) -> web.Response:
    name, environment = _where(request)
    definitions = await _definitions(request)
    segments = await call(request, svc(request).segments.list_segments)
    context: dict[str, Any] = {
        "flag_name": name,
        "environment": environment,
        "strategy": strategy,
        "strategy_id": strategy_id,
        "definition": definitions.get(strategy.name),
        "definitions": [d for d in definitions.values() if not d.deprecated],
        "constraints": constraints,
        "variants": variants,
        "extra_constraints": extra_constraints,
        "extra_variants": extra_variants,
        "segments": segments,
        "operators": OPERATOR_NAMES,
        "list_operators": LIST_OPERATORS,
        "payload_types": PAYLOAD_TYPES,
        "error": error.message if error else None,
        "errors": field_errors(error) if error else {},
    }
    return render(request, "strategy.html", context, status=400 if error else 200)


@routes.get(STRATEGIES + "/new")
@page()
async def new_strategy(request: web.Request) -> web.Response:
    name, _environment = _where(request)
    await call(request, svc(request).flags.get_flag, None, name)  # 404 before drawing a form
    chosen = request.query.get("strategy", "flexibleRollout")
    if chosen not in await _definitions(request):
        chosen = "flexibleRollout"
    return await _editor(request, Strategy(chosen), strategy_id=None, constraints=[], variants=[])


@routes.get(STRATEGY)
@page()
async def edit_strategy(request: web.Request) -> web.Response:
    name, environment = _where(request)
    strategy_id = request.match_info["strategy_id"]
    project = await _project_of(request, name)
    strategy = await call(
        request, svc(request).strategies.get_strategy, project, name, environment, strategy_id
    )
    return await _editor(
        request,
        strategy,
        strategy_id=strategy_id,
        constraints=rows_of_constraints(strategy.constraints),
        variants=rows_of_variants(strategy.variants),
    )


async def _save(request: web.Request, strategy_id: str | None) -> web.Response:
    name, environment = _where(request)
    fields = form(request)
    definitions = await _definitions(request)
    definition = definitions.get(fields.get("name", ""))
    parameter_names = [p.name for p in definition.parameters] if definition else []
    constraints, variants = constraint_rows(fields), variant_rows(fields)
    more = fields.get("_more")
    try:
        strategy = strategy_from(fields, parameter_names)
    except FlagcoreError as error:
        unread = Strategy(fields.get("name", ""), {})
        return await _editor(
            request,
            unread,
            strategy_id=strategy_id,
            constraints=constraints,
            variants=variants,
            error=error,
        )
    if more in ("constraint", "variant"):  # another empty row, nothing saved yet
        return await _editor(
            request,
            strategy,
            strategy_id=strategy_id,
            constraints=constraints,
            variants=variants,
            extra_constraints=2 if more == "constraint" else 1,
            extra_variants=2 if more == "variant" else 1,
        )
    try:
        project = await _project_of(request, name)
        if strategy_id is None:
            await call(
                request,
                svc(request).strategies.add_strategy,
                project,
                name,
                environment,
                strategy,
                actor=viewer(request).actor,
            )
        else:
            await call(
                request,
                svc(request).strategies.update_strategy,
                project,
                name,
                environment,
                strategy_id,
                strategy,
                actor=viewer(request).actor,
            )
    except (InvalidInput, NotFound) as error:
        return await _editor(
            request,
            strategy,
            strategy_id=strategy_id,
            constraints=constraints,
            variants=variants,
            error=error,
        )
    return redirect(flag_url(name))


@routes.post(STRATEGIES + "/new")
@page()
async def add_strategy(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.post(STRATEGY)
@page()
async def update_strategy(request: web.Request) -> web.Response:
    return await _save(request, request.match_info["strategy_id"])


async def _enabled(request: web.Request, name: str, environment: str) -> bool:
    details = await call(request, svc(request).flags.get_flag, None, name)
    return any(e.enabled for e in details.environments if e.environment.name == environment)


@routes.post(STRATEGY + "/delete")
@page()
async def delete_strategy(request: web.Request) -> web.Response:
    name, environment = _where(request)
    project = await _project_of(request, name)
    was_on = await _enabled(request, name, environment)
    await call(
        request,
        svc(request).strategies.delete_strategy,
        project,
        name,
        environment,
        request.match_info["strategy_id"],
        actor=viewer(request).actor,
    )
    if was_on and not await _enabled(request, name, environment):
        return redirect(flag_url(name, notice="disabled", environment=environment))
    return redirect(flag_url(name))


@routes.post(STRATEGY + "/move")
@page()
async def move_strategy(request: web.Request) -> web.Response:
    """Swap a strategy with its neighbour above or below (SDKs try them in this order)."""
    name, environment = _where(request)
    direction = form(request).get("direction")
    if direction not in ("up", "down"):
        raise InvalidInput("direction is up or down", [ErrorDetail("up or down", "$.direction")])
    project = await _project_of(request, name)
    strategies = await call(
        request, svc(request).strategies.list_strategies, project, name, environment
    )
    ids = [s.id for s in strategies]
    moved = request.match_info["strategy_id"]
    if moved not in ids:
        raise NotFound(f'there is no strategy "{moved}" on {name} in {environment}')
    here = ids.index(moved)
    there = here - 1 if direction == "up" else here + 1
    if 0 <= there < len(ids):
        ids[here], ids[there] = ids[there], ids[here]
        await call(
            request,
            svc(request).strategies.reorder_strategies,
            project,
            name,
            environment,
            {strategy_id: order for order, strategy_id in enumerate(ids) if strategy_id},
            actor=viewer(request).actor,
        )
    return redirect(flag_url(name))
