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

__all__ = ["AnswerKey", "CacheSizes", "ClientCache", "FastAnswer", "RenderedPayload"]


@attrs.frozen(kw_only=True)
class CacheSizes:
    """The bounds of every cache the client path keeps (see docs/security.md)."""

    payload_bytes: int = 32 * 1024 * 1024
    known_tokens: int = 10_000
    unknown_tokens: int = 10_000
    seen_instances: int = 10_000
    pending_instances: int = 1_000
    fast_answers: int = 4_096


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


# What decides a client-features answer, as the request spelt it: the Authorization header,
# the Unleash-Client-Spec header and the query string (see `FastAnswer`).
AnswerKey = tuple[str | None, str | None, str]
# Requests whose key is longer than this are always answered by the full path: a bound on
# what one cached answer may hold, far above any real SDK's token and query.
MAX_ANSWER_KEY_LENGTH = 1024


class FastAnswer:
    """A client-features answer as the full path made it for one `AnswerKey` at one revision.

    The full path (authentication, token scope, query parsing, the payload cache) runs once
    per key and revision; it then keeps this, and later requests with the same key are
    answered from it: an SDK's poll costs a revision check, one dictionary lookup and the
    response. Only requests the full path authenticated and authorized leave one, and every
    revision change drops them all (a deleted token moves the revision), so it never admits
    what the full path would refuse.
    """

    __slots__ = ("environment", "etag", "full", "gzipped", "not_modified", "rendered", "token")

    def __init__(
        self,
        environment: str,
        rendered: RenderedPayload,
        fetch_mode: str | None,
        token: ApiToken | None = None,
    ) -> None:
        self.environment = environment
        # The token the full path authenticated: the per-token limit on new SDK instances
        # counts against the same token whichever path answers.
        self.token = token
        self.rendered = rendered
        self.etag = rendered.etag
        self.not_modified: dict[str, str] = {"ETag": rendered.etag}
        if fetch_mode is not None:
            self.not_modified["fetch-mode"] = fetch_mode
        self.full = {**self.not_modified, "Content-Type": "application/json; charset=utf-8"}
        self.gzipped = {**self.full, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"}


K = TypeVar("K")
V = TypeVar("V")
_R = TypeVar("_R")


def query_hash(key: object) -> str:
    return hashlib.sha256(repr(key).encode("utf-8")).hexdigest()[:8]


def secret_digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


@attrs.define
class Lookups:
    """Payload cache lookups, counted with plain integers (read by the metrics at scrape
    time): the 304 path pays an addition, not a metric update."""

    hits: int = 0
    misses: int = 0


class PayloadCache:
    """Rendered payloads by query key, least recently used first out, within a byte budget.

    A payload larger than the whole budget is kept apart, one at a time (the latest such):
    it may not evict everything else, but rendering it again on every poll would cost far
    more than holding what was rendered anyway (format 1 inlines every segment into every
    strategy using it, so a large segment on many strategies makes such a payload)."""

    def __init__(self, budget: int, lookups: Lookups | None = None) -> None:
        self.budget = budget
        self._entries: OrderedDict[Hashable, RenderedPayload] = OrderedDict()
        self._bytes = 0
        self.oversized: tuple[Hashable, RenderedPayload] | None = None
        self.lookups = lookups or Lookups()

    def get(self, key: Hashable) -> RenderedPayload | None:
        rendered = self._entries.get(key)
        if rendered is not None:
            self._entries.move_to_end(key)
        elif self.oversized is not None and self.oversized[0] == key:
            rendered = self.oversized[1]
        if rendered is not None:
            self.lookups.hits += 1
        else:
            self.lookups.misses += 1
        return rendered

    def put(self, key: Hashable, rendered: RenderedPayload) -> None:
        if rendered.size > self.budget:
            self.oversized = (key, rendered)  # the one kept apart (see the class)
            return
        if self.oversized is not None and self.oversized[0] == key:
            self.oversized = None
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
        """Bytes held within the budget (the payload kept apart is not counted)."""
        return self._bytes

    @property
    def oversized_bytes(self) -> int:
        """Bytes of the one payload larger than the budget kept apart, or 0."""
        return self.oversized[1].size if self.oversized is not None else 0

    def __len__(self) -> int:
        """Payloads held, the one kept apart included."""
        return len(self._entries) + (self.oversized is not None)


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
        self._holds: bool | None = None  # whether the store reports availability
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
        self.answers: dict[AnswerKey, FastAnswer] = {}
        # The payloads the answers hold, by identity, and their bytes: answers may keep a
        # payload the payload LRU has let go, so they get a byte budget of their own.
        self._answer_payloads: dict[int, RenderedPayload] = {}
        self._answer_bytes = 0
        self.dropped_instances = 0
        self._held: (
            tuple[int, PayloadCache, ClientVocabulary | None, BoundedLru[str, ApiToken]] | None
        ) = None
        self._in_flight: dict[Hashable, asyncio.Future[Any]] = {}
        self.compressor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flagcore-gzip")

    def current_revision(self, service: Service) -> int:
        """The store's revision, asked on every request.

        Every store answers it cheaply and freshly (the `flagcore.ports.Store.revision`
        contract): memory and PostgreSQL from memory (PostgreSQL's is fed by NOTIFY), SQLite
        by comparing its WAL-index header, so a write by another process sharing the
        database (another worker of ``--workers N``) shows on the very next request.

        While the store says its database is unavailable (the PostgreSQL store's
        ``available``), a newer revision is not taken up: what was rendered last stays
        served (the last state this node had) instead of being dropped for a state that
        cannot be read now. The newer revision is taken up once the database is back.
        """
        storage = service.storage
        holds = self._holds
        if holds is None:
            holds = self._holds = storage.reports_availability
        if not holds:  # the fast path: one cheap call, and a sync when it moved
            revision = storage.revision()
            if revision != self.revision:
                self.sync(revision)
            return revision
        if self._held is not None and not storage.available():
            self._take_back_held()
        revision = storage.revision()
        if revision != self.revision and self.revision >= 0 and not storage.available():
            return self.revision
        self.sync(revision, hold=True)
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
                    self._forget_answers()
                    self.revision = revision

    def _take_back_held(self) -> None:
        """Serve the last rendered state again (the database is down, nothing newer renders)."""
        with self._lock:
            if len(self.payloads) or self._held is None:
                return
            self.revision, self.payloads, self.vocabulary, self.known_tokens = self._held
            self._held = None
            self._forget_answers()

    def payload_at(self, key: Hashable, revision: int) -> RenderedPayload | None:
        """The payload rendered for ``key`` at ``revision``, if it is the cache's revision."""
        if revision != self.revision:
            return None
        return self.payloads.get(key)

    async def payload(
        self, key: Hashable, revision: int, render: Callable[[], Awaitable[RenderedPayload]]
    ) -> RenderedPayload:
        """The payload for ``key`` at ``revision``: the kept one, or ``render()`` once for
        every caller asking meanwhile, kept only if ``revision`` is still current (a change
        that landed while it rendered makes it the answer of this request alone)."""
        rendered = self.payload_at(key, revision)
        if rendered is None:
            rendered = await self.once((key, revision), render)
            if revision == self.revision:
                self.payloads.put(key, rendered)
        return rendered

    async def vocabulary_at(
        self, revision: int, read: Callable[[], Awaitable[ClientVocabulary]]
    ) -> ClientVocabulary:
        """What filters can match at ``revision``: read once per revision (on a payload
        miss), shared by every caller asking meanwhile, kept while ``revision`` is current."""
        vocabulary = self.vocabulary
        if vocabulary is None or revision != self.revision:
            vocabulary = await self.once(("vocabulary", revision), read)
            if revision == self.revision:
                self.vocabulary = vocabulary
        return vocabulary

    def remember_answer(self, key: AnswerKey, answer: FastAnswer, revision: int) -> None:
        """Keep ``answer`` for ``key`` if it is of the current revision; the oldest kept
        answer makes way past `CacheSizes.fast_answers` (no reordering on hits: a hit must
        stay a lookup). The payloads answers hold are bounded by the payload byte budget
        too (past it, every answer is dropped), so the answers and the payload LRU together
        hold at most twice `CacheSizes.payload_bytes`."""
        if revision != self.revision:
            return
        if sum(len(part) for part in key if part) > MAX_ANSWER_KEY_LENGTH:
            return
        rendered = answer.rendered
        if id(rendered) not in self._answer_payloads:
            if rendered.size > self.sizes.payload_bytes:
                return  # served, not kept, as the payload cache does
            if self._answer_bytes + rendered.size > self.sizes.payload_bytes:
                self._forget_answers()  # the full path makes them again, within the budget
            self._answer_payloads[id(rendered)] = rendered
            self._answer_bytes += rendered.size
        answers = self.answers
        if key not in answers and len(answers) >= self.sizes.fast_answers:
            del answers[next(iter(answers))]
        answers[key] = answer

    def _forget_answers(self) -> None:
        self.answers = {}
        self._answer_payloads = {}
        self._answer_bytes = 0

    @property
    def answer_bytes(self) -> int:
        """Bytes of the payloads the fast-path answers hold (at most the payload budget)."""
        return self._answer_bytes

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
