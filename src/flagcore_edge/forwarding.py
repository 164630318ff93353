"""SDK metrics and registrations on their way upstream: held in a bounded queue, sent
every metrics interval (and on a clean stop), retried while the upstream is away.

Each report keeps the token the SDK sent it with, so the upstream counts it in that
token's environment and projects exactly as if the SDK had posted it there.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

import attrs

from flagcore_edge.upstream import Upstream, UpstreamDown

__all__ = ["HeldReport", "UsageForwarder"]

_log = logging.getLogger("flagcore_edge")


@attrs.frozen
class HeldReport:
    path: str  # under the upstream's API URL: /client/metrics, /frontend/client/register...
    token: str
    body: bytes


class UsageForwarder:
    def __init__(self, upstream: Upstream | None, capacity: int) -> None:
        self._upstream = upstream
        self.capacity = capacity
        self._queue: deque[HeldReport] = deque()
        self._lock = asyncio.Lock()
        self.forwarded = 0
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
            while self._queue:
                report = self._queue[0]
                try:
                    status = await self._upstream.post(report.path, report.token, report.body)
                except UpstreamDown as error:
                    _log.warning("usage held for the upstream (%d reports): %s", self.held, error)
                    return False
                self._queue.popleft()
                if status >= 400:
                    self.refused += 1
                else:
                    self.forwarded += 1
        return True

    async def run(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.flush()
