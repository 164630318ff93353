"""The last admin token cannot be revoked from the UI either (issue 23 §1): the service
refuses (409 in the API) and the tokens page says why, with the token still listed and
still working; once a second admin token exists, the first one can go."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.ui.conftest import ADMIN, Server, sign_in, start_server, stop_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(Path(tmp_path_factory.mktemp("last-admin")))
    try:
        yield running
    finally:
        stop_server(running)


def _admin_names(server: Server, token: str = ADMIN) -> list[str]:
    listed = server.api("GET", "/api/admin/api-tokens", token=token)["tokens"]
    return [t["tokenName"] for t in listed if t["type"] == "admin"]


def test_revoking_the_last_admin_token_is_refused_and_said_on_the_tokens_page(
    page: Page, server: Server
) -> None:
    (only,) = _admin_names(server)
    sign_in(page, server)
    page.goto(server.url + "/ui/tokens")
    page.get_by_role("button", name=f"Revoke token {only}").click()
    page.get_by_role("button", name=f"Revoke “{only}” and sign out").click()
    expect(page.get_by_role("alert")).to_contain_text("Not revoked")
    expect(page.get_by_role("alert")).to_contain_text("admin")
    assert _admin_names(server) == [only]  # still there, still working

    spare = server.api("POST", "/api/admin/api-tokens", {"tokenName": "spare", "type": "admin"})
    page.goto(server.url + "/ui/tokens")
    page.get_by_role("button", name=f"Revoke token {only}").click()
    page.get_by_role("button", name=f"Revoke “{only}” and sign out").click()
    expect(page.get_by_label("Admin API token")).to_be_visible()
    assert _admin_names(server, spare["secret"]) == ["spare"]
    assert server.api_status("GET", "/api/admin/api-tokens", token=ADMIN) == 401
