"""The event log as the outbox of integrations: what each integration is owed, who
sends it, and what was sent.

Each integration has a cursor (the last event it was sent or gave up on) and a lease (the
node sending for it, until when). A node takes the lease in a write transaction, which
both stores serialise (SQLite's one writer, PostgreSQL's write lock), so two nodes never
hold it at once; the node then sends the events after the cursor in the log's order, and
moves the cursor past each only once the receiver answered (or it was given up, which
the delivery log records). A node killed mid-delivery leaves the cursor where it was:
once its lease runs out another node (or it, restarted) sends that event again, with the
same ``webhook-id``, so a receiver can drop the repeat.
"""

from __future__ import annotations

import datetime as dt

import attrs

from flagcore.entities import Event, Integration, IntegrationCursor, IntegrationDelivery
from flagcore.errors import NotFound
from flagcore.ports import EventLog, Records
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import (
    EVENTS,
    INTEGRATION_CURSORS,
    INTEGRATION_DELIVERIES,
    INTEGRATIONS,
    Below,
)

__all__ = [
    "DELIVERY_LOG_KEPT",
    "IntegrationOutbox",
    "LeasedEvents",
    "OutboxBounds",
    "ResendWork",
    "matches",
]

DELIVERY_LOG_KEPT = 1_000
"""Deliveries kept per integration; older ones are deleted as new ones are written."""

_WINDOWS_PER_LEASE = 20  # id windows scanned past gaps (retention) in one transaction


@attrs.frozen
class OutboxBounds:
    """How much one lease hands out, and how far behind an integration may fall."""

    batch: int = 50
    pending_cap: int = 1_000


@attrs.frozen
class LeasedEvents:
    """What a node holding an integration's lease sends next, in the log's order (only
    events the integration is sent: the others were passed over in the same unit)."""

    integration: Integration
    events: tuple[Event, ...]


@attrs.frozen
class ResendWork:
    """A logged delivery to send again: the integration and the event as now stored."""

    delivery: IntegrationDelivery
    integration: Integration
    event: Event


def matches(integration: Integration, event: Event) -> bool:
    """Unleash's addon filter: the event type chosen, and the project and environment
    among those chosen (none chosen, or ``*``: all; an event without one passes)."""
    if event.type not in integration.events:
        return False
    projects, environments = integration.projects, integration.environments
    if event.project and projects and projects[0] != "*" and event.project not in projects:
        return False
    return not (
        event.environment
        and environments
        and environments[0] != "*"
        and event.environment not in environments
    )


def _newest_event_id(tx: EventLog) -> int:
    newest = tx.list_events(limit=1)
    return newest[0].id if newest else 0


def _events_after(tx: Records, after: int, newest: int, batch: int) -> tuple[list[Event], int]:
    """Up to ``batch`` events after id ``after``, oldest first, and the id scanned up to.
    Ids may have gaps (retention, rolled-back writes): empty windows are skipped."""
    scanned = after
    for _ in range(_WINDOWS_PER_LEASE):
        if scanned >= newest:
            break
        top = min(scanned + batch, newest)
        window = tx.list_records(EVENTS, {"id": Below(top + 1)}, limit=batch)
        found = sorted((e for e in window if e.id > scanned), key=lambda e: e.id)
        if found:
            return found, top
        scanned = top
    return [], scanned


class IntegrationOutbox:
    def __init__(self, context: ServiceContext, bounds: OutboxBounds | None = None) -> None:
        self._context = context
        self.bounds = bounds or OutboxBounds()

    # --- reads ---
    def integrations_due(self, holder: str) -> list[int]:
        """Enabled integrations behind the newest event whose lease is free, run out, or
        ``holder``'s: one cheap read a node makes before taking any lease."""
        now = self._context.clock()
        with self._context.read() as tx:
            newest = _newest_event_id(tx)
            cursors = {c.integration_id: c for c in tx.list_records(INTEGRATION_CURSORS)}
            due = []
            for integration in tx.list_records(INTEGRATIONS):
                cursor = cursors.get(integration.id)
                if not integration.enabled or cursor is None or cursor.event_id >= newest:
                    continue
                if _free_for(cursor, holder, now):
                    due.append(integration.id)
            return due

    def any_integration_enabled(self) -> bool:
        """Whether any integration is on: a node with none skips the outbox entirely."""
        with self._context.read() as tx:
            return any(i.enabled for i in tx.list_records(INTEGRATIONS))

    def list_integration_deliveries(
        self, integration_id: int, *, limit: int = 50, before_id: int | None = None
    ) -> list[IntegrationDelivery]:
        """The newest deliveries first (``before_id``: those older than it)."""
        with self._context.read() as tx:
            if tx.get_record(INTEGRATIONS, integration_id) is None:
                raise NotFound(f"Could not find addon with id {integration_id}")
            where: dict[str, object] = {"integration_id": integration_id}
            if before_id is not None:
                where["id"] = Below(before_id)
            return list(tx.list_records(INTEGRATION_DELIVERIES, where, limit=limit))

    def delivery_to_resend(
        self, integration_id: int, delivery_id: int, *, actor: Actor = SYSTEM
    ) -> ResendWork:
        """A logged delivery with its integration and event, or `NotFound` (the event may
        have been pruned by retention since). Asked before sending again, so a person who
        may not update integrations is refused before anything is sent."""
        authorize(actor, "delivery_to_resend")
        with self._context.read() as tx:
            delivery = tx.get_record(INTEGRATION_DELIVERIES, delivery_id)
            integration = tx.get_record(INTEGRATIONS, integration_id)
            if delivery is None or integration is None or delivery.integration_id != integration_id:
                raise NotFound(f"Could not find delivery {delivery_id} of addon {integration_id}")
            event = tx.get_record(EVENTS, delivery.event_id)
            if event is None or delivery.state == "overflow":
                raise NotFound(f"the event of delivery {delivery_id} is no longer kept")
            return ResendWork(delivery, integration, event)

    # --- the lease and the cursor (the server's own upkeep: actor SYSTEM) ---
    def lease_integration(
        self, integration_id: int, holder: str, lease: dt.timedelta, *, actor: Actor = SYSTEM
    ) -> LeasedEvents | None:
        """Take (or renew) the lease of an integration and hand out what it is owed next;
        None if another node holds it or it is off. Events it is not sent are passed in
        the same unit, and past `OutboxBounds.pending_cap` owed events the oldest are
        skipped, logged as one ``overflow`` delivery."""
        authorize(actor, "lease_integration")
        now = self._context.clock()
        with self._context.unit() as tx:
            integration = tx.get_record(INTEGRATIONS, integration_id)
            cursor = tx.get_record(INTEGRATION_CURSORS, integration_id)
            if integration is None or cursor is None or not integration.enabled:
                return None
            if not _free_for(cursor, holder, now):
                return None
            after = cursor.event_id
            newest = _newest_event_id(tx)
            cap = self.bounds.pending_cap
            if newest - after > cap:
                skipped_to = newest - cap
                self._log(
                    tx,
                    IntegrationDelivery(
                        0,
                        integration_id,
                        skipped_to,
                        "",
                        "overflow",
                        0,
                        None,
                        f"events {after + 1} to {skipped_to} skipped: more than {cap} were owed",
                        now,
                    ),
                )
                after = skipped_to
            found, scanned = _events_after(tx, after, newest, self.bounds.batch)
            sent = tuple(e for e in found if matches(integration, e))
            # Passed over up to the first event it is sent (all of the window if none).
            passed = sent[0].id - 1 if sent else (found[-1].id if found else scanned)
            tx.save_record(
                INTEGRATION_CURSORS,
                IntegrationCursor(integration_id, max(after, passed), holder, now + lease),
            )
            return LeasedEvents(integration, sent)

    def renew_integration_lease(
        self, integration_id: int, holder: str, lease: dt.timedelta, *, actor: Actor = SYSTEM
    ) -> bool:
        """Extend ``holder``'s lease (before each attempt); False if it was lost."""
        authorize(actor, "renew_integration_lease")
        now = self._context.clock()
        with self._context.unit() as tx:
            cursor = tx.get_record(INTEGRATION_CURSORS, integration_id)
            if cursor is None or cursor.holder != holder:
                return False
            tx.save_record(INTEGRATION_CURSORS, attrs.evolve(cursor, lease_until=now + lease))
            return True

    def release_integration_lease(
        self, integration_id: int, holder: str, *, actor: Actor = SYSTEM
    ) -> None:
        """Give the lease up (a node stopping): another node may send at once."""
        authorize(actor, "release_integration_lease")
        with self._context.unit() as tx:
            cursor = tx.get_record(INTEGRATION_CURSORS, integration_id)
            if cursor is not None and cursor.holder == holder:
                tx.save_record(
                    INTEGRATION_CURSORS, attrs.evolve(cursor, holder=None, lease_until=None)
                )

    def record_integration_delivery(
        self,
        holder: str,
        delivery: IntegrationDelivery,
        events_passed: tuple[Event, ...] = (),
        *,
        actor: Actor = SYSTEM,
    ) -> bool:
        """Log a delivery answered (or given up) and move the cursor past its event, if
        ``holder`` still holds the lease; False (nothing written) if it was lost."""
        authorize(actor, "record_integration_delivery")
        with self._context.unit() as tx:
            cursor = tx.get_record(INTEGRATION_CURSORS, delivery.integration_id)
            if cursor is None or cursor.holder != holder:
                return False
            if delivery.event_id > cursor.event_id:
                tx.save_record(
                    INTEGRATION_CURSORS, attrs.evolve(cursor, event_id=delivery.event_id)
                )
            self._log(tx, attrs.evolve(delivery, created_at=self._context.clock()))
            return True

    def record_integration_resend(
        self, delivery: IntegrationDelivery, *, actor: Actor = SYSTEM
    ) -> IntegrationDelivery:
        """Log a delivery sent again by hand (a new entry: the old one stays as it was)."""
        authorize(actor, "record_integration_resend")
        with self._context.unit() as tx:
            if tx.get_record(INTEGRATIONS, delivery.integration_id) is None:
                raise NotFound(f"Could not find addon with id {delivery.integration_id}")
            return self._log(tx, attrs.evolve(delivery, created_at=self._context.clock()))

    @staticmethod
    def _log(tx: Records, delivery: IntegrationDelivery) -> IntegrationDelivery:
        made = tx.create_record(INTEGRATION_DELIVERIES, delivery)
        if made.id % 100 == 0:  # now and then, the oldest past the bound go
            old = tx.list_records(
                INTEGRATION_DELIVERIES,
                {"integration_id": delivery.integration_id},
                limit=500,
                offset=DELIVERY_LOG_KEPT,
            )
            for gone in old:
                tx.delete_record(INTEGRATION_DELIVERIES, gone.id)
        return made


def _free_for(cursor: IntegrationCursor, holder: str, now: dt.datetime) -> bool:
    return (
        cursor.holder is None
        or cursor.holder == holder
        or cursor.lease_until is None
        or cursor.lease_until <= now
    )
