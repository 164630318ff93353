"""SDK usage (metrics and registrations) kept in memory while the store cannot take it.

Official SDKs do not send a metrics bucket again after a failed post, so a 503 during a
database restart would leave a hole in every usage chart. Usage is therefore accepted
(checked first: a bad body is still a 400) and, when the store is away, slow or its
queue is full, held here and written when it answers again (`usage_flush`), in
transactions of at most `FLUSH_ENTRIES` entries, each all or nothing.

The buffer is bounded by distinct keys, not by posts: counts are merged per (app,
environment, flag, hour, token scope), each variant name of a key costs one entry too,
and registrations keep the latest per (app, instance). Past `UsageBuffer.capacity`
entries new keys are dropped, counted (`flagcore_usage_buffer_dropped_*`) and logged at
most once a minute; counts for keys already held still add up.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

import attrs
from aiohttp import web

from flagcore.entities import ClientInstance, FlagMetrics
from flagcore.errors import ServiceUnavailable, StorageError
from flagcore.service import MAX_COUNT, CheckedReport, HeldCounts
from flagcore_http.calls import StoreWorker
from flagcore_http.keys import CONFIG, SERVICE, WORKER

__all__ = [
    "FLUSH_ENTRIES",
    "USAGE_BUFFER",
    "HeldUsage",
    "UsageBuffer",
    "hold_or_write",
    "usage_flush",
]

_log = logging.getLogger("flagcore_http")

_T = TypeVar("_T")

# What the store raises when it cannot take a write now: the database is away
# (StorageError) or the worker's queue is full (ServiceUnavailable).
_UNAVAILABLE = (StorageError, ServiceUnavailable)

# Seconds between flush attempts while the store is away: doubled after each failure.
_FIRST_RETRY_S = 0.25
_LAST_RETRY_S = 2.0
_DROP_LOG_INTERVAL_S = 60.0
# Entries one flush writes in its transaction: each is a read and an upsert, so this
# bounds how long a flush holds the store's write lock (1,000 buckets: 0.05 s on
# SQLite, 0.4-0.7 s on PostgreSQL over a local socket; docs/deploying.md, "Outages").
FLUSH_ENTRIES = 1000

_Key = tuple[str, str, str, dt.datetime, tuple[str, ...] | None]


def _add(a: int, b: int) -> int:
    return min(a + b, MAX_COUNT)


@attrs.define
class _Counts:
    yes: int = 0
    no: int = 0
    variants: dict[str, int] = attrs.field(factory=dict)


def _merged_instance(old: ClientInstance, new: ClientInstance) -> ClientInstance:
    """What the store keeps when ``new`` is saved over ``old`` (`save_client_instance`):
    fields ``new`` leaves empty keep ``old``'s value; it was seen last."""
    return ClientInstance(
        new.app_name,
        new.instance_id,
        new.environment or old.environment,
        new.sdk_version or old.sdk_version,
        new.strategies or old.strategies,
        new.started or old.started,
        new.interval if new.interval is not None else old.interval,
        new.last_seen,
    )


@attrs.frozen
class HeldUsage:
    """What one flush writes: merged counts and the latest of each instance."""

    counts: tuple[HeldCounts, ...]
    instances: tuple[tuple[ClientInstance, bool], ...]
    evaluations: int
    entries: int


class UsageBuffer:
    """The counts and instances held on this node, bounded by ``capacity`` entries."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._counts: dict[_Key, _Counts] = {}
        self._instances: dict[tuple[str, str], tuple[ClientInstance, bool]] = {}
        self._entries = 0
        self._evaluations = 0
        # What a flush under way took: still this node's to lose, so still counted and
        # shown (the capacity bounds what waits; a flush holds at most as much again).
        self._in_flight: HeldUsage | None = None
        self.dropped_evaluations = 0  # counts that found no room, since the start
        self.dropped_registrations = 0
        self.flushed_writes = 0  # flushes that reached the store
        self.failed_flushes = 0
        self.failing = False  # the last flush failed: the store is away
        self._logged_drops = (0, 0)
        self._drop_logged_at = -float("inf")
        self.woken = asyncio.Event()  # set when something is held: the flusher looks

    @property
    def entries(self) -> int:
        """Entries held (a flush under way included): one per counted key, per variant
        name of it, per instance."""
        return self._entries + (self._in_flight.entries if self._in_flight else 0)

    @property
    def evaluations(self) -> int:
        """Yes and no counts held, a flush under way included."""
        return self._evaluations + (self._in_flight.evaluations if self._in_flight else 0)

    @property
    def instances(self) -> int:
        """SDK instances held, a flush under way included."""
        return len(self._instances) + (len(self._in_flight.instances) if self._in_flight else 0)

    @property
    def holding(self) -> bool:
        """True while anything is held or being flushed: new usage joins it rather than
        trying the store first (it would only wait for the same outage)."""
        return self.entries > 0

    @property
    def waiting(self) -> bool:
        """Whether anything is held that no flush has taken yet."""
        return self._entries > 0

    def hold_report(
        self, report: CheckedReport, projects: Collection[str] | None, new_keys: int | None
    ) -> int:
        """Hold a checked metrics report; at most ``new_keys`` keys not held yet are made
        (None: no bound; the caller's row budget). Returns the keys made."""
        self.hold_instance(report.instance, create=new_keys != 0)
        made = 0
        if report.hour is not None:
            scope = None if projects is None or "*" in projects else tuple(sorted(projects))
            app, environment = report.instance.app_name, report.environment
            for name, yes, no, variants in report.counts:
                key = (app, environment, name, report.hour, scope)
                may_make = new_keys is None or made < new_keys
                made += self._hold_counts(key, yes, no, variants, may_make=may_make)
        self.woken.set()
        return made

    def hold_instance(self, instance: ClientInstance, *, create: bool) -> None:
        """Hold a registration or a seen instance; the latest wins, merged as the store
        merges it."""
        key = (instance.app_name, instance.instance_id)
        known = self._instances.get(key)
        if known is None:
            if not self._room(1):
                self.dropped_registrations += 1
                return
            self._entries += 1
            self._instances[key] = (instance, create)
        else:
            self._instances[key] = (_merged_instance(known[0], instance), known[1] or create)
        self.woken.set()

    def take(self, most: int = FLUSH_ENTRIES) -> HeldUsage:
        """At most ``most`` entries held (instances first), for one flush: `written` or
        `put_back` it after."""
        assert self._in_flight is None, "one flush at a time"
        instances: list[tuple[ClientInstance, bool]] = []
        counts: list[HeldCounts] = []
        entries = evaluations = 0
        while self._instances and entries < most:
            instances.append(self._instances.popitem()[1])
            entries += 1
        while self._counts and entries < most:
            (app, env, flag, hour, scope), c = self._counts.popitem()
            row = FlagMetrics(flag, app, env, hour, c.yes, c.no, c.variants)
            counts.append(HeldCounts(row, scope))
            entries += 1 + len(c.variants)
            evaluations = _add(evaluations, c.yes + c.no)
        held = HeldUsage(tuple(counts), tuple(instances), evaluations, entries)
        self._entries -= entries
        self._evaluations = max(0, self._evaluations - evaluations) if self._entries else 0
        self._in_flight = held
        return held

    def written(self) -> None:
        """The flush under way reached the store."""
        self._in_flight = None

    def put_back(self, held: HeldUsage) -> None:
        """Merge a flush that failed back in with what arrived meanwhile."""
        self._in_flight = None
        for instance, create in held.instances:
            self.hold_instance(instance, create=create)
        for item in held.counts:
            row = item.row
            key = (row.app_name, row.environment, row.flag, row.hour, item.projects)
            self._hold_counts(key, row.yes, row.no, row.variants, may_make=True)
        self.woken.set()

    def _hold_counts(
        self, key: _Key, yes: int, no: int, variants: Mapping[str, int], *, may_make: bool
    ) -> int:
        """Add one flag's counts under ``key``; 1 if the key was new, else 0."""
        held = self._counts.get(key)
        made = 0
        if held is None:
            if not may_make or not self._room(1 + len(variants)):
                self.dropped_evaluations = _add(self.dropped_evaluations, yes + no)
                return 0
            held = self._counts[key] = _Counts()
            self._entries += 1
            made = 1
        held.yes, held.no = _add(held.yes, yes), _add(held.no, no)
        self._evaluations = _add(self._evaluations, yes + no)
        for variant, count in variants.items():
            if variant not in held.variants:
                if not self._room(1):
                    continue  # the key's yes/no still count; this variant's share is lost
                self._entries += 1
            held.variants[variant] = _add(held.variants.get(variant, 0), count)
        return made

    def _room(self, entries: int) -> bool:
        # Only what waits counts: a flush under way, about to be written or put back,
        # holds at most as much again.
        return self._entries + entries <= self.capacity

    def log_drops(self, now: float) -> None:
        """Log what was dropped since the last line, at most once a minute."""
        dropped = (self.dropped_evaluations, self.dropped_registrations)
        if dropped == self._logged_drops or now - self._drop_logged_at < _DROP_LOG_INTERVAL_S:
            return
        evaluations = dropped[0] - self._logged_drops[0]
        registrations = dropped[1] - self._logged_drops[1]
        _log.warning(
            "usage buffer full (%d entries): dropped %d evaluation counts and %d "
            "registrations since the last report; raise FLAGCORE_USAGE_BUFFER_ENTRIES "
            "or bring the store back",
            self.capacity,
            evaluations,
            registrations,
        )
        self._logged_drops, self._drop_logged_at = dropped, now


USAGE_BUFFER = web.AppKey("usage_buffer", UsageBuffer)


async def hold_or_write(
    app: web.Application,
    write: Callable[[], _T],
    hold: Callable[[], None],
    written: Callable[[_T], None] = lambda _result: None,
) -> None:
    """Run ``write`` on the store worker, or ``hold`` the usage instead when the store
    cannot take it: while the buffer holds anything, when the queue is full, when the
    write fails for want of a store, or when it has not started within
    ``usage_write_wait`` seconds (it is then withdrawn from the queue and held; one
    already running is left to finish, and held if it fails). The caller answers its
    SDK as soon as this returns: usage never makes an SDK wait long or fail."""
    buffer, worker = app[USAGE_BUFFER], app[WORKER]
    if buffer.holding or (isinstance(worker, StoreWorker) and worker.full()):
        hold()
        return
    future: Future[_T] = worker.submit(write)
    waited = asyncio.wrap_future(future)
    try:
        result = await asyncio.wait_for(asyncio.shield(waited), app[CONFIG].usage_write_wait)
    except _UNAVAILABLE:
        hold()
        return
    except TimeoutError:
        if future.cancel():  # still queued: nothing was written
            hold()
        else:
            waited.add_done_callback(_settle_later(hold, written))
        return
    written(result)


def _settle_later(
    hold: Callable[[], None], written: Callable[[Any], None]
) -> Callable[[asyncio.Future[Any]], None]:
    """The callback that settles a write that outlived its wait: held if the store failed
    it, else reported as written."""

    def settle(done: asyncio.Future[Any]) -> None:
        if done.cancelled():
            hold()
            return
        error = done.exception()
        if error is None:
            written(done.result())
        elif isinstance(error, _UNAVAILABLE):
            hold()
        else:
            _log.error("an SDK usage write failed after its answer", exc_info=error)

    return settle


async def usage_flush(app: web.Application) -> AsyncIterator[None]:
    """A cleanup context: while the app runs, what is held is written whenever there is
    any (retrying with backoff while the store is away); at a clean stop, one last
    flush, or a log line saying what is dropped. A flush under way is never cancelled:
    its outcome decides whether its counts are held again, so none is written twice."""
    buffer = app[USAGE_BUFFER]
    stop = asyncio.Event()
    task = asyncio.create_task(_flush_loop(app, buffer, stop))
    yield
    stop.set()
    buffer.woken.set()
    await task
    while buffer.waiting:
        if not await _flush_once(app, buffer):
            _log.warning(
                "stopping with the store unavailable: dropping %d held evaluation counts "
                "and %d held registrations",
                buffer.evaluations,
                buffer.instances,
            )
            break
    buffer.log_drops(float("inf"))


async def _flush_loop(app: web.Application, buffer: UsageBuffer, stop: asyncio.Event) -> None:
    retry = _FIRST_RETRY_S
    while not stop.is_set():
        if not buffer.waiting:
            buffer.woken.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(buffer.woken.wait(), _LAST_RETRY_S)
            buffer.log_drops(time.monotonic())
            continue
        buffer.log_drops(time.monotonic())
        if await _flush_once(app, buffer):
            retry = _FIRST_RETRY_S
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), retry)
        retry = min(retry * 2, _LAST_RETRY_S)


async def _flush_once(app: web.Application, buffer: UsageBuffer) -> bool:
    """Write up to `FLUSH_ENTRIES` held entries in one unit of work; on failure put them
    back. True if written."""
    held = buffer.take()
    record = app[SERVICE].metrics.record_held
    try:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(app[WORKER], record, held.counts, held.instances)
    except _UNAVAILABLE as error:
        buffer.put_back(held)
        buffer.failed_flushes += 1
        if not buffer.failing:
            _log.warning("holding SDK usage in memory, the store is unavailable: %s", error)
        buffer.failing = True
        return False
    except Exception:  # a bug, not an outage: kept, said loudly, tried again later
        buffer.put_back(held)
        buffer.failed_flushes += 1
        _log.exception("could not write held SDK usage")
        return False
    buffer.written()
    buffer.failing = False
    buffer.flushed_writes += 1
    _log.info(
        "wrote held SDK usage: %d buckets (%d evaluation counts) and %d instances",
        len(held.counts),
        held.evaluations,
        len(held.instances),
    )
    return True
