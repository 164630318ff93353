"""Route modules register themselves (`flagcore_http.route_modules`): a module dropped into
``flagcore_http/routes/`` with a ``routes`` table is served with no edit elsewhere, and
the order they are found in cannot change which handler answers a request."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app, routes
from flagcore_http.route_modules import route_tables


def _route_modules() -> Iterator[tuple[str, web.RouteTableDef]]:
    for info in pkgutil.iter_modules(routes.__path__):
        module = importlib.import_module(f"flagcore_http.routes.{info.name}")
        table = getattr(module, "routes", None)
        if isinstance(table, web.RouteTableDef):
            yield info.name, table


def _pattern(path: str) -> re.Pattern[str]:
    """aiohttp's reading of a route path: ``{name}`` is one segment, ``{name:re}`` its re."""
    out, position = "", 0
    for match in re.finditer(r"\{([^}:]+)(?::([^}]+))?\}", path):
        out += re.escape(path[position : match.start()]) + f"({match.group(2) or '[^/]+'})"
        position = match.end()
    return re.compile(out + re.escape(path[position:]) + "$")


def test_every_route_of_every_route_module_is_served(service: Service) -> None:
    app = create_app(service, ServerConfig())
    served = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None
    }
    modules = dict(_route_modules())
    assert {"client", "features", "projects", "segments", "signals"} <= modules.keys()
    missing = [
        (name, route.method, route.path)
        for name, table in modules.items()
        for route in table
        if isinstance(route, web.RouteDef) and (route.method, route.path) not in served
    ]
    assert missing == []


def test_a_new_route_module_is_found_without_being_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "scratch_routes"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "webhooks.py").write_text(
        "from aiohttp import web\n"
        "routes = web.RouteTableDef()\n"
        "@routes.get('/api/admin/webhooks')\n"
        "async def list_webhooks(request: web.Request) -> web.Response:\n"
        "    return web.json_response([])\n"
    )
    (package / "not_routes.py").write_text("routes = 'not a table'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = route_tables(importlib.import_module("scratch_routes"))
        assert [[route.path for route in table] for table in found] == [["/api/admin/webhooks"]]
    finally:
        for name in [n for n in sys.modules if n.startswith("scratch_routes")]:
            del sys.modules[name]


def test_no_two_route_modules_claim_the_same_request() -> None:
    """So the name order modules are found in decides nothing: a request one module's
    route matches is matched by no route of another module with the same method."""
    routes_by_module = [
        (name, route.method, route.path)
        for name, table in _route_modules()
        for route in table
        if isinstance(route, web.RouteDef)
    ]
    clashes = [
        (one, other)
        for one in routes_by_module
        for other in routes_by_module
        if one[0] != other[0]
        and one[1] in (other[1], "*")
        and (
            _pattern(other[2]).match(one[2])
            or _pattern(other[2]).match(re.sub(r"\{[^}]+\}", "x", one[2]))
        )
    ]
    assert clashes == []
