"""The upstream's client API as the edge speaks it: features with ETags, token checks,
and the SDK usage forwarded. An unreachable upstream (no connection, a timeout, a 5xx) is
`UpstreamDown`; what the upstream refuses (401/403) is a plain status."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import aiohttp
import attrs

from flagcore_client.sse import read_events

__all__ = ["FeaturesAnswer", "StreamNotOffered", "Upstream", "UpstreamDown"]

EDGE_SDK = "flagcore-edge:0.1.0"
SPEC_VERSION = "5.2.0"  # format 2: segments listed once, as SDKs of today ask


class UpstreamDown(Exception):
    """The upstream could not answer (unreachable, timed out, or a 5xx)."""


class StreamNotOffered(Exception):
    """The upstream does not stream to this token (404, 405, 429, 501, 401, 403)."""


# Statuses that mean "no stream here" (flagcore_client's step-down set, and refusals).
_NO_STREAM = {401, 403, 404, 405, 429, 501}


@attrs.frozen
class FeaturesAnswer:
    status: int  # 200, 304, or a refusal (401, 403, 404)
    body: bytes = b""
    etag: str | None = None


class Upstream:
    """A session to the upstream: ``url`` as SDKs are given it (ending in ``/api``) or, as
    Unleash Edge's ``--upstream-url`` takes it, the server's URL (``/api`` is added)."""

    def __init__(self, url: str, *, timeout: float) -> None:
        url = url.rstrip("/")
        self.url = url if url.endswith("/api") else url + "/api"
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._headers = {
            "UNLEASH-APPNAME": "flagcore-edge",
            "UNLEASH-INSTANCEID": f"flagcore-edge-{uuid.uuid4().hex[:8]}",
            "Unleash-SDK": EDGE_SDK,
        }

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=self._timeout, headers=self._headers, auto_decompress=True
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def features(
        self, token: str, etag: str | None = None, *, legacy: bool = False
    ) -> FeaturesAnswer:
        """The token's payload: format 2 (``Unleash-Client-Spec`` sent), or with ``legacy``
        what an SDK that names no spec gets (format 1 on flagcore; Unleash 8.2 inlines
        segments in a version 2 payload)."""
        headers = {"Authorization": token}
        if not legacy:
            headers["Unleash-Client-Spec"] = SPEC_VERSION
        if etag:
            headers["If-None-Match"] = etag
        try:
            async with self._client().get(
                self.url + "/client/features", headers=headers
            ) as response:
                if response.status >= 500 or response.status == 429:
                    raise UpstreamDown(f"the upstream answered {response.status}")
                if response.status != 200:
                    return FeaturesAnswer(response.status)
                body = await response.read()
                return FeaturesAnswer(200, body, response.headers.get("ETag"))
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise UpstreamDown(str(error) or type(error).__name__) from error

    async def changes(self, token: str) -> AsyncIterator[str]:
        """The names of the events on the upstream's stream for ``token`` (read with
        `flagcore_client.sse`, bounded): each says the token's flags changed. Ends when
        the upstream closes the stream."""
        headers = {
            "Authorization": token,
            "Accept": "text/event-stream",
            "Unleash-Client-Spec": SPEC_VERSION,
        }
        # No total timeout: a stream lasts; the server's keep-alives keep reads short.
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout.total, sock_read=60)
        try:
            async with self._client().get(
                self.url + "/client/streaming", headers=headers, timeout=timeout
            ) as response:
                if response.status in _NO_STREAM:
                    raise StreamNotOffered(f"the upstream answered {response.status}")
                if response.status != 200:
                    raise UpstreamDown(f"the upstream's stream answered {response.status}")
                async for event in read_events(response.content.iter_any()):
                    if event.event == "fetch-mode" and event.data.strip() == "polling":
                        raise StreamNotOffered("the upstream asked for polling")
                    yield event.event
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as error:
            raise UpstreamDown(str(error) or type(error).__name__) from error

    async def frontend_status(self, token: str) -> int:
        """The upstream's status for a frontend token on ``/api/frontend`` (200: valid)."""
        return await self._status("GET", "/frontend", token)

    async def post(self, path: str, token: str, body: bytes) -> int:
        """POST ``body`` (JSON) to ``path`` (under the API URL); the upstream's status."""
        headers = {"Authorization": token, "Content-Type": "application/json"}
        return await self._status("POST", path, token, body=body, headers=headers)

    async def _status(
        self,
        method: str,
        path: str,
        token: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> int:
        try:
            async with self._client().request(
                method, self.url + path, data=body, headers=headers or {"Authorization": token}
            ) as response:
                await response.read()
                if response.status >= 500 or response.status == 429:
                    raise UpstreamDown(f"the upstream answered {response.status}")
                return response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise UpstreamDown(str(error) or type(error).__name__) from error
