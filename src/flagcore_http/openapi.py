"""The OpenAPI 3.1 document of everything this server serves, built from its routes.

Each route's handler carries its contract (`flagcore_http.contract.documented`, declared
next to the handler); the schemas of request bodies and of wire values are derived from
the readers' own field tables (`flagcore.wire.schema`). This module adds what every route
of a kind shares: the security a path needs and the error statuses it can answer.

A route without a declared contract is still listed, with ``x-undocumented: true``, and
`undocumented` names it: tests/http/test_openapi_contract.py fails until it is declared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

from aiohttp import web

from flagcore import model
from flagcore.wire import (
    EXPORT_NAMES,
    FIELDS,
    ErrorAnswer,
    FeatureExport,
    JsonSchema,
    SchemaSet,
    schema_ref,
)
from flagcore_http import shapes
from flagcore_http.auth import accepted_kinds
from flagcore_http.contract import Contract, Parameter, contract_of, documented
from flagcore_http.ui.paths import is_ui_path
from flagcore_http.wire import BODY_NAMES, CLOSED_BODIES

__all__ = ["DOCUMENT_CACHE", "OPENAPI_VERSION", "document", "handler", "operations", "undocumented"]

OPENAPI_VERSION: Final = "3.1.0"
_PARAMETER = re.compile(r"\{(\w+)\}")

_ERROR_TEXT = {
    400: "the request is invalid (the details name each problem's JSON path)",
    401: "no token, or an unknown one",
    403: "a token of the wrong kind, or not allowed here",
    404: "not found",
    405: "method not allowed",
    408: "the request body did not arrive in time",
    409: "conflicts with what exists",
    413: "the request body is too large",
    415: "the request body is not JSON",
    429: "too many requests (see Retry-After)",
    503: "the store is unavailable or overloaded (see Retry-After)",
}
_SUCCESS_TEXT = {
    200: "success",
    201: "created",
    202: "accepted",
    204: "done, no content",
    304: "not modified: the ETag in If-None-Match is current",
}
_METHODS_WITH_BODIES = frozenset({"post", "put", "patch"})


def operations(app: web.Application) -> Iterator[tuple[str, str, Any]]:
    """Every API operation of ``app`` as (method, path, handler); the UI's pages, the
    catch-all and static files are not operations."""
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if not path or route.method in ("HEAD", "*") or is_ui_path(path):
            continue
        yield route.method.lower(), path, route.handler


def undocumented(app: web.Application) -> list[str]:
    """``METHOD /path`` of each operation whose handler declares no contract."""
    return [
        f"{method.upper()} {path}"
        for method, path, handler in operations(app)
        if contract_of(handler) is None
    ]


def _security(path: str, method: str) -> list[dict[str, list[str]]]:
    if method == "options":  # CORS preflights carry no credentials
        return []
    if path.startswith("/ofrep/"):
        return [{"apiToken": []}, {"apiKey": []}]
    if accepted_kinds(path) is not None or path.startswith("/api/signal-endpoint/"):
        return [{"apiToken": []}]
    return []


class _Builder:
    def __init__(self) -> None:
        # The export file's key table too: what an import reads (branch contracts).
        names = {**BODY_NAMES, **EXPORT_NAMES}
        self.schemas = SchemaSet(names, shapes.REFINED, shapes.COMPONENT_NAMES, CLOSED_BODIES)
        for cls in FIELDS:  # the model's values, each a component
            self.schemas.of(cls)
        self.schemas.of(model.ClientFeatures)
        self.schemas.of(FeatureExport)  # what an import reads
        self.schemas.of(ErrorAnswer)  # "Error": every refusal's shape
        self.operation_ids: set[str] = set()

    def schema(self, declared: Any) -> JsonSchema:
        if isinstance(declared, dict):
            return declared
        return self.schemas.of(declared)

    def operation(self, method: str, path: str, handler: Any) -> dict[str, Any]:
        contract = contract_of(handler)
        summary = (handler.__doc__ or handler.__name__.replace("_", " ")).strip().splitlines()[0]
        out: dict[str, Any] = {
            "summary": summary.strip(),
            "operationId": self._operation_id(path, handler),
            "security": _security(path, method),
        }
        if contract is None:
            out["x-undocumented"] = True
            out["parameters"] = [_path_parameter(name, {}) for name in _PARAMETER.findall(path)]
            out["responses"] = {"default": _error_response("any answer")}
            return out
        out["parameters"] = self._parameters(path, contract)
        if contract.body is not None:
            out["requestBody"] = {
                "required": contract.body_required,
                "content": {"application/json": {"schema": self.schema(contract.body)}},
            }
        out["responses"] = self._responses(method, path, contract, out["security"])
        return out

    def _operation_id(self, path: str, handler: Any) -> str:
        """``module.handler`` (``segments.get_segment``), what links name."""
        module = str(handler.__module__).rsplit(".", 1)[-1]
        wanted = f"{module}.{handler.__name__.strip('_')}"
        if wanted in self.operation_ids:  # one handler on two paths
            wanted += "_" + re.sub(r"\W+", "_", path).strip("_")
        self.operation_ids.add(wanted)
        return wanted

    def _parameters(self, path: str, contract: Contract) -> list[dict[str, Any]]:
        out = [
            _path_parameter(name, self.schema(contract.path.get(name, shapes.STRING)))
            for name in _PARAMETER.findall(path)
        ]
        for where, declared in (("query", contract.query), ("header", contract.headers)):
            for name, parameter in declared.items():
                out.append(self._parameter(where, name, parameter))
        return out

    def _parameter(self, where: str, name: str, parameter: Parameter) -> dict[str, Any]:
        schema = self.schema(parameter.schema)
        if parameter.repeated:
            schema = {"type": "array", "items": schema}
        out: dict[str, Any] = {"name": name, "in": where, "required": False, "schema": schema}
        if parameter.description:
            out["description"] = parameter.description
        if parameter.repeated:
            out["style"], out["explode"] = "form", True
        return out

    def _responses(
        self, method: str, path: str, contract: Contract, security: list[Any]
    ) -> dict[str, Any]:
        responses: dict[str, Any] = {}
        for status, declared in contract.responses.items():
            if status >= 400:
                responses[str(status)] = _error_response(
                    _ERROR_TEXT.get(status, "an error"), self.schema(declared)
                )
                continue
            answer: dict[str, Any] = {"description": _SUCCESS_TEXT.get(status, "success")}
            if declared is not None:
                answer["content"] = {contract.media: {"schema": self.schema(declared)}}
            if contract.links and 200 <= status < 300:
                answer["links"] = {
                    target: {"operationId": target, "parameters": dict(parameters)}
                    for target, parameters in contract.links.items()
                }
            responses[str(status)] = answer
        for status in sorted(_errors(method, path, contract, security)):
            responses.setdefault(str(status), _error_response(_ERROR_TEXT[status]))
        return responses


def _errors(method: str, path: str, contract: Contract, security: list[Any]) -> set[int]:
    """The error statuses a route of this kind can answer, and those it declares."""
    statuses = set(contract.errors)
    if security:
        statuses |= {401, 403}
    if contract.body is not None or method in _METHODS_WITH_BODIES:
        statuses |= {400, 413, 415}
    if contract.query or contract.path:
        statuses.add(400)
    if _PARAMETER.search(path):
        statuses.add(404)
    if contract.store:
        statuses.add(503)
    return statuses


def _path_parameter(name: str, schema: JsonSchema) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _error_response(description: str, schema: JsonSchema | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema or schema_ref("Error")}},
    }


def document(app: web.Application) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``app``'s API operations."""
    builder = _Builder()
    paths: dict[str, dict[str, Any]] = {}
    for method, path, route_handler in operations(app):
        paths.setdefault(path, {})[method] = builder.operation(method, path, route_handler)
    return {
        "openapi": OPENAPI_VERSION,
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "flagcore",
            "version": "0.1.0",
            "description": "An Unleash-compatible feature-flag server. Errors are "
            '`{"name", "message", "details": [{"message", "path"?}]}`.',
        },
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(builder.schemas.components.items())),
            "securitySchemes": {
                "apiToken": {"type": "apiKey", "in": "header", "name": "Authorization"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            },
        },
    }


# The document of an app, built on the first request: routes do not change once serving,
# and building it takes milliseconds of the event loop (`setup_docs_page` adds the slot
# before the app is frozen; without it the document is built for each request).
DOCUMENT_CACHE: Final = web.AppKey("openapi_document_cache", dict)


@documented({200: {"type": "object"}}, store=False)
async def handler(request: web.Request) -> web.Response:
    """The OpenAPI document (JSON, OpenAPI 3.1)."""
    cache: dict[str, bytes] | None = request.app.get(DOCUMENT_CACHE)
    body = cache.get("json") if cache is not None else None
    if body is None:
        body = json.dumps(document(request.app), separators=(",", ":")).encode("utf-8")
        if cache is not None:
            cache["json"] = body
    return web.Response(body=body, content_type="application/json")
