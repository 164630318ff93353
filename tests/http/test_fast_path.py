"""The SDK poll's fast path (`flagcore_http.routes.client.with_fast_path`): a repeated poll is
answered from what the full path answered, and never lets through what it would refuse."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
from prometheus_client.parser import text_string_to_metric_families

from flagcore.entities import TokenType
from flagcore.service import Service
from flagcore_http.keys import CACHE
from tests.http.conftest import ADMIN, CLIENT, Api

FEATURES = "/api/client/features"
FLAGS = "/api/admin/projects/default/features"
NEW_SPEC = {"Unleash-Client-Spec": "5.1.9"}


async def _poll(api: Api, token: str | None = CLIENT, **headers: str) -> Any:
    response = await api.request("GET", FEATURES, token=token, headers=headers)
    return (
        response.status,
        response.headers,
        await response.json() if response.status != 304 else None,
    )


async def test_a_token_deleted_after_its_polls_were_cached_is_refused_at_once(
    api: Api, service: Service
) -> None:
    secret = "default:development.soon-deleted-0123456789abcdef"
    service.tokens.create_token(
        "doomed", TokenType.CLIENT, projects=["default"], environment="development", secret=secret
    )
    for _ in range(3):
        assert (await _poll(api, secret))[0] == 200
    await api.json("DELETE", f"/api/admin/api-tokens/{secret}")
    status, _, body = await _poll(api, secret)
    assert status == 401
    assert body["name"] == "AuthenticationRequired"


async def test_tokens_of_other_kinds_stay_refused_whatever_was_cached(api: Api) -> None:
    assert (await _poll(api))[0] == 200
    assert (await _poll(api))[0] == 200  # now answered by the fast path
    status, _, body = await _poll(api, ADMIN)
    assert status == 403
    assert body["name"] == "ForbiddenError"
    assert (await _poll(api, None))[0] == 401
    assert (await _poll(api, CLIENT + "x"))[0] == 401


async def test_each_spec_version_and_query_keeps_its_own_answer(api: Api) -> None:
    segment = await api.json(
        "POST",
        "/api/admin/segments",
        201,
        json={
            "name": "s",
            "constraints": [{"contextName": "a", "operator": "IN", "values": ["1"]}],
        },
    )
    await api.json("POST", FLAGS, 201, json={"name": "seg-flag"})
    await api.json(
        "POST",
        f"{FLAGS}/seg-flag/environments/development/strategies",
        200,
        json={"name": "default", "segments": [segment["id"]]},
    )
    await api.json("POST", FLAGS, 201, json={"name": "other"})
    await api.json(
        "POST", "/api/admin/features/seg-flag/tags", 201, json={"type": "simple", "value": "tt"}
    )
    for _ in range(2):  # the second round is answered by the fast path
        _, old_headers, old = await _poll(api)
        _, new_headers, new = await _poll(api, **NEW_SPEC)
        assert (old["version"], new["version"]) == (1, 2)
        assert "segments" not in old
        old_flag = next(f for f in old["features"] if f["name"] == "seg-flag")
        assert old_flag["strategies"][0]["constraints"]  # the segment, inlined
        assert (old_flag["strategy"], old_flag["parameters"]) == ("default", {})
        assert new["segments"][0]["id"] == segment["id"]
        assert all("strategy" not in flag for flag in new["features"])
        assert old_headers["ETag"] != new_headers["ETag"]
        # One form's ETag is no 304 for the other.
        assert (await _poll(api, **{"If-None-Match": new_headers["ETag"]}))[0] == 200
        crossed = {"If-None-Match": old_headers["ETag"], **NEW_SPEC}
        assert (await _poll(api, **crossed))[0] == 200
        assert (await _poll(api, **{"If-None-Match": old_headers["ETag"]}))[0] == 304
        for query in ("?namePrefix=seg", "?tag=simple:tt", "?project=default&namePrefix=seg"):
            for spec, version in (({}, 1), (NEW_SPEC, 2)):
                filtered = await api.json("GET", FEATURES + query, token=CLIENT, headers=spec)
                assert filtered["version"] == version
                assert [f["name"] for f in filtered["features"]] == ["seg-flag"]
                assert ("strategy" in filtered["features"][0]) is (version == 1)
        prefix = await api.request(
            "GET", FEATURES + "?namePrefix=nothing-matches", token=CLIENT, headers=NEW_SPEC
        )
        assert (await prefix.json())["features"] == []


async def test_a_write_shows_on_the_next_poll_and_its_etag_answers_304(api: Api) -> None:
    _, headers, _ = await _poll(api, **NEW_SPEC)
    assert (await _poll(api, **NEW_SPEC, **{"If-None-Match": headers["ETag"]}))[0] == 304
    await api.json("POST", FLAGS, 201, json={"name": "fresh"})
    status, new_headers, body = await _poll(api, **NEW_SPEC, **{"If-None-Match": headers["ETag"]})
    assert status == 200
    assert [flag["name"] for flag in body["features"]] == ["fresh"]
    assert new_headers["ETag"] != headers["ETag"]
    gzipped = await api.request(
        "GET", FEATURES, token=CLIENT, headers={**NEW_SPEC, "Accept-Encoding": "gzip"}
    )
    assert gzipped.headers["Content-Encoding"] == "gzip"
    assert [flag["name"] for flag in (await gzipped.json())["features"]] == ["fresh"]


async def test_sdk_instances_are_still_tracked_on_the_fast_path(api: Api, service: Service) -> None:
    identity = {"UNLEASH-APPNAME": "checkout", "UNLEASH-INSTANCEID": "pod-1", **NEW_SPEC}
    await _poll(api, **identity)
    cache = api.client.server.app[CACHE]
    cache.take_pending_instances()  # as if the upkeep wrote the first poll's instance
    cache.seen_instances.clear()
    await _poll(api, **identity)  # answered by the fast path
    [instance] = cache.take_pending_instances()
    assert (instance.app_name, instance.instance_id) == ("checkout", "pod-1")
    assert instance.environment == "development"


async def test_cached_answers_are_bounded_whatever_queries_a_valid_token_sends(
    api: Api,
) -> None:
    cache = api.client.server.app[CACHE]
    bound = 16
    cache.sizes = attrs.evolve(cache.sizes, fast_answers=bound)  # the default is 4,096
    polls = [
        api.request("GET", f"{FEATURES}?namePrefix=junk-{n}", token=CLIENT)
        for n in range(bound + 50)
    ]
    for response in await asyncio.gather(*polls):
        assert response.status == 200
    assert len(cache.answers) <= bound
    long_query = "?namePrefix=" + "x" * 2000
    assert (await api.request("GET", FEATURES + long_query, token=CLIENT)).status == 200
    assert all(len(key[2]) < 2000 for key in cache.answers)  # served, never kept


async def test_the_payloads_answers_hold_stay_within_the_payload_budget(api: Api) -> None:
    for n in range(10):
        await api.json("POST", FLAGS, 201, json={"name": f"budget-{n}", "description": "x" * 500})
    cache = api.client.server.app[CACHE]
    first = await api.request("GET", f"{FEATURES}?namePrefix=budget-0", token=CLIENT)
    one_payload = len(await first.read()) * 5 // 4  # as RenderedPayload.size counts it
    budget = 3 * one_payload + 10
    cache.sizes = attrs.evolve(cache.sizes, payload_bytes=budget)
    for _ in range(2):
        for n in range(10):  # ten distinct payloads, each kept by an answer
            response = await api.request("GET", f"{FEATURES}?namePrefix=budget-{n}", token=CLIENT)
            body = await response.json()
            assert [flag["name"] for flag in body["features"]] == [f"budget-{n}"]
            assert 0 < cache.answer_bytes <= budget
    assert len(cache.answers) <= 3


async def test_fast_path_answers_carry_a_request_id_and_are_counted(api: Api) -> None:
    """Polls the fast path answers are observed as the full path's are: an id on the answer
    (the caller's, when it sent a safe one) and a count under the route template."""
    first_status, first_headers, _ = await _poll(api)
    assert first_status == 200
    etag = first_headers["ETag"]
    ids = []
    for index in range(3):  # answered by the fast path after the first
        status, headers, _ = await _poll(
            api, **{"If-None-Match": etag, "X-Request-Id": f"r-{index}"}
        )
        assert status == 304
        ids.append(headers["X-Request-Id"])
    assert ids == ["r-0", "r-1", "r-2"]
    _, generated, _ = await _poll(api, **{"If-None-Match": etag})
    assert generated["X-Request-Id"] not in ("", "r-2")
    scrape = await (await api.request("GET", "/internal-backstage/prometheus", token=None)).text()
    counted = [
        line
        for line in scrape.splitlines()
        if line.startswith("flagcore_http_requests_total{")
        and 'route="/api/client/features"' in line
        and 'status="304"' in line
    ]
    assert len(counted) == 1, counted
    assert counted[0].endswith(" 4.0"), counted


async def _renders(api: Api) -> float:
    """Payloads rendered so far, as an operator's Prometheus reads it."""
    response = await api.request("GET", "/internal-backstage/prometheus", token=None)
    families = text_string_to_metric_families(await response.text())
    return next(
        sample.value
        for family in families
        for sample in family.samples
        if sample.name == "flagcore_client_features_render_seconds_count"
    )


async def test_an_answer_larger_than_the_payload_budget_is_rendered_once_per_change(
    api: Api,
) -> None:
    """Format 1 inlines a segment into every strategy using it: a large segment on many
    strategies makes an answer larger than the whole budget. It is kept (apart, one at a
    time) rather than rendered again on every poll."""
    cache = api.client.server.app[CACHE]
    cache.sizes = attrs.evolve(cache.sizes, payload_bytes=60_000)  # taken at the next change
    values = [f"user-{n:05d}-of-the-beta" for n in range(250)]  # ~6 kB a constraint
    constraints = [
        {"contextName": context, "operator": "IN", "values": values}
        for context in ("userId", "sessionId")
    ]
    segment = await api.json(
        "POST", "/api/admin/segments", 201, json={"name": "beta", "constraints": constraints}
    )
    for n in range(10):
        await api.json("POST", FLAGS, 201, json={"name": f"big-{n}"})
        await api.json(
            "POST",
            f"{FLAGS}/big-{n}/environments/development/strategies",
            200,
            json={"name": "default", "segments": [segment["id"]]},
        )
    first_status, first_headers, first = await _poll(api)
    assert first_status == 200
    assert first["version"] == 1
    assert len(first["features"]) == 10
    budget = cache.payloads.budget
    assert budget == 60_000
    assert cache.payloads.oversized_bytes > budget  # larger than the budget, yet kept
    rendered = await _renders(api)
    for _ in range(5):
        status, headers, body = await _poll(api)
        assert (status, headers["ETag"], body) == (200, first_headers["ETag"], first)
        not_modified = await _poll(api, **{"If-None-Match": first_headers["ETag"]})
        assert not_modified[0] == 304
        gzipped = await api.request(
            "GET", FEATURES, token=CLIENT, headers={"Accept-Encoding": "gzip"}
        )
        assert await gzipped.json() == first
    assert await _renders(api) == rendered  # no poll rendered it again
    # The format 2 answer fits the budget and is kept as before, beside it.
    assert (await _poll(api, **NEW_SPEC))[2]["segments"][0]["id"] == segment["id"]
    assert cache.payloads.bytes <= budget
    assert (await _poll(api))[1]["ETag"] == first_headers["ETag"]
    assert await _renders(api) == rendered + 1  # the format 2 answer, once
    # A change is rendered once more, and the new answer kept the same way.
    await api.json("POST", FLAGS, 201, json={"name": "fresh"})
    changed = await _poll(api)
    assert [f["name"] for f in changed[2]["features"]][-1] == "fresh"
    assert (await _poll(api))[2] == changed[2]
    assert await _renders(api) == rendered + 2
