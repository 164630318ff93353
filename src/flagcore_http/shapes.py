"""JSON Schemas written by hand: of the answers not yet typed values, and of what a schema
derived from a class cannot say (ranges, patterns, query parameters).

The admin API's answers are typed values (`flagcore.wire.admin_answers`) whose schemas are
derived from their tables; what remains here are the answers the route modules and the
services still write as dicts (signals, action sets, the Frontend API, OFREP, the
playground, export and import) and the bodies read by hand (SDK registration and
metrics). Values a wire class describes (constraints, variants, dependencies) refer to
the component derived from that class (`flagcore.wire.schema`). The schemathesis test
(tests/http/test_schemathesis.py) checks every answer against these. Route modules
combine them in their `flagcore_http.contract.documented` declarations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flagcore.model import Strategy, Variant
from flagcore.service.playground import (
    MAX_CONTEXT_NAME_LENGTH,
    MAX_CONTEXT_PROPERTIES,
    MAX_CONTEXT_VALUE_LENGTH,
)
from flagcore.wire import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    ErrorAnswer,
    JsonSchema,
    schema_ref,
)
from flagcore_http.contract import Parameter
from flagcore_http.wire import (
    ActionBody,
    ActionSetBody,
    CreateEnvironment,
    CreateFlag,
    CreateProject,
    CreateStrategyDefinition,
    CreateTagType,
    EndpointBody,
    EndpointUpdate,
    SortOrderItem,
)

__all__ = [
    "ACTION_EVENTS_PAGE",
    "ANY_JSON",
    "BOOLEAN",
    "COMPONENT_NAMES",
    "CONTEXT_BODY",
    "CONTEXT_QUERY",
    "ID",
    "INTEGER",
    "NULLABLE_STRING",
    "REFINED",
    "SDK_HEADERS",
    "SDK_QUERY",
    "SDK_SCOPE_QUERY",
    "SIGNAL_PAGE",
    "SORT_ORDER",
    "STRING",
    "URL_FRIENDLY_NAME",
    "array",
    "json_patch",
    "nullable",
    "obj",
    "whole",
]

STRING: JsonSchema = {"type": "string"}
NULLABLE_STRING: JsonSchema = {"type": ["string", "null"]}
BOOLEAN: JsonSchema = {"type": "boolean"}
INTEGER: JsonSchema = {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX}
# Stored in an SQL integer column, 32-bit in PostgreSQL (`flagcore.validation.check_sort_order`).
SORT_ORDER: JsonSchema = {"type": "integer", "minimum": INT32_MIN, "maximum": INT32_MAX}
ANY: JsonSchema = {}


def obj(
    required: dict[str, Any], optional: dict[str, Any] | None = None, *, closed: bool = True
) -> JsonSchema:
    """An object with these keys (``required`` always present, ``optional`` sometimes).

    Answers are ``closed``: a key a writer adds without adding it here fails the contract
    tests, so the document cannot fall behind. Request bodies are open (``closed=False``),
    as the readers ignore keys they do not know.
    """
    out: JsonSchema = {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
    }
    if closed:
        out["additionalProperties"] = False
    return out


def array(items: JsonSchema) -> JsonSchema:
    return {"type": "array", "items": items}


def nullable(schema: JsonSchema) -> JsonSchema:
    return {"anyOf": [schema, {"type": "null"}]}


# A context as a request body: Unleash's fields (strings) and ``properties``; OFREP's
# flat attributes (strings, numbers, booleans) are any other key.
CONTEXT_BODY = obj(
    {},
    {
        "context": {
            "type": ["object", "null"],
            "properties": {
                "properties": {
                    "type": ["object", "null"],
                    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
                }
            },
        }
    },
    closed=False,
)


# Bodies read by hand (SDK registration and metrics), as `routes.client` checks them.
def json_patch(paths: Iterable[str]) -> JsonSchema:
    """A JSON Patch body of ``replace``/``add`` operations on these paths (a route passes
    the table it patches from, so the two cannot differ)."""
    return array(
        obj(
            {
                "op": {"enum": ["replace", "add"]},
                "path": {"enum": sorted(paths)},
                "value": {"type": ["string", "boolean"]},
            },
            closed=False,
        )
    )


ANY_JSON = ANY


def whole(low: int, high: int = INT64_MAX) -> JsonSchema:
    """A whole number from ``low`` to ``high`` (a path or query parameter)."""
    return {"type": "integer", "minimum": low, "maximum": high}


# An id in a path (`flagcore_http.bodies.int_parameter`).
ID = whole(0)
SIGNAL_PAGE = {"limit": Parameter(whole(1, 1000)), "before": Parameter(whole(0))}
ACTION_EVENTS_PAGE = {
    "limit": Parameter(whole(1, 1000)),
    "offset": Parameter(whole(0, 999_999_999)),
}

# The SDK API's query (`routes.client`): scope by project (a client token's scope wins),
# by tag (``type:value``) and by name prefix; the SDK's identity in headers.
SDK_SCOPE_QUERY = {
    "project": Parameter(STRING, "only flags of these projects", repeated=True),
    "environment": Parameter(STRING, "with --auth none: the environment"),
}
SDK_QUERY = {
    **SDK_SCOPE_QUERY,
    "tag": Parameter(STRING, "type:value; only flags with one of these tags", repeated=True),
    "namePrefix": Parameter(STRING, "only flags whose name starts with this"),
}
SDK_HEADERS = {
    "Unleash-Client-Spec": Parameter(
        STRING,
        "4.2.0 or later: version 2 (segments by id); else version 1 (segments inlined, "
        "legacy strategy and parameters on each flag)",
    ),
    "UNLEASH-APPNAME": Parameter(STRING, "the SDK's application, for the instance list"),
    "UNLEASH-INSTANCEID": Parameter(STRING),
    "If-None-Match": Parameter(STRING, "the ETag held: 304 when it is current"),
}
# The Frontend API's context in the query; ``properties[name]=value`` for properties.
CONTEXT_QUERY = {
    name: Parameter(STRING)
    for name in ("userId", "sessionId", "remoteAddress", "environment", "appName", "currentTime")
}

# Names appear in URLs (`flagcore.validation.check_name`, Unleash's rule): these letters,
# at most 255 of them, and not "." or ".." (refused with 400).
URL_FRIENDLY_NAME: JsonSchema = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_.~-]+$",
    "maxLength": 255,
    "description": 'URL-friendly: letters, digits, "-", "_", ".", "~"; not "." or ".."',
}
# What the body classes' types cannot say, checked by the service after reading.
REFINED: dict[type, dict[str, JsonSchema]] = {
    # An example a reader (and schemathesis's coverage phase) can use: a built-in name,
    # as Unleash's document gives, so a generated strategy reaches the store.
    Strategy: {"sort_order": SORT_ORDER, "name": {"type": "string", "examples": ["default"]}},
    CreateEnvironment: {"name": URL_FRIENDLY_NAME, "sort_order": SORT_ORDER},
    SortOrderItem: {"sort_order": SORT_ORDER},
    ActionBody: {"sort_order": {**SORT_ORDER, "minimum": 1}},
    # Weights are thousandths of the whole (Unleash's 1000), whatever the weight type.
    Variant: {"weight": {"type": "integer", "minimum": 0, "maximum": 1000}},
    CreateFlag: {"name": URL_FRIENDLY_NAME},
    CreateProject: {"id": URL_FRIENDLY_NAME},
    CreateTagType: {"name": URL_FRIENDLY_NAME},
    CreateStrategyDefinition: {"name": URL_FRIENDLY_NAME},
    EndpointBody: {"name": URL_FRIENDLY_NAME},
    EndpointUpdate: {"name": URL_FRIENDLY_NAME},
}
# Components published under Unleash's schema name rather than the class's.
COMPONENT_NAMES: dict[type, str] = {ActionSetBody: "createActionsSchema", ErrorAnswer: "Error"}


# --- Contracts of the export/import, context and playground routes (branch contracts) ---
# (The export file's answer is `flagcore.wire.ExportFileAnswer`, derived from its rows;
# what an import reads is the derived ``FeatureExport`` component.)
_STRATEGY_PARAMETERS: JsonSchema = {"type": "object", "additionalProperties": STRING}
# `routes.features_batch.export_flags`'s body (extra keys are ignored, as Unleash does).
EXPORT_QUERY = obj(
    {"environment": STRING},
    {
        "features": {"type": ["array", "null"], "items": STRING},
        "project": NULLABLE_STRING,
        "downloadFile": {"type": ["boolean", "null"]},
        "tag": {
            "anyOf": [
                obj({"type": STRING, "value": STRING}, closed=False),
                {"type": "string", "pattern": ":", "description": "type:value"},
                {"type": "null"},
            ]
        },
    },
    closed=False,
)


def import_body(optional: dict[str, Any] | None = None) -> JsonSchema:
    """The body of validate and import: where to, and the export (``data``: the component
    derived from the reader's classes, `flagcore.wire.FeatureExport`)."""
    return obj(
        {"project": STRING, "environment": STRING, "data": schema_ref("FeatureExport")},
        optional,
        closed=False,
    )


IMPORT_OPTIONS = {
    "overwrite": {"type": ["boolean", "null"]},
    "dryRun": {"type": ["boolean", "null"]},
}

# The playground's bodies, as `flagcore.service.playground` reads them: closed, as that
# reader refuses keys it does not know; a context's values are bounded strings.
_CONTEXT_VALUE: JsonSchema = {"type": "string", "maxLength": MAX_CONTEXT_VALUE_LENGTH}
_NON_EMPTY: JsonSchema = {"type": "string", "minLength": 1}


def _playground_context(required: tuple[str, ...]) -> JsonSchema:
    fields = ("appName", "userId", "sessionId", "remoteAddress", "environment", "currentTime")
    return obj(
        {name: {**_CONTEXT_VALUE, "minLength": 1} for name in required},
        {
            **{name: _CONTEXT_VALUE for name in fields if name not in required},
            # RFC 3339, as `flagcore.date_reading` reads it; anything else is a 400.
            "currentTime": {**_CONTEXT_VALUE, "format": "date-time"},
            "properties": {
                "type": "object",
                "maxProperties": MAX_CONTEXT_PROPERTIES,
                "propertyNames": {"minLength": 1, "maxLength": MAX_CONTEXT_NAME_LENGTH},
                "additionalProperties": _CONTEXT_VALUE,
            },
        },
    )


_PROJECTS: JsonSchema = {
    "anyOf": [{"const": "*"}, array(STRING), {"type": "null"}],
    "description": '"*" or missing: every project',
}
PLAYGROUND_BODY = obj(
    {"environment": _NON_EMPTY, "context": _playground_context(("appName",))},
    {"projects": _PROJECTS},
)
ADVANCED_PLAYGROUND_BODY = obj(
    {
        "environments": {"type": "array", "minItems": 1, "items": _NON_EMPTY},
        "context": _playground_context(("appName",)),
    },
    {"projects": _PROJECTS},
)
EXPLAIN_BODY = obj(
    {"flag": _NON_EMPTY, "environment": _NON_EMPTY}, {"context": _playground_context(())}
)


__all__ += [
    "ADVANCED_PLAYGROUND_BODY",
    "EXPLAIN_BODY",
    "EXPORT_QUERY",
    "IMPORT_OPTIONS",
    "PLAYGROUND_BODY",
    "import_body",
]
