"""What a schema derived from a class cannot say, and the schemas of what no class reads.

Every request body and every answer is a class whose JSON Schema is derived from the
table it is read or written by (`flagcore.wire.SchemaSet` over `flagcore_http.wire`'s
body classes, the model's and the answers' tables; the SDK bodies' from their rows in
`flagcore.wire.sdk_bodies`). What remains here:

- `REFINED`: what the types cannot say about a class's field and a later check holds it
  to (a name's pattern, a sort order's range, the playground context's bounds), keyed by
  the class and its attribute; `COMPONENT_NAMES`: classes published under Unleash's name;
- the path and query parameters and headers, which no body class reads
  (`flagcore_http.bodies.int_parameter`, `query_int`, the SDK query);
- `ANY_JSON`: a signal's payload, any JSON (its bounds are the parser's).

Route modules combine them in their `flagcore_http.contract.documented` declarations;
tests/http/test_schemathesis.py checks the server against the document.
"""

from __future__ import annotations

from flagcore.model import Strategy, Variant
from flagcore.service.playground import (
    MAX_CONTEXT_NAME_LENGTH,
    MAX_CONTEXT_PROPERTIES,
    MAX_CONTEXT_VALUE_LENGTH,
)
from flagcore.wire import (
    APP_NAME,
    IMPACT_METRICS_SCHEMA,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    ErrorAnswer,
    JsonSchema,
    PlaygroundContext,
    schema_ref,
)
from flagcore_http.contract import Parameter
from flagcore_http.wire import (
    ActionBody,
    ActionSetBody,
    AdvancedPlaygroundBody,
    ContextBody,
    CreateEnvironment,
    CreateFlag,
    CreateProject,
    CreateStrategyDefinition,
    CreateTagType,
    EndpointBody,
    EndpointUpdate,
    ExplainBody,
    ExportBody,
    ImpactMetricsBody,
    PlaygroundBody,
    SortOrderItem,
)

__all__ = [
    "ACTION_EVENTS_PAGE",
    "ANY_JSON",
    "COMPONENT_NAMES",
    "CONTEXT_QUERY",
    "ID",
    "REFINED",
    "SDK_HEADERS",
    "SDK_QUERY",
    "SDK_SCOPE_QUERY",
    "SIGNAL_PAGE",
    "STRING",
    "whole",
]

STRING: JsonSchema = {"type": "string"}
# Stored in an SQL integer column, 32-bit in PostgreSQL (`flagcore.validation.check_sort_order`).
SORT_ORDER: JsonSchema = {"type": "integer", "minimum": INT32_MIN, "maximum": INT32_MAX}
# A signal's payload: any JSON (`flagcore_http.routes.signals`; bounded by the parser).
ANY_JSON: JsonSchema = {}


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
# The playground's bodies (`flagcore.service.playground.check_request`, `check_context`).
_NON_EMPTY: JsonSchema = {"type": "string", "minLength": 1}
_CONTEXT_VALUE: JsonSchema = {"maxLength": MAX_CONTEXT_VALUE_LENGTH}
_PROJECTS: JsonSchema = {"description": '"*" or missing: every project'}
# Unleash's playground needs an appName (its sdkContextSchema); explaining one flag not.
_WITH_APP_NAME: JsonSchema = {
    "$ref": "#/components/schemas/PlaygroundContext",
    "required": [APP_NAME],
    "properties": {APP_NAME: _NON_EMPTY},
}
# What the body classes' types cannot say, checked by the service after reading.
REFINED: dict[type, dict[str, JsonSchema]] = {
    # An example a reader (and schemathesis's coverage phase) can use: a built-in name,
    # as Unleash's document gives, so a generated strategy reaches the store.
    Strategy: {"sort_order": SORT_ORDER, "name": {"type": "string", "examples": ["default"]}},
    CreateEnvironment: {"name": URL_FRIENDLY_NAME, "sort_order": SORT_ORDER},
    # Read by `flagcore.wire.read_impact_metrics`, whose schema says what it takes.
    ImpactMetricsBody: {"impact_metrics": IMPACT_METRICS_SCHEMA},
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
    PlaygroundContext: {
        **dict.fromkeys(
            ("app_name", "user_id", "session_id", "remote_address", "environment"), _CONTEXT_VALUE
        ),
        # RFC 3339, as `flagcore.date_reading` reads it; anything else is a 400.
        "current_time": {**_CONTEXT_VALUE, "format": "date-time"},
        "properties": {
            "maxProperties": MAX_CONTEXT_PROPERTIES,
            "propertyNames": {"minLength": 1, "maxLength": MAX_CONTEXT_NAME_LENGTH},
            "additionalProperties": {"type": "string", **_CONTEXT_VALUE},
        },
    },
    PlaygroundBody: {
        "environment": _NON_EMPTY,
        "context": _WITH_APP_NAME,
        "projects": _PROJECTS,
    },
    AdvancedPlaygroundBody: {
        "environments": {"minItems": 1, "items": _NON_EMPTY},
        "context": _WITH_APP_NAME,
        "projects": _PROJECTS,
    },
    ExplainBody: {"flag": _NON_EMPTY, "environment": _NON_EMPTY},
    # The tag's text form (`flagcore_http.wire`'s reader refuses one without ":").
    ExportBody: {
        "tag": {
            "anyOf": [
                schema_ref("TagBody"),
                {"type": "string", "pattern": ":", "description": "type:value"},
            ]
        }
    },
    # Unleash's fields (strings) and ``properties``; OFREP's flat attributes (strings,
    # numbers, booleans) are any other key.
    ContextBody: {
        "context": {
            "properties": {
                "properties": {
                    "type": ["object", "null"],
                    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
                }
            }
        }
    },
}
# Components published under Unleash's schema name rather than the class's.
COMPONENT_NAMES: dict[type, str] = {ActionSetBody: "createActionsSchema", ErrorAnswer: "Error"}
