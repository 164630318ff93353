"""``/health`` is liveness only; ``/ready`` answers 503 once the store cannot be read."""

from __future__ import annotations

from flagcore.service import Service
from tests.http.conftest import Api


async def test_ready_fails_when_the_store_cannot_read_while_health_stays_good(
    api: Api, service: Service
) -> None:
    assert await api.json("GET", "/ready", token=None) == {"health": "GOOD"}
    service.store.close()  # what a vanished or unreadable database looks like to a read
    answer = await api.json("GET", "/ready", 503, token=None)
    assert answer["health"] == "BAD"
    assert "closed database" in answer["message"]
    # Liveness does not depend on the database: an orchestrator must not restart a node
    # that still serves SDKs from memory.
    assert await api.json("GET", "/health", token=None) == {"health": "GOOD"}
