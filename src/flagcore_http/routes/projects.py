"""Projects (create, update and delete too, which Unleash's open-source build lacks)."""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import (
    ProjectAnswer,
    ProjectsAnswer,
    ProjectWithFlagCount,
)
from flagcore_http.answering import answered
from flagcore_http.bodies import as_keywords, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import CreateProject, UpdateProject

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/admin/projects")
@documented({200: ProjectsAnswer})
async def list_projects(request: web.Request) -> web.Response:
    svc = service(request)
    projects = await call(request, svc.projects.list_projects)
    flags = await call(request, svc.flags.list_flags)
    counts: dict[str, int] = {}
    for flag in flags:
        counts[flag.project] = counts.get(flag.project, 0) + 1
    listed = tuple(ProjectWithFlagCount.of_count(p, counts.get(p.id, 0)) for p in projects)
    return answered(ProjectsAnswer(1, listed))


@routes.post("/api/admin/projects")
@documented(
    {201: ProjectAnswer},
    body=CreateProject,
    errors=(409,),
    links={
        "projects.delete_project": {"id": "$response.body#/id"},
        "features.list_flags": {"project": "$response.body#/id"},
        "features.create_flag": {"project": "$response.body#/id"},
    },
)
async def create_project(request: web.Request) -> web.Response:
    body = await read_body(request, CreateProject)
    project = await call(
        request,
        service(request).projects.create_project,
        body.id,
        body.name,
        body.description,
        actor=actor(request),
    )
    return answered(ProjectAnswer.of(project), status=201)


@documented({200: ProjectAnswer}, body=UpdateProject)
async def _update(request: web.Request) -> web.Response:
    body = await read_body(request, UpdateProject)
    project = await call(
        request,
        service(request).projects.update_project,
        request.match_info["id"],
        **as_keywords(body),
        actor=actor(request),
    )
    return answered(ProjectAnswer.of(project))


routes.put("/api/projects/{id}")(_update)
routes.put("/api/admin/projects/{id}")(_update)


@routes.delete("/api/admin/projects/{id}")
@documented({200: None}, errors=(409,))
async def delete_project(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).projects.delete_project,
        request.match_info["id"],
        actor=actor(request),
    )
    return web.Response(status=200)
