"""Adding, editing, reordering and deleting a flag's strategies in one environment."""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import web

from flagcore import CONSTRAINT_OPERATORS, LIST_OPERATORS
from flagcore.change_requests import ChangeAction
from flagcore.entities import StrategyDefinition
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.model import Strategy
from flagcore.service import DraftChange, ProposedChange
from flagcore.wire import (
    PreviewAnswer,
    StrategyIdPayload,
    StrategyOrderPayload,
    write_payload,
)
from flagcore_http.calls import call
from flagcore_http.context_sampling import flush_context_samples
from flagcore_http.preview_scoring import scored_in_turn
from flagcore_http.ui.drafting import drafted, drafting_in
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import PAYLOAD_TYPES
from flagcore_http.ui.pages import (
    field_errors,
    form,
    form_status,
    page,
    redirect,
    render,
    svc,
    viewer,
)
from flagcore_http.ui.strategy_form import StrategyForm
from flagcore_http.ui.views.change_requests import change_request_url
from flagcore_http.ui.views.context_fields import constraint_vocabulary
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
    typed: StrategyForm,
    *,
    strategy_id: str | None,
    extra_constraints: int = 1,
    extra_variants: int = 1,
    error: FlagcoreError | None = None,
    preview: PreviewAnswer | None = None,
) -> web.Response:
    name, environment = _where(request)
    definitions = await _definitions(request)
    segments = await call(request, svc(request).segments.list_segments)
    definition = definitions.get(typed.name)
    project = await _project_of(request, name)
    config = await call(request, svc(request).change_requests.change_request_config, project)
    context: dict[str, Any] = {
        "project": project,
        "drafting": any(row.enabled for row in config if row.environment == environment),
        "flag_name": name,
        "environment": environment,
        "typed": typed,
        "strategy_id": strategy_id,
        "definition": definition,
        "parameters": {p.name: p for p in definition.parameters} if definition else {},
        "parameter_names": typed.parameter_names(definition),
        "definitions": [d for d in definitions.values() if not d.deprecated],
        "extra_constraints": extra_constraints,
        "extra_variants": extra_variants,
        "segments": segments,
        "operators": OPERATOR_NAMES,
        "list_operators": LIST_OPERATORS,
        "payload_types": PAYLOAD_TYPES,
        "error": error.message if error else None,
        "errors": field_errors(error) if error else {},
        "preview": preview,
        **await constraint_vocabulary(request),
    }
    return render(request, "strategy.html", context, status=form_status(error))


@routes.get(STRATEGIES + "/new")
@page()
async def new_strategy(request: web.Request) -> web.Response:
    name, _environment = _where(request)
    await call(request, svc(request).flags.get_flag, None, name)  # 404 before drawing a form
    definitions = await _definitions(request)
    chosen = request.query.get("strategy", "flexibleRollout")
    definition = definitions.get(chosen) or definitions["flexibleRollout"]
    return await _editor(request, StrategyForm.new(definition, name), strategy_id=None)


@routes.get(STRATEGY)
@page()
async def edit_strategy(request: web.Request) -> web.Response:
    name, environment = _where(request)
    strategy_id = request.match_info["strategy_id"]
    project = await _project_of(request, name)
    strategy = await call(
        request, svc(request).strategies.get_strategy, project, name, environment, strategy_id
    )
    definition = (await _definitions(request)).get(strategy.name)
    return await _editor(request, StrategyForm.of(strategy, definition), strategy_id=strategy_id)


async def _save(request: web.Request, strategy_id: str | None) -> web.Response:
    """Save the strategy as typed; any refusal redraws the form from what was posted."""
    name, environment = _where(request)
    typed = StrategyForm.posted(form(request))
    more = form(request).get("_more")
    if more in ("constraint", "variant"):  # another empty row, nothing saved yet
        return await _editor(
            request,
            typed,
            strategy_id=strategy_id,
            extra_constraints=2 if more == "constraint" else 1,
            extra_variants=2 if more == "variant" else 1,
        )
    try:
        strategy = typed.to_strategy((await _definitions(request)).get(typed.name))
        project = await _project_of(request, name)
        if form(request).get("_preview"):  # counts for the strategy as typed, nothing saved
            preview = await _previewed(request, project, strategy, strategy_id)
            return await _editor(request, typed, strategy_id=strategy_id, preview=preview)
        if form(request).get("_draft"):
            return await _drafted(request, project, strategy, strategy_id)
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
    except FlagcoreError as error:  # every refusal: the form comes back as typed
        return await _editor(request, typed, strategy_id=strategy_id, error=error)
    return redirect(with_flash(request, flag_url(name), "strategy-saved", environment))


async def _previewed(
    request: web.Request, project: str, strategy: Strategy, strategy_id: str | None
) -> PreviewAnswer:
    """The preview of the environment's strategies with this one as typed (in its place,
    or added last), scored off the store's thread on this node's latest sample."""
    name, environment = _where(request)
    current = await call(
        request, svc(request).strategies.list_strategies, project, name, environment
    )
    if strategy_id is None:
        proposed = [*current, strategy]
    else:
        proposed = [
            attrs.evolve(strategy, id=strategy_id) if s.id == strategy_id else s for s in current
        ]
    await flush_context_samples(request.app)
    read = await call(
        request,
        svc(request).previews.preview_input,
        project,
        environment,
        name,
        ProposedChange(strategies=tuple(proposed)),
    )
    return await scored_in_turn(request.app, read.scored)


async def _drafted(
    request: web.Request, project: str, strategy: Strategy, strategy_id: str | None
) -> web.Response:
    """The strategy added to the viewer's draft where change requests are on (issue 30):
    the same change the API's ``addStrategy`` / ``updateStrategy`` makes."""
    name, environment = _where(request)
    action = ChangeAction.ADD_STRATEGY if strategy_id is None else ChangeAction.UPDATE_STRATEGY
    payload = write_payload(action, attrs.evolve(strategy, id=strategy_id))
    draft = await call(
        request,
        svc(request).change_requests.add_changes,
        project,
        environment,
        [DraftChange(name, action.value, payload)],
        actor=viewer(request).actor,
    )
    url = change_request_url(project, draft.id)
    return redirect(with_flash(request, url, "change-drafted", str(draft.id)))


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


async def _drafting(request: web.Request, project: str, environment: str) -> bool:
    config = await call(request, svc(request).change_requests.change_request_config, project)
    return drafting_in(config, environment)


@routes.post(STRATEGY + "/delete")
@page()
async def delete_strategy(request: web.Request) -> web.Response:
    name, environment = _where(request)
    project = await _project_of(request, name)
    strategy_id = request.match_info["strategy_id"]
    if await _drafting(request, project, environment):  # as the switch: a deleteStrategy
        payload = StrategyIdPayload(strategy_id)
        return await drafted(
            request, project, environment, name, ChangeAction.DELETE_STRATEGY, payload
        )
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
        if await _drafting(request, project, environment):  # as the switch: a reorder
            order = tuple(StrategyOrderPayload(sid, n) for n, sid in enumerate(ids) if sid)
            return await drafted(
                request, project, environment, name, ChangeAction.REORDER_STRATEGY, order
            )
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
