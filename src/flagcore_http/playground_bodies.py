"""The playground's request bodies, read by hand into `PlaygroundRequest`s.

Unlike other bodies these are closed: a key the reader does not know is a 400 naming it
(the schema in `flagcore_http.shapes` says so too). The context inside is checked by the
playground's own `check_context`, the rule the admin UI and ``flagcore explain`` share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.service.playground import PlaygroundRequest, check_context

__all__ = ["read_advanced_request", "read_explain_request", "read_request"]


def _invalid(message: str, path: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(message, path)])


def _check_keys(body: Any, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
    if not isinstance(body, Mapping):
        raise _invalid("the body must be a JSON object", "$")
    for key in body:
        if key not in allowed:
            raise _invalid(f"unknown field {str(key)[:100]!r} ({', '.join(allowed)})", "$")
    for key in required:
        if key not in body:
            raise _invalid(f"{key} is required", f"$.{key}")


def _check_projects(value: Any) -> tuple[str, ...] | None:
    if value is None or value == "*":
        return None
    if type(value) is not list:
        raise _invalid('projects must be "*" or a list of project ids', "$.projects")
    for index, project in enumerate(value):
        if type(project) is not str:
            raise _invalid("must be a string", f"$.projects[{index}]")
    return None if "*" in value else tuple(value)


def read_request(body: Any) -> PlaygroundRequest:
    """``{"environment", "projects"?, "context"}``, checked (`InvalidInput` otherwise)."""
    _check_keys(body, ("environment", "projects", "context"), ("environment", "context"))
    environment = body["environment"]
    if type(environment) is not str or not environment:
        raise _invalid("environment must be a non-empty string", "$.environment")
    context = check_context(body["context"], required=("appName",))
    return PlaygroundRequest((environment,), _check_projects(body.get("projects")), context)


def read_advanced_request(body: Any) -> PlaygroundRequest:
    """``{"environments", "projects"?, "context"}``, checked (`InvalidInput` otherwise)."""
    _check_keys(body, ("environments", "projects", "context"), ("environments", "context"))
    environments = body["environments"]
    if type(environments) is not list or not environments:
        raise _invalid("environments must be a non-empty list", "$.environments")
    for index, environment in enumerate(environments):
        if type(environment) is not str or not environment:
            raise _invalid("must be a non-empty string", f"$.environments[{index}]")
    context = check_context(body["context"], required=("appName",))
    return PlaygroundRequest(
        tuple(dict.fromkeys(environments)),
        _check_projects(body.get("projects")),
        context,
        advanced=True,
    )


def read_explain_request(body: Any) -> tuple[str, PlaygroundRequest]:
    """``{"flag", "environment", "context"?}``: one flag to explain (no appName needed)."""
    _check_keys(body, ("flag", "environment", "context"), ("flag", "environment"))
    flag, environment = body["flag"], body["environment"]
    if type(flag) is not str or not flag:
        raise _invalid("flag must be a non-empty string", "$.flag")
    if type(environment) is not str or not environment:
        raise _invalid("environment must be a non-empty string", "$.environment")
    context = check_context(body.get("context", {}))
    return flag, PlaygroundRequest((environment,), None, context)
