"""What the whole instance shares beyond flags: one tag type read and edited, custom
strategy definitions edited, deprecated, reactivated and deleted, and Unleash's search of
flags across every project (``/api/admin/search/features``)."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from flagcore.entities import StrategyDefinition, Tag
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.service import FlagQuery, FlagSearchPage
from flagcore.wire import (
    FeatureSearchAnswer,
    SearchedEnvironmentAnswer,
    SearchedFlagAnswer,
    StrategyDefinitionAnswer,
    TagTypeAnswer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import query_int, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import Parameter, documented
from flagcore_http.wire import CreateStrategyDefinition, UpdateTagType

__all__ = ["routes"]

routes = web.RouteTableDef()

TAG_TYPE = "/api/admin/tag-types/{name}"
STRATEGY = "/api/admin/strategies/{name}"
SEARCH = "/api/admin/search/features"


@routes.get(TAG_TYPE)
@documented({200: TagTypeAnswer})
async def get_tag_type(request: web.Request) -> web.Response:
    found = await call(request, service(request).tags.get_tag_type, request.match_info["name"])
    return answered(TagTypeAnswer(1, found))


@routes.put(TAG_TYPE)
@documented({200: None}, body=UpdateTagType)
async def update_tag_type(request: web.Request) -> web.Response:
    body = await read_body(request, UpdateTagType)
    if body.icon is not None:
        raise InvalidInput(
            "flagcore keeps no tag type icons", [ErrorDetail("not kept by flagcore", "$.icon")]
        )
    await call(
        request,
        service(request).tags.update_tag_type,
        request.match_info["name"],
        body.description,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(STRATEGY)
@documented({200: StrategyDefinitionAnswer})
async def get_strategy_definition(request: web.Request) -> web.Response:
    definitions = service(request).strategy_definitions
    found = await call(request, definitions.get_strategy_definition, request.match_info["name"])
    return answered(StrategyDefinitionAnswer.of(found))


@routes.put(STRATEGY)
@documented({200: None}, body=CreateStrategyDefinition, errors=(409,))
async def update_strategy_definition(request: web.Request) -> web.Response:
    """Unleash's ``upsertCustomStrategySchema``; the body's name must be the path's."""
    body = await read_body(request, CreateStrategyDefinition)
    name = request.match_info["name"]
    if body.name != name:
        raise InvalidInput(
            f"the body names strategy {body.name!r}, the path {name!r}",
            [ErrorDetail("must be the strategy's name in the path", "$.name")],
        )
    await call(
        request,
        service(request).strategy_definitions.update_strategy_definition,
        StrategyDefinition(name, body.description, body.parameters, title=body.title),
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(STRATEGY + "/deprecate")
@documented({200: None}, errors=(409,))
async def deprecate_strategy_definition(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).strategy_definitions.deprecate_strategy_definition,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(STRATEGY + "/reactivate")
@documented({200: None}, errors=(409,))
async def reactivate_strategy_definition(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).strategy_definitions.reactivate_strategy_definition,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.delete(STRATEGY)
@documented({200: None}, errors=(409,))
async def delete_strategy_definition(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).strategy_definitions.delete_strategy_definition,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)


_FILTER = shapes.STRING
_SORT_BY = {"createdAt": "created_at", "name": "name", "type": "type", "project": "project"}


@routes.get(SEARCH)
@documented(
    {200: FeatureSearchAnswer},
    query={
        "query": Parameter(shapes.STRING, "in a flag's name or description"),
        "project": Parameter(_FILTER, "IS:<id> or IS_ANY_OF:<id>,<id>"),
        "type": Parameter(_FILTER, "IS:<type> or IS_ANY_OF:<type>,<type>"),
        "tag": Parameter(_FILTER, "INCLUDE:<type>:<value> or INCLUDE_ANY_OF:..."),
        "state": Parameter(_FILTER, "IS:stale or IS:active"),
        "offset": Parameter(shapes.whole(0)),
        "limit": Parameter(shapes.whole(1, 1000)),
        "sortBy": Parameter({"enum": list(_SORT_BY)}),
        "sortOrder": Parameter({"enum": ["asc", "desc"]}),
    },
)
async def search_features(request: web.Request) -> web.Response:
    """Active flags of every project, filtered as Unleash's search filters them."""
    query = read_flag_query(request.query)
    offset = query_int(request, "offset", 0, 0, 1_000_000_000) or 0
    limit = query_int(request, "limit", 50, 1, 1000) or 50
    found = await call(
        request, service(request).flag_overviews.search, query, offset=offset, limit=limit
    )
    return answered(search_answer(found))


def read_flag_query(params: Mapping[str, str]) -> FlagQuery:
    """Unleash's search filters (``IS:``, ``IS_ANY_OF:``, ``INCLUDE:``, ...) read
    strictly: a filter in another form is refused at ``/query/<name>``."""
    get = params.get
    sort_by = get("sortBy", "createdAt")
    if sort_by not in _SORT_BY:
        raise _bad("sortBy", f"one of {', '.join(_SORT_BY)}")
    order = get("sortOrder", "asc")
    if order not in ("asc", "desc"):
        raise _bad("sortOrder", "asc or desc")
    state = _values(get("state"), "state", ("IS",))
    if any(s not in ("stale", "active") for s in state) or len(state) > 1:
        raise _bad("state", "IS:stale or IS:active")
    tags = []
    for raw in _values(get("tag"), "tag", ("INCLUDE", "INCLUDE_ANY_OF")):
        kind, colon, value = raw.partition(":")
        if not colon or not kind or not value:
            raise _bad("tag", "tags as <type>:<value>")
        tags.append(Tag(kind, value))
    return FlagQuery(
        text=str(get("query", ""))[:255],
        projects=_values(get("project"), "project", ("IS", "IS_ANY_OF")),
        types=_values(get("type"), "type", ("IS", "IS_ANY_OF")),
        tags=tuple(tags),
        stale=None if not state else state[0] == "stale",
        sort_by=_SORT_BY[sort_by],
        descending=order == "desc",
    )


def _values(raw: str | None, name: str, operators: tuple[str, ...]) -> tuple[str, ...]:
    if raw is None or raw == "":
        return ()
    operator, colon, rest = raw.partition(":")
    if not colon or operator not in operators or not rest:
        raise _bad(name, f"{' or '.join(o + ':' for o in operators)} and a value")
    values = tuple(v.strip() for v in rest.split(",")) if operator.endswith("_OF") else (rest,)
    if not all(values):
        raise _bad(name, "no empty value")
    return values


def _bad(name: str, wanted: str) -> InvalidInput:
    return InvalidInput(
        f"query parameter {name}: expected {wanted}", [ErrorDetail(wanted, f"/query/{name}")]
    )


def search_answer(found: FlagSearchPage) -> FeatureSearchAnswer:
    kinds = {e.name: e for e in found.environments}
    flags = tuple(
        SearchedFlagAnswer(
            row.flag.name,
            row.flag.description,
            row.flag.type,
            row.flag.project,
            row.flag.stale,
            row.flag.impression_data,
            row.flag.created_at,
            row.flag.archived_at,
            tuple(
                SearchedEnvironmentAnswer(
                    name,
                    name,
                    kinds[name].type,
                    row.enabled.get(name, False),
                    kinds[name].sort_order,
                )
                for name in kinds
            ),
            row.tags,
        )
        for row in found.rows
    )
    return FeatureSearchAnswer(flags, found.matching)
