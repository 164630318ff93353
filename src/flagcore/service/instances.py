"""SDK instances: registrations, and the instances seen polling.

Written by SDK traffic, so every field is checked and bounded, and writes do not move
the in-process engines (no SDK sees an instance). Retention
(`flagcore.service.retention`) deletes instances not seen for a while.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from flagcore.entities import ClientInstance
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.limits import enforce
from flagcore.service.context import ServiceContext
from flagcore.wire import INT32_MAX

__all__ = ["ClientInstances", "reported_text"]


def reported_text(value: Any, path: str, maximum: int, *, required: bool = False) -> str | None:
    """A string field an SDK sent: a string (non-empty if ``required``) of at most
    ``maximum`` characters, else `InvalidInput` at ``path``."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        what = "a non-empty string" if required else "a string"
        raise InvalidInput(f"{path} must be {what}", [ErrorDetail(what, path)])
    if len(value) > maximum:
        raise InvalidInput(
            f"{path} is longer than {maximum} characters",
            [ErrorDetail(f"at most {maximum} characters", path)],
        )
    return value


class ClientInstances:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def checked_instance(
        self,
        app_name: Any,
        instance_id: Any,
        *,
        environment: str | None = None,
        sdk_version: Any = None,
        strategies: Sequence[Any] = (),
        started: dt.datetime | None = None,
        interval: int | None = None,
    ) -> ClientInstance:
        """The instance an SDK reported, every field it sent checked and bounded
        (registrations and metrics posts alike), seen now."""
        maximum = self._context.limits.client_field_length
        enforce(
            self._context.limits,
            "client_strategies_reported",
            len(strategies),
            "strategies",
            "$.strategies",
        )
        if interval is not None and (type(interval) is not int or not 0 <= interval <= INT32_MAX):
            # Kept in an SQL integer column, 32-bit in PostgreSQL.
            raise InvalidInput(
                f"$.interval must be a whole number from 0 to {INT32_MAX}",
                [ErrorDetail(f"a whole number from 0 to {INT32_MAX}", "$.interval")],
            )
        return ClientInstance(
            reported_text(app_name, "$.appName", maximum, required=True) or "",
            reported_text(instance_id, "$.instanceId", maximum, required=True) or "",
            environment,
            reported_text(sdk_version, "$.sdkVersion", maximum),
            tuple(
                reported_text(name, f"$.strategies[{i}]", maximum, required=True) or ""
                for i, name in enumerate(strategies)
            ),
            started,
            interval,
            self._context.clock(),
        )

    def register_client(
        self,
        app_name: str,
        instance_id: str,
        *,
        environment: str | None = None,
        sdk_version: str | None = None,
        strategies: Sequence[str] = (),
        started: dt.datetime | None = None,
        interval: int | None = None,
        create: bool = True,
    ) -> bool:
        """Save what an SDK says of itself; True if the instance was new. With ``create``
        False (the caller's budget of new rows is spent) only a known instance is
        updated."""
        instance = self.checked_instance(
            app_name,
            instance_id,
            environment=environment,
            sdk_version=sdk_version,
            strategies=strategies,
            started=started,
            interval=interval,
        )
        return self.save_instance(instance, create=create)

    def save_instance(self, instance: ClientInstance, *, create: bool = True) -> bool:
        """Save an instance `checked_instance` made; True if it was new (see
        `register_client`). The HTTP layer checks first, so a bad registration is a 400
        even while the store is away."""
        # Not a change SDKs see: written without moving the in-process engines.
        with self._context.store.transaction() as tx:
            return tx.save_client_instance(instance, create=create)

    def note_client_instances(self, instances: Iterable[ClientInstance]) -> int:
        """Save several instances seen polling, in one transaction (the server batches them)."""
        count = 0
        with self._context.store.transaction() as tx:
            for instance in instances:
                tx.save_client_instance(instance)
                count += 1
        return count

    def client_instances(self) -> list[ClientInstance]:
        with self._context.read() as tx:
            return list(tx.list_client_instances())
