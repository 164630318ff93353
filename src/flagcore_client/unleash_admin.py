"""Reading a running Unleash (or flagcore) through its admin API: projects, environments,
strategy definitions, tag types, segments, and every project's flags with their rules and
tags, as the `InstanceCopy` ``flagcore import --from-unleash`` copies in. Each GET is
bounded in time and size; an answer is read strictly (a problem names its JSON path).
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from flagcore import wire
from flagcore.entities import (
    Environment,
    Project,
    StrategyDefinition,
    StrategyParameter,
    TagType,
)
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Segment
from flagcore.service import InstanceCopy
from flagcore.wire import FeatureExport, read_export, structure

__all__ = ["MAX_ANSWER_BYTES", "REQUEST_TIMEOUT_S", "UnleashUnreadable", "read_unleash"]

MAX_ANSWER_BYTES = 100_000_000
REQUEST_TIMEOUT_S = 15.0
_T = TypeVar("_T")


class UnleashUnreadable(Exception):
    """The Unleash could not be read (a bad URL, no answer, a refusal, a huge or non-JSON
    answer): the message is the one line a command prints."""


# Rows of the admin API's answers, read strictly with the core's converter (extra keys,
# which Unleash has many of, are ignored).


@attrs.frozen
class _ProjectRow:
    id: str
    name: str
    description: str | None = None


@attrs.frozen
class _EnvironmentRow:
    name: str
    type: str = "development"
    sort_order: int = 0


@attrs.frozen
class _ParameterRow:
    name: str
    type: str = "string"
    description: str | None = None
    required: bool = False


@attrs.frozen
class _DefinitionRow:
    name: str
    description: str | None = None
    title: str | None = None
    display_name: str | None = None
    parameters: tuple[_ParameterRow, ...] = ()
    editable: bool = True
    deprecated: bool = False


@attrs.frozen
class _TagTypeRow:
    name: str
    description: str | None = None


_ROW_NAMES: dict[type, Mapping[str, str]] = {
    **wire.WIRE_NAMES,
    _ProjectRow: {},
    _EnvironmentRow: {"sort_order": "sortOrder"},
    _ParameterRow: {},
    _DefinitionRow: {"display_name": "displayName"},
    _TagTypeRow: {},
}
_ROWS = wire.converter.copy()
for _cls in (_ProjectRow, _EnvironmentRow, _ParameterRow, _DefinitionRow, _TagTypeRow):
    wire.register_class(_ROWS, _cls, _ROW_NAMES[_cls])


def _row(data: Any, cls: type[_T], what: str) -> _T:
    return wire.structure_with(_ROWS, _ROW_NAMES, data, cls, what)


def _definition(row: _DefinitionRow) -> StrategyDefinition:
    return StrategyDefinition(
        row.name,
        row.description,
        tuple(
            StrategyParameter(p.name, p.type, p.description or "", p.required)
            for p in row.parameters
        ),
        editable=row.editable,
        deprecated=row.deprecated,
        title=row.title or row.display_name,
    )


Progress = Callable[[str, int, int], None]
JsonParser = Callable[[bytes, str], Any]


class _Unleash:
    """GETs on an Unleash's admin API, each bounded in time and size."""

    def __init__(self, url: str, token: str, parse: JsonParser) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise UnleashUnreadable(f"--from-unleash needs an http(s) URL; got {url[:200]!r}")
        self.base = url.rstrip("/")
        self.token = token
        self.parse = parse

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            self.base + path, headers={"Authorization": self.token, "Accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                raw = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as error:
            hint = " (is the token an admin token?)" if error.code in (401, 403) else ""
            raise UnleashUnreadable(
                f"Unleash at {self.base} answered {error.code} to GET {path}{hint}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise UnleashUnreadable(f"cannot reach Unleash at {self.base}: {reason}") from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise UnleashUnreadable(f"GET {path} answered over {MAX_ANSWER_BYTES:,} bytes")
        try:
            return self.parse(raw, f"GET {path}")
        except InvalidInput as error:
            raise UnleashUnreadable(f"GET {path} did not answer JSON: {error.message}") from None


def _list(answer: Any, key: str, path: str) -> list[Any]:
    items = answer.get(key) if type(answer) is dict else None
    if type(items) is not list:
        raise InvalidInput(
            f"GET {path} answered without a list {key!r}", [ErrorDetail("missing", f"$.{key}")]
        )
    return items


def read_unleash(
    url: str, token: str, progress: Progress | None = None, *, parse: JsonParser
) -> InstanceCopy:
    """Everything ``flagcore import --from-unleash`` copies, read through the admin API
    paths Unleash 8.2 serves (and flagcore serves too). ``parse`` reads an answer's bytes
    as JSON, or raises `InvalidInput` (the server's strict body parser, given by the
    caller so this client needs nothing of the server's)."""
    unleash = _Unleash(url, token, parse)
    projects = [
        _row(p, _ProjectRow, "a project")
        for p in _list(unleash.get("/api/admin/projects"), "projects", "/api/admin/projects")
    ]
    environments = [
        Environment(e.name, e.type, e.sort_order)
        for e in (
            _row(item, _EnvironmentRow, "an environment")
            for item in _list(
                unleash.get("/api/admin/environments"), "environments", "/api/admin/environments"
            )
        )
    ]
    definitions = [
        _definition(_row(item, _DefinitionRow, "a strategy definition"))
        for item in _list(unleash.get("/api/admin/strategies"), "strategies", "strategies")
    ]
    tag_types = [
        TagType(t.name, t.description)
        for t in (
            _row(item, _TagTypeRow, "a tag type")
            for item in _list(unleash.get("/api/admin/tag-types"), "tagTypes", "tag-types")
        )
    ]
    segments = [
        structure(item, Segment, "a segment")
        for item in _list(unleash.get("/api/admin/segments"), "segments", "segments")
    ]
    flags: dict[str, dict[str, FeatureExport]] = {}
    names_by_project = {
        p.id: [
            _name(item)
            for item in _list(
                unleash.get(f"/api/admin/projects/{_quote(p.id)}/features"), "features", "features"
            )
        ]
        for p in projects
    }
    total = sum(len(names) for names in names_by_project.values())
    done = 0
    for project in projects:
        details = []
        for name in names_by_project[project.id]:
            base = f"/api/admin/projects/{_quote(project.id)}/features/{_quote(name)}"
            detail = unleash.get(base)
            tags = _list(unleash.get(f"/api/admin/features/{_quote(name)}/tags"), "tags", "tags")
            details.append((detail, tags))
            done += 1
            if progress is not None:
                progress("flags", done, total)
        flags[project.id] = {
            e.name: _export_of(project.id, e.name, details, segments) for e in environments
        }
    return InstanceCopy(
        projects=tuple(Project(p.id, p.name, p.description) for p in projects),
        environments=tuple(environments),
        strategy_definitions=tuple(definitions),
        tag_types=tuple(tag_types),
        segments=tuple(segments),
        flags=flags,
    )


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _name(item: Any) -> str:
    name = item.get("name") if type(item) is dict else None
    if type(name) is not str:
        raise InvalidInput("a flag without a name", [ErrorDetail("missing", "$.features[].name")])
    return name


def _sort_order(strategy: dict[str, Any]) -> int:
    order = strategy.get("sortOrder")
    return order if type(order) is int else 0


def _export_of(
    project: str,
    environment: str,
    details: Sequence[tuple[Any, list[Any]]],
    segments: Sequence[Segment],
) -> FeatureExport:
    """One environment of one project's flags as an export file, read strictly (a problem
    names the project, environment and JSON path)."""
    data: dict[str, list[Any]] = {
        "features": [],
        "featureStrategies": [],
        "featureEnvironments": [],
        "featureTags": [],
        "segments": [{"id": s.id, "name": s.name} for s in segments],
        "dependencies": [],
    }
    for detail, tags in details:
        if type(detail) is not dict:
            continue
        name = detail.get("name")
        data["features"].append(
            {key: detail.get(key) for key in ("name", "type", "description", "stale")}
            | {"impressionData": detail.get("impressionData")}
        )
        for state in detail.get("environments") or []:
            if type(state) is not dict or state.get("name") != environment:
                continue
            strategies = [s for s in state.get("strategies") or [] if type(s) is dict]
            strategies.sort(key=_sort_order)
            data["featureStrategies"] += [{**s, "featureName": name} for s in strategies]
            data["featureEnvironments"].append(
                {
                    "featureName": name,
                    "enabled": state.get("enabled"),
                    "variants": state.get("variants"),
                }
            )
        data["featureTags"] += [
            {"featureName": name, "tagType": t.get("type"), "tagValue": t.get("value")}
            for t in tags
            if type(t) is dict
        ]
        if detail.get("dependencies"):
            data["dependencies"].append(
                {"feature": name, "dependencies": detail.get("dependencies")}
            )
    return read_export(data, f"project {project}, environment {environment}")
