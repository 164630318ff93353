"""`FlagClient`: the asyncio client driven from a background thread, for synchronous code."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from flagcore import Context, CustomStrategy, VariantResult
from flagcore_client.asyncio_client import AsyncFlagClient, FetchMode
from flagcore_client.impact import ImpactMetrics

__all__ = ["FlagClient"]


class FlagClient:
    """Follows a server on its own thread; `is_enabled` and `get_variant` never block.

    The constructor waits up to ``wait`` seconds for the first state (from the server or
    the backup file); ``on_change`` is called on the client's thread.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        app_name: str,
        instance_id: str | None = None,
        environment: str | None = None,
        mode: FetchMode = "streaming",
        refresh_interval: float = 15.0,
        metrics_interval: float = 60.0,
        request_timeout: float = 10.0,
        backup_path: str | Path | None = None,
        on_change: Callable[[frozenset[str]], None] | None = None,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
        disable_metrics: bool = False,
        disable_registration: bool = False,
        wait: float = 5.0,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="flagcore-client", daemon=True
        )
        self._thread.start()
        self._client: AsyncFlagClient = self._run(
            _make(
                url,
                token,
                app_name=app_name,
                instance_id=instance_id,
                environment=environment,
                mode=mode,
                refresh_interval=refresh_interval,
                metrics_interval=metrics_interval,
                request_timeout=request_timeout,
                backup_path=backup_path,
                on_change=on_change,
                custom_strategies=custom_strategies,
                disable_metrics=disable_metrics,
                disable_registration=disable_registration,
            )
        ).result()
        self._run(self._client.start(wait=wait)).result()
        self._closed = False

    def _run(self, coroutine: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def is_enabled(
        self,
        name: str,
        context: Context | Mapping[str, Any] | None = None,
        *,
        default: bool = False,
    ) -> bool:
        return self._client.is_enabled(name, context, default=default)

    def get_variant(
        self, name: str, context: Context | Mapping[str, Any] | None = None
    ) -> VariantResult:
        return self._client.get_variant(name, context)

    @property
    def ready(self) -> bool:
        """Whether a state has been loaded (from the server or the backup)."""
        return self._client.ready.is_set()

    @property
    def mode(self) -> FetchMode:
        return self._client.mode

    @property
    def impact_metrics(self) -> ImpactMetrics:
        """Counters, gauges and histograms sent with the usage metrics (thread-safe)."""
        return self._client.impact_metrics

    @property
    def flag_names(self) -> list[str]:
        return self._client.flag_names

    def close(self, timeout: float = 10.0) -> None:
        """Stop following, send the last counts, and stop the thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self._client.close()).result(timeout)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            self._loop.close()

    def __enter__(self) -> FlagClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


async def _make(url: str, token: str, **options: Any) -> AsyncFlagClient:
    # Made on the client's loop: its asyncio objects belong there.
    return AsyncFlagClient(url, token, **options)
