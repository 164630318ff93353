"""A short confirmation after a change (a flag created, archived, revived, deleted, ...),
carried by the redirect's address and shown by the page it leads to.

The address holds a code from the fixed table below, the name of the thing, and an
HMAC of both under the visitor's CSRF token (a per-session secret). A link anyone else
makes shows nothing, and the name is plain text, escaped like every value a page shows:
no message and no markup can be slipped into a page through the address bar.
"""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse
from collections.abc import Mapping

import jinja2
from aiohttp import web

from flagcore_http.ui.pages import viewer

__all__ = ["FLASHES", "flash_message", "read_flash", "with_flash"]

FLASHES: Mapping[str, str] = {
    "flag-created": "Flag “{name}” created.",
    "flag-archived": "Flag “{name}” archived: SDKs no longer get it.",
    "flag-revived": "Flag “{name}” revived, off in every environment.",
    "flag-deleted": "Flag “{name}” deleted for good.",
    "strategy-saved": "Strategy saved in {name}.",
    "variants-saved": "Variants saved in {name}.",
    "segment-saved": "Segment “{name}” saved.",
    "segment-deleted": "Segment “{name}” deleted.",
    "context-field-saved": "Context field “{name}” saved.",
    "context-field-deleted": "Context field “{name}” deleted.",
    "integration-on": "Integration {name} turned on: it is sent events from now on.",
    "integration-off": "Integration {name} turned off.",
    "integration-deleted": "Integration {name} deleted.",
    "delivery-resent": "Delivery sent again: {name}.",
    "integration-tested": "Test event {name}",
    "project-created": "Project “{name}” created.",
    "project-renamed": "Project “{name}” renamed.",
    "project-deleted": "Project “{name}” deleted.",
    "token-revoked": "Token “{name}” revoked.",
    "sessions-ended": "Every session of “{name}” ended.",
    "user-disabled": "User “{name}” disabled: their sessions ended.",
    "user-enabled": "User “{name}” enabled.",
    "root-role-changed": "Root role of “{name}” changed.",
    "role-saved": "Role “{name}” saved.",
    "role-deleted": "Role “{name}” deleted.",
    "group-saved": "Group “{name}” saved.",
    "group-deleted": "Group “{name}” deleted.",
    "access-changed": "Project roles of “{name}” changed.",
    "profile-saved": "Your {name} is saved.",
    "access-added": "Access given to “{name}”.",
    "access-removed": "“{name}” no longer has access to this project.",
    "user-deleted": "User “{name}” deleted.",
    "personal-token-deleted": "Token {name} deleted: it no longer works.",
    "service-account-created": "Service account “{name}” created.",
    "service-account-deleted": "Service account “{name}” deleted, with its tokens.",
    "service-account-token-deleted": "Token {name} deleted: it no longer works.",
    "endpoint-created": "Signal endpoint “{name}” created.",
    "signal-token-revoked": "Signal token revoked.",
    "action-set-saved": "Action set “{name}” saved.",
    "environment-created": "Environment “{name}” created.",
    "environment-saved": "Environment “{name}” saved.",
    "environment-deleted": "Environment “{name}” deleted, with every flag's rules in it.",
    "environment-renamed": (
        "Environment renamed to “{name}”: every flag's rules, its tokens (still working) "
        "and its usage moved with it."
    ),
    "flag-saved": "Flag “{name}” saved.",
    "dependencies-saved": "Dependencies of “{name}” saved.",
    "strategies-copied": "Strategies copied to {name}.",
    "tag-type-saved": "Tag type “{name}” saved.",
    "feature-type-saved": "Lifetime of flag type “{name}” saved.",
    "tag-type-deleted": "Tag type “{name}” deleted.",
    "strategy-definition-saved": "Strategy “{name}” saved.",
    "strategy-definition-deprecated": "Strategy “{name}” deprecated: editors stop offering it.",
    "strategy-definition-reactivated": "Strategy “{name}” reactivated.",
    "strategy-definition-deleted": "Strategy “{name}” deleted.",
    "endpoint-deleted": "Signal endpoint “{name}” deleted, with its tokens and signals.",
    "action-set-deleted": "Action set “{name}” deleted.",
    "service-account-saved": "Service account “{name}” saved.",
    "change-drafted": "Added to your draft: change request #{name}.",
    "change-request-moved": "The change request is now {name}.",
    "change-request-commented": "Comment added to change request #{name}.",
    "change-request-config-saved": "Change request settings saved for {name}.",
    "change-request-title-saved": "Title of change request #{name} saved.",
    "change-request-reviewers-saved": "Reviewers of change request #{name} saved.",
    "change-discarded": "Change {name} taken out of the request.",
    "draft-discarded": "Draft change request #{name} discarded.",
    "change-edited": "Change {name} saved: approvals given so far are withdrawn.",
}
_MAX_NAME = 200
_CODE, _NAME, _SIGNATURE = "done", "what", "sig"


def _signature(request: web.Request, code: str, name: str) -> str:
    key = viewer(request).csrf.encode()
    return hmac.new(key, f"{code}\0{name}".encode(), hashlib.sha256).hexdigest()[:32]


def with_flash(request: web.Request, url: str, code: str, name: str = "") -> str:
    """``url`` with the confirmation ``code`` (a key of `FLASHES`) about ``name``."""
    name = name[:_MAX_NAME]
    query = {_CODE: code, _NAME: name, _SIGNATURE: _signature(request, code, name)}
    return url + ("&" if "?" in url else "?") + urllib.parse.urlencode(query)


def read_flash(request: web.Request) -> str | None:
    """The confirmation this address carries, when it is ours and signed for this session."""
    code, name = request.query.get(_CODE, ""), request.query.get(_NAME, "")
    signature = request.query.get(_SIGNATURE, "")
    if code not in FLASHES or len(name) > _MAX_NAME:
        return None
    if not hmac.compare_digest(signature, _signature(request, code, name)):
        return None
    return FLASHES[code].format(name=name)


@jinja2.pass_context
def flash_message(context: jinja2.runtime.Context) -> str | None:
    """For base.html: the page's confirmation, or None (no session: none)."""
    request = context.get("request")
    if request is None or context.get("viewer") is None:
        return None
    return read_flash(request)
