"""SDK usage (metrics and registrations), written behind the request in merged batches.

A metrics post or a registration is checked on the loop (a bad body is still a 400),
held here and answered at once; `usage_flush` writes what is held every
``usage_flush_interval`` seconds, or as soon as `FLUSH_ENTRIES` entries wait, in one
transaction of at most `FLUSH_ENTRIES` entries, all or nothing. So a flood of posts costs
its parsing and a dict update each, not a store transaction each (Unleash too counts in
memory and bulk-writes on a timer). Readers of usage on this node call
`flush_usage` first, so what an SDK posted is seen right after (read-your-writes).

The same buffer carries usage through an outage: official SDKs do not send a metrics
bucket again after a failed post, so while the store is away what is held stays here and
the flush retries with a backoff until it answers.

The buffer is bounded by distinct keys, not by posts: counts are merged per (app,
environment, flag, hour, token scope), each variant name of a key costs one entry too,
and registrations keep the latest per (app, instance). Past `UsageBuffer.capacity`
entries new keys are dropped, counted (`flagcore_usage_buffer_dropped_*`) and logged at
most once a minute; counts for keys already held still add up.

The callers' row budgets (`rate_limits.metrics_row_budget`) are spent on the keys a post
adds that are neither held nor known to be stored: the buffer remembers the keys its
flushes wrote (`STORED_KEYS_REMEMBERED` of them, as salted hashes), so a legitimate SDK
posting the same flags every minute spends its budget once an hour, not once a flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection, Hashable, Mapping

import attrs
from aiohttp import web

from flagcore.entities import ClientInstance, FlagMetrics
from flagcore.errors import ServiceUnavailable, StorageError
from flagcore.service import MAX_COUNT, CheckedReport, HeldCounts
from flagcore_http.keys import CONFIG, SERVICE, WORKER

__all__ = [
    "FLUSH_ENTRIES",
    "STORED_KEYS_REMEMBERED",
    "USAGE_BUFFER",
    "HeldReport",
    "HeldUsage",
    "UsageBuffer",
    "flush_usage",
    "usage_flush",
]

_log = logging.getLogger("flagcore_http")

# What the store raises when it cannot take a write now: the database is away
# (StorageError) or the worker's queue is full (ServiceUnavailable).
_UNAVAILABLE = (StorageError, ServiceUnavailable)

# Seconds between flush attempts while the store is away: doubled after each failure.
_FIRST_RETRY_S = 0.25
_LAST_RETRY_S = 2.0
_DROP_LOG_INTERVAL_S = 60.0
# Past the flush interval, how long usage may wait (a flush under way) before the node
# says it is behind.
_GRACE_S = 2.0
# Entries one flush writes in its transaction: each is a read and an upsert, so this
# bounds how long a flush holds the store's write lock (1,000 buckets: 0.05 s on
# SQLite, 0.4-0.7 s on PostgreSQL over a local socket; docs/deploying.md, "Outages").
FLUSH_ENTRIES = 1000
# Keys (buckets and instances) the buffer remembers its flushes wrote, so that counts
# for them spend no row budget: 140 bytes each (a salted hash in an ordered dict; 14 MB
# for all, measured with tracemalloc), the oldest forgotten first (then a post for it
# spends its budget once more).
STORED_KEYS_REMEMBERED = 100_000

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


class _StoredKeys:
    """A bounded set of keys known to be stored, oldest forgotten first. Only ``hash()``
    of a key is kept (salted per process for strings, so a sender cannot aim at a
    collision; one would only spare a row its budget)."""

    def __init__(self, most: int) -> None:
        self._most = most
        self._hashes: OrderedDict[int, None] = OrderedDict()

    def __contains__(self, key: Hashable) -> bool:
        return hash(key) in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)

    def add(self, key: Hashable) -> None:
        digest = hash(key)
        self._hashes[digest] = None
        self._hashes.move_to_end(digest)
        if len(self._hashes) > self._most:
            self._hashes.popitem(last=False)


@attrs.frozen
class HeldReport:
    """What holding one metrics report did: ``made`` keys (instance and buckets) that
    were neither held nor known to be stored, for the caller's row budget, and
    ``over_budget`` buckets left out because the budget was spent."""

    made: int
    over_budget: int


@attrs.frozen
class HeldUsage:
    """What one flush writes: merged counts and the latest of each instance."""

    counts: tuple[HeldCounts, ...]
    instances: tuple[tuple[ClientInstance, bool], ...]
    evaluations: int
    entries: int


class UsageBuffer:
    """The counts and instances held on this node, bounded by ``capacity`` entries."""

    def __init__(
        self,
        capacity: int,
        *,
        flush_interval: float = 1.0,
        remembered: int = STORED_KEYS_REMEMBERED,
    ) -> None:
        self.capacity = capacity
        self.flush_interval = flush_interval
        self._waiting_since: float | None = None  # when what waits first arrived
        self._stored = _StoredKeys(remembered)
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
        # Set when a batch's worth waits (or someone wants it written now): the flusher
        # stops waiting for its interval.
        self.batch_ready = asyncio.Event()
        self.flush_under_way: asyncio.Future[bool] | None = None

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
        """True while anything is held or being flushed."""
        return self.entries > 0

    @property
    def behind(self) -> bool:
        """Whether usage waits longer than the flush interval allows (the store is away,
        or slower than SDKs post): what `/ready` and ``flagcore_usage_buffering`` show.
        Usage held for the next regular flush is not behind."""
        if self.failing:
            return True
        since = self._waiting_since
        return since is not None and time.monotonic() - since > self.flush_interval + _GRACE_S

    @property
    def waiting(self) -> bool:
        """Whether anything is held that no flush has taken yet."""
        return self._entries > 0

    @property
    def batch_full(self) -> bool:
        """Whether a whole flush's worth waits."""
        return self._entries >= FLUSH_ENTRIES

    def hold_report(
        self, report: CheckedReport, projects: Collection[str] | None, new_keys: int | None
    ) -> HeldReport:
        """Hold a checked metrics report; at most ``new_keys`` keys neither held nor known
        to be stored are made (None: no bound; the caller's row budget)."""
        made = int(self.hold_instance(report.instance, create=new_keys != 0))
        over_budget = 0
        if report.hour is not None:
            scope = None if projects is None or "*" in projects else tuple(sorted(projects))
            app, environment = report.instance.app_name, report.environment
            for name, yes, no, variants in report.counts:
                key = (app, environment, name, report.hour, scope)
                if (app, environment, name, report.hour) in self._stored:
                    self._hold_counts(key, yes, no, variants, may_make=True)
                elif key in self._counts or new_keys is None or made < new_keys:
                    made += self._hold_counts(key, yes, no, variants, may_make=True)
                else:  # a new row past the budget: not counted as a buffer drop
                    over_budget += 1
        self._woken()
        return HeldReport(made, over_budget)

    def hold_instance(self, instance: ClientInstance, *, create: bool) -> bool:
        """Hold a registration or a seen instance; the latest wins, merged as the store
        merges it. True if it may make a row not known to be stored (the caller's
        budget); with ``create`` False it is written only over an instance the store
        has (the caller's budget is spent)."""
        key = (instance.app_name, instance.instance_id)
        known = self._instances.get(key)
        stored = key in self._stored
        if known is not None:
            merged = _merged_instance(known[0], instance)
            self._instances[key] = (merged, known[1] or create or stored)
        elif self._room(1):
            self._entries += 1
            self._instances[key] = (instance, create or stored)
        else:
            self.dropped_registrations += 1
            self.log_drops(time.monotonic())
            return False
        self._woken()
        return known is None and create and not stored

    def _woken(self) -> None:
        if self._waiting_since is None:
            self._waiting_since = time.monotonic()
        self.woken.set()
        if self.batch_full:
            self.batch_ready.set()

    def take(self, most: int = FLUSH_ENTRIES) -> HeldUsage:
        """At most ``most`` entries held (instances first), for one flush: `written` or
        `put_back` it after."""
        assert self._in_flight is None, "one flush at a time"
        self.batch_ready.clear()
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
        """The flush under way reached the store: its keys are known to be stored."""
        held, self._in_flight = self._in_flight, None
        self._waiting_since = time.monotonic() if self._entries else None
        if held is None:
            return
        for instance, create in held.instances:
            if create:
                self._stored.add((instance.app_name, instance.instance_id))
        for item in held.counts:
            row = item.row
            self._stored.add((row.app_name, row.environment, row.flag, row.hour))

    def put_back(self, held: HeldUsage) -> None:
        """Merge a flush that failed back in with what arrived meanwhile."""
        self._in_flight = None
        for instance, create in held.instances:
            self.hold_instance(instance, create=create)
        for item in held.counts:
            row = item.row
            key = (row.app_name, row.environment, row.flag, row.hour, item.projects)
            self._hold_counts(key, row.yes, row.no, row.variants, may_make=True)
        self._woken()

    def _hold_counts(
        self, key: _Key, yes: int, no: int, variants: Mapping[str, int], *, may_make: bool
    ) -> int:
        """Add one flag's counts under ``key``; 1 if the key was new, else 0."""
        held = self._counts.get(key)
        made = 0
        if held is None:
            if not may_make or not self._room(1 + len(variants)):
                self.dropped_evaluations = _add(self.dropped_evaluations, yes + no)
                self.log_drops(time.monotonic())
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


async def flush_usage(app: web.Application) -> None:
    """Write what this node holds before a reader reads usage (read-your-writes): returns
    when what was held at the call is written, or at once while the store is away (the
    reader then sees the store as it is; the flusher keeps retrying). A flush under way
    is awaited, not started twice; a reader that goes away leaves it running."""
    buffer = app[USAGE_BUFFER]
    rounds = buffer.entries // FLUSH_ENTRIES + 2  # a flood arriving meanwhile waits its turn
    while rounds and buffer.holding and not buffer.failing:
        rounds -= 1
        if not await asyncio.shield(_flush_shared(app, buffer)):
            return


def _flush_shared(app: web.Application, buffer: UsageBuffer) -> asyncio.Future[bool]:
    """The flush under way, or a new one: one at a time, whoever asks."""
    running = buffer.flush_under_way
    if running is None or running.done():
        running = buffer.flush_under_way = asyncio.ensure_future(_flush_once(app, buffer))
    return running


async def usage_flush(app: web.Application) -> AsyncIterator[None]:
    """A cleanup context: while the app runs, what is held is written every
    ``usage_flush_interval`` seconds or as soon as a batch's worth waits (retrying with
    backoff while the store is away); at a clean stop, one last flush, or a log line
    saying what is dropped. A flush under way is never cancelled: its outcome decides
    whether its counts are held again, so none is written twice."""
    buffer = app[USAGE_BUFFER]
    stop = asyncio.Event()
    task = asyncio.create_task(_flush_loop(app, buffer, stop))
    yield
    stop.set()
    buffer.woken.set()
    buffer.batch_ready.set()
    await task
    while buffer.holding:
        if not await asyncio.shield(_flush_shared(app, buffer)):
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
    interval = app[CONFIG].usage_flush_interval
    while not stop.is_set():
        if not buffer.waiting:
            buffer.woken.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(buffer.woken.wait(), _LAST_RETRY_S)
            buffer.log_drops(time.monotonic())
            continue
        buffer.log_drops(time.monotonic())
        if not buffer.failing and not buffer.batch_full and interval > 0:
            # Let posts gather, so that one transaction writes them all.
            buffer.batch_ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(buffer.batch_ready.wait(), interval)
        if await asyncio.shield(_flush_shared(app, buffer)):
            retry = _FIRST_RETRY_S
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), retry)
        retry = min(retry * 2, _LAST_RETRY_S)


async def _flush_once(app: web.Application, buffer: UsageBuffer) -> bool:
    """Write up to `FLUSH_ENTRIES` held entries in one unit of work; on failure put them
    back. True if written (or nothing waited)."""
    if not buffer.waiting:
        return True
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
    log = _log.info if buffer.failing else _log.debug  # said when an outage ends
    buffer.failing = False
    buffer.flushed_writes += 1
    log(
        "wrote held SDK usage: %d buckets (%d evaluation counts) and %d instances",
        len(held.counts),
        held.evaluations,
        len(held.instances),
    )
    return True
