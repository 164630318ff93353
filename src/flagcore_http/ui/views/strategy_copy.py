"""Copying every strategy of a flag's environment to another in one click (Unleash's
"copy to environment", which posts them one by one; here one unit of work). Where
change requests are on in the target, the copies are added to the person's draft there,
one ``addStrategy`` change each, as Unleash's UI does."""

from __future__ import annotations

import attrs
from aiohttp import web

from flagcore.change_requests import ChangeAction
from flagcore.errors import FlagcoreError
from flagcore_http.calls import call
from flagcore_http.ui.drafting import drafted_all, drafting_in
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, form_status, page, redirect, svc, viewer
from flagcore_http.ui.views.flag import flag_page, flag_url

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.post("/ui/flags/{name}/environments/{environment}/copy")
@page()
async def copy_strategies(request: web.Request) -> web.Response:
    name, source = request.match_info["name"], request.match_info["environment"]
    target = form(request).get("target", "")
    project = (await call(request, svc(request).flags.get_flag, None, name)).flag.project
    try:
        config = await call(request, svc(request).change_requests.change_request_config, project)
        if drafting_in(config, target):  # change requests are on there: addStrategy changes
            found = await call(
                request, svc(request).strategies.list_strategies, project, name, source
            )
            copies = [attrs.evolve(strategy, id=None) for strategy in found]
            return await drafted_all(
                request, project, target, name, ChangeAction.ADD_STRATEGY, copies
            )
        await call(
            request,
            svc(request).strategies.copy_strategies,
            project,
            name,
            source,
            target,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        typed = {"source": source, "target": target}
        return await flag_page(
            request, name, typed_copy=typed, error=error, status=form_status(error)
        )
    return redirect(with_flash(request, flag_url(name), "strategies-copied", target))
