"""The OpenAPI document of everything this server serves, built from its routes."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

__all__ = ["document", "handler"]

_ERROR = {
    "type": "object",
    "required": ["name", "message", "details"],
    "properties": {
        "name": {"type": "string"},
        "message": {"type": "string"},
        "details": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
                "required": ["message"],
            },
        },
    },
}
_PARAMETER = re.compile(r"\{(\w+)\}")


def _security(path: str) -> list[dict[str, list[str]]]:
    if path.startswith(("/api/admin", "/api/projects", "/api/client")):
        return [{"apiToken": []}]
    return []


def document(app: web.Application) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if not path or route.method in ("HEAD", "*"):
            continue
        handler = route.handler
        summary = (handler.__doc__ or handler.__name__.replace("_", " ")).strip().splitlines()[0]
        paths.setdefault(path, {})[route.method.lower()] = {
            "summary": summary,
            "operationId": f"{route.method.lower()}_{handler.__name__}",
            "parameters": [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in _PARAMETER.findall(path)
            ],
            "security": _security(path),
            "responses": {
                "default": {
                    "description": "an error",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
                "200": {"description": "success"},
            },
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": "flagcore", "version": "0.1.0"},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {"Error": _ERROR},
            "securitySchemes": {
                "apiToken": {"type": "apiKey", "in": "header", "name": "Authorization"}
            },
        },
    }


async def handler(request: web.Request) -> web.Response:
    """The OpenAPI document."""
    return web.json_response(document(request.app))
