"""What the server asks of the store itself rather than of its data: the revision, the
capabilities a store may declare (`flagcore.ports.RevisionFeed`,
`flagcore.ports.ReportsAvailability`), and one cheap read that proves it answers.

The HTTP layer reaches storage only through the `flagcore.service.Service`; this part is
how it watches the store without holding it.
"""

from __future__ import annotations

from collections.abc import Callable

from flagcore.ports import ReportsAvailability, RevisionFeed
from flagcore.service.context import ServiceContext

__all__ = ["Storage"]


class Storage:
    """The store as the server watches it."""

    def __init__(self, context: ServiceContext) -> None:
        self._context = context
        store = context.store
        # Asked on every SDK request: the store's own method, not a call wrapped around it.
        self.revision: Callable[[], int] = store.revision
        self._availability = store if isinstance(store, ReportsAvailability) else None
        self.reports_availability = self._availability is not None

    def available(self) -> bool:
        """Whether the database answers now (a store that does not say: always)."""
        return self._availability is None or self._availability.available

    def on_revision(self, callback: Callable[[int], None]) -> bool:
        """Have ``callback(revision)`` called when the store learns of a newer revision by
        itself; False (and nothing registered) when the store has no such feed."""
        store = self._context.store
        if not isinstance(store, RevisionFeed):
            return False
        store.on_revision(callback)
        return True

    def check(self) -> None:
        """One cheap read that reaches the database (``revision()`` may answer from
        memory): the environments, a handful of rows. Raises the store's error if down."""
        with self._context.read() as tx:
            tx.list_environments()
