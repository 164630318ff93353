"""Rendered client payloads, authenticated tokens and seen SDK instances, all bounded.

Every change moves the store's revision; the first request that sees a new revision
drops the payloads and tokens kept for the old one. So a payload is rendered (and hashed
into its ETag) once per revision and query, a 304 costs a dictionary lookup, and no
request is ever served data older than the store's newest change.

Nothing here grows with what clients send: payloads are an LRU bounded in bytes and keyed
by the narrowed query (`flagcore.service.ClientVocabulary.narrow`), gzip is made once per
payload on a compression thread (never on the event loop), known tokens and unknown
secrets are separate LRUs bounded by count (unknown secrets by their digest), and SDK
instances seen polling are an LRU with a bounded batch of pending writes.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

import attrs

from flagcore.entities import ApiToken, ClientInstance
from flagcore.service import ClientVocabulary, Service

__all__ = ["CacheSizes", "ClientCache", "RenderedPayload"]


@attrs.frozen(kw_only=True)
class CacheSizes:
    """The bounds of every cache the client path keeps (see docs/security.md)."""

    payload_bytes: int = 32 * 1024 * 1024
    known_tokens: int = 10_000
    unknown_tokens: int = 10_000
    seen_instances: int = 10_000
    pending_instances: int = 1_000


@attrs.define
class RenderedPayload:
    body: bytes
    etag: str
    _gzipped: Future[bytes] | None = attrs.field(default=None, eq=False, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, eq=False, repr=False)

    def _gzip_future(self, executor: ThreadPoolExecutor) -> Future[bytes]:
        with self._lock:
            if self._gzipped is None:
                self._gzipped = executor.submit(gzip.compress, self.body, compresslevel=6)
            return self._gzipped

    async def gzipped(self, executor: ThreadPoolExecutor) -> bytes:
        """The body gzipped, made once (concurrent askers wait for the same compression)."""
        return await asyncio.wrap_future(self._gzip_future(executor))

    @property
    def size(self) -> int:
        """Bytes held, counted when stored: the body and a quarter more for its gzip (JSON
        payloads compress to well under a quarter), so the count never has to change."""
        return len(self.body) + len(self.body) // 4


K = TypeVar("K")
V = TypeVar("V")
_R = TypeVar("_R")


def query_hash(key: object) -> str:
    return hashlib.sha256(repr(key).encode("utf-8")).hexdigest()[:8]


def secret_digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


# How long a revision read from the store is trusted when this process wrote nothing since.
# Writes through this server are seen by the very next request (they bump the service's
# write counter); writes by another process sharing the database within this window.
REVISION_TTL_S = 0.01


def _reports_availability(store: object) -> bool:
    """Whether ``store`` says when its database is unreachable (the PostgreSQL store)."""
    return hasattr(store, "available")


def _available(store: object) -> bool:
    """Whether ``store`` can be read now; stores that do not say are taken as available."""
    return bool(getattr(store, "available", True))


@attrs.define
class Lookups:
    """Payload cache lookups, counted with plain integers (read by the metrics at scrape
    time): the 304 path pays an addition, not a metric update."""

    hits: int = 0
    misses: int = 0


class PayloadCache:
    """Rendered payloads by query key, least recently used first out, within a byte budget."""

    def __init__(self, budget: int, lookups: Lookups | None = None) -> None:
        self.budget = budget
        self._entries: OrderedDict[Hashable, RenderedPayload] = OrderedDict()
        self._bytes = 0
        self.lookups = lookups or Lookups()

    def get(self, key: Hashable) -> RenderedPayload | None:
        rendered = self._entries.get(key)
        if rendered is not None:
            self._entries.move_to_end(key)
            self.lookups.hits += 1
        else:
            self.lookups.misses += 1
        return rendered

    def put(self, key: Hashable, rendered: RenderedPayload) -> None:
        if rendered.size > self.budget:
            return  # served, not kept: one payload may not evict everything else
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        self._entries[key] = rendered
        self._bytes += rendered.size
        while self._bytes > self.budget:
            _key, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.size

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


class BoundedLru(Generic[K, V]):
    """A mapping that forgets its least recently used entry past ``capacity`` entries."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class ClientCache:
    def __init__(self, sizes: CacheSizes | None = None) -> None:
        self.sizes = sizes or CacheSizes()
        self._lock = threading.Lock()
        self._seen_local_writes = -1
        self._checked_at = 0.0
        self.revision = -1
        # Payload lookups survive the payload cache being replaced at each revision.
        self.lookups = Lookups()
        # Told how long each payload took to make on a miss (flagcore_http.metrics).
        self.render_seconds: Callable[[float], None] | None = None
        self.payloads = PayloadCache(self.sizes.payload_bytes, self.lookups)
        self.vocabulary: ClientVocabulary | None = None
        # Known tokens by their secret (no digest on the hot path; there are as many as
        # admins made); unknown secrets by digest, apart, so they never push a known out.
        self.known_tokens: BoundedLru[str, ApiToken] = BoundedLru(self.sizes.known_tokens)
        self.unknown_tokens: BoundedLru[bytes, bool] = BoundedLru(self.sizes.unknown_tokens)
        self.seen_instances: BoundedLru[tuple[str, str], float] = BoundedLru(
            self.sizes.seen_instances
        )
        self.pending_instances: dict[tuple[str, str], ClientInstance] = {}
        self.dropped_instances = 0
        self._held: (
            tuple[int, PayloadCache, ClientVocabulary | None, BoundedLru[str, ApiToken]] | None
        ) = None
        self._in_flight: dict[Hashable, asyncio.Future[Any]] = {}
        self.compressor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flagcore-gzip")

    def current_revision(self, service: Service) -> int:
        """The store's revision, read at most every `REVISION_TTL_S` unless we wrote.

        While the store says its database is unavailable (the PostgreSQL store's
        ``available``), a newer revision is not taken up: what was rendered last stays
        served (the last state this node had) instead of being dropped for a state that
        cannot be read now. The newer revision is taken up once the database is back.
        """
        store = service.store
        holds = _reports_availability(store)
        if holds and self._held is not None and not _available(store):
            self._take_back_held()
        now = time.monotonic()
        local = service.local_writes
        if local == self._seen_local_writes and now - self._checked_at < REVISION_TTL_S:
            return self.revision
        revision = store.revision()
        self._seen_local_writes = local
        self._checked_at = now
        if revision != self.revision and holds and self.revision >= 0 and not _available(store):
            return self.revision
        self.sync(revision, hold=holds)
        return revision

    def sync(self, revision: int, *, hold: bool = False) -> None:
        """Forget what belongs to an older revision.

        With ``hold``, the last rendered payloads, their vocabulary and known tokens are
        kept aside (one older revision's worth, so at most twice the payload budget) for
        `current_revision` to serve again if the database becomes unreachable before the
        new revision could be rendered.
        """
        if revision != self.revision:
            with self._lock:
                if revision != self.revision:
                    if hold and len(self.payloads):
                        self._held = (
                            self.revision,
                            self.payloads,
                            self.vocabulary,
                            self.known_tokens,
                        )
                    self.payloads = PayloadCache(self.sizes.payload_bytes, self.lookups)
                    self.vocabulary = None
                    self.known_tokens = BoundedLru(self.sizes.known_tokens)
                    self.unknown_tokens.clear()
                    self.revision = revision

    def _take_back_held(self) -> None:
        """Serve the last rendered state again (the database is down, nothing newer renders)."""
        with self._lock:
            if len(self.payloads) or self._held is None:
                return
            self.revision, self.payloads, self.vocabulary, self.known_tokens = self._held
            self._held = None

    def wants_instance(self, key: tuple[str, str], now: float, interval: float) -> bool:
        """Whether an instance polling now should be written: not noted within ``interval``
        seconds, and room in the bounded batch of pending writes (past
        `CacheSizes.pending_instances` new instances are counted in ``dropped_instances``
        and written when they poll again later)."""
        last = self.seen_instances.get(key)
        if last is not None and now - last < interval:
            return False
        pending = self.pending_instances
        if key not in pending and len(pending) >= self.sizes.pending_instances:
            self.dropped_instances += 1
            return False
        return True

    def note_instance(self, instance: ClientInstance, now: float) -> None:
        key = (instance.app_name, instance.instance_id)
        self.seen_instances.put(key, now)
        self.pending_instances[key] = instance

    def take_pending_instances(self) -> list[ClientInstance]:
        pending, self.pending_instances = self.pending_instances, {}
        return list(pending.values())

    async def once(self, key: Hashable, make: Callable[[], Awaitable[_R]]) -> _R:
        """``make()``, shared by every caller asking for ``key`` while it runs: a burst of
        polls right after a change queues one store call, not one each. It runs as its own
        task, so a caller that disconnects does not cancel it for the others."""
        running = self._in_flight.get(key)
        if running is None:
            running = asyncio.ensure_future(self._timed(key, make))
            self._in_flight[key] = running
            running.add_done_callback(functools.partial(self._landed, key))
        result: _R = await asyncio.shield(running)
        return result

    async def _timed(self, key: Hashable, make: Callable[[], Awaitable[_R]]) -> _R:
        """``make()``; told to `render_seconds` when it makes a client payload. Other kinds
        of work shared here are keyed by a name first (``("token", ...)``,
        ``("vocabulary", ...)``); a payload's key is ``(query key, revision)``."""
        if self.render_seconds is None or not isinstance(key, tuple) or isinstance(key[0], str):
            return await make()
        started = time.perf_counter()
        result = await make()
        self.render_seconds(time.perf_counter() - started)
        return result

    def _landed(self, key: Hashable, task: asyncio.Future[Any]) -> None:
        del self._in_flight[key]
        if not task.cancelled():
            task.exception()  # retrieved: every waiter re-raises it for itself

    def close(self) -> None:
        self.compressor.shutdown(wait=True)
