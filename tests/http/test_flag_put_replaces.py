"""``PUT`` of a flag replaces its settings, as Unleash 8.2's does (issue 23 §5): a field
the body leaves out returns to its default, an empty description is stored as null, and
SDKs then see the same ``description`` and ``stale``. ``PATCH`` changes only what it names.
"""

from __future__ import annotations

from typing import Any

from tests.http.conftest import CLIENT, Api

FLAG = "/api/admin/projects/default/features/f"


async def _flag_with_everything_set(api: Api) -> None:
    body = {"name": "f", "type": "kill-switch", "description": "why", "impressionData": True}
    await api.json("POST", "/api/admin/projects/default/features", 201, json=body)
    await api.json("POST", f"{FLAG}/stale/on")
    flag = await api.json("GET", FLAG)
    assert (flag["stale"], flag["description"], flag["type"]) == (True, "why", "kill-switch")


async def _sdk_view(api: Api) -> dict[str, Any]:
    payload = await api.json("GET", "/api/client/features", token=CLIENT)
    (flag,) = [f for f in payload["features"] if f["name"] == "f"]
    return flag  # type: ignore[no-any-return]


async def test_put_without_a_field_returns_it_to_its_default(api: Api) -> None:
    await _flag_with_everything_set(api)
    answer = await api.json("PUT", FLAG, json={})
    flag = await api.json("GET", FLAG)
    for seen in (answer, flag):
        assert seen["stale"] is False
        assert seen["description"] is None
        assert seen["type"] == "release"
        assert seen["impressionData"] is False
    sdk = await _sdk_view(api)
    assert sdk["stale"] is False
    assert sdk["description"] is None
    assert sdk["impressionData"] is False


async def test_put_with_an_empty_description_stores_null(api: Api) -> None:
    await _flag_with_everything_set(api)
    answer = await api.json("PUT", FLAG, json={"description": "", "stale": True})
    assert answer["description"] is None
    assert answer["stale"] is True
    assert (await _sdk_view(api))["description"] is None


async def test_put_keeps_what_the_body_gives(api: Api) -> None:
    await _flag_with_everything_set(api)
    body = {"description": "new", "type": "experiment", "impressionData": True, "stale": True}
    answer = await api.json("PUT", FLAG, json=body)
    assert {k: answer[k] for k in body} == body


async def test_put_with_archived_true_is_refused_and_changes_nothing(api: Api) -> None:
    await _flag_with_everything_set(api)
    refused = await api.json("PUT", FLAG, 400, json={"archived": True})
    assert [d["path"] for d in refused["details"]] == ["$.archived"]
    flag = await api.json("GET", FLAG)
    assert (flag["stale"], flag["description"], flag["archived"]) == (True, "why", False)


async def test_patch_changes_only_the_fields_it_names(api: Api) -> None:
    await _flag_with_everything_set(api)
    patch = [{"op": "replace", "path": "/description", "value": ""}]
    answer = await api.json("PATCH", FLAG, json=patch)
    assert answer["description"] is None
    assert (answer["stale"], answer["type"], answer["impressionData"]) == (
        True,
        "kill-switch",
        True,
    )


async def test_reviving_a_live_flag_is_a_409(api: Api) -> None:
    """Unleash answers 200 and changes nothing; flagcore says why (see
    docs/migrating-from-unleash.md)."""
    await _flag_with_everything_set(api)
    refused = await api.json("POST", "/api/admin/archive/revive/f", 409)
    assert "not archived" in refused["message"]
