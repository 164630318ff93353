"""The Integrations pages (issue 31): add a webhook, see its signing secret once, send a
test event, watch the delivery log, turn it off; a refused form comes back as typed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from standardwebhooks.webhooks import Webhook

from tests.ui.conftest import Server, sign_in, start_server, stop_server, wait_for


class _Receiver:
    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    made = _Receiver()
    yield made
    made.server.shutdown()
    made.server.server_close()


@pytest.fixture
def hooks_server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path, env={"FLAGCORE_INTEGRATION_ALLOW_LIST": "127.0.0.1"})
    try:
        yield running
    finally:
        stop_server(running)


def test_a_webhook_is_added_tested_delivered_to_and_turned_off(
    page: Page, hooks_server: Server, receiver: _Receiver, shot: Callable[[Page, str], None]
) -> None:
    server = hooks_server
    sign_in(page, server)
    page.get_by_role("link", name="Integrations").click()
    page.get_by_role("link", name="Webhook").click()
    page.get_by_label("Description").fill("deploy bot")
    page.get_by_label("URL (required)").fill(receiver.url)
    page.get_by_label("Authorization").fill("Bearer s3cret")
    page.get_by_role("button", name="Save integration").click()
    secret = page.get_by_label("Signing secret").input_value()
    assert secret.startswith("whsec_")
    assert "s3cret" not in page.content()

    page.get_by_role("button", name="Send a test event").click()
    expect(page.get_by_text("Test event delivered: HTTP 200 OK")).to_be_visible()
    headers, body = receiver.received[0]
    assert Webhook(secret).verify(body, headers)["type"] == "integration-test"

    server.api("POST", "/api/admin/projects/default/features", {"name": "launch"})
    wait_for(lambda: len(receiver.received) == 2)
    page.reload()
    expect(page.get_by_role("row", name="feature-created")).to_contain_text("delivered")
    assert len(receiver.received) == 2  # the test event and the flag's, nothing more
    shot(page, "integration")

    page.get_by_role("switch", name="Integration 1 on").click()
    expect(page.get_by_text("Integration #1 turned off.")).to_be_visible()
    assert server.api("GET", "/api/admin/addons/1")["enabled"] is False
    page.goto(server.url + "/ui/integrations")
    shot(page, "integrations")
    assert "s3cret" not in server.log.read_text()  # a secret parameter is never logged


def test_a_refused_integration_comes_back_as_typed(page: Page, hooks_server: Server) -> None:
    sign_in(page, hooks_server)
    page.goto(hooks_server.url + "/ui/integrations/new?provider=slack")
    page.get_by_label("URL (required)").fill("http://10.0.0.8/hooks")
    page.get_by_label("Channel (required)").fill("releases")
    page.get_by_role("button", name="Save integration").click()
    expect(page.get_by_role("alert")).to_contain_text("not a public address")
    url = page.get_by_label("URL (required)")
    expect(url).to_have_value("http://10.0.0.8/hooks")
    expect(url).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Channel (required)")).to_have_value("releases")
    assert hooks_server.api("GET", "/api/admin/addons")["addons"] == []


def test_a_delivery_is_sent_again_from_the_log_and_the_integration_deleted(
    page: Page, hooks_server: Server, receiver: _Receiver
) -> None:
    server = hooks_server
    body = {
        "provider": "webhook",
        "enabled": True,
        "parameters": {"url": receiver.url},
        "events": ["feature-created"],
    }
    made = server.api("POST", "/api/admin/addons", body)
    server.api("POST", "/api/admin/projects/default/features", {"name": "launch"})
    wait_for(lambda: len(receiver.received) == 1)
    (delivery,) = server.api("GET", f"/api/admin/addons/{made['id']}/deliveries")["deliveries"]
    sign_in(page, server)
    page.goto(f"{server.url}/ui/integrations/{made['id']}")
    page.get_by_role("button", name=f"Send delivery {delivery['id']} again").click()
    expect(page.get_by_role("status")).to_contain_text("Delivery sent again")
    assert len(receiver.received) == 2
    assert receiver.received[1][1] == receiver.received[0][1]  # the same event, sent again

    page.get_by_role("button", name=f"Delete integration {made['id']}").click()
    expect(page.get_by_text(f"Integration #{made['id']} deleted.")).to_be_visible()
    assert server.api_status("GET", f"/api/admin/addons/{made['id']}") == 404
    assert len(receiver.received) == 2  # deleted: nothing more sent
