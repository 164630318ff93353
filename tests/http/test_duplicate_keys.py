"""A JSON body with a key twice in one object is refused, whichever parser path reads it
(issue 24 #5: ``"type":"client","type":"admin"`` created an admin token)."""

from __future__ import annotations

from flagcore.service import Service
from tests.http.conftest import Api


async def test_a_token_body_with_type_twice_is_a_400_and_creates_nothing(
    api: Api, service: Service
) -> None:
    before = {token.name for token in service.tokens.list_tokens()}
    raw = b'{"tokenName": "sneaky", "type": "client", "environment": "development",'
    raw += b' "type": "admin"}'
    response = await api.request(
        "POST",
        "/api/admin/api-tokens",
        data=raw,
        headers={"Content-Type": "application/json"},
    )
    refused = await response.json()
    assert response.status == 400, refused
    assert [d["path"] for d in refused["details"]] == ["$.type"]
    assert 'the key "type" twice' in refused["message"]
    assert {token.name for token in service.tokens.list_tokens()} == before


async def test_a_flag_body_with_a_key_twice_inside_a_strategy_is_refused(api: Api) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    raw = b'{"name": "flexibleRollout", "parameters": {"rollout": "10", "rollout": "100"}}'
    path = "/api/admin/projects/default/features/f/environments/development/strategies"
    response = await api.request(
        "POST", path, data=raw, headers={"Content-Type": "application/json"}
    )
    refused = await response.json()
    assert response.status == 400, refused
    assert [d["path"] for d in refused["details"]] == ["$.parameters.rollout"]
    assert await api.json("GET", path) == []
