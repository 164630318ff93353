"""Running service calls off the event loop, on the app's single store worker thread.

The worker's queue is bounded: a request that needs the store while `StoreWorker.limit`
calls are already waiting gets `flagcore.errors.ServiceUnavailable` (503 JSON with
``Retry-After``) at once, instead of queueing work no one bounds. SDK polls of
``/api/client/features`` are served from the client cache and need the store only on a
cache miss, for which a small reserve above the limit is kept (``urgent=True``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import attrs
from aiohttp import web

from flagcore.errors import FlagcoreError, ServiceUnavailable
from flagcore.people import User
from flagcore.permissions import PREDEFINED_ROLES, Role
from flagcore.principals import Principal
from flagcore.service import PersonalTokenHolder, Service
from flagcore_http.keys import (
    CACHE,
    CONFIG,
    PERSONAL_TOKEN,
    PRINCIPAL,
    SERVICE,
    TOKEN,
    USER,
    WORKER,
)

__all__ = ["StoreWorker", "actor", "call", "principal_of", "service", "store_upkeep"]

_log = logging.getLogger("flagcore_http")

# One retention run deletes at most this many batches (of `_PRUNE_BATCH` rows of each
# kind), each its own short transaction queued behind requests; the rest waits a run.
_PRUNE_BATCH = 500
_PRUNE_BATCHES_PER_RUN = 40

_T = TypeVar("_T")

# What a client is told to wait when the queue is full: the queue drains in well under a
# second when the store is healthy, so one second is enough to retry.
RETRY_AFTER_S = 1.0


class StoreWorker(ThreadPoolExecutor):
    """The one thread that owns the store, with a count of the calls not yet finished.

    `admit` refuses past ``limit`` pending calls (``limit + reserve`` for urgent ones);
    plain `submit` (background work the server itself schedules) is counted, not refused.
    """

    def __init__(self, limit: int = 256, reserve: int = 16) -> None:
        super().__init__(max_workers=1, thread_name_prefix="flagcore-store")
        self.limit = limit
        self.reserve = reserve
        self._pending = 0
        self._count_lock = threading.Lock()
        # Told each call's operation, seconds and error name (flagcore_http.metrics).
        self.observer: StoreObserver | None = None

    @property
    def pending(self) -> int:
        """Calls queued or running now."""
        return self._pending

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        with self._count_lock:
            self._pending += 1
        if self.observer is not None:
            fn = functools.partial(_timed, self.observer, fn)
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._finished(None)
            raise
        future.add_done_callback(self._finished)
        return future

    def full(self) -> bool:
        """Whether `admit` would refuse a call that is not urgent."""
        return self._pending >= self.limit

    def admit(self, *, urgent: bool = False) -> None:
        """Raise `ServiceUnavailable` if the queue is full (urgent calls get the reserve)."""
        limit = self.limit + (self.reserve if urgent else 0)
        if self._pending >= limit:
            raise ServiceUnavailable(
                f"The server is busy ({self._pending} store calls waiting); retry shortly.",
                RETRY_AFTER_S,
            )

    def _finished(self, _future: object) -> None:
        with self._count_lock:
            self._pending -= 1


StoreObserver = Callable[[str, float, "str | None"], None]


def _operation(fn: Callable[..., Any]) -> str:
    """The name a store call is counted under: the service method's (from code, bounded)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return str(getattr(fn, "__name__", "other")).lstrip("_")


def _timed(observer: StoreObserver, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    started = time.perf_counter()
    error: str | None = None
    try:
        return fn(*args, **kwargs)
    except BaseException as raised:
        error = type(raised).__name__
        raise
    finally:
        observer(_operation(fn), time.perf_counter() - started, error)


def service(request: web.Request) -> Service:
    return request.app[SERVICE]


async def call(
    request: web.Request, fn: Callable[..., _T], *args: Any, urgent: bool = False, **kwargs: Any
) -> _T:
    """Run ``fn`` on the store worker: the event loop never waits on the disk.

    Raises `ServiceUnavailable` (503) when the worker's queue is full.
    """
    worker = request.app[WORKER]
    if isinstance(worker, StoreWorker):
        worker.admit(urgent=urgent)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(worker, functools.partial(fn, *args, **kwargs))


def actor(request: web.Request) -> Principal:
    """Who does it: the signed-in person with their roles, or an admin token (Admin, as
    before users existed), or nobody with authentication off (Admin too: the server was
    started open). The service decides what they may do; the event log gets
    ``user:<id>:<name>`` or the token's name, never its secret."""
    user: User | None = request.get(USER)
    if user is not None:
        principal = request.get(PRINCIPAL) or principal_of(user)
        personal = request.get(PERSONAL_TOKEN)
        if personal is not None:  # acts as its owner, named so in the event log
            return attrs.evolve(principal, actor=PersonalTokenHolder(personal, user).actor)
        return principal
    token = request.get(TOKEN)
    return Principal.admin(f"token:{token.name}" if token is not None else "anonymous")


def principal_of(user: User, project_roles: Iterable[tuple[str, Role]] = ()) -> Principal:
    """A user's principal: their root role, and the project roles they were given."""
    root = PREDEFINED_ROLES[user.root_role.role_id]
    return Principal.of_roles(user.actor, root, project_roles, user_id=user.id)


async def store_upkeep(app: web.Application) -> AsyncIterator[None]:
    """The server's own store work, in the background: every ``instance_write_interval``
    seconds the SDK instances seen polling are written in one batch, and every
    ``retention_interval`` seconds (0: never) old metrics, instances, signals and events
    are pruned in small batches (`flagcore.service.retention`). A cleanup context: at
    shutdown the last seen instances are written before the worker stops."""
    task = asyncio.create_task(_upkeep_loop(app))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await _write_seen_instances(app)
    app[CACHE].close()


async def _upkeep_loop(app: web.Application) -> None:
    config = app[CONFIG]
    loop = asyncio.get_running_loop()
    intervals = [config.instance_write_interval]
    if config.retention_interval > 0:
        intervals.append(config.retention_interval)
    tick = max(0.01, min(intervals))
    next_write = loop.time() + config.instance_write_interval
    next_prune = loop.time() + config.retention_interval
    while True:
        await asyncio.sleep(tick)
        if loop.time() >= next_write:
            await _write_seen_instances(app)
            next_write = loop.time() + config.instance_write_interval
        if config.retention_interval > 0 and loop.time() >= next_prune:
            await _prune(app)
            next_prune = loop.time() + config.retention_interval


async def _on_worker(app: web.Application, fn: Callable[..., _T], *args: Any) -> _T:
    return await asyncio.get_running_loop().run_in_executor(app[WORKER], fn, *args)


async def _write_seen_instances(app: web.Application) -> None:
    instances = app[CACHE].take_pending_instances()
    if not instances:
        return
    try:
        await _on_worker(app, app[SERVICE].instances.note_client_instances, instances)
    except FlagcoreError as error:  # a full disk must not stop the server; retried later
        _log.warning("could not write %d seen SDK instances: %s", len(instances), error)


async def _prune(app: web.Application) -> None:
    settings = app[CONFIG].retention
    prune = functools.partial(app[SERVICE].retention.prune, settings, batch=_PRUNE_BATCH)
    for _ in range(_PRUNE_BATCHES_PER_RUN):
        try:
            report = await _on_worker(app, prune)
        except FlagcoreError as error:
            _log.warning("retention could not prune: %s", error)
            return
        if report.total == 0:
            return
