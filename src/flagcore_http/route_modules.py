"""Every route table of the API, found rather than listed: each module of
`flagcore_http.routes` that defines ``routes`` (an aiohttp ``RouteTableDef``) is served.

A new area is one module dropped into ``routes/``, with no edit elsewhere. Modules are
taken in name order; the order cannot change which handler answers, because no two
modules register the same method on paths that overlap
(`tests/http/test_route_modules.py` holds them to it).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from aiohttp import web

from flagcore_http import routes as routes_package

__all__ = ["route_tables"]


def route_tables(package: ModuleType = routes_package) -> tuple[web.RouteTableDef, ...]:
    """The ``routes`` table of each module of ``package``, by module name."""
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        table = getattr(module, "routes", None)
        if isinstance(table, web.RouteTableDef):
            found.append(table)
    return tuple(found)
