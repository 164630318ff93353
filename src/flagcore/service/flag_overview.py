"""The flags of a project as a list page shows them: filtered, one page at a time.

A read over the store port alone (no rule to apply), so the admin UI does not load every
flag's strategies to draw 100 rows: one read of the project's flags, one of the
environment switches and one of the tags, then filtering and slicing in memory.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from flagcore.entities import Environment, FlagDefinition, Tag
from flagcore.ports import Store
from flagcore.service.projects import require_project

__all__ = ["FlagOverview", "FlagRow", "flag_overview"]


@attrs.frozen
class FlagRow:
    """One flag of a project's list: its state in every environment and its tags."""

    flag: FlagDefinition
    enabled: Mapping[str, bool] = attrs.field(hash=False)  # by environment name
    tags: tuple[Tag, ...] = ()


@attrs.frozen
class FlagOverview:
    """One page of a project's flags after search and filters, with what the page's
    controls need (environments, tags in use, counts)."""

    rows: tuple[FlagRow, ...]
    matching: int  # flags that pass the filters, on every page
    total: int  # flags in the project
    page: int
    pages: int
    environments: tuple[Environment, ...]
    tags: tuple[Tag, ...]  # every tag in use in the project, for the filter


def flag_overview(
    store: Store,
    project: str,
    *,
    search: str = "",
    tag: Tag | None = None,
    flag_type: str | None = None,
    page: int = 1,
    per_page: int = 100,
) -> FlagOverview:
    """Page ``page`` (from 1; past the end shows the last) of ``project``'s active flags
    whose name contains ``search`` (case-insensitive), with ``tag`` and ``flag_type``."""
    with store.transaction(write=False) as tx:
        require_project(tx, project)
        flags = tx.list_flags(project=project, archived=False)
        environments = tuple(tx.list_environments())
        names = {flag.name for flag in flags}
        tags_of: dict[str, list[Tag]] = {}
        for name, flag_tag in tx.list_flag_tags():
            if name in names:
                tags_of.setdefault(name, []).append(flag_tag)
        needle = search.casefold()
        matching = [
            flag
            for flag in flags
            if (not needle or needle in flag.name.casefold())
            and (flag_type is None or flag.type == flag_type)
            and (tag is None or tag in tags_of.get(flag.name, ()))
        ]
        pages = max(1, -(-len(matching) // per_page))
        page = min(max(1, page), pages)
        shown = matching[(page - 1) * per_page : page * per_page]
        enabled: dict[str, dict[str, bool]] = {flag.name: {} for flag in shown}
        for environment in environments:
            for state in tx.list_flag_environments(environment=environment.name):
                if state.flag in enabled:
                    enabled[state.flag][state.environment] = state.enabled
    in_use = sorted({t for found in tags_of.values() for t in found})
    rows = tuple(
        FlagRow(flag, enabled[flag.name], tuple(sorted(tags_of.get(flag.name, ()))))
        for flag in shown
    )
    return FlagOverview(rows, len(matching), len(flags), page, pages, environments, tuple(in_use))
