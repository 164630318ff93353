"""Browser journeys: `flagcore serve` as a subprocess, driven by Playwright in headless
Chromium from Debian's ``chromium`` package (Playwright's own browser download is not
used). The browser is installed here when missing and we are root; otherwise the run
fails with the one line that says what to install. These tests never skip.

``FLAGCORE_UI_SCREENSHOTS=docs/ui`` makes the journeys save the screenshots of docs/ui.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.forkserver import popen

ADMIN = "*:*.ui-admin-secret-for-tests"
CLIENT = "default:development.ui-client-secret-for-tests"
CHROMIUM = os.environ.get("FLAGCORE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 15_000


def _ensure_chromium() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if os.geteuid() == 0 and apt:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
            subprocess.run(command, check=False, env=env, capture_output=True, timeout=900)
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"the UI tests need Chromium at {CHROMIUM}: install Debian's package "
            "(sudo apt-get install chromium) or set FLAGCORE_CHROMIUM",
            pytrace=False,
        )
    return CHROMIUM


# Per module, not per session: sync Playwright keeps an event loop running in this thread
# while it is open, and the asyncio tests of other modules need the thread's loop free.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    executable = _ensure_chromium()
    launched = playwright.chromium.launch(
        executable_path=executable, args=CHROMIUM_ARGS, headless=True
    )
    yield launched
    launched.close()


class Server:
    """A running ``flagcore serve`` and the admin API beside the UI, to check what it did."""

    def __init__(self, process: Any, url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log

    def api(self, method: str, path: str, body: Any = None, *, token: str = ADMIN) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": token, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            error.close()  # its socket; the status stays readable
            raise
        return json.loads(text) if text else None

    def api_status(self, method: str, path: str, *, token: str = ADMIN) -> int:
        try:
            self.api(method, path, token=token)
        except urllib.error.HTTPError as error:
            return error.code
        return 200

    def features_etag(self) -> tuple[str, Any]:
        request = urllib.request.Request(
            self.url + "/api/client/features", headers={"Authorization": CLIENT}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.headers["ETag"], json.loads(response.read())


def start_server(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> Server:
    log = tmp_path / "server.log"
    environment = {
        **os.environ,
        "FLAGCORE_INIT_ADMIN_API_TOKENS": ADMIN,
        "FLAGCORE_INIT_CLIENT_API_TOKENS": CLIENT,
        "FLAGCORE_DB": str(tmp_path / "flags.db"),
        **(env or {}),
    }
    sink = log.open("w")
    process = popen(
        [sys.executable, "-m", "flagcore_http", "serve", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=sink,
        text=True,
        env=environment,
    )
    sink.close()
    assert process.stdout is not None
    first = process.stdout.readline()
    match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
    assert match, first + log.read_text()
    return Server(process, match.group(1), log)


def stop_server(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    rest, _ = server.process.communicate(timeout=20)
    assert server.process.returncode == 0, rest + server.log.read_text()
    assert "Traceback" not in server.log.read_text(), server.log.read_text()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path)
    try:
        yield running
    finally:
        stop_server(running)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    dialogs: list[str] = []
    # An XSS attempt that ran would open a dialog; each test asserts none did.
    opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    opened.dialogs = dialogs  # type: ignore[attr-defined]
    yield opened
    context.close()


@pytest.fixture
def signed_in(page: Page, server: Server) -> Page:
    sign_in(page, server)
    return page


def sign_in(page: Page, server: Server, token: str = ADMIN) -> None:
    """Signed in with ``token`` through the sign-in form's own post (its CSRF token read
    from the page), from the browser context's request client so the session cookie is
    the page's; then on the Flags page. tests/ui/test_sign_in.py drives the form itself
    (label, typing, button); here only its answer matters, so the suite does not draw
    the sign-in page and type into it before every journey."""
    form = page.request.get(server.url + "/ui/sign-in")
    match = re.search(r'name="_csrf" value="([0-9a-f]+)"', form.text())
    assert match, form.text()
    posted = page.request.post(
        server.url + "/ui/sign-in", form={"_csrf": match.group(1), "token": token}, max_redirects=0
    )
    assert posted.status == 303, posted.text()
    page.goto(server.url + "/ui/flags")
    page.get_by_role("heading", name="Flags", exact=True).wait_for()


@pytest.fixture
def shot() -> Callable[[Page, str], None]:
    """Save a screenshot for docs/ui.md when ``FLAGCORE_UI_SCREENSHOTS`` names a folder."""
    folder = os.environ.get("FLAGCORE_UI_SCREENSHOTS")

    def take(page: Page, name: str) -> None:
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)

    return take


def wait_for(condition: Callable[[], Any], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def logged(server: Server, *patterns: str, timeout: float = 10.0) -> str:
    """The server's log once every regex of ``patterns`` is in it: access-log lines are
    written by a thread of their own, a moment after the answer went out."""
    deadline = time.monotonic() + timeout
    while True:
        log = server.log.read_text()
        if all(re.search(pattern, log) for pattern in patterns):
            return log
        assert time.monotonic() < deadline, log[-2000:]
        time.sleep(0.05)
