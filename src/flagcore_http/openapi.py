"""The OpenAPI document of everything this server serves, built from its routes."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from flagcore_http.ui.paths import is_ui_path

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

# Action sets in Unleash Enterprise's schemas (names as Unleash's OpenAPI has them).
_FILTER = {
    "type": "object",
    "required": ["operator"],
    "properties": {
        "operator": {"type": "string"},
        "values": {"type": "array", "items": {"type": "string"}},
        "value": {"type": "string"},
        "inverted": {"type": "boolean"},
        "caseInsensitive": {"type": "boolean"},
    },
}
_CREATE_ACTIONS = {
    "type": "object",
    "required": ["name", "match", "actions"],
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string", "nullable": True},
        "enabled": {"type": "boolean"},
        "actorId": {"type": "integer", "minimum": 1},
        "match": {
            "type": "object",
            "required": ["source", "sourceId"],
            "properties": {
                "source": {"type": "string", "enum": ["signal-endpoint"]},
                "sourceId": {"type": "integer"},
                "payload": {
                    "type": "object",
                    "description": "payload path (a.b, list[0]) -> constraint",
                    "additionalProperties": _FILTER,
                },
            },
        },
        "actions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["action", "sortOrder", "executionParams"],
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["TOGGLE_FEATURE_ON", "TOGGLE_FEATURE_OFF", "MARK_FEATURE_STALE"],
                    },
                    "sortOrder": {"type": "integer", "minimum": 1},
                    "executionParams": {
                        "type": "object",
                        "required": ["featureName"],
                        "properties": {
                            "project": {"type": "string"},
                            "featureName": {"type": "string"},
                            "environment": {"type": "string"},
                        },
                    },
                },
            },
        },
    },
}
_ACTIONS_PATH = "/api/admin/projects/{project}/actions"
_BODIES = {
    ("post", _ACTIONS_PATH): "createActionsSchema",
    ("put", _ACTIONS_PATH + "/{id}"): "createActionsSchema",
}
_CREATED = {("post", _ACTIONS_PATH)}


def _security(path: str, method: str) -> list[dict[str, list[str]]]:
    if method == "options":  # CORS preflights carry no credentials
        return []
    if path.startswith(("/api/admin", "/api/projects", "/api/client", "/api/frontend", "/ofrep/")):
        return [{"apiToken": []}]
    return []


def document(app: web.Application) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if not path or route.method in ("HEAD", "*") or is_ui_path(path):
            continue  # the UI's pages are not API operations
        handler = route.handler
        summary = (handler.__doc__ or handler.__name__.replace("_", " ")).strip().splitlines()[0]
        method = route.method.lower()
        operation = paths.setdefault(path, {})[method] = {
            "summary": summary,
            "operationId": f"{route.method.lower()}_{handler.__name__}",
            "parameters": [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in _PARAMETER.findall(path)
            ],
            "security": _security(path, method),
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
        body = _BODIES.get((method, path))
        if body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}
                },
            }
        if (method, path) in _CREATED:
            operation["responses"]["201"] = operation["responses"].pop("200")
    return {
        "openapi": "3.0.3",
        "info": {"title": "flagcore", "version": "0.1.0"},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {"Error": _ERROR, "createActionsSchema": _CREATE_ACTIONS},
            "securitySchemes": {
                "apiToken": {"type": "apiKey", "in": "header", "name": "Authorization"}
            },
        },
    }


async def handler(request: web.Request) -> web.Response:
    """The OpenAPI document."""
    return web.json_response(document(request.app))
