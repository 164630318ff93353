"""`AsyncFlagClient`: follows a flagcore (or Unleash) server and evaluates in-process.

How it keeps its flags: by streaming (``/api/client/streaming``), else by delta polling
(``/api/client/delta``), else by polling the full payload (``/api/client/features``). It
steps down when the server says so (a ``fetch-mode: polling`` event, a 404/501/429 on the
stream, a 404 on delta) and up again when a polling answer carries
``fetch-mode: streaming``. A lost connection is retried with a growing delay (up to 30 s);
meanwhile every answer comes from the last state, which a backup file can carry across
restarts. Evaluation is `flagcore.Engine`: no I/O, no lock beyond the usage counter.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import random
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import aiohttp

from flagcore import BUILTIN_STRATEGIES, Context, CustomStrategy, Engine, VariantResult
from flagcore.errors import FlagcoreError
from flagcore.wire import Registration, write_metrics_body, write_registration
from flagcore_client.impact import ImpactMetrics
from flagcore_client.metrics import UsageCounts
from flagcore_client.sse import read_events
from flagcore_client.state import ClientState

__all__ = ["AsyncFlagClient", "FetchMode"]

_log = logging.getLogger("flagcore_client")

FetchMode = Literal["streaming", "delta", "polling"]
SDK_NAME = "flagcore-client:0.1.0"
SPEC_VERSION = "5.2.0"
_STEP_DOWN = {"streaming": "delta", "delta": "polling", "polling": "polling"}
# Statuses that mean "this server does not offer that mode" (429: too many streams).
_NOT_OFFERED = {404, 405, 429, 501}
MAX_RETRY_DELAY_S = 30.0


class _StepDown(Exception):
    """The server does not (or will not) serve the current mode."""


class _Refused(Exception):
    """401/403: the token is wrong; retried slowly, the last state kept."""


class AsyncFlagClient:
    """Use ``async with AsyncFlagClient(url, token, app_name=...) as flags:``, or call
    `start` and `close` yourself."""

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
    ) -> None:
        self.url = url.rstrip("/")
        self.app_name = app_name
        self.instance_id = instance_id or f"{app_name}-{uuid.uuid4().hex[:8]}"
        self.mode: FetchMode = mode
        self.refresh_interval = refresh_interval
        self.metrics_interval = metrics_interval
        self.backup_path = Path(backup_path) if backup_path is not None else None
        self.on_change = on_change
        self._token = token
        self._timeout = request_timeout
        self._custom = custom_strategies
        self._metrics_on = not disable_metrics
        self._register_on = not disable_registration
        self._default_context = Context(app_name=app_name, environment=environment)
        self._environment = environment
        self._engine = Engine(custom_strategies=custom_strategies)
        self._state = ClientState()
        self._counts = UsageCounts()
        # Counters, gauges and histograms about flags' effects, sent with the usage
        # counts (Unleash 8's ``impactMetrics``; release plan safeguards read them).
        self.impact_metrics = ImpactMetrics()
        self._etag: str | None = None
        self._last_event_id: str | None = None
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._started = dt.datetime.now(dt.UTC)
        self.ready = asyncio.Event()
        self.last_error: str | None = None

    # --- evaluation (no I/O) --------------------------------------------------------
    def _context(self, context: Context | Mapping[str, Any] | None) -> Context | Mapping[str, Any]:
        if context is None:
            return self._default_context
        if isinstance(context, Mapping) and "appName" not in context:
            return {"appName": self.app_name, "environment": self._environment, **context}
        return context

    def is_enabled(
        self,
        name: str,
        context: Context | Mapping[str, Any] | None = None,
        *,
        default: bool = False,
    ) -> bool:
        enabled = self._engine.is_enabled(name, self._context(context), default=default)
        if self._metrics_on:
            self._counts.count(name, enabled)
        return enabled

    def get_variant(
        self, name: str, context: Context | Mapping[str, Any] | None = None
    ) -> VariantResult:
        variant = self._engine.get_variant(name, self._context(context))
        if self._metrics_on:
            self._counts.count(name, variant.feature_enabled, variant.name)
        return variant

    @property
    def flag_names(self) -> list[str]:
        return sorted(self._state.features)

    # --- lifetime ----------------------------------------------------------------------
    async def __aenter__(self) -> AsyncFlagClient:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def start(self, *, wait: float = 5.0) -> None:
        """Load the backup (if any), start following the server, and wait up to ``wait``
        seconds for its first state (it keeps trying in the background after that)."""
        if self.backup_path is not None:
            await asyncio.to_thread(self._load_backup, self.backup_path)
        self._session = aiohttp.ClientSession(
            headers={
                "Authorization": self._token,
                "Unleash-AppName": self.app_name,
                "Unleash-InstanceId": self.instance_id,
                "Unleash-Client-Spec": SPEC_VERSION,
                "Unleash-SDK": SDK_NAME,
                "User-Agent": SDK_NAME,
            }
        )
        self._tasks.append(asyncio.create_task(self._follow()))
        if self._register_on:
            self._tasks.append(asyncio.create_task(self._register()))
        if self._metrics_on:
            self._tasks.append(asyncio.create_task(self._send_metrics_every_interval()))
        if wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ready.wait(), wait)

    async def close(self) -> None:
        """Stop following, send the last usage counts, close the connections."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._session is not None:
            if self._metrics_on:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                    await self._send_metrics()
            await self._session.close()
            self._session = None

    # --- state -------------------------------------------------------------------------
    def _load_backup(self, path: Path) -> None:
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            engine = Engine.from_client_features(payload, custom_strategies=self._custom)
        except (OSError, ValueError) as error:
            _log.warning("flagcore_client: no usable backup at %s (%s)", path, error)
            return
        self._state.replace(payload)
        self._engine = engine
        self.ready.set()

    async def _changed(self, touched: set[str]) -> None:
        self.ready.set()
        if self.backup_path is not None:
            try:
                await asyncio.to_thread(self._state.save, self.backup_path)
            except OSError as error:
                _log.warning("flagcore_client: could not write the backup (%s)", error)
        if touched and self.on_change is not None:
            try:
                self.on_change(frozenset(touched))
            except Exception:  # the caller's bug must not stop the updates
                _log.exception("flagcore_client: the on_change callback raised")

    async def _take_full(self, payload: Mapping[str, Any]) -> None:
        engine = Engine.from_client_features(payload, custom_strategies=self._custom)
        touched = self._state.replace(payload)
        self._engine = engine  # one reference swap: evaluations see old or new, whole
        await self._changed(touched)

    async def _take_delta(self, delta: Mapping[str, Any]) -> None:
        self._engine.apply_delta(delta)
        await self._changed(self._state.apply(delta))

    # --- following ------------------------------------------------------------------------
    async def _follow(self) -> None:
        delay = 0.5
        while True:
            try:
                if self.mode == "streaming":
                    await self._stream()
                    delay = 0.5  # a stream that ended after working: reconnect soon
                elif self.mode == "delta":
                    await self._poll("/client/delta")
                    delay = 0.5
                    await asyncio.sleep(self.refresh_interval)
                else:
                    await self._poll("/client/features")
                    delay = 0.5
                    await asyncio.sleep(self.refresh_interval)
                continue
            except _StepDown as why:
                _log.info("flagcore_client: %s; now %s", why, _STEP_DOWN[self.mode])
                self.mode = _STEP_DOWN[self.mode]  # type: ignore[assignment]
                self._etag = None
                continue
            except _Refused as why:
                self.last_error = str(why)
                _log.error("flagcore_client: %s", why)
                delay = MAX_RETRY_DELAY_S
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError, FlagcoreError) as error:
                # Also an event that could not be read: start again from a hydration.
                self._last_event_id = self._etag = None
                self.last_error = f"{type(error).__name__}: {error}"
                _log.warning("flagcore_client: %s; retrying in %.1f s", self.last_error, delay)
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(MAX_RETRY_DELAY_S, delay * 2)

    def _check(self, response: aiohttp.ClientResponse) -> None:
        if response.status in (401, 403):
            raise _Refused(f"{response.url.path} answered {response.status}: check the token")
        if response.status in _NOT_OFFERED:
            raise _StepDown(f"{response.url.path} answered {response.status}")
        if response.status >= 400:
            raise aiohttp.ClientResponseError(
                response.request_info, (), status=response.status, message="server error"
            )

    async def _stream(self) -> None:
        assert self._session is not None
        headers = {"Accept": "text/event-stream"}
        if self._last_event_id is not None:
            headers["Last-Event-ID"] = self._last_event_id
        # No total timeout: a stream lasts; the server's keep-alives (15 s) keep reads short.
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=60)
        async with self._session.get(
            self.url + "/client/streaming", headers=headers, timeout=timeout
        ) as response:
            self._check(response)
            async for event in read_events(response.content.iter_any()):
                if event.event == "fetch-mode" and event.data.strip() == "polling":
                    raise _StepDown("the server asked for polling")
                if event.event not in ("unleash-connected", "unleash-updated"):
                    continue
                await self._take_delta(json.loads(event.data))
                if event.id is not None:
                    self._last_event_id = event.id
                self.last_error = None

    async def _poll(self, path: str) -> None:
        assert self._session is not None
        headers = {"If-None-Match": self._etag} if self._etag else {}
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        async with self._session.get(self.url + path, headers=headers, timeout=timeout) as response:
            self._check(response)
            if response.headers.get("fetch-mode") == "streaming":
                self.mode = "streaming"
            if response.status == 304:
                self.ready.set()
                return
            payload = await response.json(content_type=None)
            self._etag = response.headers.get("ETag")
        if path.endswith("/delta"):
            await self._take_delta(payload)
        else:
            await self._take_full(payload)
        self.last_error = None

    # --- registration and metrics -----------------------------------------------------------
    def _registration_body(self) -> dict[str, Any]:
        """What `_register` posts: written from the rows the server reads it by."""
        return write_registration(
            Registration(
                self.app_name,
                round(self.metrics_interval * 1000),
                self._started.isoformat(),
                sorted(set(BUILTIN_STRATEGIES) | set(self._custom or {})),
                instance_id=self.instance_id,
                sdk_version=SDK_NAME,
            )
        )

    def _metrics_body(
        self, counted: dict[str, Any] | None, impact: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """What `_send_metrics` posts (an empty bucket when only impact metrics were
        recorded): written from the rows the server reads it by."""
        now = dt.datetime.now(dt.UTC).isoformat()
        bucket = counted or {"start": now, "stop": now, "toggles": {}}
        return write_metrics_body(self.app_name, self.instance_id, bucket, impact_metrics=impact)

    async def _register(self) -> None:
        assert self._session is not None
        body = self._registration_body()
        delay = 1.0
        while True:
            try:
                async with self._session.post(
                    self.url + "/client/register",
                    json=body,
                    timeout=aiohttp.ClientTimeout(total=self._timeout),
                ) as response:
                    if response.status < 500:
                        return  # done, or refused for good (a bad token is reported by _follow)
            except (aiohttp.ClientError, TimeoutError, OSError):
                pass
            await asyncio.sleep(delay)
            delay = min(MAX_RETRY_DELAY_S, delay * 2)

    async def _send_metrics_every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.metrics_interval)
            with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                await self._send_metrics()

    async def _send_metrics(self) -> None:
        assert self._session is not None
        counted = self._counts.take()
        impact = self.impact_metrics.take()
        if counted is None and impact is None:
            return
        body = self._metrics_body(counted, impact)
        try:
            async with self._session.post(
                self.url + "/client/metrics",
                json=body,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                if response.status >= 500:
                    self._given_back(counted, impact)
        except BaseException:
            self._given_back(counted, impact)
            raise

    def _given_back(
        self, counted: dict[str, Any] | None, impact: list[dict[str, Any]] | None
    ) -> None:
        if counted is not None:
            self._counts.give_back(counted)
        if impact is not None:
            self.impact_metrics.give_back(impact)
