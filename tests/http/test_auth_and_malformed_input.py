"""Authentication on every route, and hostile input on every route: never a 500."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import AuthMode, ServerConfig, create_app
from flagcore_http.ui.paths import is_ui_path
from tests.http.conftest import ADMIN, CLIENT, Api, personal_token

FRONTEND = "default:development.frontend-secret-for-tests"


def _routes() -> list[tuple[str, str]]:
    app = create_app(Service.__new__(Service), ServerConfig())  # routes only; never served
    out = []
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        # "*" is the catch-all for unknown paths: test_unknown_paths_and_methods_answer_json.
        # The UI's HTML pages: tests/ui/test_hostile_forms.py walks them.
        if path and route.method not in ("HEAD", "*") and not is_ui_path(path):
            out.append((route.method, path))
    return sorted(set(out))


ROUTES = _routes()


def _concrete(path: str, value: str = "x") -> str:
    return re.sub(r"\{[^}]+\}", value, path)


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=lambda v: str(v))
async def test_auth_matrix(api: Api, service: Service, method: str, path: str) -> None:
    url = _concrete(path)
    browser_path = path.startswith(("/api/frontend", "/ofrep/"))
    if browser_path and method == "OPTIONS":
        pass  # CORS preflights carry no credentials: the else branch below
    elif path.startswith("/api/frontend"):
        # Issue #17: the Frontend API takes frontend tokens only, as Unleash does.
        service.tokens.create_token(
            "web", "frontend", projects=("default",), environment="development", secret=FRONTEND
        )
        right, wrong = FRONTEND, CLIENT
    elif path.startswith("/ofrep/"):
        right, wrong = CLIENT, ADMIN  # issue #17: client or frontend tokens
    if browser_path and method != "OPTIONS":
        pass
    elif path.startswith("/api/admin/user/tokens"):
        # A person's own tokens: an admin API token is nobody (403); one of theirs is right.
        right, wrong = personal_token(service), CLIENT
    elif path.startswith(("/api/admin", "/api/projects")):
        right, wrong = ADMIN, CLIENT
    elif path.startswith("/api/client"):
        right, wrong = CLIENT, ADMIN
    elif path.startswith("/api/signal-endpoint/"):
        # Signal endpoints check their own tokens first, whether the endpoint exists or not
        # (issue #12); with a valid one, test_signals and test_signal_intake take over.
        for token in (None, "garbage", ADMIN, CLIENT):
            response = await api.request(method, url, token=token, json={})
            assert response.status == 401, (token, await response.text())
            assert set(await response.json()) == {"name", "message", "details"}
        return
    else:
        response = await api.request(method, url, token=None)
        assert response.status not in (401, 403)
        return
    for token, expected in ((None, 401), ("garbage", 401), (f"Bearer {right}x", 401), (wrong, 403)):
        response = await api.request(method, url, token=token)
        assert response.status == expected, (token, await response.text())
        body = await response.json()
        assert set(body) == {"name", "message", "details"}
        assert right not in await response.text()
    for presented in (right, f"Bearer {right}", f"bearer {right}"):
        response = await api.request(method, url, token=presented, json={})
        assert response.status not in (401, 403), await response.text()


@pytest.fixture
async def open_api(service: Service) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(auth=AuthMode.NONE))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


async def test_auth_none_lets_everything_through(open_api: Api) -> None:
    await open_api.json(
        "POST", "/api/admin/projects/default/features", 201, token=None, json={"name": "f"}
    )
    payload = await open_api.json("GET", "/api/client/features", token=None)
    assert [f["name"] for f in payload["features"]] == ["f"]
    # No token, so nothing public to hide: OFREP's bulk answer lists the off flag too.
    bulk = await open_api.json("POST", "/ofrep/v1/evaluate/flags", token=None, json={})
    assert [(item["key"], item["reason"]) for item in bulk["flags"]] == [("f", "DISABLED")]


_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("malformed json", {"data": b'{"name": ', "headers": {"Content-Type": "application/json"}}),
    ("not utf-8", {"data": b"\xff\xfe{}", "headers": {"Content-Type": "application/json"}}),
    ("wrong content type", {"data": b"name=x", "headers": {"Content-Type": "text/plain"}}),
    ("json array", {"json": [1, 2, 3]}),
    ("json scalar", {"json": "hello"}),
    (
        "wrong types",
        {
            "json": {
                "name": 5,
                "constraints": "no",
                "tokenName": [],
                "segmentIds": {"a": 1},
                "parameters": [],
                "appName": 7,
                "bucket": [],
                "id": None,
                "type": 3,
            }
        },
    ),
    ("unknown fields", {"json": {"name": "ok-name", "surprise": {"deep": [1]}, "constraints": []}}),
    ("deep nesting", {"json": {"name": "n", "constraints": [[[[[[[[[[]]]]]]]]]]}}),
    (
        "thousands of levels",
        {"data": b"[" * 20_000 + b"]" * 20_000, "headers": {"Content-Type": "application/json"}},
    ),
    (
        "lone surrogate and huge integer",
        {
            "data": b'{"name": "\\udc00", "id": 99999999999999999999999, "x": NaN}',
            "headers": {"Content-Type": "application/json"},
        },
    ),
    (
        "huge body",
        {
            "data": b'{"name": "' + b"a" * 2_000_000 + b'"}',
            "headers": {"Content-Type": "application/json"},
        },
    ),
]
_HUGE = b'{"name": "' + b"a" * 2_000_000 + b'"}'
_ODD_PARAMS = ["x", "%20", "..", "-1", "99999999999999999999999", "ünïcödé", "a%2Fb", "' OR 1=1 --"]


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=lambda v: str(v))
async def test_malformed_input_never_makes_a_500(
    api: Api, service: Service, method: str, path: str
) -> None:
    token = CLIENT if path.startswith(("/api/client", "/ofrep/")) else ADMIN
    if path.startswith("/api/frontend"):  # issue #17: frontend tokens only
        service.tokens.create_token(
            "web", "frontend", projects=("default",), environment="development", secret=FRONTEND
        )
        token = FRONTEND
    if path.startswith("/api/admin/user/tokens"):
        token = personal_token(service)
    for param in _ODD_PARAMS:
        response = await api.request(method, _concrete(path, param), token=token)
        assert response.status < 500, (param, await response.text())
    for label, body in _BODIES:
        if label == "huge body":
            body = {**body, "data": io.BytesIO(_HUGE)}
        response = await api.request(method, _concrete(path), token=token, **body)
        text = await response.text()
        assert response.status < 500, (label, text)
        if response.status >= 400 and path.startswith("/ofrep/"):
            # OFREP's errors add its own fields (key, errorCode, errorDetails): issue #17.
            assert set(await response.json()) >= {"name", "message", "details"}, (label, text)
        elif response.status >= 400:
            assert set(await response.json()) == {"name", "message", "details"}, (label, text)
        if path.startswith("/api/signal-endpoint/"):
            # An admin token is no signal token: refused before the body is read (issue #12).
            assert response.status == 401, (label, text)
            continue
        if label == "huge body" and method in ("POST", "PUT", "PATCH"):
            # 413 where the body is read; routes that need no body refuse "x" first.
            assert response.status in (400, 404, 413), text
        if (
            label == "wrong content type"
            and method in ("POST", "PUT", "PATCH")
            and response.status >= 400
        ):
            assert response.status in (400, 404, 415), text


async def test_unknown_paths_and_methods_answer_json(api: Api) -> None:
    missing = await api.json("GET", "/api/admin/nope", 404)
    assert missing["name"] == "NotFoundError"
    assert (await api.json("GET", "/nope/deeper", 404))["name"] == "NotFoundError"
    # A decoded newline (%0a) in an unknown path is still answered in JSON.
    assert (await api.json("GET", "/x%0a", 404))["name"] == "NotFoundError"
    wrong_method = await api.request("PATCH", "/api/client/features", token=CLIENT)
    assert wrong_method.status == 405
    assert (await wrong_method.json())["name"] == "MethodNotAllowed"
    assert set(wrong_method.headers["Allow"].split(",")) == {"GET", "HEAD"}
    on_a_variable_path = await api.request("PUT", "/api/admin/archive/some-flag")
    assert on_a_variable_path.status == 405
    assert "DELETE" in on_a_variable_path.headers["Allow"]
    # Unknown paths under the admin API still need a token: nothing is revealed without one.
    assert (await api.request("GET", "/api/admin/nope", token=None)).status == 401


def test_every_route_is_in_the_openapi_document() -> None:
    from flagcore_http.openapi import document

    paths = document(create_app(Service.__new__(Service), ServerConfig()))["paths"]
    assert {path for _method, path in ROUTES} <= set(paths)


async def test_a_body_over_the_limit_is_413_and_nothing_is_stored(
    api: Api, service: Service
) -> None:
    response = await api.request(
        "POST",
        "/api/admin/projects/default/features",
        data=io.BytesIO(_HUGE),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 413
    assert (await response.json())["name"] == "ContentTooLarge"
    assert service.flags.list_flags() == []
