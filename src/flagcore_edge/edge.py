"""`Edge`: the tokens an edge follows and serves, kept up to date from the upstream.

A client token an SDK sends is checked once by fetching its flags upstream (the answer
is both the check and the data); from then on it is followed like the ``--upstream-token``
ones, by ETag polling every interval. A frontend token is checked once on the upstream's
``/api/frontend`` and served, by the edge's own evaluation, from a followed client
token whose scope covers it. While the upstream is away, everything known keeps being
served; an unknown token cannot be checked then (503, or 401 if it was refused lately).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Iterable

from flagcore import MemoryStore
from flagcore.errors import FlagcoreError, Forbidden, ServiceUnavailable, Unauthenticated
from flagcore.model import ClientFeatures
from flagcore.service import FrontendView, Service
from flagcore.wire import ValidatedEdgeToken, unstructure_client_features
from flagcore_edge.bootstrap import read_bootstrap
from flagcore_edge.config import EdgeConfig
from flagcore_edge.forwarding import UsageForwarder
from flagcore_edge.snapshot_file import load_snapshot_file, write_snapshot_file
from flagcore_edge.snapshots import Scope, TokenSnapshot, scope_of_secret
from flagcore_edge.tokens import (
    FollowedToken,
    FrontendToken,
    RefusedTokens,
    digest_of,
)
from flagcore_edge.upstream import StreamNotOffered, Upstream, UpstreamDown
from flagcore_edge.usage_file import load_usage_files, write_usage_file

__all__ = ["Edge", "offline_snapshot"]

_log = logging.getLogger("flagcore_edge")
_VIEWS_KEPT = 64
_RETRY_AFTER_S = 5.0


def offline_snapshot(features: ClientFeatures, scope: Scope) -> TokenSnapshot:
    """A payload for ``scope`` from a bootstrap file's flags, as an upstream would answer."""
    wanted = None if scope.projects is None else set(scope.projects)
    flags = tuple(f for f in features.features if wanted is None or f.project in wanted)
    payload = unstructure_client_features(ClientFeatures(flags, features.segments), version=2)
    query: dict[str, object] = {"environment": scope.environment, "inlineSegmentConstraints": False}
    if scope.projects is not None:
        query["project"] = list(scope.projects)
    payload["query"] = query
    payload["meta"] = {"revisionId": 0}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return TokenSnapshot(body, None, time.time())


class Edge:
    """What the edge knows and how it learns more; the HTTP app (`flagcore_edge.app`)
    asks it for a token's snapshot or frontend view."""

    def __init__(self, config: EdgeConfig) -> None:
        self.config = config
        self.upstream = (
            None
            if config.offline or config.upstream is None
            else Upstream(config.upstream, timeout=config.request_timeout)
        )
        self.followed: dict[str, FollowedToken] = {}
        self.frontends: dict[str, FrontendToken] = {}
        self.refused = RefusedTokens(config.refused_ttl, config.refused_capacity)
        self.forwarder = UsageForwarder(self.upstream, config.metrics_capacity, self._secret_of)
        # The server's checks of SDK usage need no store: a service over an empty one.
        self.checks = Service(MemoryStore())
        self.upstream_up: bool | None = None  # None: not asked yet
        self.last_contact: float | None = None  # wall time of the upstream's last answer
        self.upstream_checks = 0  # token checks that reached the upstream
        self._locks: dict[str, asyncio.Lock] = {}
        # Keyed by the snapshot itself (not its id: a replaced snapshot's id may be reused).
        self._views: dict[tuple[Scope, TokenSnapshot], FrontendView] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self.changed = asyncio.Event()  # set (and replaced) whenever a snapshot changes
        self.closing = False  # streams end at the next wake-up once set
        # Offline: the SHA-256 of the bootstrap file read last, and why the last re-read
        # failed (None once a read succeeds).
        self.bootstrap_seen: str | None = None
        self.bootstrap_error: str | None = None
        self.bootstrap_failures = 0

    # --- start and stop ------------------------------------------------------------------
    def load_kept(self) -> None:
        """What the last run kept (the snapshot file) and the tokens to follow: called
        before listening, so the first request is already answered from it."""
        followed, frontends = load_snapshot_file(self.config.data_dir)
        self.followed = {token.digest: token for token in followed}
        self.frontends = {token.digest: token for token in frontends}
        for secret in self.config.upstream_tokens:
            digest = digest_of(secret)
            kept = self.followed.get(digest)
            if kept is None:
                self.followed[digest] = FollowedToken(digest, secret)
            else:
                kept.secret = secret  # followed again, with what the last run kept
        self.forwarder.restore(load_usage_files(self.config.data_dir))

    def _secret_of(self, digest: str) -> str | None:
        """The secret of a token the edge knows by ``digest`` (None: not seen since start)."""
        followed = self.followed.get(digest)
        if followed is not None and followed.secret is not None:
            return followed.secret
        frontend = self.frontends.get(digest)
        return None if frontend is None else frontend.secret

    async def start(self) -> None:
        """Fetch every followed token once, then poll and send usage in the background."""
        if self.config.offline:
            if self.config.reload_interval > 0:
                self._tasks.append(asyncio.create_task(self._reload(), name="edge-reload"))
            return
        await self.refresh()
        for token in list(self.followed.values()):
            self._watch(token)
        self._tasks.append(asyncio.create_task(self._poll(), name="edge-poll"))
        self._tasks.append(
            asyncio.create_task(self.forwarder.run(self.config.metrics_interval), name="edge-usage")
        )

    async def stop(self) -> None:
        """Stop polling; send the usage held, and keep in the data directory what the
        upstream could not take (`flagcore_edge.usage_file`): a clean stop loses none."""
        self.closing = True
        self._announce()  # streams see closing and end
        for digest in list(self._watchers):
            self._stop_watching(digest)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.forwarder.flush()
        kept = self.forwarder.unsent()  # the upstream away, or tokens not seen again yet
        if kept:
            try:
                path = write_usage_file(self.config.data_dir, kept)
            except OSError as error:
                _log.error("%d usage reports are lost: %s", len(kept), error)
            else:
                _log.warning("%d usage reports kept in %s for the next start", len(kept), path)
        if self.upstream is not None:
            await self.upstream.close()

    def load_offline(
        self, features: ClientFeatures, tokens: Iterable[str], frontend_tokens: Iterable[str]
    ) -> None:
        """Serve ``features`` to these tokens, each scoped as its secret says (again on a
        reload: the tokens' request counts carry over)."""
        followed: dict[str, FollowedToken] = {}
        frontends: dict[str, FrontendToken] = {}
        for secret in tokens:
            scope = _named_scope(secret)
            digest = digest_of(secret)
            followed[digest] = FollowedToken(digest, secret, offline_snapshot(features, scope))
        for secret in frontend_tokens:
            scope = _named_scope(secret)
            digest = digest_of(secret)
            frontends[digest] = FrontendToken(digest, scope, time.time())
            holder = FollowedToken("frontend:" + digest, None, offline_snapshot(features, scope))
            followed[holder.digest] = holder
        for digest, token in followed.items():
            if digest in self.followed:
                token.requests = self.followed[digest].requests
        for digest, frontend in frontends.items():
            if digest in self.frontends:
                frontend.requests = self.frontends[digest].requests
        self.followed, self.frontends = followed, frontends
        self._announce()

    def _bootstrap_digest(self) -> str | None:
        """The file's content, named (a change of a second or of no size is seen too)."""
        assert self.config.bootstrap is not None
        try:
            return hashlib.sha256(self.config.bootstrap.read_bytes()).hexdigest()
        except OSError:
            return None

    def load_bootstrap(self) -> None:
        """Read the offline file and serve it (raises for a file that cannot be served)."""
        assert self.config.bootstrap is not None
        seen = self._bootstrap_digest()
        self.load_offline(
            read_bootstrap(self.config.bootstrap),
            self.config.offline_tokens,
            self.config.offline_frontend_tokens,
        )
        self.bootstrap_seen = seen

    async def _reload(self) -> None:
        """``--reload-interval``: read the offline file again whenever it changed; a file
        that cannot be served is logged (and said in /ready) and the last good one kept."""
        assert self.config.bootstrap is not None
        path = self.config.bootstrap
        while True:
            await asyncio.sleep(self.config.reload_interval)
            seen = await asyncio.to_thread(self._bootstrap_digest)
            if seen == self.bootstrap_seen:
                continue
            try:
                features = await asyncio.to_thread(read_bootstrap, path)
                self.load_offline(
                    features, self.config.offline_tokens, self.config.offline_frontend_tokens
                )
            except (OSError, ValueError, FlagcoreError) as error:
                reason = getattr(error, "message", None) or str(error)
                if self.bootstrap_error is None:
                    _log.warning(
                        "the bootstrap file %s could not be read again (%s): serving the "
                        "last good one",
                        path,
                        reason,
                    )
                self.bootstrap_error = reason
                self.bootstrap_failures += 1
            else:
                if self.bootstrap_error is not None:
                    _log.info("the bootstrap file %s is readable again", path)
                else:
                    _log.info("the bootstrap file %s was read again", path)
                self.bootstrap_error = None
            self.bootstrap_seen = seen

    # --- following -----------------------------------------------------------------------
    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.config.interval)
            await self.refresh()

    async def refresh(self) -> None:
        """Ask the upstream for every followed token's flags (If-None-Match: a 304 costs
        it nothing); on the first sign it is away, keep everything and try next time."""
        changed = False
        for token in list(self.followed.values()):
            try:
                changed = await self._refresh_token(token, save=False) or changed
            except UpstreamDown:
                break
        if changed:
            self.save()

    async def _refresh_token(self, token: FollowedToken, *, save: bool = True) -> bool:
        """One token's poll; True if anything kept changed. `UpstreamDown` when away."""
        assert self.upstream is not None
        if token.secret is None or self.followed.get(token.digest) is not token:
            return False
        async with self._locks.setdefault("poll:" + token.digest, asyncio.Lock()):
            etag = None if token.snapshot is None else token.snapshot.etag
            try:
                answer = await self.upstream.features(token.secret, etag)
            except UpstreamDown as error:
                if self.upstream_up is not False:
                    _log.warning("the upstream is unreachable, serving the last data: %s", error)
                self.upstream_up = False
                raise
            self._contact()
            if answer.status == 200:
                token.snapshot = TokenSnapshot(answer.body, answer.etag, time.time())
                self._announce()
            elif answer.status == 304 and token.snapshot is not None:
                token.snapshot.fetched_at = time.time()
            elif answer.status in (401, 403):
                _log.warning("the upstream refused token %s: no longer followed", token.label())
                del self.followed[token.digest]
                self.refused.refuse("client", token.digest, answer.status)
                self._stop_watching(token.digest)
                return True
            else:
                return False
            if token.wants_legacy:
                await self._refresh_legacy(token)
        if save:
            self.save()
        return True

    async def _refresh_legacy(self, token: FollowedToken) -> None:
        """The upstream's answer for SDKs naming no spec, polled beside format 2."""
        assert self.upstream is not None
        assert token.secret is not None
        etag = None if token.legacy is None else token.legacy.etag
        answer = await self.upstream.features(token.secret, etag, legacy=True)
        if answer.status == 200:
            token.legacy = TokenSnapshot(answer.body, answer.etag, time.time())
        elif answer.status == 304 and token.legacy is not None:
            token.legacy.fetched_at = time.time()

    async def legacy_snapshot(self, token: FollowedToken) -> TokenSnapshot:
        """What an SDK naming no ``Unleash-Client-Spec`` gets: the upstream's own answer
        for it (fetched on first need, then polled with the rest); while it cannot be had
        (the upstream away, offline), the format-2 payload inlined by flagcore's writer."""
        assert token.snapshot is not None
        if token.legacy is None and self.upstream is not None and token.secret is not None:
            token.wants_legacy = True
            async with self._locks.setdefault("poll:" + token.digest, asyncio.Lock()):
                if token.legacy is None:
                    try:
                        await self._refresh_legacy(token)
                    except UpstreamDown:
                        self.upstream_up = False
                    else:
                        self.save()
        return token.legacy or token.snapshot.inlined()

    # --- the upstream's stream: a change signal ---------------------------------------------
    def _watch(self, token: FollowedToken) -> None:
        """Follow the upstream's stream for ``token`` (if it offers one): each event there
        triggers an immediate poll, so a change arrives at once while the payload kept is
        still the upstream's own bytes. Polling goes on regardless."""
        if (
            not self.config.upstream_streaming
            or token.secret is None
            or token.digest in self._watchers
            or self.closing
        ):
            return
        task = asyncio.create_task(self._watching(token), name="edge-watch")
        self._watchers[token.digest] = task

    def _stop_watching(self, digest: str) -> None:
        task = self._watchers.pop(digest, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _watching(self, token: FollowedToken) -> None:
        assert self.upstream is not None
        assert token.secret is not None
        delay = 1.0
        while self.followed.get(token.digest) is token:
            try:
                async for _event in self.upstream.changes(token.secret):
                    delay = 1.0
                    with contextlib.suppress(UpstreamDown):
                        await self._refresh_token(token)
            except StreamNotOffered as why:
                _log.info("no upstream stream for %s (%s): polling only", token.label(), why)
                break
            except UpstreamDown:
                pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)
        self._watchers.pop(token.digest, None)

    def _announce(self) -> None:
        """Wake every stream: some token's flags changed."""
        self.changed.set()
        self.changed = asyncio.Event()

    def _contact(self) -> None:
        if self.upstream_up is False:
            _log.info("the upstream is reachable again")
        self.upstream_up = True
        self.last_contact = time.time()

    def save(self) -> None:
        if self.config.offline:
            return
        try:
            write_snapshot_file(
                self.config.data_dir,
                [t for t in self.followed.values() if not t.digest.startswith("frontend:")],
                list(self.frontends.values()),
            )
        except OSError as error:
            _log.error("the snapshot file could not be written: %s", error)

    # --- what SDKs ask for -----------------------------------------------------------------
    async def client_token(self, secret: str | None) -> FollowedToken:
        """The followed token of ``secret``, checked upstream on first sight."""
        if not secret:
            raise Unauthenticated("an API token is required (Authorization header)")
        digest = digest_of(secret)
        token = self.followed.get(digest)
        if token is not None and token.snapshot is not None:
            if token.secret is None and not self.config.offline:
                token.secret = secret  # followed again after a restart
                self._watch(token)
            token.requests += 1
            return token
        if self.upstream is None:
            raise Unauthenticated("the token is not valid for the client API")
        _raise_refusal(self.refused.refused("client", digest), "the client API")
        async with self._locks.setdefault(digest, asyncio.Lock()):
            token = self.followed.get(digest)
            if token is None or token.snapshot is None:
                token = await self._check_client(secret, digest)
        self._locks.pop(digest, None)
        token.requests += 1
        return token

    async def _check_client(self, secret: str, digest: str) -> FollowedToken:
        assert self.upstream is not None
        if len(self.followed) >= self.config.max_tokens:
            raise ServiceUnavailable(
                f"this edge follows {self.config.max_tokens} tokens already (--max-tokens)",
                retry_after=_RETRY_AFTER_S,
            )
        self.upstream_checks += 1
        try:
            answer = await self.upstream.features(secret)
        except UpstreamDown:
            self.upstream_up = False
            raise ServiceUnavailable(
                "the upstream is unreachable, so a new token cannot be checked",
                retry_after=_RETRY_AFTER_S,
            ) from None
        self._contact()
        if answer.status != 200:
            self.refused.refuse("client", digest, answer.status)
            _raise_refusal(answer.status, "the client API")
        token = FollowedToken(digest, secret, TokenSnapshot(answer.body, answer.etag, time.time()))
        self.followed[digest] = token
        self.save()
        self._watch(token)
        return token

    async def frontend_token(self, secret: str | None) -> FrontendToken:
        """The frontend token of ``secret``, checked upstream on first sight and again
        after ``token_ttl`` (while the upstream is away, the last check stands)."""
        if not secret:
            raise Unauthenticated("an API token is required (Authorization header)")
        digest = digest_of(secret)
        token = self.frontends.get(digest)
        fresh = token is not None and (
            self.config.offline
            or time.time() - token.checked_at < self.config.token_ttl
            or self.upstream_up is False
        )
        if token is not None and fresh:
            token.requests += 1
            token.secret = secret
            return token
        if digest in self.followed:
            raise Forbidden("a client token cannot be used on the Frontend API")
        if self.upstream is None:
            raise Unauthenticated("the token is not valid for the Frontend API")
        _raise_refusal(self.refused.refused("frontend", digest), "the Frontend API")
        async with self._locks.setdefault("frontend:" + digest, asyncio.Lock()):
            token = await self._check_frontend(secret, digest, token)
        self._locks.pop("frontend:" + digest, None)
        token.requests += 1
        token.secret = secret
        return token

    async def _check_frontend(
        self, secret: str, digest: str, known: FrontendToken | None
    ) -> FrontendToken:
        assert self.upstream is not None
        self.upstream_checks += 1
        try:
            status = await self.upstream.frontend_status(secret)
        except UpstreamDown:
            self.upstream_up = False
            if known is not None:
                return known
            raise ServiceUnavailable(
                "the upstream is unreachable, so a new token cannot be checked",
                retry_after=_RETRY_AFTER_S,
            ) from None
        self._contact()
        if status != 200:
            self.frontends.pop(digest, None)
            self.refused.refuse("frontend", digest, status)
            _raise_refusal(status, "the Frontend API")
        scope = scope_of_secret(secret)
        if scope is None:
            raise Forbidden(
                "this edge serves frontend tokens of one project or of all (project:environment"
                ".secret or *:environment.secret); a token of several projects ([]) names none"
            )
        token = FrontendToken(digest, scope, time.time())
        self.frontends[digest] = token
        self.save()
        return token

    async def validated(self, secret: str) -> ValidatedEdgeToken | None:
        """For ``/edge/validate``: the token's kind and scope if the upstream accepts it as
        a client or a frontend token (checked as an SDK's would be, so a downstream edge's
        question costs the upstream nothing more), None if not. `ServiceUnavailable` if it
        cannot be checked now (the upstream away and the token never seen)."""
        try:
            client = await self.client_token(secret)
        except Unauthenticated:
            return None
        except Forbidden:  # another kind of token: a frontend one?
            try:
                frontend = await self.frontend_token(secret)
            except (Unauthenticated, Forbidden):
                return None
            return _validated(secret, "frontend", frontend.scope)
        assert client.snapshot is not None
        return _validated(secret, "client", client.snapshot.scope)

    async def ofrep_scope(self, secret: str | None) -> tuple[Scope, bool]:
        """OFREP takes client and frontend tokens: the caller's scope, and whether its
        token is a frontend token (which sees only the flags on for it in a bulk answer).
        A token the upstream refuses on the client API as another kind (403) is checked
        as a frontend token."""
        if not secret:
            raise Unauthenticated("an API token is required (Authorization or X-API-Key)")
        if digest_of(secret) in self.frontends:
            return (await self.frontend_token(secret)).scope, True
        try:
            token = await self.client_token(secret)
        except Forbidden:
            return (await self.frontend_token(secret)).scope, True
        assert token.snapshot is not None
        return token.snapshot.scope, False

    def frontend_view(self, scope: Scope) -> FrontendView:
        """The compiled flags of ``scope``, from a followed token that covers it."""
        holder = next(
            (
                t
                for t in self.followed.values()
                if t.snapshot is not None and t.snapshot.scope.covers(scope)
            ),
            None,
        )
        if holder is None or holder.snapshot is None:
            raise ServiceUnavailable(
                f"no followed client token covers {scope.label()}: start the edge with an "
                "--upstream-token of that environment and projects",
                retry_after=_RETRY_AFTER_S,
            )
        snapshot = holder.snapshot
        key = (scope, snapshot)
        view = self._views.get(key)
        if view is None:
            if len(self._views) >= _VIEWS_KEPT:
                self._views.clear()
            view = FrontendView(snapshot.selected(scope.projects), scope.environment, 0)
            self._views[key] = view
        return view

    # --- what operators ask ---------------------------------------------------------------
    def has_data(self) -> bool:
        return any(t.snapshot is not None for t in self.followed.values())

    def oldest_data_age(self) -> float | None:
        times = [t.snapshot.fetched_at for t in self.followed.values() if t.snapshot is not None]
        return None if not times else max(0.0, time.time() - min(times))


def _raise_refusal(status: int | None, where: str) -> None:
    """The upstream's refusal, as it gave it: 403 for a token of another kind, else 401."""
    if status is None:
        return
    if status == 403:
        raise Forbidden(f"the token may not be used on {where}")
    raise Unauthenticated(f"the token is not valid for {where}")


def _validated(secret: str, kind: str, scope: Scope) -> ValidatedEdgeToken:
    projects = ("*",) if scope.projects is None else scope.projects
    return ValidatedEdgeToken(secret, kind, projects, scope.environment)


def _named_scope(secret: str) -> Scope:
    scope = scope_of_secret(secret)
    if scope is None:
        raise ValueError(
            f"an offline token names its scope: project:environment.secret or "
            f"*:environment.secret, not {secret.partition('.')[0]!r}"
        )
    return scope
