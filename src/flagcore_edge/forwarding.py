"""SDK metrics and registrations on their way upstream: held in a bounded queue, sent
every metrics interval (and on a clean stop), retried while the upstream is away.

Each report keeps the token the SDK sent it with, so the upstream counts it in that
token's environment and projects exactly as if the SDK had posted it there. Server SDKs'
reports of one token (and what downstream edges post to ``/api/client/metrics/bulk``) go
in bulk requests to Unleash's ``/api/client/metrics/bulk`` (what Unleash Edge posts), each
at most `BULK_POST_BYTES` (Unleash reads JSON bodies of up to 100 kB); an upstream without
that path (404, 405, 501: flagcore) gets each report on the path it was posted to (a bulk
body as the registrations and metrics reports it holds), and is not asked for bulk again.

A report is sent in parts (bulk posts, or a bulk body's reports); each part is taken off
the report once the upstream answered it, so an upstream that goes away half-way gets
only the rest later: nothing twice, nothing lost.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from flagcore_edge.tokens import digest_of
from flagcore_edge.upstream import Upstream, UpstreamDown

__all__ = [
    "BULK_PATH",
    "BULK_POST_BYTES",
    "HeldReport",
    "UsageForwarder",
    "bulk_body",
    "split_bulk",
]

_log = logging.getLogger("flagcore_edge")
BULK_PATH = "/client/metrics/bulk"
BULK_POST_BYTES = 90_000  # under Unleash's 100 kB body limit, with room for the envelope
_NO_BULK = {404, 405, 501}
_BULK_PATHS = {"/client/metrics", "/client/register", BULK_PATH}
_LISTS = ("applications", "metrics", "impactMetrics", "seenTokens")


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class HeldReport:
    """One report as an SDK (or a downstream edge) posted it, checked, with its token.

    ``token`` is None for a report read back from the data directory after a restart
    (the file keeps no secret): it waits until the edge knows the secret of ``digest``
    again (an ``--upstream-token``, or an SDK sending it)."""

    def __init__(
        self,
        path: str,
        token: str | None,
        body: dict[str, Any],
        environment: str,
        digest: str | None = None,
    ) -> None:
        self.path = path  # under the upstream's API URL: /client/metrics, ...
        self.token = token
        self.body = body
        self.environment = environment  # the token's, which Unleash's bulk rows must name
        self.digest = digest if digest is not None else digest_of(token or "")
        self._bulk_parts: list[dict[str, Any]] | None = None
        self._bulk_sent = False  # some bulk part was taken upstream
        self._posts: list[tuple[str, dict[str, Any]]] | None = None
        self.refused = False  # some part was refused upstream (4xx)
        self.finished = False

    def text(self) -> bytes:
        return _json(self.body)

    def bulk_parts(self) -> list[dict[str, Any]]:
        """What is left to send of this report in bulk bodies, each at most
        `BULK_POST_BYTES` (a report too big for one post is split by its rows)."""
        if self._bulk_parts is None:
            self._bulk_parts = split_bulk(bulk_body([self]), BULK_POST_BYTES)
        return self._bulk_parts

    def took_bulk(self, parts: set[int]) -> None:
        """The upstream answered the bulk post holding ``parts`` (ids)."""
        left = self.bulk_parts()
        left[:] = [part for part in left if id(part) not in parts]
        self._bulk_sent = True

    def posts(self) -> list[tuple[str, dict[str, Any]]]:
        """What is left to send of this report one post at a time: itself, or (a bulk
        body, or what bulk posts left of it) the registrations and metrics reports it
        holds."""
        if self._posts is None:
            if self._bulk_sent:
                parts = self.bulk_parts()
            elif self.path == BULK_PATH:
                parts = [self.body]
            else:
                parts = []
                self._posts = [(self.path, self.body)]
            if self._posts is None:
                self._posts = [post for part in parts for post in _bulk_as_reports(part)]
        return self._posts

    def remaining(self) -> list[HeldReport]:
        """What is left of this report as whole reports (for the data directory)."""
        if self.finished:
            return []
        if self._posts is not None:
            return [
                HeldReport(path, self.token, body, self.environment, self.digest)
                for path, body in self._posts
            ]
        if self._bulk_sent:
            left = self.bulk_parts()
            if not left:
                return []
            merged = _merge(left)
            return [HeldReport(BULK_PATH, self.token, merged, self.environment, self.digest)]
        return [self]


def bulk_body(reports: Iterable[HeldReport]) -> dict[str, Any]:
    """Unleash's bulk shape (``bulkMetricsSchema``): registrations as ``applications``,
    each toggle of each bucket as a ``metrics`` row of the token's environment, a
    downstream edge's bulk body as it sent it."""
    merged: dict[str, list[Any]] = {key: [] for key in _LISTS}
    for report in reports:
        body = report.body
        if report.path == BULK_PATH:
            for key in _LISTS:
                merged[key].extend(body.get(key) or ())
            continue
        if report.path == "/client/register":
            application = {**body, "environment": report.environment}
            application.setdefault("instanceId", "unknown")  # required in bulk, not alone
            merged["applications"].append(application)
            continue
        bucket = body.get("bucket") or {}
        for name, counts in (bucket.get("toggles") or {}).items():
            merged["metrics"].append(
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
        merged["impactMetrics"].extend(body.get("impactMetrics") or ())
    written: dict[str, Any] = {"applications": merged["applications"], "metrics": merged["metrics"]}
    for key in ("impactMetrics", "seenTokens"):
        if merged[key]:
            written[key] = merged[key]
    return written


def _merge(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"applications": [], "metrics": []}
    for part in parts:
        for key in _LISTS:
            if part.get(key):
                merged.setdefault(key, []).extend(part[key])
    return merged


def _fresh() -> dict[str, Any]:
    return {"applications": [], "metrics": []}


_ENVELOPE = len(_json(_fresh()))


def _has_items(body: dict[str, Any]) -> bool:
    return any(body.get(key) for key in _LISTS)


def split_bulk(body: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """``body`` as bulk bodies of at most about ``limit`` bytes each (every item of its
    lists stands alone; one item bigger than ``limit`` goes alone); none if it is empty."""
    parts: list[dict[str, Any]] = []
    current, size = _fresh(), _ENVELOPE
    for key in _LISTS:
        for item in body.get(key) or ():
            item_size = len(_json(item)) + 1
            if size + item_size + len(key) + 5 > limit and _has_items(current):
                parts.append(current)
                current, size = _fresh(), _ENVELOPE
            if key not in current:
                size += len(key) + 5
            current.setdefault(key, []).append(item)
            size += item_size
    if _has_items(current):
        parts.append(current)
    return parts


def _bulk_as_reports(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A bulk body for an upstream without the bulk path: each application as a
    registration (what a registration requires and bulk does not: filled as a browser
    SDK's registration is), its metrics rows as one report per application and hour
    bucket (impact metrics with the first). ``seenTokens`` have no single-report form
    and are not sent."""
    posts: list[tuple[str, dict[str, Any]]] = []
    now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    for application in body.get("applications") or ():
        registration = {"interval": 0, "strategies": [], **application}
        if registration.get("started") is None:
            registration["started"] = now
        posts.append(("/client/register", registration))
    reports: dict[tuple[str, Any], dict[str, Any]] = {}
    for row in body.get("metrics") or ():
        stamp = row.get("timestamp") or now
        report = reports.setdefault(
            (row["appName"], stamp),
            {"appName": row["appName"], "bucket": {"start": stamp, "stop": stamp, "toggles": {}}},
        )
        toggle = report["bucket"]["toggles"].setdefault(
            row["featureName"], {"yes": 0, "no": 0, "variants": {}}
        )
        toggle["yes"] += row.get("yes") or 0
        toggle["no"] += row.get("no") or 0
        for variant, count in (row.get("variants") or {}).items():
            toggle["variants"][variant] = toggle["variants"].get(variant, 0) + count
    impact = body.get("impactMetrics")
    if impact:
        if not reports:
            apps = [a["appName"] for a in body.get("applications") or ()]
            name = apps[0] if apps else "flagcore-edge"
            reports[(name, now)] = {
                "appName": name,
                "bucket": {"start": now, "stop": now, "toggles": {}},
            }
        next(iter(reports.values()))["impactMetrics"] = impact
    posts.extend(("/client/metrics", report) for report in reports.values())
    return posts


class UsageForwarder:
    def __init__(
        self,
        upstream: Upstream | None,
        capacity: int,
        secret_of: Callable[[str], str | None] = lambda _digest: None,
    ) -> None:
        self._upstream = upstream
        self.capacity = capacity
        self._secret_of = secret_of  # a restored report's token, once the edge knows it
        self._queue: deque[HeldReport] = deque()
        self._lock = asyncio.Lock()
        self.bulk: bool | None = None  # whether the upstream has the bulk path (None: unknown)
        self.forwarded = 0
        self.bulk_posts = 0
        self.refused = 0  # the upstream said 4xx: sending it again would not help
        self.dropped = 0  # turned away: the queue was full

    @property
    def held(self) -> int:
        return sum(1 for report in self._queue if not report.finished)

    def room_for(self, count: int) -> bool:
        """Whether ``count`` more reports can be held; counted as dropped if not."""
        if self._upstream is not None and len(self._queue) + count > self.capacity:
            self.dropped += count
            return False
        return True

    def hold(self, report: HeldReport) -> None:
        if self._upstream is None:
            return  # offline: nowhere to send it
        self._queue.append(report)

    def restore(self, reports: Iterable[HeldReport]) -> None:
        """Reports the last run kept in the data directory, ahead of new ones."""
        self._queue.extendleft(reversed(list(reports)))

    def unsent(self) -> list[HeldReport]:
        """What is still held, as whole reports (what a stop keeps on disk)."""
        return [part for report in self._queue for part in report.remaining()]

    def _sendable(self, report: HeldReport) -> bool:
        if report.token is None:
            report.token = self._secret_of(report.digest)
        return report.token is not None

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
                _log.warning("usage held for the upstream: %s", error)
                return False
            finally:
                self._queue = deque(r for r in self._queue if not r.finished)
        return True

    def _done(self, report: HeldReport) -> None:
        report.finished = True
        if report.refused:
            self.refused += 1
        else:
            self.forwarded += 1

    async def _send_bulk(self, upstream: Upstream) -> None:
        """Server SDKs' reports and downstream bulk bodies, in bulk posts per token."""
        by_token: dict[str, list[HeldReport]] = {}
        for report in self._queue:
            if report.path in _BULK_PATHS and self._sendable(report):
                assert report.token is not None
                by_token.setdefault(report.token, []).append(report)
        for token, reports in by_token.items():
            pending: list[HeldReport] = []  # reports with a part in the post being built
            parts: list[dict[str, Any]] = []
            size = 0
            for report in reports:
                if not report.bulk_parts() and self.bulk:
                    self._done(report)  # nothing for bulk to carry (no rows, no app)
                for part in list(report.bulk_parts()):
                    part_size = len(_json(part))
                    if parts and size + part_size > BULK_POST_BYTES:
                        if not await self._post_bulk(upstream, token, pending, parts):
                            return
                        pending, parts, size = [], [], 0
                    if not pending or pending[-1] is not report:
                        pending.append(report)
                    parts.append(part)
                    size += part_size
            if parts and not await self._post_bulk(upstream, token, pending, parts):
                return

    async def _post_bulk(
        self, upstream: Upstream, token: str, reports: list[HeldReport], parts: list[dict[str, Any]]
    ) -> bool:
        """One bulk post of ``parts`` (of ``reports``); False if the upstream has no bulk
        path (each report goes on its own path from then on)."""
        status = await upstream.post(BULK_PATH, token, _json(_merge(parts)))
        if status in _NO_BULK:
            self.bulk = False
            return False
        self.bulk = True
        self.bulk_posts += 1
        if status >= 400:
            _log.warning("the upstream refused a bulk usage post (%d): dropped", status)
        sent = {id(part) for part in parts}
        for report in reports:
            report.took_bulk(sent)
            report.refused = report.refused or status >= 400
            if not report.bulk_parts():
                self._done(report)
        return True

    async def _send_each(self, upstream: Upstream) -> None:
        for report in list(self._queue):
            if report.finished or not self._sendable(report):
                continue
            assert report.token is not None
            posts = report.posts()
            while posts:
                path, body = posts[0]
                status = await upstream.post(path, report.token, _json(body))
                posts.pop(0)
                report.refused = report.refused or status >= 400
            self._done(report)

    async def run(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.flush()
