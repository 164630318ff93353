"""Rendered client payloads and authenticated tokens, kept for one store revision.

Every change moves the store's revision; the first request that sees a new revision
drops everything kept for the old one. So a payload is rendered (and gzipped, and
hashed into its ETag) once per revision and query, a 304 costs a dictionary lookup, and
no request is ever served data older than the store's newest change.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
import time

import attrs

from flagcore.entities import ApiToken
from flagcore.service import Service

__all__ = ["ClientCache", "RenderedPayload"]


@attrs.frozen
class RenderedPayload:
    body: bytes
    etag: str
    _gzipped: list[bytes] = attrs.field(factory=list, eq=False, repr=False, alias="_gzipped")

    def gzipped(self) -> bytes:
        if not self._gzipped:
            self._gzipped.append(gzip.compress(self.body, compresslevel=6))
        return self._gzipped[0]


def query_hash(key: object) -> str:
    return hashlib.sha256(repr(key).encode("utf-8")).hexdigest()[:8]


# How long a revision read from the store is trusted when this process wrote nothing since.
# Writes through this server are seen by the very next request (they bump the service's
# write counter); writes by another process sharing the database within this window.
REVISION_TTL_S = 0.01


class ClientCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen_local_writes = -1
        self._checked_at = 0.0
        self.revision = -1
        self.payloads: dict[object, RenderedPayload] = {}
        self.tokens: dict[str, ApiToken | None] = {}
        self.seen_instances: dict[tuple[str, str], float] = {}

    def current_revision(self, service: Service) -> int:
        """The store's revision, read at most every `REVISION_TTL_S` unless we wrote."""
        now = time.monotonic()
        local = service.local_writes
        if local == self._seen_local_writes and now - self._checked_at < REVISION_TTL_S:
            return self.revision
        revision = service.store.revision()
        self._seen_local_writes = local
        self._checked_at = now
        self.sync(revision)
        return revision

    def sync(self, revision: int) -> None:
        """Forget what belongs to an older revision."""
        if revision != self.revision:
            with self._lock:
                if revision != self.revision:
                    self.payloads = {}
                    self.tokens = {}
                    self.revision = revision
