"""What SDKs report: registrations and evaluation counts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from flagcore.entities import ClientInstance, FlagMetrics
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.service._base import ServiceBase

__all__ = ["MetricsMixin"]


def _count(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(
            f"{path} must be a whole number of at least 0", [ErrorDetail("a count >= 0", path)]
        )
    return value


class MetricsMixin(ServiceBase):
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
    ) -> ClientInstance:
        instance = ClientInstance(
            app_name,
            instance_id,
            environment,
            sdk_version,
            tuple(strategies),
            started,
            interval,
            self.clock(),
        )
        # Not a change SDKs see: written without moving the in-process engines.
        with self.store.transaction() as tx:
            tx.save_client_instance(instance)
        return instance

    def record_metrics(
        self,
        app_name: str,
        instance_id: str,
        environment: str,
        start: dt.datetime,
        toggles: Mapping[str, Mapping[str, Any]],
    ) -> int:
        """Add a bucket of yes/no/variant counts; returns how many flags it counted."""
        hour = start.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
        rows = []
        for name, counts in toggles.items():
            path = f"$.bucket.toggles[{name!r}]"
            if not isinstance(counts, Mapping):
                raise InvalidInput(f"{path} must be an object", [ErrorDetail("an object", path)])
            variants = counts.get("variants") or {}
            if not isinstance(variants, Mapping):
                raise InvalidInput(
                    f"{path}.variants must be an object",
                    [ErrorDetail("an object", f"{path}.variants")],
                )
            rows.append(
                FlagMetrics(
                    name,
                    app_name,
                    environment,
                    hour,
                    _count(counts.get("yes", 0), f"{path}.yes"),
                    _count(counts.get("no", 0), f"{path}.no"),
                    {str(k): _count(v, f"{path}.variants[{k!r}]") for k, v in variants.items()},
                )
            )
        with self.store.transaction() as tx:
            tx.add_flag_metrics(rows)
            tx.save_client_instance(
                ClientInstance(app_name, instance_id, environment, last_seen=self.clock())
            )
        return len(rows)

    def flag_metrics(self, flag: str) -> list[FlagMetrics]:
        with self._read() as tx:
            return list(tx.list_flag_metrics(flag))

    def client_instances(self) -> list[ClientInstance]:
        with self._read() as tx:
            return list(tx.list_client_instances())
