"""One token's flags as the upstream answered them, and every SDK answer made from them.

The upstream's body (format 2) is kept byte for byte: an SDK asking for what the edge
asked for (format 2, no filter) gets exactly those bytes and the upstream's ETag. Any
other answer (format 1, a ``project`` or ``namePrefix`` filter) is written from the read
snapshot by `flagcore.wire`, the server's own writer, and kept until the next change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.model import ClientFeatures
from flagcore.wire import Hydration, read_client_features, unstructure_client_features

__all__ = ["Rendered", "Scope", "TokenSnapshot", "scope_of_secret"]

_RENDERED_KEPT = 64  # distinct (format, filter) answers per token


@attrs.frozen
class Scope:
    """An environment and the projects seen there (None: every project)."""

    environment: str
    projects: tuple[str, ...] | None

    def covers(self, other: Scope) -> bool:
        if self.environment != other.environment:
            return False
        if self.projects is None:
            return True
        return other.projects is not None and set(other.projects) <= set(self.projects)

    def label(self) -> str:
        projects = "*" if self.projects is None else ",".join(self.projects)
        return f"{projects}:{self.environment}"


def scope_of_secret(secret: str) -> Scope | None:
    """The scope an Unleash token names (``project:environment.secret``; ``*`` for every
    project); None when it does not say (``[]`` names several projects without listing
    them)."""
    head, dot, _rest = secret.partition(".")
    project, colon, environment = head.partition(":")
    if not (dot and colon and project and environment) or project == "[]" or environment == "*":
        return None
    return Scope(environment, None if project == "*" else (project,))


@attrs.frozen
class Rendered:
    body: bytes
    etag: str


def _scope_of_answer(query: Any) -> Scope:
    if not isinstance(query, Mapping):
        return Scope("development", None)
    environment = query.get("environment")
    projects = query.get("project")
    listed = None
    if isinstance(projects, list) and projects and "*" not in projects:
        listed = tuple(sorted(str(p) for p in projects))
    return Scope(environment if isinstance(environment, str) else "development", listed)


class TokenSnapshot:
    """A client token's payload at one upstream version (``etag``)."""

    def __init__(self, body: bytes, etag: str | None, fetched_at: float) -> None:
        payload = json.loads(body)
        if not isinstance(payload, dict) or not isinstance(payload.get("features"), list):
            raise ValueError("the upstream's answer is no client-features payload")
        self.body = body
        self.etag = etag or '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        self.fetched_at = fetched_at
        self.query: dict[str, Any] = dict(payload.get("query") or {})
        self.scope = _scope_of_answer(self.query)
        meta = payload.get("meta")
        self.revision_id = meta.get("revisionId") if isinstance(meta, dict) else None
        self.features: ClientFeatures = read_client_features(payload).snapshot
        self.version = payload.get("version")
        self._rendered: dict[tuple[Any, ...], Rendered] = {}

    def hydration(self) -> Hydration:
        """Unleash's ``hydration`` delta event: every flag and segment of this payload, as
        the upstream wrote them (format 2)."""
        if self.version != 2:
            written = unstructure_client_features(self.features, version=2)
            return Hydration(self.event_id, tuple(written["features"]), tuple(written["segments"]))
        payload = json.loads(self.body)
        return Hydration(
            self.event_id, tuple(payload["features"]), tuple(payload.get("segments") or ())
        )

    @property
    def event_id(self) -> int:
        return self.revision_id if isinstance(self.revision_id, int) else 0

    def answer(
        self, version: int, projects: tuple[str, ...] | None, name_prefix: str | None
    ) -> Rendered:
        """The payload an SDK asking for ``version`` with these filters gets."""
        if self.scope.projects is not None:
            projects = None  # a token scoped to projects: its scope wins over the query
        if version >= 2 and self.version == 2 and projects is None and not name_prefix:
            return Rendered(self.body, self.etag)
        key = (version, projects, name_prefix)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._render(version, projects, name_prefix)
            if len(self._rendered) >= _RENDERED_KEPT:
                self._rendered.clear()
            self._rendered[key] = rendered
        return rendered

    def selected(
        self, projects: tuple[str, ...] | None, name_prefix: str | None = None
    ) -> ClientFeatures:
        """The flags of ``projects`` (None: all) whose names start with ``name_prefix``."""
        flags = self.features.features
        if projects is not None:
            wanted = set(projects)
            flags = tuple(flag for flag in flags if flag.project in wanted)
        if name_prefix:
            flags = tuple(flag for flag in flags if flag.name.startswith(name_prefix))
        return ClientFeatures(flags, self.features.segments)

    def _render(
        self, version: int, projects: tuple[str, ...] | None, name_prefix: str | None
    ) -> Rendered:
        payload = unstructure_client_features(self.selected(projects, name_prefix), version=version)
        echo = {**self.query, "inlineSegmentConstraints": version < 2}
        if projects:
            echo["project"] = list(projects)
        if name_prefix:
            echo["namePrefix"] = name_prefix
        seed = json.dumps([version, sorted(echo.items()), self.etag], default=str)
        digest = hashlib.sha256(seed.encode("utf-8")).hexdigest()[:40]
        etag = f'"{digest}:{self.revision_id}:v1"'
        payload["query"] = echo
        payload["meta"] = {"revisionId": self.revision_id, "etag": etag, "queryHash": digest}
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return Rendered(body, etag)
