"""Which tokens the edge knows: client tokens it follows, frontend tokens the upstream
accepted, and a bounded memory of refused ones (so an unknown token costs the upstream
one request per ``refused_ttl``, however often an SDK sends it).

Tokens are kept by the SHA-256 of their secret, in memory and on disk alike: the
snapshot file holds no secret. A followed token whose secret the edge no longer knows
(after a restart) is served from its snapshot and followed again once an SDK sends it.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import OrderedDict
from typing import Literal

import attrs

from flagcore_edge.snapshots import Scope, TokenSnapshot

__all__ = ["FollowedToken", "FrontendToken", "RefusedTokens", "TokenKind", "digest_of"]

TokenKind = Literal["client", "frontend"]


@functools.lru_cache(maxsize=4096)
def digest_of(secret: str) -> str:
    """The name a token is kept by; remembered for the tokens seen lately (a poll path
    saving), bounded so a flood of made-up tokens cannot grow it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@attrs.define
class FollowedToken:
    """A client token whose flags the edge polls (when it knows the secret) and serves."""

    digest: str
    secret: str | None
    snapshot: TokenSnapshot | None = None
    # What SDKs naming no spec get, fetched from the upstream once one asks (then polled).
    legacy: TokenSnapshot | None = None
    wants_legacy: bool = False
    requests: int = 0

    def label(self) -> str:
        """The token as metrics and logs name it: its scope and a digest prefix, no secret."""
        scope = "unknown" if self.snapshot is None else self.snapshot.scope.label()
        return f"{scope}#{self.digest[:8]}"


@attrs.define
class FrontendToken:
    digest: str
    scope: Scope
    checked_at: float  # wall time of the upstream's last yes
    requests: int = 0
    secret: str | None = None  # known once an SDK sent it (never written to disk)

    def label(self) -> str:
        return f"{self.scope.label()}#{self.digest[:8]}"


class RefusedTokens:
    """Tokens the upstream refused, each for ``ttl`` seconds, at most ``capacity`` of them
    (the oldest forgotten first: a flood of made-up tokens cannot grow the edge)."""

    def __init__(self, ttl: float, capacity: int) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._until: OrderedDict[tuple[TokenKind, str], tuple[float, int]] = OrderedDict()

    def refused(self, kind: TokenKind, digest: str) -> int | None:
        """The status the upstream refused the token with (401, 403), if it did lately."""
        kept = self._until.get((kind, digest))
        if kept is None:
            return None
        if kept[0] < time.monotonic():
            del self._until[(kind, digest)]
            return None
        return kept[1]

    def refuse(self, kind: TokenKind, digest: str, status: int = 401) -> None:
        self._until[(kind, digest)] = (time.monotonic() + self.ttl, status)
        self._until.move_to_end((kind, digest))
        while len(self._until) > self.capacity:
            self._until.popitem(last=False)

    def forget(self, kind: TokenKind, digest: str) -> None:
        self._until.pop((kind, digest), None)

    def __len__(self) -> int:
        return len(self._until)
