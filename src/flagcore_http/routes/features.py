"""Flags and their strategies, on Unleash's admin paths."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from aiohttp import web

from flagcore.entities import FlagDefinition, Tag
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Dependency, Strategy, Variant
from flagcore.service import is_potentially_stale
from flagcore.wire import (
    FlagAnswer,
    FlagDetailsAnswer,
    FlagsAnswer,
    StrategyAnswer,
    VariantsAnswer,
    json_type,
    wire_name,
    write_answer,
)
from flagcore_http import wire
from flagcore_http.answering import answered
from flagcore_http.bodies import as_keywords, read_body, read_json, structure_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import (
    CreateFlag,
    FlagPatch,
    FlagPatchPath,
    NameBody,
    SortOrderItem,
    UpdateFlag,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

FLAGS = "/api/admin/projects/{project}/features"
FLAG = FLAGS + "/{name}"
STRATEGIES = FLAG + "/environments/{environment}/strategies"

# What can follow a created flag or an added strategy (OpenAPI links, for stateful tests).
_CREATED_FLAG = {"project": "$request.path.project", "name": "$response.body#/name"}
_ADDED_STRATEGY = {
    "project": "$request.path.project",
    "name": "$request.path.name",
    "environment": "$request.path.environment",
    "strategy_id": "$response.body#/id",
}


def _path(request: web.Request) -> tuple[str, str]:
    return request.match_info["project"], request.match_info["name"]


async def _potentially_stale(request: web.Request) -> Callable[[FlagDefinition], bool]:
    """Whether a flag is older than its type's lifetime (issue 32), as of now."""
    lifetimes = await call(request, service(request).feature_types.lifetimes)
    now = dt.datetime.now(dt.UTC)
    return lambda flag: is_potentially_stale(flag, lifetimes, now)


@routes.get(FLAGS)
@documented({200: FlagsAnswer})
async def list_flags(request: web.Request) -> web.Response:
    flags = await call(request, service(request).flags.list_flags, request.match_info["project"])
    stale = await _potentially_stale(request)
    return answered(
        FlagsAnswer(2, tuple(FlagAnswer.of(f, potentially_stale=stale(f)) for f in flags))
    )


@routes.post(FLAGS)
@documented(
    {201: FlagAnswer},
    body=CreateFlag,
    errors=(409,),
    links={
        "features.get_flag": _CREATED_FLAG,
        "features.update_flag": _CREATED_FLAG,
        "features.patch_flag": _CREATED_FLAG,
        "features.archive_flag": _CREATED_FLAG,
        "features.set_dependencies": _CREATED_FLAG,
    },
)
async def create_flag(request: web.Request) -> web.Response:
    body = await read_body(request, CreateFlag)
    created = await call(
        request,
        service(request).flags.create_flag,
        request.match_info["project"],
        body.name,
        type=body.type,
        description=body.description,
        impression_data=body.impression_data,
        tags=[Tag(tag.type, tag.value) for tag in body.tags],
        actor=actor(request),
    )
    return answered(FlagAnswer.of(created), status=201)


@routes.post("/api/admin/features/validate")
@documented({200: None}, body=NameBody, errors=(409,))
async def validate_name(request: web.Request) -> web.Response:
    body = await read_body(request, NameBody)
    await call(request, service(request).flags.check_flag_name, body.name)
    return web.Response(status=200)


@routes.get(FLAG)
@documented({200: FlagDetailsAnswer})
async def get_flag(request: web.Request) -> web.Response:
    details = await call(request, service(request).flags.get_flag, *_path(request))
    stale = await _potentially_stale(request)
    return answered(FlagDetailsAnswer.of_details(details, potentially_stale=stale(details.flag)))


@routes.put(FLAG)
@documented({200: FlagAnswer}, body=UpdateFlag)
async def update_flag(request: web.Request) -> web.Response:
    """Replaces, as Unleash's ``PUT`` does: what the body leaves out takes its default."""
    body = await read_body(request, UpdateFlag)
    updated = await call(
        request,
        service(request).flags.replace_flag,
        *_path(request),
        **as_keywords(body),
        actor=actor(request),
    )
    return answered(FlagAnswer.of(updated))


# What each path of a flag's patch changes, and the type of its value.
_PATCHABLE: dict[FlagPatchPath, tuple[str, type]] = {
    FlagPatchPath.DESCRIPTION: ("description", str),
    FlagPatchPath.TYPE: ("type", str),
    FlagPatchPath.IMPRESSION_DATA: ("impression_data", bool),
    FlagPatchPath.STALE: ("stale", bool),
}


@routes.patch(FLAG)
@documented({200: FlagAnswer}, body=tuple[FlagPatch, ...])
async def patch_flag(request: web.Request) -> web.Response:
    """JSON Patch (``replace``/``add``) on description, type, impressionData and stale."""
    data = await read_json(request)
    operations = wire.structure(data, tuple[FlagPatch, ...], "the patch")
    changes: dict[str, Any] = {}
    for index, operation in enumerate(operations):
        field, expected = _PATCHABLE[operation.path]
        if type(operation.value) is not expected:
            wanted = "a boolean" if expected is bool else "a string"
            got = json_type(operation.value)
            raise InvalidInput(
                f"{operation.path.value[1:]} must be {wanted}",
                [ErrorDetail(f"expected {wanted}, got {got}", f"$[{index}].value")],
            )
        changes[field] = operation.value
    updated = await call(
        request,
        service(request).flags.update_flag,
        *_path(request),
        actor=actor(request),
        **changes,
    )
    return answered(FlagAnswer.of(updated))


@routes.delete(FLAG)
@documented({202: None})
async def archive_flag(request: web.Request) -> web.Response:
    await call(
        request, service(request).archive.archive_flag, *_path(request), actor=actor(request)
    )
    return web.Response(status=202)


@routes.post(FLAG + "/stale/{state}")
@documented({200: FlagAnswer}, path={"state": {"enum": ["on", "off"]}})
async def set_stale(request: web.Request) -> web.Response:
    state = request.match_info["state"]
    if state not in ("on", "off"):
        raise web.HTTPNotFound()
    updated = await call(
        request,
        service(request).flags.mark_stale,
        *_path(request),
        state == "on",
        actor=actor(request),
    )
    return answered(FlagAnswer.of(updated))


@routes.put(FLAG + "/dependencies")
@documented({200: FlagAnswer}, body=tuple[Dependency, ...])
async def set_dependencies(request: web.Request) -> web.Response:
    data = await read_json(request)
    dependencies = wire.structure(data, tuple[Dependency, ...], "the dependencies")
    updated = await call(
        request,
        service(request).dependencies.set_dependencies,
        *_path(request),
        dependencies,
        actor=actor(request),
    )
    return answered(FlagAnswer.of(updated))


async def _switch(request: web.Request, enabled: bool) -> web.Response:
    await call(
        request,
        service(request).environments.set_environment_enabled,
        *_path(request),
        request.match_info["environment"],
        enabled,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(FLAG + "/environments/{environment}/on")
@documented({200: None})
async def switch_on(request: web.Request) -> web.Response:
    """Turn the flag on in the environment (adds a 100% rollout if it has no strategy)."""
    return await _switch(request, True)


@routes.post(FLAG + "/environments/{environment}/off")
@documented({200: None})
async def switch_off(request: web.Request) -> web.Response:
    """Turn the flag off in the environment."""
    return await _switch(request, False)


@routes.put(FLAG + "/environments/{environment}/variants")
@documented({200: VariantsAnswer}, body=tuple[Variant, ...])
async def set_variants(request: web.Request) -> web.Response:
    data = await read_json(request)
    variants = wire.structure(data, tuple[Variant, ...], "the variants")
    stored = await call(
        request,
        service(request).variants.set_flag_variants,
        *_path(request),
        request.match_info["environment"],
        variants,
        actor=actor(request),
    )
    return answered(VariantsAnswer(1, stored))


@routes.get(FLAG + "/environments/{environment}/variants")
@documented({200: VariantsAnswer})
async def get_variants(request: web.Request) -> web.Response:
    details = await call(request, service(request).flags.get_flag, *_path(request))
    environment = request.match_info["environment"]
    for state in details.environments:
        if state.environment.name == environment:
            return answered(VariantsAnswer(1, state.variants))
    raise web.HTTPNotFound()


@routes.get(STRATEGIES)
@documented({200: tuple[StrategyAnswer, ...]})
async def list_strategies(request: web.Request) -> web.Response:
    strategies = await call(
        request,
        service(request).strategies.list_strategies,
        *_path(request),
        request.match_info["environment"],
    )
    return web.json_response([write_answer(StrategyAnswer.of(s)) for s in strategies])


@routes.post(STRATEGIES)
@documented(
    {200: StrategyAnswer},
    body=Strategy,
    links={
        "features.get_strategy": _ADDED_STRATEGY,
        "features.update_strategy": _ADDED_STRATEGY,
        "features.delete_strategy": _ADDED_STRATEGY,
    },
)
async def add_strategy(request: web.Request) -> web.Response:
    strategy = await read_body(request, Strategy)
    stored = await call(
        request,
        service(request).strategies.add_strategy,
        *_path(request),
        request.match_info["environment"],
        strategy,
        actor=actor(request),
    )
    return answered(StrategyAnswer.of(stored))


@routes.post(STRATEGIES + "/set-sort-order")
@documented({200: None}, body=tuple[SortOrderItem, ...])
async def sort_strategies(request: web.Request) -> web.Response:
    data = await read_json(request)
    items = wire.structure(data, tuple[SortOrderItem, ...], "the sort order")
    await call(
        request,
        service(request).strategies.reorder_strategies,
        *_path(request),
        request.match_info["environment"],
        {i.id: i.sort_order for i in items},
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(STRATEGIES + "/{strategy_id}")
@documented({200: StrategyAnswer})
async def get_strategy(request: web.Request) -> web.Response:
    stored = await call(
        request,
        service(request).strategies.get_strategy,
        *_path(request),
        request.match_info["environment"],
        request.match_info["strategy_id"],
    )
    return answered(StrategyAnswer.of(stored))


@routes.put(STRATEGIES + "/{strategy_id}")
@documented({200: StrategyAnswer}, body=Strategy)
async def update_strategy(request: web.Request) -> web.Response:
    data = await read_json(request)
    strategy = structure_body(data, Strategy)
    stored = await call(
        request,
        service(request).strategies.update_strategy,
        *_path(request),
        request.match_info["environment"],
        request.match_info["strategy_id"],
        strategy,
        keep_segments=wire_name(Strategy, "segments") not in data,
        actor=actor(request),
    )
    return answered(StrategyAnswer.of(stored))


@routes.delete(STRATEGIES + "/{strategy_id}")
@documented({200: None})
async def delete_strategy(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).strategies.delete_strategy,
        *_path(request),
        request.match_info["environment"],
        request.match_info["strategy_id"],
        actor=actor(request),
    )
    return web.Response(status=200)
