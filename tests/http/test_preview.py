"""The preview over a real server and SQLite file (issue 30): contexts sampled from the
Frontend API and OFREP, uploaded samples, and the preview API's counts, which are the
engine's own answers on the stored sample."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from aiohttp.test_utils import TestClient, TestServer

from flagcore import Engine
from flagcore.model import Strategy
from flagcore.preview import with_flag
from flagcore.service import RetentionSettings, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.context_sampling import flush_context_samples
from tests.http.conftest import Api

FRONTEND = "default:development.frontend-secret-for-tests"
FLAG = "/api/admin/projects/default/features/checkout"
PREVIEW = FLAG + "/environments/development/preview"
UPLOAD = "/api/admin/environments/development/context-sample"
NDJSON = {"Content-Type": "application/x-ndjson"}


def _rollout(percent: str) -> dict[str, Any]:
    return {
        "name": "flexibleRollout",
        "parameters": {"rollout": percent, "stickiness": "userId", "groupId": "checkout"},
    }


@pytest.fixture
def checkout(service: Service) -> Service:
    service.tokens.create_token(
        "web", "frontend", projects=["default"], environment="development", secret=FRONTEND
    )
    service.flags.create_flag("default", "checkout")
    rollout = _rollout("10")
    service.strategies.add_strategy(
        "default", "checkout", "development", Strategy(rollout["name"], rollout["parameters"])
    )
    service.environments.set_environment_enabled("default", "checkout", "development", True)
    return service


async def _server(service: Service, **settings: Any) -> AsyncIterator[Api]:
    app = create_app(service, ServerConfig(**settings))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


@pytest.fixture
async def quiet(service: Service) -> AsyncIterator[Api]:
    """A server that samples nothing."""
    async for api in _server(service, preview_sampling=False):
        yield api


async def _browse(api: Api, users: range) -> None:
    for i in users:
        if i % 2:
            await api.json(
                "GET", f"/api/frontend?userId=u{i}&email=u{i}@example.io", token=FRONTEND
            )
        else:
            body = {"context": {"targetingKey": f"u{i}", "plan": "pro"}}
            await api.json("POST", "/ofrep/v1/evaluate/flags", json=body, token=FRONTEND)


def _stored(service: Service) -> list[dict[str, Any]]:
    return [json.loads(row.context) for row in service.previews.sampled_contexts("development")]


def _expected(
    service: Service, contexts: list[dict[str, Any]], percent: str
) -> Counter[tuple[bool, bool]]:
    """Off/on of each context before and after, evaluated directly with the engine."""
    snapshot = service.client.client_features("development")
    old_flag = next(f for f in snapshot.features if f.name == "checkout")
    rollout = _rollout(percent)
    changed = attrs.evolve(old_flag, strategies=(Strategy(rollout["name"], rollout["parameters"]),))
    before, after = Engine(snapshot), Engine(with_flag(snapshot, changed))
    return Counter(
        (before.is_enabled("checkout", c), after.is_enabled("checkout", c)) for c in contexts
    )


async def test_frontend_and_ofrep_contexts_are_sampled_and_previewed_with_the_engine(
    api: Api, checkout: Service
) -> None:
    await _browse(api, range(400))
    answer = await api.json("POST", PREVIEW, json={"strategies": [_rollout("50")]})

    stored = _stored(checkout)
    assert len(stored) == answer["contexts"] == answer["fromTraffic"] == 400
    assert answer["uploaded"] == 0
    ways = _expected(checkout, stored, "50")
    assert answer["offToOn"]["count"] == ways[(False, True)] > 100
    assert answer["onToOff"]["count"] == ways[(True, False)] == 0
    assert answer["stayedOn"] == ways[(True, True)]
    assert answer["stayedOff"] == ways[(False, False)]
    assert answer["rolloutOnly"] is True
    assert (
        answer["rolloutChanges"][0]["statement"] == "+40% of users by userId: 10% → 50%, turned on"
    )
    for example in answer["offToOn"]["examples"]:
        assert example["userId"].startswith("u")


async def test_a_preview_saves_nothing(api: Api, checkout: Service) -> None:
    before = await api.json("GET", FLAG + "/environments/development/strategies")
    revision = checkout.storage.revision()
    await api.json("POST", PREVIEW, json={"enabled": False, "strategies": [_rollout("90")]})
    assert await api.json("GET", FLAG + "/environments/development/strategies") == before
    assert checkout.storage.revision() == revision


async def test_deny_listed_fields_are_never_stored(api: Api, checkout: Service) -> None:
    await api.json(
        "GET",
        "/api/frontend?userId=ada&email=ada@example.io&properties[email]=x&plan=pro",
        token=FRONTEND,
    )
    await flush_context_samples(api.client.server.app)
    rows = checkout.previews.sampled_contexts("development")
    assert len(rows) == 1
    assert "email" not in rows[0].context
    assert "example.io" not in rows[0].context
    assert "remoteAddress" not in rows[0].context  # the caller's address, filled in by us
    assert json.loads(rows[0].context) == {
        "environment": "development",
        "properties": {"plan": "pro"},
        "userId": "ada",
    }


async def test_a_deny_list_setting_names_the_fields_kept_out(checkout: Service) -> None:
    async for api in _server(checkout, preview_denied_fields=("plan",)):
        await api.json("GET", "/api/frontend?userId=ada&plan=pro", token=FRONTEND)
        await flush_context_samples(api.client.server.app)
    [row] = checkout.previews.sampled_contexts("development")
    assert "plan" not in json.loads(row.context).get("properties", {})
    assert json.loads(row.context)["remoteAddress"] == "127.0.0.1"


async def test_with_collection_off_nothing_is_sampled(quiet: Api, checkout: Service) -> None:
    await _browse(quiet, range(20))
    answer = await quiet.json("POST", PREVIEW, json={"enabled": False})
    assert answer["contexts"] == 0
    assert checkout.previews.sampled_contexts("development") == ()


async def test_an_uploaded_sample_replaces_the_last_upload_and_is_previewed(
    quiet: Api, checkout: Service
) -> None:
    lines = [json.dumps({"userId": f"u{i}", "properties": {"email": "a@b.c"}}) for i in range(50)]
    stored = await quiet.json("POST", UPLOAD, data="\n".join(lines) + "\n", headers=NDJSON)
    assert stored == {"environment": "development", "stored": 50, "droppedFields": ["email"]}
    again = "\n".join(json.dumps({"userId": f"v{i}"}) for i in range(30))
    stored = await quiet.json("POST", UPLOAD, data=again, headers=NDJSON)
    assert stored == {"environment": "development", "stored": 30, "droppedFields": []}

    contexts = _stored(checkout)
    assert [c["userId"] for c in contexts] == [f"v{i}" for i in range(30)]
    answer = await quiet.json("POST", PREVIEW, json={"enabled": False})
    ways = Counter(
        Engine(checkout.client.client_features("development")).is_enabled("checkout", c)
        for c in contexts
    )
    assert (answer["contexts"], answer["fromTraffic"], answer["uploaded"]) == (30, 0, 30)
    assert answer["onToOff"]["count"] == ways[True]
    assert answer["offToOn"]["count"] == 0


@pytest.mark.parametrize(
    ("body", "path", "words"),
    [
        ('{"userId": "a"}\n{"userId": }\n', "$[1]", "line 2"),
        ('{"userId": "a"}\n{"userId": "b"}\n{"userId": 7}', "$[2].userId", "line 3"),
        ('{"email2": "x"}', "$[0]", "line 1"),
        ('["not", "an", "object"]', "$[0]", "line 1"),
        ('{"properties": {"plan": 1}}', "$[0].properties.plan", "line 1"),
    ],
)
async def test_a_bad_line_is_refused_naming_its_index_and_nothing_is_stored(
    api: Api, checkout: Service, body: str, path: str, words: str
) -> None:
    error = await api.json("POST", UPLOAD, status=400, data=body, headers=NDJSON)
    assert error["details"][0]["path"] == path
    assert error["details"][0]["message"].startswith(words)
    assert checkout.previews.sampled_contexts("development") == ()


async def test_an_upload_past_the_sample_size_or_of_another_type_is_refused(
    checkout: Service,
) -> None:
    async for api in _server(checkout, preview_sample_size=3):
        lines = "\n".join('{"userId": "a"}' for _ in range(4))
        error = await api.json("POST", UPLOAD, status=400, data=lines, headers=NDJSON)
        assert error["details"][0]["path"] == "$[3]"
        error = await api.json(
            "POST", UPLOAD, status=415, data=lines, headers={"Content-Type": "text/csv"}
        )
        await api.json("POST", UPLOAD, status=400, data="\n \n", headers=NDJSON)
        await api.json(
            "POST",
            "/api/admin/environments/nowhere/context-sample",
            status=404,
            data='{"userId": "a"}',
            headers=NDJSON,
        )
        await api.json("POST", UPLOAD, status=401, token=None, data=lines, headers=NDJSON)
    assert checkout.previews.sampled_contexts("development") == ()


async def test_a_bad_proposal_is_refused_with_the_path_of_its_problem(
    api: Api, checkout: Service
) -> None:
    error = await api.json(
        "POST", PREVIEW, status=400, json={"strategies": [_rollout("10"), {"name": "nope"}]}
    )
    assert error["details"][0]["path"].startswith("$.strategies[1]")
    error = await api.json("POST", PREVIEW, status=400, json={"enabled": "yes"})
    assert error["details"][0]["path"] == "$.enabled"
    error = await api.json("POST", PREVIEW, status=400, json={})
    assert error["details"][0]["path"] == "$"
    await api.json(
        "POST",
        "/api/admin/projects/default/features/missing/environments/development/preview",
        status=404,
        json={"enabled": True},
    )


async def test_variants_proposed_show_how_assignments_move(quiet: Api, checkout: Service) -> None:
    lines = "\n".join(json.dumps({"userId": f"u{i}"}) for i in range(300))
    await quiet.json("POST", UPLOAD, data=lines, headers=NDJSON)
    await quiet.json(
        "PUT",
        FLAG + "/environments/development/variants",
        json=[{"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default"}],
    )
    proposed = [
        {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "default"},
        {"name": "green", "weight": 500, "weightType": "variable", "stickiness": "default"},
    ]
    answer = await quiet.json("POST", PREVIEW, json={"variants": proposed})
    moves = {(m["from"], m["to"]): m["count"] for m in answer["variantMoves"]}
    assert set(moves) == {("blue", "green")}
    assert 0 < moves[("blue", "green")] < answer["stayedOn"]


async def test_retention_deletes_old_traffic_samples_and_keeps_uploads(
    api: Api, checkout: Service
) -> None:
    await _browse(api, range(5))
    await flush_context_samples(api.client.server.app)
    await api.json("POST", UPLOAD, data='{"userId": "kept"}', headers=NDJSON)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=8)
    report = checkout.retention.prune(RetentionSettings(), now=later)
    assert report.context_samples == 5
    assert [row.source for row in checkout.previews.sampled_contexts("development")] == ["upload"]
