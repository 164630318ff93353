"""SDK usage posts (metrics and registrations, client and frontend) have a smaller body
limit than other routes (``FLAGCORE_SDK_USAGE_MAX_BODY_BYTES``, issue 24): past it a 413
in the JSON error shape, refused from ``Content-Length`` before the body is read, or as
soon as a chunked body passes it; nothing of the post is kept."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from tests.http.conftest import CLIENT, Api, bucket_time

FRONTEND = "default:development.usage-body-size-frontend"
LIMIT = 4096


@pytest.fixture
async def small(service: Service) -> AsyncIterator[Api]:
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    service.flags.create_flag("default", "live")
    app = create_app(service, ServerConfig(sdk_usage_max_body_bytes=LIMIT))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


def _metrics(app: str, flags: int) -> dict[str, Any]:
    toggles = {"live": {"yes": 1, "no": 0}} | {
        f"padding-{n:05d}": {"yes": 1, "no": 1} for n in range(flags)
    }
    return {
        "appName": app,
        "instanceId": "i-1",
        "bucket": {"start": bucket_time(), "toggles": toggles},
    }


def _registration(app: str, strategies: int) -> dict[str, Any]:
    return {
        "appName": app,
        "instanceId": "i-1",
        "strategies": [f"strategy-{n:05d}" for n in range(strategies)],
        "started": bucket_time(),
        "interval": 15000,
    }


ROUTES = [
    ("/api/client/metrics", CLIENT, _metrics, 202),
    ("/api/frontend/client/metrics", FRONTEND, _metrics, 200),
    ("/api/client/register", CLIENT, _registration, 202),
    ("/api/frontend/client/register", FRONTEND, _registration, 200),
]


def _stored(service: Service) -> tuple[set[str], int]:
    apps = {instance.app_name for instance in service.instances.client_instances()}
    return apps, sum(row.yes for row in service.metrics.flag_metrics("live"))


@pytest.mark.parametrize(("path", "token", "body", "accepted"), ROUTES)
async def test_a_usage_post_past_the_limit_is_refused_before_it_is_read_and_nothing_kept(
    service: Service, small: Api, path: str, token: str, body: Any, accepted: int
) -> None:
    data = json.dumps(body("too-big", 400)).encode()
    assert len(data) > LIMIT
    response = await small.request(
        "POST", path, token=token, data=data, headers={"Content-Type": "application/json"}
    )
    error = await response.json()
    assert response.status == 413
    assert error["name"] == "ContentTooLarge"
    assert error["details"] == [
        {"message": f"at most {LIMIT} (sdk_usage_max_body_bytes)", "path": "$"}
    ]
    # The same post within the limit is taken.
    await small.json("POST", path, accepted, token=token, json=body("fits", 3))
    await small.usage_written()
    apps, _ = _stored(service)
    assert "too-big" not in apps
    assert "fits" in apps


@pytest.mark.parametrize(("path", "token", "body", "accepted"), ROUTES)
async def test_a_chunked_usage_post_is_refused_once_it_passes_the_limit(
    service: Service, small: Api, path: str, token: str, body: Any, accepted: int
) -> None:
    data = json.dumps(body("chunked", 400)).encode()

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: sent in chunks
        for start in range(0, len(data), 1000):
            yield data[start : start + 1000]

    response = await small.request(
        "POST", path, token=token, data=chunks(), headers={"Content-Type": "application/json"}
    )
    error = await response.json()
    assert response.status == 413, error
    assert error["details"][0]["path"] == "$"
    await small.usage_written()
    assert "chunked" not in _stored(service)[0]


async def test_the_limit_is_the_servers_default_when_not_set(service: Service, api: Api) -> None:
    """256 kB by default: a report of 3,000 flags (about 110 kB) is taken, one of 9,000
    made-up names (about 330 kB, a probe of issue 24) is not."""
    assert ServerConfig().sdk_usage_max_body_bytes == 262_144
    await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=_metrics("ok", 3000))
    error = await api.json(
        "POST", "/api/client/metrics", 413, token=CLIENT, json=_metrics("big", 9000)
    )
    assert error["name"] == "ContentTooLarge"
    await api.usage_written()
    assert _stored(service)[0] == {"ok"}
