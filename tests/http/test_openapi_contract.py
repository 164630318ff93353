"""The API contract: /docs/openapi.json documents every route with schemas derived from the
wire tables, is a valid OpenAPI 3.1 document, and /docs renders it without the network."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import attrs
import jsonschema
import pytest
from openapi_spec_validator import validate

from flagcore import model
from flagcore.memory import MemoryStore
from flagcore.model import Constraint, Flag, Payload, Strategy, Variant
from flagcore.service import Service
from flagcore.wire import FIELDS, SchemaSet, converter
from flagcore_http import ServerConfig, create_app
from flagcore_http.openapi import document, operations, undocumented
from flagcore_http.wire import BODY_NAMES, CreateFlag

from .conftest import Api

_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "options")


@pytest.fixture(scope="module")
def app_document() -> dict[str, Any]:
    return document(create_app(Service(MemoryStore()), ServerConfig()))


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in doc["paths"].items()
        for method, operation in item.items()
        if method in _HTTP_METHODS
    ]


def _validator(doc: dict[str, Any], schema: dict[str, Any]) -> jsonschema.Validator:
    """A validator of ``schema`` whose ``#/components/...`` references resolve in ``doc``."""
    return jsonschema.Draft202012Validator({**schema, "components": doc["components"]})


def test_every_route_declares_its_contract() -> None:
    app = create_app(Service(MemoryStore()), ServerConfig())
    missing = undocumented(app)
    assert not missing, (
        "routes without a declared contract (add @documented next to each handler, see "
        f"docs/api-contract.md): {', '.join(missing)}"
    )
    assert len(list(operations(app))) > 80  # the whole API, not an empty router


def test_the_document_is_valid_openapi_3_1(app_document: dict[str, Any]) -> None:
    assert app_document["openapi"] == "3.1.0"
    validate(app_document)


def test_every_operation_documents_its_parameters_body_and_every_response(
    app_document: dict[str, Any],
) -> None:
    problems = []
    for method, path, operation in _operations(app_document):
        where = f"{method.upper()} {path}"
        responses = operation["responses"]
        if "default" in responses or not any(s.startswith("2") for s in responses):
            problems.append(f"{where}: no documented success")
        for status, response in responses.items():
            content = response.get("content", {})
            if status.startswith(("4", "5")) and not content:
                problems.append(f"{where}: error {status} without a body schema")
            for media, body in content.items():
                if "schema" not in body:
                    problems.append(f"{where}: {status} {media} without a schema")
        if operation["security"] and not {"401", "403"} <= set(responses):
            problems.append(f"{where}: needs a token but does not document 401 and 403")
        named = set(re.findall(r"\{(\w+)\}", path))
        documented = {p["name"] for p in operation["parameters"] if p["in"] == "path"}
        if named != documented:
            problems.append(f"{where}: path parameters {sorted(documented)}")
        body = operation.get("requestBody")
        if body is not None and "schema" not in body["content"]["application/json"]:
            problems.append(f"{where}: a request body without a schema")
        if body is not None and not {"400", "413", "415"} <= set(responses):
            problems.append(f"{where}: reads a body but does not document 400, 413 and 415")
    assert not problems, "\n".join(problems)


def test_bodies_the_readers_read_are_documented_with_the_readers_classes(
    app_document: dict[str, Any],
) -> None:
    paths = app_document["paths"]
    create_flag = paths["/api/admin/projects/{project}/features"]["post"]
    assert create_flag["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CreateFlag"
    }
    strategy = paths[
        "/api/admin/projects/{project}/features/{name}/environments/{environment}/strategies"
    ]
    assert strategy["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Strategy"
    }
    schemas = app_document["components"]["schemas"]
    # The keys are the wire table's, in its order; required are the fields without default.
    for cls, fields in FIELDS.items():
        component = schemas[cls.__name__]
        assert list(component["properties"]) == [f.key for f in fields], cls
        assert component.get("required", []) == [f.key for f in fields if f.required], cls
    assert list(schemas["CreateFlag"]["properties"]) == [
        "name",
        "description",
        "type",
        "impressionData",
        "tags",
    ]
    assert BODY_NAMES[CreateFlag]["impression_data"] == "impressionData"


# Request bodies whose schema is not a class's component (issue 27: every other one is):
# what SDKs post (schemas from the rows they are read by, `flagcore.wire.sdk_bodies`), a
# signal's payload (any JSON), environments' sort order (``dict[str, int]``, derived from
# that type), and an operator's impact metrics (written by hand next to its reader,
# `flagcore.wire.impact_metrics`).
_NOT_A_CLASS = {
    ("post", "/api/client/register"),
    ("post", "/api/client/metrics"),
    ("post", "/api/frontend/client/register"),
    ("post", "/api/frontend/client/metrics"),
    ("post", "/api/signal-endpoint/{name}"),
    ("put", "/api/admin/environments/sort-order"),
}


def test_every_request_body_but_the_sdks_and_free_form_ones_is_a_class_component(
    app_document: dict[str, Any],
) -> None:
    others = set()
    for method, path, operation in _operations(app_document):
        body = operation.get("requestBody")
        if body is None:
            continue
        schema = body["content"]["application/json"]["schema"]
        if "$ref" not in schema.get("items", schema):  # a class, or a list of a class
            others.add((method, path))
    assert others == _NOT_A_CLASS


def test_a_field_added_to_a_class_appears_in_its_schema_with_its_wire_key() -> None:
    @attrs.frozen
    class Added:
        name: str
        rollout_share: int = 0
        tags: tuple[str, ...] = ()
        weight_type: model.WeightType = model.WeightType.VARIABLE

    schemas = SchemaSet({Added: {"rollout_share": "rolloutShare", "weight_type": "weightType"}})
    assert schemas.of(Added) == {"$ref": "#/components/schemas/Added"}
    added = schemas.components["Added"]
    assert added["required"] == ["name"]
    assert added["properties"]["rolloutShare"]["type"] == ["integer", "null"]
    assert added["properties"]["tags"] == {"type": ["array", "null"], "items": {"type": "string"}}
    assert added["properties"]["weightType"]["anyOf"][0]["enum"] == ["variable", "fix"]


def test_what_the_wire_writes_conforms_to_the_derived_schemas(
    app_document: dict[str, Any],
) -> None:
    flag = Flag(
        "checkout",
        enabled=True,
        description=None,
        strategies=(
            Strategy(
                "flexibleRollout",
                {"rollout": "50"},
                (Constraint("userId", "IN", ("a", "b"), case_insensitive=True),),
                segments=(1,),
                variants=(Variant("blue", 1000, payload=Payload("json", "{}")),),
                id="s1",
                sort_order=0,
            ),
        ),
        variants=(Variant("red", 500),),
    )
    validator = _validator(app_document, {"$ref": "#/components/schemas/Flag"})
    validator.validate(converter.unstructure(flag))
    # ...and what it refuses, the schema refuses too: a constraint without its operator.
    broken = converter.unstructure(flag)
    del broken["strategies"][0]["constraints"][0]["operator"]
    assert not validator.is_valid(broken)


def test_links_name_operations_and_parameters_that_exist(app_document: dict[str, Any]) -> None:
    by_id = {op["operationId"]: (path, op) for _m, path, op in _operations(app_document)}
    assert len(by_id) == len(_operations(app_document)), "operationIds are unique"
    linked = 0
    for _method, path, operation in _operations(app_document):
        for response in operation["responses"].values():
            for link in response.get("links", {}).values():
                _target_path, target = by_id[link["operationId"]]
                names = {p["name"] for p in target["parameters"]}
                assert set(link["parameters"]) <= names, (path, link)
                linked += 1
    assert linked >= 20  # create, then read, update and delete, for the main resources


async def test_the_served_document_is_the_built_one(api: Api) -> None:
    served = await api.json("GET", "/docs/openapi.json", token=None)
    assert served["openapi"] == "3.1.0"
    assert "/api/admin/segments" in served["paths"]
    assert "CreateFlag" in served["components"]["schemas"]


async def test_docs_page_renders_the_document_with_assets_served_here(api: Api) -> None:
    response = await api.request("GET", "/docs", token=None)
    assert response.status == 200
    assert response.content_type == "text/html"
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    page = await response.text()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert "/docs/static/swagger-ui-bundle.js" in assets
    assert "/docs/static/swagger-ui.css" in assets
    assert not [a for a in assets if "//" in a], "no asset comes from another host (no CDN)"
    for asset in assets:
        fetched = await api.request("GET", asset, token=None)
        assert fetched.status == 200, asset
        assert len(await fetched.read()) > 0, asset
    script = await (await api.request("GET", "/docs/static/docs.js", token=None)).text()
    assert "/docs/openapi.json" in script
    licence = await api.request("GET", "/docs/static/LICENSE", token=None)
    assert "Apache License" in await licence.text()
    # Only the page's own files: anything else is the API's JSON 404, never a file.
    for outside in ("/docs/static/nope.js", "/docs/static/", "/docs/static/%2e%2e/openapi.py"):
        missing = await api.request("GET", outside, token=None)
        assert missing.status == 404, outside
        assert (await missing.json())["name"] == "NotFoundError"


class Conformance:
    """Sends requests through ``api`` and checks each answer against the document: its
    status is documented for the operation, and its JSON body validates against the
    schema documented for that status."""

    def __init__(self, api: Api, doc: dict[str, Any]) -> None:
        self.api, self.doc = api, doc
        self.checked: set[tuple[str, str, int]] = set()

    async def call(
        self,
        method: str,
        template: str,
        status: int,
        values: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        path = template.format(**(values or {}))
        response = await self.api.request(method, path, **kwargs)
        text = await response.text()
        assert response.status == status, f"{method} {path}: {response.status} {text}"
        documented = self.doc["paths"][template][method.lower()]["responses"]
        assert str(status) in documented, f"{method} {template}: {status} is not documented"
        content = documented[str(status)].get("content", {})
        body = None
        if text and response.content_type == "application/json":
            body = json.loads(text)
            schema = content["application/json"]["schema"]
            errors = sorted(_validator(self.doc, schema).iter_errors(body), key=str)
            assert not errors, f"{method} {template} {status}: {errors[0].message}"
        else:
            assert not content or response.status == 304 or "application/json" not in content
        self.checked.add((method, template, status))
        return body


async def test_answers_of_a_whole_journey_conform_to_the_document(api: Api) -> None:
    """Real data through every admin area, the SDK, Frontend and OFREP APIs: the answers
    schemathesis seldom reaches with generated data (a flag with strategies, variants and
    segments; archived flags; action-set runs) are held to their documented schemas."""
    async with api.client.get("/docs/openapi.json") as response:
        doc = await response.json()
    c = Conformance(api, doc)
    flags = "/api/admin/projects/{project}/features"
    flag = flags + "/{name}"
    strategies = flag + "/environments/{environment}/strategies"
    at = {"project": "shop", "name": "checkout", "environment": "development"}

    await c.call("POST", "/api/admin/projects", 201, json={"id": "shop", "name": "Shop"})
    await c.call("GET", "/api/admin/projects", 200)
    await c.call("POST", "/api/admin/tag-types", 201, json={"name": "team"})
    await c.call("GET", "/api/admin/tag-types", 200)
    created = {"name": "checkout", "tags": [{"type": "team", "value": "payments"}]}
    await c.call("POST", flags, 201, at, json=created)
    await c.call("POST", flags, 409, at, json=created)
    await c.call("POST", flags, 201, at, json={"name": "parent"})
    segment = await c.call(
        "POST",
        "/api/admin/segments",
        201,
        json={
            "name": "beta",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a"]}],
        },
    )
    strategy = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
        "constraints": [
            {"contextName": "country", "operator": "IN", "values": ["NO"], "caseInsensitive": True}
        ],
        "segments": [segment["id"]],
        "variants": [
            {
                "name": "blue",
                "weight": 1000,
                "stickiness": "default",
                "payload": {"type": "json", "value": '{"a": 1}'},
            }
        ],
    }
    added = await c.call("POST", strategies, 200, at, json=strategy)
    one = {**at, "strategy_id": added["id"]}
    await c.call("GET", strategies, 200, at)
    await c.call("GET", strategies + "/{strategy_id}", 200, one)
    await c.call("PUT", strategies + "/{strategy_id}", 200, one, json={**strategy, "title": "half"})
    variants = [
        {
            "name": "red",
            "weight": 1000,
            "weightType": "variable",
            "stickiness": "default",
            "overrides": [{"contextName": "userId", "values": ["x"]}],
        }
    ]
    await c.call("PUT", flag + "/environments/{environment}/variants", 200, at, json=variants)
    await c.call("GET", flag + "/environments/{environment}/variants", 200, at)
    await c.call("POST", flag + "/environments/{environment}/on", 200, at)
    await c.call("PUT", flag + "/dependencies", 200, at, json=[{"feature": "parent"}])
    await c.call("PATCH", flag, 200, at, json=[{"op": "replace", "path": "/stale", "value": True}])
    await c.call("PUT", flag, 200, at, json={"description": "the checkout"})
    await c.call("GET", flag, 200, at)
    await c.call("GET", flags, 200, at)
    await c.call("GET", "/api/admin/features/{name}/tags", 200, at)
    await c.call("GET", "/api/admin/segments", 200)
    await c.call("GET", "/api/admin/segments/{id}", 200, segment)
    await c.call("GET", "/api/admin/segments/{id}/strategies", 200, segment)
    await c.call("GET", "/api/admin/segments/strategies/{strategy_id}", 200, one)
    await c.call("GET", "/api/admin/environments", 200)
    await c.call("GET", "/api/admin/strategies", 200)
    await c.call("GET", "/api/admin/api-tokens", 200)
    frontend = await c.call(
        "POST",
        "/api/admin/api-tokens",
        201,
        json={
            "tokenName": "web",
            "type": "frontend",
            "environment": "development",
            "projects": ["shop"],
        },
    )
    client = await c.call(
        "POST",
        "/api/admin/api-tokens",
        201,
        json={
            "tokenName": "sdk",
            "type": "client",
            "environment": "development",
            "projects": ["shop"],
        },
    )

    # The SDK, Frontend and OFREP APIs, with their own tokens.
    sdk = {"token": client["secret"]}
    await c.call(
        "GET", "/api/client/features", 200, headers={"Unleash-Client-Spec": "5.2.0"}, **sdk
    )
    await c.call("GET", "/api/client/features", 200, **sdk)
    await c.call("GET", "/api/client/features/{name}", 200, at, **sdk)
    await c.call("GET", "/api/client/delta", 200, **sdk)
    web_token = {"token": frontend["secret"]}
    context = {"context": {"userId": "a", "properties": {"country": "NO"}}}
    await c.call("GET", "/api/frontend", 200, **web_token)
    await c.call("POST", "/api/frontend", 200, json=context, **web_token)
    await c.call(
        "POST",
        "/ofrep/v1/evaluate/flags/{key}",
        200,
        {"key": "checkout"},
        json=context,
        **web_token,
    )
    await c.call(
        "POST", "/ofrep/v1/evaluate/flags/{key}", 404, {"key": "nope"}, json={}, **web_token
    )
    await c.call("POST", "/ofrep/v1/evaluate/flags", 200, json=context, **web_token)

    # Signals and the action set they run.
    endpoint = await c.call("POST", "/api/admin/signal-endpoints", 201, json={"name": "alerts"})
    secret = await c.call(
        "POST", "/api/admin/signal-endpoints/{id}/tokens", 201, endpoint, json={"name": "t"}
    )
    action_set = {
        "name": "stale-on-alert",
        "match": {
            "source": "signal-endpoint",
            "sourceId": endpoint["id"],
            "payload": {"severity": {"operator": "IN", "values": ["critical"]}},
        },
        "actions": [
            {
                "action": "MARK_FEATURE_STALE",
                "sortOrder": 1,
                "executionParams": {"project": "shop", "featureName": "checkout"},
            }
        ],
    }
    actions = "/api/admin/projects/{project}/actions"
    made = await c.call("POST", actions, 201, at, json=action_set)
    await c.call(
        "POST",
        "/api/signal-endpoint/{name}",
        202,
        {"name": "alerts"},
        token=None,
        headers={"Authorization": f"Bearer {secret['token']}"},
        json={"severity": "critical"},
    )
    runs: list[Any] = []
    for _ in range(200):  # the run happens after the signal's answer
        runs = (await c.call("GET", actions + "/{id}/events", 200, {**at, **made}))[
            "actionSetEvents"
        ]
        if runs:
            break
        await asyncio.sleep(0.05)
    assert runs, "the action set ran"
    await c.call("GET", actions, 200, at)
    await c.call("GET", actions + "/config", 200, at)
    await c.call("GET", "/api/admin/signal-endpoints", 200)
    await c.call("GET", "/api/admin/signal-endpoints/{id}", 200, endpoint)
    await c.call("GET", "/api/admin/signal-endpoints/{id}/signals", 200, endpoint)
    await c.call("GET", "/api/admin/signals", 200)
    await c.call("GET", "/api/admin/events", 200)

    # Archive and revive.
    await c.call("DELETE", flag, 202, at)
    await c.call("GET", "/api/admin/archive/features", 200)
    await c.call("GET", "/api/admin/archive/features/{project}", 200, at)
    await c.call("POST", "/api/admin/archive/revive/{name}", 200, at)
    await c.call("GET", "/health", 200, token=None)
    await c.call("GET", "/ready", 200, token=None)
    assert len(c.checked) >= 50  # distinct (method, path, status)
