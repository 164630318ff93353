"""npm's ``oidc-provider`` (a certified OpenID Provider) run by the tests on 127.0.0.1.

``tests/ui/node_oidc/provider.js`` starts it with one client and the accounts given; its
development sign-in page takes any password for a known login, and its consent page has
a "Cancel" link that denies the sign-in. ``npm ci`` installs it when ``node_modules`` is
missing (pinned in ``package-lock.json``); by hand: ``cd tests/ui/node_oidc && npm ci``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.node_packages import installed

NODE_DIR = Path(__file__).parent / "node_oidc"
CLIENT_ID = "flagcore"
CLIENT_SECRET = "a-client-secret-for-tests-0123456789"
CALLBACK = "/ui/sign-in/oidc/callback"

ACCOUNTS: dict[str, dict[str, Any]] = {
    "ann": {
        "email": "ann@example.io",
        "email_verified": True,
        "name": "Ann Admin",
        "groups": ["flag-admins", "staff"],
    },
    "bob": {"email": "Bob@Example.io", "email_verified": True, "name": "Bob", "groups": ["staff"]},
    "eve": {"email": "eve@elsewhere.org", "email_verified": True, "name": "Eve"},
    "una": {"email": "una@example.io", "email_verified": False, "name": "Una"},
}


def install_provider() -> Path:
    return installed(NODE_DIR, "oidc-provider", "OpenID Connect")


class RunningProvider:
    def __init__(self, process: subprocess.Popen[str], issuer: str) -> None:
        self.process = process
        self.issuer = issuer

    def accept_callbacks_of(self, *server_urls: str) -> None:
        """Register the client's redirect URIs (the servers' callbacks) and wait for it."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps([url + CALLBACK for url in server_urls]) + "\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "ready"


@contextmanager
def running_provider(
    accounts: Mapping[str, Any] = ACCOUNTS, *, claims_in_userinfo_only: bool = False
) -> Iterator[RunningProvider]:
    folder = install_provider()
    settings = {
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "accounts": accounts,
        "conformIdTokenClaims": claims_in_userinfo_only,
    }
    process = subprocess.Popen(
        ["node", "provider.js", json.dumps(settings)],
        cwd=folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("issuer http://127.0.0.1:"), first
        yield RunningProvider(process, first.split()[1])
    finally:
        process.terminate()
        process.communicate(timeout=10)  # and its pipes closed


def server_settings(issuer: str, **extra: str) -> dict[str, str]:
    """The flagcore settings that point at the provider (each test adds its own)."""
    return {
        "FLAGCORE_OIDC_ISSUER": issuer,
        "FLAGCORE_OIDC_CLIENT_ID": CLIENT_ID,
        "FLAGCORE_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "FLAGCORE_OIDC_PROVIDER_NAME": "Test IdP",
        "FLAGCORE_OIDC_SCOPES": "openid email profile groups",
        **extra,
    }
