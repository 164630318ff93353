"""The streaming hub: one per node, it turns store changes into delta events and fans them
out to every open SSE connection whose token scope they concern.

How a change travels: a write through this server bumps ``service.local_writes``, which the
hub checks every `HubSettings.tick` (10 ms); writes by other processes sharing the
database are seen through ``store.revision()``, read at most every
`HubSettings.check_interval` (100 ms), or at the next tick when the store says it learnt
a newer one (PostgreSQL's ``on_revision``, fed by NOTIFY). When the revision moves, the
hub renders each followed environment once (on the store worker), diffs it against the
last state (`flagcore_http.streaming_events`), keeps the batch for catch-up and puts the
scoped events on each connection's bounded queue. A connection whose queue is full (a client
that stopped reading) is dropped, so it never holds back the others or grows memory.

Tokens: at each change the open connections' tokens are checked against the store, before
the feeds are rendered: a revoked token's streams are closed, and so are those of a token
whose environment was renamed (the SDK reconnects to the new name).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import attrs
from aiohttp import web

from flagcore.errors import NotFound, StorageError
from flagcore.service import Service
from flagcore.wire import DeltaAnswer, DeltaEvent, write_answer
from flagcore_http.config import AuthMode, ServerConfig
from flagcore_http.streaming_events import (
    ChangeBatch,
    EnvironmentState,
    EventHistory,
    Scope,
    scoped_events,
)

__all__ = [
    "HUB",
    "EnvironmentFeed",
    "HubSettings",
    "StreamConnection",
    "StreamingHub",
    "delta_body",
    "sse",
]

_log = logging.getLogger("flagcore_http.streaming")


@attrs.frozen(kw_only=True)
class HubSettings:
    max_connections: int = 10_000
    buffer_events: int = 64
    history: int = 1_000
    tick: float = 0.01
    check_interval: float = 0.1
    check_tokens: bool = True
    keepalive: float = 15.0
    idle_feed: float = 600.0  # seconds an environment is followed after its last use
    # What one client may hold (docs/security.md): streams per token and per address
    # (0: no limit), the socket's kernel send buffer (0: the system's own, which grows to
    # megabytes), and the seconds written bytes may go unacknowledged before the stream is
    # closed as not draining.
    max_per_token: int = 1_000
    max_per_address: int = 100
    send_buffer_bytes: int = 64 * 1024
    drain_timeout: float = 10.0


def sse(event: str | None, data: str, event_id: int | None = None) -> bytes:
    """One Server-Sent Event; ``data`` is one line of JSON (no newlines, so no splitting)."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"data: {data}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def events_message(event: str, events: list[DeltaEvent]) -> bytes:
    body = delta_body(events)
    return sse(event, body, events[-1].event_id if events else None)


def delta_body(events: list[DeltaEvent]) -> str:
    """``{"events": [...]}`` as compact JSON text (what both the stream and the delta
    route send)."""
    written = write_answer(DeltaAnswer(tuple(events)))
    return json.dumps(written, separators=(",", ":"), ensure_ascii=False)


class StreamConnection:
    """One SSE client: its scope, its token, and a bounded queue of messages to write."""

    def __init__(
        self,
        environment: str,
        scope: Scope,
        token_hash: str | None,
        buffer: int,
        address: str = "",
    ) -> None:
        self.environment = environment
        self.scope = scope
        self.token_hash = token_hash
        self.address = address
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=buffer)
        self.closed_because: str | None = None
        self._task = asyncio.current_task()

    def offer(self, message: bytes) -> None:
        if self.closed_because is not None:
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.drop("slow client: its buffer is full")

    def close(self, reason: str) -> None:
        """End the stream after what is queued (a clean end of the response)."""
        if self.closed_because is not None:
            return
        self.closed_because = reason
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            self.drop(reason)

    def drop(self, reason: str) -> None:
        """Cut the connection now: its writer is cancelled, its queue let go."""
        self.closed_because = reason
        _log.info("streaming connection closed: %s", reason)
        if self._task is not None and not self._task.done():
            self._task.cancel()


@attrs.define
class EnvironmentFeed:
    history: EventHistory
    connections: set[StreamConnection] = attrs.field(factory=set)
    last_used: float = 0.0  # loop time it was loaded, or of the last stream or delta poll
    # The hydration message of each scope at the current state: after a restart every
    # SDK reconnects at once, and each must not cost a render of the whole environment.
    _hydrations: dict[Scope, bytes] = attrs.field(factory=dict)

    def advance(self, state: EnvironmentState) -> ChangeBatch | None:
        self._hydrations.clear()
        return self.history.advance(state)

    def hydration_message(self, scope: Scope) -> bytes:
        message = self._hydrations.get(scope)
        if message is None:
            message = events_message("unleash-connected", [self.history.state.hydration(scope)])
            if len(self._hydrations) < _HYDRATIONS_KEPT:
                self._hydrations[scope] = message
        return message

    def connect_message(self, last_event_id: int | None, scope: Scope) -> bytes | None:
        """What a new connection gets first: what it missed, or a hydration."""
        if self.history.can_resume(last_event_id):
            assert last_event_id is not None
            missed = self.history.since(last_event_id, scope)
            return events_message("unleash-updated", missed) if missed else None
        return self.hydration_message(scope)


# Scopes are token project lists, so few; the bound only guards memory.
_HYDRATIONS_KEPT = 64


class StreamingHub:
    def __init__(self, service: Service, worker: Any, settings: HubSettings) -> None:
        self._service = service
        self._worker = worker
        self.settings = settings
        self.feeds: dict[str, EnvironmentFeed] = {}
        self._loading: dict[str, asyncio.Future[EnvironmentFeed]] = {}
        self._revision = -1
        self._seen_local_writes = -1
        self._checked_at = 0.0
        self._refreshing = asyncio.Lock()
        # Every open stream, whichever feed it follows (one of an unknown environment is
        # in no feed kept here, yet must be closed on shutdown like the others).
        self.connections: set[StreamConnection] = set()
        self._per_token: Counter[str] = Counter()
        self._per_address: Counter[str] = Counter()

    # --- environments -------------------------------------------------------------
    async def feed(self, environment: str) -> EnvironmentFeed:
        """The feed of ``environment``, rendered on first use."""
        feed = self.feeds.get(environment)
        if feed is None:
            feed = await self._loaded_feed(environment)
        feed.last_used = asyncio.get_running_loop().time()
        return feed

    async def _loaded_feed(self, environment: str) -> EnvironmentFeed:
        loading = self._loading.get(environment)
        if loading is None:
            loading = asyncio.ensure_future(self._load_feed(environment))
            self._loading[environment] = loading
            loading.add_done_callback(lambda _f: self._loading.pop(environment, None))
        return await asyncio.shield(loading)

    async def _load_feed(self, environment: str) -> EnvironmentFeed:
        async with self._refreshing:  # not between a revision read and its fan-out
            state = await self._render(environment, self._service.storage.revision())
            feed = EnvironmentFeed(
                EventHistory(state, self.settings.history),
                # Used now: a refresh before its first caller resumes must not find it idle.
                last_used=asyncio.get_running_loop().time(),
            )
            if state.exists:
                self.feeds[environment] = feed
            # else: followed by no one. The environment name may come from a query string
            # (with --auth none), so unknown names must not each keep a feed; such a
            # stream gets an empty hydration and keep-alives.
            return feed

    async def _render(self, environment: str, revision: int) -> EnvironmentState:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._worker, _environment_state, self._service, environment, revision
        )

    # --- following the store ---------------------------------------------------------
    def _revision_moved(self, now: float) -> bool:
        service = self._service
        local = service.local_writes
        if (
            local == self._seen_local_writes
            and now - self._checked_at < self.settings.check_interval
        ):
            return False
        self._seen_local_writes = local
        self._checked_at = now
        return service.storage.revision() != self._revision

    def wake(self) -> None:
        """A newer revision is known (the PostgreSQL store's ``on_revision``): look at it at
        the next tick (10 ms) instead of the next revision check (100 ms)."""
        self._checked_at = -math.inf

    def listen_to_store(self) -> None:
        """Be woken by a store that learns of other nodes' writes by itself (PostgreSQL's
        ``on_revision``, fed by NOTIFY): their changes reach streams in about a tick."""
        loop = asyncio.get_running_loop()

        def revision_learnt(_revision: int) -> None:  # on the store's listener thread
            with contextlib.suppress(RuntimeError):  # the loop is closed: the app stopped
                loop.call_soon_threadsafe(self.wake)

        self._service.storage.on_revision(revision_learnt)

    async def sync(self) -> None:
        """Catch up with the store now if its revision moved (delta polls call this, so
        they never answer from a state older than the last write)."""
        # A refresh in flight may be the background check's, which has already taken the
        # sign of this process's last write: wait for it, then look at the revision again.
        if self._refreshing.locked() or self._revision_moved(asyncio.get_running_loop().time()):
            # The database cannot be read (a PostgreSQL outage): streams and delta polls
            # answer from the last state this node had, never a 503 (issue #14 §3); the
            # background check catches up once the database is back.
            with contextlib.suppress(StorageError):
                await self.refresh()

    async def refresh(self) -> None:
        async with self._refreshing:
            revision = self._service.storage.revision()
            if revision == self._revision:
                return
            if self.settings.check_tokens:
                # Before the feeds are rendered: a stream whose token now names another
                # environment (renamed) must not be told its old one's flags are gone.
                await self._close_revoked_streams()
            now = asyncio.get_running_loop().time()
            for environment, feed in list(self.feeds.items()):
                if not feed.connections and now - feed.last_used > self.settings.idle_feed:
                    # No one follows it: stop rendering it on every change (a later
                    # stream or delta poll loads it again; older ids then get a hydration).
                    del self.feeds[environment]
                    continue
                state = await self._render(environment, revision)
                batch = feed.advance(state)
                if batch is not None:
                    self._fan_out(feed, batch)
            # Taken up only once every feed has it: a render that fails (the database is
            # down) leaves the revision to be tried again, while the feeds keep their last
            # state (one already advanced gets no second batch: nothing differs).
            self._revision = revision

    def _fan_out(self, feed: EnvironmentFeed, batch: ChangeBatch) -> None:
        """Each scope's events are rendered once, then queued on its connections."""
        rendered: dict[Scope, bytes | None] = {}
        for connection in list(feed.connections):
            scope = connection.scope
            if scope not in rendered:
                events = scoped_events((batch,), scope)
                rendered[scope] = events_message("unleash-updated", events) if events else None
            message = rendered[scope]
            if message is not None:
                connection.offer(message)

    async def _close_revoked_streams(self) -> None:
        if not any(c.token_hash is not None for c in self.connections):
            return
        loop = asyncio.get_running_loop()
        tokens = await loop.run_in_executor(self._worker, self._service.tokens.list_tokens)
        scoped = {token.secret_hash: token.environment for token in tokens}
        for connection in list(self.connections):
            if connection.token_hash is None:
                continue
            if connection.token_hash not in scoped:
                connection.close("its token was deleted")
            elif scoped[connection.token_hash] not in (None, connection.environment):
                # The SDK reconnects and is served the renamed environment, hydrated.
                connection.close("its token's environment was renamed")

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        unavailable = False  # logged once per outage, not on every check
        while True:
            await asyncio.sleep(self.settings.tick)
            try:
                if self._revision_moved(loop.time()):
                    await self.refresh()
                    unavailable = False
            except asyncio.CancelledError:
                raise
            except StorageError as error:  # the database is down: serve the last state
                if not unavailable:
                    _log.warning("streaming hub: serving the last state (%s)", error)
                unavailable = True
            except Exception:  # a store hiccup must not stop the hub; it retries shortly
                _log.exception("streaming hub: could not follow the store")
                self._revision = -1
                await asyncio.sleep(1.0)

    # --- connections -----------------------------------------------------------------
    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def admits(self) -> bool:
        return len(self.connections) < self.settings.max_connections

    def limit_reached(self, token_hash: str | None, address: str) -> str | None:
        """Which of the per-client limits a new stream would pass (``per_token``,
        ``per_address``), or None if it may open."""
        settings = self.settings
        if (
            token_hash is not None
            and settings.max_per_token
            and self._per_token[token_hash] >= settings.max_per_token
        ):
            return "per_token"
        if settings.max_per_address and self._per_address[address] >= settings.max_per_address:
            return "per_address"
        return None

    def open(self, feed: EnvironmentFeed, connection: StreamConnection) -> None:
        feed.connections.add(connection)
        self.connections.add(connection)
        if connection.token_hash is not None:
            self._per_token[connection.token_hash] += 1
        self._per_address[connection.address] += 1

    def forget(self, feed: EnvironmentFeed, connection: StreamConnection) -> None:
        feed.connections.discard(connection)
        if connection not in self.connections:
            return
        self.connections.discard(connection)
        _release(self._per_token, connection.token_hash)
        _release(self._per_address, connection.address)

    def close_all(self, reason: str) -> None:
        for connection in list(self.connections):
            connection.close(reason)


def _release(counts: Counter[str], key: str | None) -> None:
    """One stream fewer for ``key``; a key with none left is forgotten (no growth)."""
    if key is None:
        return
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


def _environment_state(service: Service, environment: str, revision: int) -> EnvironmentState:
    """The environment's state, labelled with the revision its content was read at (in
    the same snapshot), never the ``revision`` asked for: a write committed between
    that read and this one would otherwise carry the older label, and a client holding
    it would be told nothing changed. ``revision`` labels an unknown environment."""
    try:
        snapshot, exact = service.client.client_features_at_revision(environment)
    except NotFound:  # an environment that does not exist (or no longer) has no flags
        return EnvironmentState(revision, {}, {}, exists=False)
    return EnvironmentState.from_snapshot(snapshot, exact)


HUB = web.AppKey("streaming_hub", StreamingHub)


def hub_settings(config: ServerConfig) -> HubSettings:
    return HubSettings(
        max_connections=config.streaming_max_connections,
        buffer_events=max(1, config.streaming_buffer_events),
        history=config.streaming_history,
        keepalive=max(0.1, config.streaming_keepalive),
        check_tokens=config.auth is AuthMode.TOKEN,
        max_per_token=config.streaming_max_per_token,
        max_per_address=config.streaming_max_per_address,
        send_buffer_bytes=config.streaming_send_buffer_bytes,
        drain_timeout=max(0.1, config.streaming_drain_timeout),
    )


async def hub_lifetime(app: web.Application) -> AsyncIterator[None]:
    """A cleanup context: the hub follows the store while the app runs."""
    hub = app[HUB]
    hub.listen_to_store()
    task = asyncio.create_task(hub.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def close_streams(app: web.Application) -> None:
    """On shutdown: every stream ends cleanly, so the server need not wait for them."""
    app[HUB].close_all("the server is shutting down")
