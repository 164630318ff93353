"""CORS for a real browser: a page on another origin calls the Frontend API with ``fetch``.

The page is served by a tiny aiohttp app on its own 127.0.0.1 port (another origin than
`flagcore serve`); flagcore allows exactly one such origin (``--frontend-origins``). From
the allowed origin, Chromium's preflight passes, the page reads the toggles and the
``ETag`` (exposed), and a second request with ``If-None-Match`` gets 304. From another
origin, the preflight is refused and the browser never sends the request: the page only
sees fetch fail. And Unleash's own browser SDK (``unleash-proxy-client``'s bundle, from
``tests/http/node_frontend``) works from the allowed origin, metrics included, and so
does OpenFeature's OFREP web provider (its ES modules, loaded through an import map).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from playwright.sync_api import Page

from tests.http.test_frontend_js_clients import install_node_frontend
from tests.ui.conftest import Server, logged, start_server, stop_server

# Unleash's browser SDK as browsers load it (its UMD bundle, the global `unleash`).
SDK_BUNDLE = "node_modules/unleash-proxy-client/build/main.min.js"

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>Shop</title>
<output id="result"></output>
<script type="module">
  const params = new URLSearchParams(location.search);
  const url = params.get("api") + "/api/frontend";
  const headers = { Authorization: params.get("token"), "Content-Type": "application/json" };
  const body = JSON.stringify({ context: { userId: "alice", properties: { plan: "pro" } } });
  const result = {};
  try {
    const first = await fetch(url, { method: "POST", headers, body });
    result.status = first.status;
    result.etag = first.headers.get("ETag");
    result.toggles = (await first.json()).toggles.map((toggle) => toggle.name);
    const again = await fetch(url, {
      method: "POST",
      headers: { ...headers, "If-None-Match": result.etag },
      body,
    });
    result.again = again.status;
  } catch (error) {
    result.error = String(error);
  }
  document.getElementById("result").textContent = JSON.stringify(result);
</script>
"""


SDK_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>Shop with Unleash's browser SDK</title>
<output id="result"></output>
<script src="/unleash-proxy-client.js"></script>
<script>
  const params = new URLSearchParams(location.search);
  const client = new unleash.UnleashClient({
    url: params.get("api") + "/api/frontend",
    clientKey: params.get("token"),
    appName: "browser-shop",
    refreshInterval: 1,
    metricsInterval: 1,
    metricsIntervalInitial: 1,
    context: { userId: "alice" },
  });
  const result = { errors: [] };
  client.on("error", (error) => result.errors.push(JSON.stringify(error)));
  client.on("ready", () => {
    result.enabled = client.isEnabled("new-checkout");
    result.variant = client.getVariant("new-checkout").name;
  });
  client.on("sent", () => {
    result.sent = true;
    document.getElementById("result").textContent = JSON.stringify(result);
  });
  client.start();
</script>
"""


# OpenFeature's web SDK and OFREP web provider as ES modules, straight from node_modules.
_MODULES = "/modules/@openfeature"
OFREP_PAGE = f"""<!doctype html>
<meta charset="utf-8">
<title>Shop with OpenFeature</title>
<output id="result"></output>
<script type="importmap">
{{"imports": {{
  "@openfeature/web-sdk": "{_MODULES}/web-sdk/dist/esm/index.js",
  "@openfeature/core": "{_MODULES}/core/dist/esm/index.js",
  "@openfeature/ofrep-core":
    "{_MODULES}/ofrep-web-provider/node_modules/@openfeature/ofrep-core/index.esm.js",
  "@openfeature/ofrep-web-provider": "{_MODULES}/ofrep-web-provider/index.esm.js"
}}}}
</script>
<script type="module">
  import {{ OpenFeature }} from "@openfeature/web-sdk";
  import {{ OFREPWebProvider }} from "@openfeature/ofrep-web-provider";
  const params = new URLSearchParams(location.search);
  const result = {{}};
  try {{
    await OpenFeature.setContext({{ targetingKey: "alice" }});
    await OpenFeature.setProviderAndWait(new OFREPWebProvider({{
      baseUrl: params.get("api"),
      headers: [["Authorization", params.get("token")]],
      pollInterval: 300,
      changeDetection: "polling",
      cacheMode: "disabled",
    }}));
    const client = OpenFeature.getClient();
    result.checkout = client.getBooleanValue("new-checkout", false);
    result.missing = client.getBooleanDetails("no-such-flag", true).errorCode;
  }} catch (error) {{
    result.error = String(error);
  }}
  // Let it poll (If-None-Match) before saying it is done.
  setTimeout(() => {{
    document.getElementById("result").textContent = JSON.stringify(result);
  }}, 1500);
</script>
"""


class PageServer:
    """The shop's page, on its own port, served from a thread with its own event loop."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the page server did not start"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def page(request: web.Request) -> web.Response:
            return web.Response(text=PAGE, content_type="text/html")

        async def sdk_page(request: web.Request) -> web.Response:
            return web.Response(text=SDK_PAGE, content_type="text/html")

        async def ofrep_page(request: web.Request) -> web.Response:
            return web.Response(text=OFREP_PAGE, content_type="text/html")

        async def module(request: web.Request) -> web.Response:
            root = (install_node_frontend() / "node_modules" / "@openfeature").resolve()
            path = (root / request.match_info["path"]).resolve()
            if not path.is_relative_to(root) or path.suffix != ".js" or not path.is_file():
                raise web.HTTPNotFound()
            return web.Response(text=path.read_text(), content_type="text/javascript")

        async def sdk(request: web.Request) -> web.Response:
            bundle = install_node_frontend() / SDK_BUNDLE
            return web.Response(text=bundle.read_text(), content_type="text/javascript")

        app = web.Application()
        app.router.add_get("/", page)
        app.router.add_get("/sdk", sdk_page)
        app.router.add_get("/unleash-proxy-client.js", sdk)
        app.router.add_get("/ofrep", ofrep_page)
        app.router.add_get(_MODULES + "/{path:.+}", module)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        self._loop.run_until_complete(site.start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture
def shops() -> Iterator[tuple[PageServer, PageServer]]:
    allowed, other = PageServer(), PageServer()
    yield allowed, other
    allowed.close()
    other.close()


@pytest.fixture
def flags_server(
    tmp_path: Path, shops: tuple[PageServer, PageServer]
) -> Iterator[tuple[Server, str]]:
    """`flagcore serve` allowing the first shop's origin only, one flag on, and a
    frontend token's secret."""
    allowed, _ = shops
    # Every request line is written (--access-log all): the browser's are read back.
    running = start_server(tmp_path, "--frontend-origins", allowed.origin, "--access-log", "all")
    try:
        token = running.api(
            "POST",
            "/api/admin/api-tokens",
            {
                "tokenName": "shop",
                "type": "frontend",
                "environment": "development",
                "projects": ["default"],
            },
        )
        features = "/api/admin/projects/default/features"
        running.api("POST", features, {"name": "new-checkout"})
        running.api(
            "POST",
            f"{features}/new-checkout/environments/development/strategies",
            {
                "name": "default",
                "parameters": {},
            },
        )
        running.api("POST", f"{features}/new-checkout/environments/development/on")
        yield running, token["secret"]
    finally:
        stop_server(running)


def _result(page: Page) -> Any:
    page.wait_for_function("document.getElementById('result').textContent !== ''")
    return json.loads(page.locator("#result").text_content() or "null")


def test_a_page_on_an_allowed_origin_reads_toggles_and_etag_across_origins(
    page: Page, shops: tuple[PageServer, PageServer], flags_server: tuple[Server, str]
) -> None:
    allowed, _ = shops
    server, token = flags_server
    page.goto(f"{allowed.origin}/?api={server.url}&token={token}")
    result = _result(page)
    assert result.get("error") is None, result
    assert result["status"] == 200
    assert result["toggles"] == ["new-checkout"]
    assert result["etag"], "ETag must be exposed to the page (Access-Control-Expose-Headers)"
    assert result["again"] == 304
    # Chromium asked first (a POST with Authorization and JSON needs a preflight).
    log = server.log.read_text()
    assert re.search(r'"OPTIONS /api/frontend" 204 ', log), log[-2000:]


def test_a_page_on_another_origin_is_refused_by_the_browser_before_any_request(
    page: Page, shops: tuple[PageServer, PageServer], flags_server: tuple[Server, str]
) -> None:
    _, other = shops
    server, token = flags_server
    page.goto(f"{other.origin}/?api={server.url}&token={token}")
    result = _result(page)
    assert "status" not in result, result
    assert "Failed to fetch" in result["error"]
    # The server saw the preflight and refused it; the POST itself was never sent.
    log = logged(server, r'"OPTIONS /api/frontend" 403 ')
    assert '"POST /api/frontend"' not in log, log[-2000:]


def test_unleash_browser_sdk_in_chromium_reads_flags_and_posts_metrics_across_origins(
    page: Page, shops: tuple[PageServer, PageServer], flags_server: tuple[Server, str]
) -> None:
    allowed, _ = shops
    server, token = flags_server
    install_node_frontend()
    # The SDK sends its own headers (Unleash-SDK, Unleash-AppName, Unleash-Connection-Id):
    # the preflight must allow them, for the toggles and for the metrics post.
    page.goto(f"{allowed.origin}/sdk?api={server.url}&token={token}")
    result = _result(page)
    assert result == {"errors": [], "enabled": True, "variant": "disabled", "sent": True}
    logged(server, r'"GET /api/frontend\?[^"]*" 200 ', r'"POST /api/frontend/client/metrics" 200 ')


def test_openfeature_web_provider_in_chromium_evaluates_over_ofrep_across_origins(
    page: Page, shops: tuple[PageServer, PageServer], flags_server: tuple[Server, str]
) -> None:
    allowed, _ = shops
    server, token = flags_server
    install_node_frontend()
    page.goto(f"{allowed.origin}/ofrep?api={server.url}&token={token}")
    result = _result(page)
    assert result == {"checkout": True, "missing": "FLAG_NOT_FOUND"}
    # Its polls send the ETag it could read (exposed) back: 304.
    logged(
        server,
        r'"OPTIONS /ofrep/v1/evaluate/flags" 204 ',
        r'"POST /ofrep/v1/evaluate/flags" 200 ',
        r'"POST /ofrep/v1/evaluate/flags" 304 ',
    )
