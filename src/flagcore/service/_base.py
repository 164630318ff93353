"""What every area of the service shares: the store, the limits, the clock, and the unit of work."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from flagcore.entities import Event, FlagDefinition
from flagcore.errors import NotFound
from flagcore.limits import Limits
from flagcore.ports import Store, Transaction

__all__ = ["SYSTEM", "ServiceBase"]

SYSTEM = "system"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ServiceBase:
    def __init__(
        self,
        store: Store,
        *,
        limits: Limits | None = None,
        clock: Callable[[], dt.datetime] = _utc_now,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.clock = clock
        # Bumped by every write through this service, so in-process readers see it at once.
        self.local_writes = 0

    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> list[Event]:
        """The change log, newest first."""
        with self._read() as tx:
            return list(tx.list_events(limit=limit, before_id=before_id, feature_name=feature_name))

    @contextmanager
    def _unit(self) -> Iterator[Transaction]:
        """One use case: every read and write inside commits together, or none does."""
        with self.store.transaction() as tx:
            yield tx
        self.local_writes += 1

    @contextmanager
    def _read(self) -> Iterator[Transaction]:
        with self.store.transaction(write=False) as tx:
            yield tx

    @staticmethod
    def _active_flag(tx: Transaction, project: str | None, name: str) -> FlagDefinition:
        flag = tx.get_flag(name)
        # A typo in a project name should say so, not look like a missing flag.
        misplaced = project is not None and (flag is None or flag.project != project)
        if misplaced and project is not None and tx.get_project(project) is None:
            raise NotFound(f'there is no project "{project}"')
        if flag is None or flag.archived:
            where = f' in project "{project}"' if project else ""
            raise NotFound(f'there is no active flag named "{name}"{where}')
        if project is not None and flag.project != project:
            raise NotFound(
                f'there is no flag named "{name}" in project "{project}" '
                f'(it is in project "{flag.project}")'
            )
        return flag

    @staticmethod
    def _event(
        tx: Transaction,
        type: str,
        actor: str,
        *,
        flag: FlagDefinition | None = None,
        environment: str | None = None,
        project: str | None = None,
        data: Any = None,
        pre_data: Any = None,
    ) -> None:
        tx.append_event(
            type,
            actor,
            feature_name=flag.name if flag else None,
            project=flag.project if flag else project,
            environment=environment,
            data=data,
            pre_data=pre_data,
        )
