"""What every part of the service shares: the store, the limits, the clock, the unit of
work, and the event writer.

`ServiceContext` is handed to each part in its ``__init__``; no part reaches the store
any other way, so every write of every part goes through `ServiceContext.unit` and moves
`ServiceContext.local_writes` (what in-process readers watch to see a write at once).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flagcore.entities import FlagDefinition
from flagcore.errors import Forbidden
from flagcore.limits import Limits
from flagcore.permissions import OPERATIONS
from flagcore.ports import EventLog, Store, Transaction
from flagcore.principals import Principal
from flagcore.wire.answer_table import write_answer
from flagcore.wire.event_data import EventData

__all__ = ["SYSTEM", "Actor", "ServiceContext", "authorize", "utc_now"]

SYSTEM = "system"

Actor = str | Principal
"""Who a write is for. A plain string is an in-process caller the embedding program
trusts (tests, the CLI, the server's own upkeep): it acts as Admin and is logged as
given. A `Principal` (what the HTTP layer resolves) is checked against
`flagcore.permissions.OPERATIONS`."""


def authorize(
    actor: Actor, operation: str, *, project: str | None = None, environment: str | None = None
) -> str:
    """The event log's name for ``actor``, once it may do ``operation``; else `Forbidden`.

    Called first thing in each write, so a refusal writes nothing and records no event."""
    if isinstance(actor, str):
        return actor
    permission = OPERATIONS[operation]
    if actor.may(permission, project=project, environment=environment):
        return actor.actor
    where = f" in project '{project}'" if project is not None else ""
    if environment is not None:
        where += f", environment '{environment}'"
    raise Forbidden(f"You need permission {permission}{where} to do this.")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ServiceContext:
    """The store a `flagcore.service.Service` works on, with its limits and clock.

    One per service: its parts share it, so they share one count of local writes.
    """

    def __init__(
        self,
        store: Store,
        *,
        limits: Limits | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.clock = clock
        # Bumped by every write through this service, so in-process readers see it at once.
        self.local_writes = 0

    @contextmanager
    def unit(self) -> Iterator[Transaction]:
        """One use case: every read and write inside commits together, or none does."""
        with self.store.transaction() as tx:
            yield tx
        self.local_writes += 1

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        """A read-only transaction: one consistent view, no write, no bump."""
        with self.store.transaction(write=False) as tx:
            yield tx

    @staticmethod
    def record_event(
        tx: EventLog,
        type: str,
        actor: str,
        *,
        flag: FlagDefinition | None = None,
        environment: str | None = None,
        project: str | None = None,
        data: EventData | None = None,
        pre_data: EventData | None = None,
    ) -> None:
        """Append the event of a change in the change's own transaction (a flag's event
        carries the flag's project). ``data`` and ``pre_data`` are typed values of
        `flagcore.wire.event_data`, kept as the JSON their rows write."""
        tx.append_event(
            type,
            actor,
            feature_name=flag.name if flag else None,
            project=flag.project if flag else project,
            environment=environment,
            data=None if data is None else write_answer(data),
            pre_data=None if pre_data is None else write_answer(pre_data),
        )
