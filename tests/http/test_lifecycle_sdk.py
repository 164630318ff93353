"""A flag's lifecycle from real SDK traffic (issue 32): the official Python SDK polls a
real `flagcore serve` and sends its metrics; evaluations in development move the flag to
pre-live, in production to live, as Unleash 7 derives them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.edge.processes import CLIENT, UpstreamServer, python_sdk, wait_for

FLAG = "/api/admin/projects/default/features/checkout"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[UpstreamServer]:
    started = UpstreamServer(tmp_path).start()
    try:
        yield started
    finally:
        started.stop()


def _stages(server: UpstreamServer) -> list[str]:
    stages: list[dict[str, Any]] = server.admin("GET", FLAG + "/lifecycle")
    return [stage["stage"] for stage in stages]


def _evaluated_by_an_sdk(server: UpstreamServer, token: str, tmp_path: Path, name: str) -> None:
    sdk = python_sdk(server.url, token, tmp_path, name)
    try:
        wait_for(lambda: sdk.is_enabled("checkout", {"userId": "1"}))
        for user in range(5):
            sdk.is_enabled("checkout", {"userId": str(user)})
    finally:
        sdk.destroy()  # which sends what it counted


def test_the_python_sdks_evaluations_move_a_flag_to_pre_live_then_live(
    server: UpstreamServer, tmp_path: Path
) -> None:
    server.admin("POST", "/api/admin/projects/default/features", {"name": "checkout"})
    for environment in ("development", "production"):
        server.admin("POST", f"{FLAG}/environments/{environment}/on")
    assert _stages(server) == ["initial"]

    _evaluated_by_an_sdk(server, CLIENT, tmp_path, "dev")
    wait_for(lambda: _stages(server) == ["initial", "pre-live"])

    production = server.admin(
        "POST",
        "/api/admin/api-tokens",
        {"tokenName": "prod", "type": "client", "environment": "production", "projects": ["*"]},
    )["secret"]
    _evaluated_by_an_sdk(server, production, tmp_path, "prod")
    wait_for(lambda: _stages(server) == ["initial", "pre-live", "live"])
