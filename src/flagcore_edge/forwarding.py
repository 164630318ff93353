"""SDK metrics and registrations on their way upstream: held in a bounded queue, sent
every metrics interval (and on a clean stop), retried while the upstream is away.

Each report keeps the token the SDK sent it with, so the upstream counts it in that
token's environment and projects exactly as if the SDK had posted it there. Server SDKs'
reports of one token go in one request to Unleash's ``/api/client/metrics/bulk`` (what
Unleash Edge posts) when the upstream has it; an upstream without it (404, 405: flagcore)
gets each report on the path it was posted to, and is not asked for bulk again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from typing import Any

import attrs

from flagcore_edge.upstream import Upstream, UpstreamDown

__all__ = ["BULK_PATH", "HeldReport", "UsageForwarder"]

_log = logging.getLogger("flagcore_edge")
BULK_PATH = "/client/metrics/bulk"
_NO_BULK = {404, 405, 501}
_BULK_PATHS = {"/client/metrics", "/client/register"}


@attrs.frozen
class HeldReport:
    path: str  # under the upstream's API URL: /client/metrics, /frontend/client/register...
    token: str
    body: dict[str, Any]  # as the SDK sent it, checked
    environment: str  # the token's, which Unleash's bulk rows must name

    def text(self) -> bytes:
        return json.dumps(self.body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def bulk_body(reports: list[HeldReport]) -> dict[str, Any]:
    """Unleash's bulk shape (``bulkMetricsSchema``): registrations as ``applications``,
    each toggle of each bucket as a ``metrics`` row of the token's environment."""
    applications: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    for report in reports:
        body = report.body
        if report.path == "/client/register":
            applications.append({**body, "environment": report.environment})
            continue
        bucket = body.get("bucket") or {}
        for name, counts in (bucket.get("toggles") or {}).items():
            metrics.append(
                {
                    "featureName": name,
                    "appName": body["appName"],
                    "environment": report.environment,
                    "timestamp": bucket.get("start"),
                    "yes": counts.get("yes", 0),
                    "no": counts.get("no", 0),
                    "variants": counts.get("variants") or {},
                }
            )
    return {"applications": applications, "metrics": metrics}


class UsageForwarder:
    def __init__(self, upstream: Upstream | None, capacity: int) -> None:
        self._upstream = upstream
        self.capacity = capacity
        self._queue: deque[HeldReport] = deque()
        self._lock = asyncio.Lock()
        self.bulk: bool | None = None  # whether the upstream has the bulk path (None: unknown)
        self.forwarded = 0
        self.bulk_posts = 0
        self.refused = 0  # the upstream said 4xx: sending it again would not help
        self.dropped = 0  # the queue was full

    @property
    def held(self) -> int:
        return len(self._queue)

    def hold(self, report: HeldReport) -> None:
        if self._upstream is None:
            return  # offline: nowhere to send it
        if len(self._queue) >= self.capacity:
            self.dropped += 1
            return
        self._queue.append(report)

    async def flush(self) -> bool:
        """Send what is held, oldest first; False (the rest kept) if the upstream is away."""
        if self._upstream is None:
            return True
        async with self._lock:
            try:
                if self.bulk is not False:
                    await self._send_bulk(self._upstream)
                await self._send_each(self._upstream)
            except UpstreamDown as error:
                _log.warning("usage held for the upstream (%d reports): %s", self.held, error)
                return False
        return True

    async def _send_bulk(self, upstream: Upstream) -> None:
        """Server SDKs' reports, one bulk request per token."""
        by_token: dict[str, list[HeldReport]] = {}
        for report in self._queue:
            if report.path in _BULK_PATHS:
                by_token.setdefault(report.token, []).append(report)
        for token, reports in by_token.items():
            body = json.dumps(bulk_body(reports), separators=(",", ":"), ensure_ascii=False)
            status = await upstream.post(BULK_PATH, token, body.encode("utf-8"))
            if status in _NO_BULK:
                self.bulk = False  # each report goes on its own path from now on
                return
            self.bulk = True
            sent = set(map(id, reports))
            self._queue = deque(r for r in self._queue if id(r) not in sent)
            self.bulk_posts += 1
            if status >= 400:
                self.refused += len(reports)
            else:
                self.forwarded += len(reports)

    async def _send_each(self, upstream: Upstream) -> None:
        while self._queue:
            report = self._queue[0]
            status = await upstream.post(report.path, report.token, report.text())
            self._queue.popleft()
            if status >= 400:
                self.refused += 1
            else:
                self.forwarded += 1

    async def run(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.flush()
