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

import attrs

from flagcore.entities import ApiToken

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


class ClientCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.revision = -1
        self.payloads: dict[object, RenderedPayload] = {}
        self.tokens: dict[str, ApiToken | None] = {}
        self.seen_instances: dict[tuple[str, str], float] = {}

    def sync(self, revision: int) -> None:
        """Forget what belongs to an older revision."""
        if revision != self.revision:
            with self._lock:
                if revision != self.revision:
                    self.payloads = {}
                    self.tokens = {}
                    self.revision = revision
