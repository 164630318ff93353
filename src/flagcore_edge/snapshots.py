"""One token's flags as the upstream answered them, and every SDK answer made from them.

The upstream's body is kept byte for byte, per format asked (format 2, and format 1 once
an SDK asks for it): an SDK asking without filters gets exactly those bytes and the
upstream's ETag; with ``project`` or ``namePrefix``, the upstream's JSON with the flags
selected. The read snapshot (`flagcore.wire`) serves evaluation (the Frontend API, OFREP)
and delta hydrations.
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

_RENDERED_KEPT = 64  # distinct filtered answers per token and format


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
        self._inlined: TokenSnapshot | None = None

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

    def answer(self, projects: tuple[str, ...] | None, name_prefix: str | None) -> Rendered:
        """This payload as an SDK asking with these filters gets it: without filters the
        upstream's bytes and ETag; with them, the upstream's JSON with only the flags
        selected (each flag as the upstream wrote it), the filters echoed in ``query``,
        and an ETag of its own."""
        if self.scope.projects is not None:
            projects = None  # a token scoped to projects: its scope wins over the query
        if projects is None and not name_prefix:
            return Rendered(self.body, self.etag)
        key = (projects, name_prefix)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._filtered(projects, name_prefix)
            if len(self._rendered) >= _RENDERED_KEPT:
                self._rendered.clear()
            self._rendered[key] = rendered
        return rendered

    def _filtered(self, projects: tuple[str, ...] | None, name_prefix: str | None) -> Rendered:
        payload = json.loads(self.body)
        wanted = None if projects is None else set(projects)
        payload["features"] = [
            flag
            for flag in payload["features"]
            if (wanted is None or flag.get("project") in wanted)
            and (not name_prefix or str(flag.get("name", "")).startswith(name_prefix))
        ]
        echo = dict(self.query)
        if projects:
            echo["project"] = list(projects)
        if name_prefix:
            echo["namePrefix"] = name_prefix
        seed = json.dumps([sorted(echo.items()), self.etag], default=str)
        digest = hashlib.sha256(seed.encode("utf-8")).hexdigest()[:40]
        etag = f'"{digest}:{self.revision_id}:v1"'
        payload["query"] = echo
        payload["meta"] = {"revisionId": self.revision_id, "etag": etag, "queryHash": digest}
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return Rendered(body, etag)

    def inlined(self) -> TokenSnapshot:
        """This format-2 payload as an SDK without segment support reads it (segments'
        constraints inlined, flagcore's format 1), for when the upstream's own format-1
        answer is not at hand (never fetched, and the upstream away)."""
        if self._inlined is None:
            payload = unstructure_client_features(self.features, version=1)
            payload["query"] = {**self.query, "inlineSegmentConstraints": True}
            payload["meta"] = {"revisionId": self.revision_id}
            body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
            self._inlined = TokenSnapshot(body.encode("utf-8"), None, self.fetched_at)
        return self._inlined

    def flag_json(self, name: str) -> Any:
        """One flag as the upstream wrote it in this payload; None if it holds none."""
        features = json.loads(self.body)["features"]
        return next((flag for flag in features if flag.get("name") == name), None)

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
