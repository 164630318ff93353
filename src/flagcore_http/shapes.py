"""JSON Schemas of the answers no reader reads: those `flagcore_http.render` and the route
modules write by hand (the admin API's flags, projects, tokens, events...).

Each is the schema of one writer, named after it (`FLAG` is `render.flag`); values that a
wire class describes (constraints, variants, strategies, dependencies) refer to the
component derived from that class (`flagcore.wire.schema`), so they cannot drift. The
schemathesis test (tests/http/test_schemathesis.py) checks every answer against these.
Route modules combine them in their `flagcore_http.contract.documented` declarations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flagcore.wire import INT64_MAX, INT64_MIN, JsonSchema, schema_ref
from flagcore_http.contract import Parameter
from flagcore_http.wire import (
    ActionSetBody,
    CreateEnvironment,
    CreateFlag,
    CreateProject,
    CreateStrategyDefinition,
    CreateTagType,
    EndpointBody,
    EndpointUpdate,
)

__all__ = [
    "ACTION_CATALOGUE",
    "ACTION_EVENTS_PAGE",
    "ACTION_SET",
    "ACTION_SET_EVENT",
    "ANY_JSON",
    "ARCHIVED_FLAG",
    "ARCHIVED_FLAGS",
    "BOOLEAN",
    "CLIENT_FEATURES",
    "CLIENT_FLAG",
    "COMPONENT_NAMES",
    "CONTEXT_BODY",
    "CONTEXT_QUERY",
    "DELTA",
    "ENVIRONMENT",
    "EVENT",
    "FLAG",
    "FLAG_DETAILS",
    "FRONTEND_FLAGS",
    "FRONTEND_REGISTRATION",
    "HEALTH",
    "ID",
    "INTEGER",
    "METRICS",
    "NULLABLE_STRING",
    "OFREP_ERROR",
    "OFREP_EVALUATION",
    "OFREP_FLAGS",
    "PLACEMENT",
    "PROJECT",
    "REFINED",
    "REGISTRATION",
    "SDK_HEADERS",
    "SDK_QUERY",
    "SDK_SCOPE_QUERY",
    "SEGMENT",
    "SEGMENT_WITH_USAGE",
    "SIGNAL",
    "SIGNAL_ENDPOINT",
    "SIGNAL_PAGE",
    "SIGNAL_TOKEN",
    "SIGNAL_TOKEN_WITH_SECRET",
    "STRATEGIES_USING",
    "STRATEGY",
    "STRATEGY_DEFINITION",
    "STRATEGY_SEGMENTS",
    "STRING",
    "TAG",
    "TAG_TYPE",
    "TIME",
    "TOKEN",
    "URL_FRIENDLY_NAME",
    "VARIANTS",
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
# `render.time`: ISO 8601 in UTC with milliseconds, or null for "never".
TIME: JsonSchema = {"type": ["string", "null"], "format": "date-time"}
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


TAG = obj({"type": STRING, "value": STRING})
TAG_TYPE = obj({"name": STRING, "description": NULLABLE_STRING})
STRATEGY = schema_ref("Strategy")  # `render.strategy` writes every key of the wire class
VARIANTS = obj({"version": INTEGER, "variants": array(schema_ref("Variant"))})

FLAG = obj(
    {
        "name": STRING,
        "description": NULLABLE_STRING,
        "type": STRING,
        "project": STRING,
        "stale": BOOLEAN,
        "createdAt": TIME,
        "impressionData": BOOLEAN,
        "archived": BOOLEAN,
        "archivedAt": TIME,
        "dependencies": array(schema_ref("Dependency")),
    }
)
_ENVIRONMENT_STATE = obj(
    {
        "name": STRING,
        "enabled": BOOLEAN,
        "type": STRING,
        "sortOrder": INTEGER,
        "strategies": array(STRATEGY),
        "variants": array(schema_ref("Variant")),
    }
)
FLAG_DETAILS: JsonSchema = {
    **FLAG,
    "required": [*FLAG["required"], "environments", "tags"],
    "properties": {
        **FLAG["properties"],
        "environments": array(_ENVIRONMENT_STATE),
        "tags": array(TAG),
    },
}
# `routes.archive._archived`: a flag with its first strategy and variants, Unleash's v1.
ARCHIVED_FLAG: JsonSchema = {
    **FLAG,
    "required": [*FLAG["required"], "variants", "tags", "strategy", "parameters"],
    "properties": {
        **FLAG["properties"],
        "variants": array(schema_ref("Variant")),
        "tags": array(TAG),
        "strategy": STRING,
        "parameters": {"type": "object", "additionalProperties": STRING},
    },
}

SEGMENT = obj(
    {
        "id": INTEGER,
        "name": STRING,
        "description": NULLABLE_STRING,
        "constraints": array(schema_ref("Constraint")),
        "createdBy": NULLABLE_STRING,
        "createdAt": TIME,
    },
    {"project": STRING},
)
SEGMENT_WITH_USAGE: JsonSchema = {
    **SEGMENT,
    "required": [*SEGMENT["required"], "usedInProjects", "usedInFeatures"],
    "properties": {**SEGMENT["properties"], "usedInProjects": INTEGER, "usedInFeatures": INTEGER},
}
PLACEMENT = obj(
    {
        "id": STRING,
        "projectId": NULLABLE_STRING,
        "featureName": STRING,
        "strategyName": STRING,
        "environment": STRING,
    }
)
PROJECT = obj(
    {"id": STRING, "name": STRING, "description": NULLABLE_STRING, "createdAt": TIME},
    {"featureCount": INTEGER},
)
TOKEN = obj(
    {
        "tokenName": STRING,
        "type": {"type": "string", "enum": ["admin", "client", "frontend"]},
        "projects": array(STRING),
        "project": STRING,
        "environment": STRING,
        "createdAt": TIME,
        "secretHint": NULLABLE_STRING,
    },
    {"secret": STRING},
)
EVENT = obj(
    {
        "id": INTEGER,
        "type": STRING,
        "createdBy": NULLABLE_STRING,
        "createdAt": TIME,
        "featureName": NULLABLE_STRING,
        "project": NULLABLE_STRING,
        "environment": NULLABLE_STRING,
        "data": ANY,
        "preData": ANY,
    }
)
STRATEGY_DEFINITION = obj(
    {
        "name": STRING,
        "displayName": NULLABLE_STRING,
        "title": NULLABLE_STRING,
        "description": NULLABLE_STRING,
        "editable": BOOLEAN,
        "deprecated": BOOLEAN,
        "parameters": array(
            obj(
                {
                    "name": STRING,
                    "type": STRING,
                    "description": NULLABLE_STRING,
                    "required": BOOLEAN,
                }
            )
        ),
    }
)
ENVIRONMENT = obj({"name": STRING, "type": STRING, "sortOrder": INTEGER, "enabled": BOOLEAN})
HEALTH = obj({"health": {"type": "string", "enum": ["GOOD", "BAD"]}}, {"message": STRING})

# The SDK API. A flag as SDKs get it is the wire's `Flag` (strategies without the admin-only
# keys); the whole payload adds segments (format 2), the echoed query and its meta.
CLIENT_FLAG = schema_ref("Flag")
CLIENT_FEATURES = obj(
    {
        "version": INTEGER,
        "features": array(CLIENT_FLAG),
        "query": {"type": "object"},
        "meta": obj(
            {"revisionId": INTEGER, "etag": STRING, "queryHash": STRING},
        ),
    },
    {"segments": array(schema_ref("Segment"))},
)
DELTA = obj(
    {
        "events": array(
            {
                "type": "object",
                "required": ["eventId", "type"],
                "properties": {"eventId": INTEGER, "type": STRING},
            }
        )
    }
)

# Project action sets (`routes.actions`) and signals (`routes.signals`).
_FILTER = obj(
    {
        "operator": STRING,
        "values": array(STRING),
        "inverted": BOOLEAN,
        "caseInsensitive": BOOLEAN,
    },
    {"value": STRING},
)
_ACTION = obj(
    {
        "action": STRING,
        "sortOrder": INTEGER,
        "executionParams": obj({"project": STRING, "featureName": STRING}, {"environment": STRING}),
    },
    {"state": STRING, "details": NULLABLE_STRING},
)
ACTION_SET = obj(
    {
        "id": INTEGER,
        "name": STRING,
        "description": NULLABLE_STRING,
        "enabled": BOOLEAN,
        "project": STRING,
        "actorId": {"type": ["integer", "null"]},
        "match": obj(
            {
                "source": {"const": "signal-endpoint"},
                "sourceId": INTEGER,
                "payload": {"type": "object", "additionalProperties": _FILTER},
            }
        ),
        "actions": array(_ACTION),
        "createdAt": TIME,
    }
)
ACTION_SET_EVENT = obj(
    {
        "id": INTEGER,
        "actionSetId": INTEGER,
        "signalId": INTEGER,
        "createdAt": TIME,
        "state": STRING,
        "signal": obj(
            {
                "id": INTEGER,
                "source": {"const": "signal-endpoint"},
                "sourceId": INTEGER,
                "createdBySourceTokenId": {"type": ["integer", "null"]},
                "payload": ANY,
                "createdAt": TIME,
            }
        ),
        "actionSet": ACTION_SET,
    }
)
SIGNAL_TOKEN = obj({"id": INTEGER, "name": STRING, "createdAt": TIME})
SIGNAL_ENDPOINT = obj(
    {
        "id": INTEGER,
        "name": STRING,
        "description": NULLABLE_STRING,
        "enabled": BOOLEAN,
        "createdAt": TIME,
    },
    {"tokens": array(SIGNAL_TOKEN)},
)
SIGNAL = obj(
    {
        "id": INTEGER,
        "signalEndpointId": INTEGER,
        "tokenId": {"type": ["integer", "null"]},
        "payload": ANY,
        "createdAt": TIME,
    }
)

# The Frontend API and OFREP (`flagcore.service.frontend` writes these as text).
_FRONTEND_VARIANT = obj(
    {"name": STRING, "enabled": BOOLEAN, "feature_enabled": BOOLEAN, "featureEnabled": BOOLEAN},
    {"payload": schema_ref("Payload")},
)
FRONTEND_FLAGS = obj(
    {
        "toggles": array(
            obj(
                {
                    "name": STRING,
                    "enabled": BOOLEAN,
                    "impressionData": BOOLEAN,
                    "variant": _FRONTEND_VARIANT,
                }
            )
        )
    }
)
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
OFREP_EVALUATION = obj(
    {"key": STRING, "value": ANY, "reason": STRING, "variant": NULLABLE_STRING},
    {"metadata": {"type": "object"}},
)
OFREP_FLAGS = obj({"flags": array(OFREP_EVALUATION)})
# OFREP's failures carry OFREP's fields and ours (`routes.ofrep._failure_response`).
OFREP_ERROR = obj(
    {
        "errorCode": STRING,
        "errorDetails": STRING,
        "name": STRING,
        "message": STRING,
        "details": array(obj({"message": STRING}, {"path": STRING})),
    },
    {"key": STRING},
)

# Bodies read by hand (SDK registration and metrics), as `routes.client` checks them.
REGISTRATION = obj(
    {
        "appName": {"type": "string", "minLength": 1},
        "interval": {"type": "number", "minimum": 0},
        "started": {"type": ["string", "number"]},
        "strategies": array(STRING),
    },
    {"instanceId": NULLABLE_STRING, "sdkVersion": NULLABLE_STRING, "environment": NULLABLE_STRING},
    closed=False,
)
FRONTEND_REGISTRATION = {**REGISTRATION, "required": ["appName"]}
METRICS = obj(
    {
        "bucket": obj(
            {},
            {
                "start": {"type": ["string", "null"], "format": "date-time"},
                "stop": {"type": ["string", "null"], "format": "date-time"},
                "toggles": {"type": "object"},
            },
            closed=False,
        )
    },
    {"appName": NULLABLE_STRING, "instanceId": NULLABLE_STRING},
    closed=False,
)


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
ARCHIVED_FLAGS = obj({"version": INTEGER, "features": array(ARCHIVED_FLAG)})
STRATEGIES_USING = obj({"strategies": array(PLACEMENT), "changeRequestStrategies": array(ANY)})
STRATEGY_SEGMENTS = obj(
    {
        "projectId": NULLABLE_STRING,
        "strategyId": STRING,
        "environmentId": NULLABLE_STRING,
        "segmentIds": array(INTEGER),
    }
)
SIGNAL_TOKEN_WITH_SECRET: JsonSchema = {
    **SIGNAL_TOKEN,
    "required": [*SIGNAL_TOKEN["required"], "token"],
    "properties": {**SIGNAL_TOKEN["properties"], "token": STRING},
}
ACTION_CATALOGUE: JsonSchema = {
    "type": "object",
    "additionalProperties": obj(
        {
            "label": STRING,
            "description": STRING,
            "category": STRING,
            "permissions": array(STRING),
            "parameters": array(
                obj({"name": STRING, "label": STRING, "type": STRING}, {"options": array(STRING)})
            ),
        }
    ),
}
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
    "Unleash-Client-Spec": Parameter(STRING, "4.2.0 or later: segments by id (format 2)"),
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
    CreateFlag: {"name": URL_FRIENDLY_NAME},
    CreateProject: {"id": URL_FRIENDLY_NAME},
    CreateTagType: {"name": URL_FRIENDLY_NAME},
    CreateEnvironment: {"name": URL_FRIENDLY_NAME},
    CreateStrategyDefinition: {"name": URL_FRIENDLY_NAME},
    EndpointBody: {"name": URL_FRIENDLY_NAME},
    EndpointUpdate: {"name": URL_FRIENDLY_NAME},
}
# Components published under Unleash's schema name rather than the class's.
COMPONENT_NAMES: dict[type, str] = {ActionSetBody: "createActionsSchema"}
