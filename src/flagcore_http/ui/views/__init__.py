"""One module per page (or group of pages) of the admin UI."""

from __future__ import annotations

from aiohttp import web

from flagcore_http.ui.views import (
    actions,
    all_flags,
    applications,
    archive,
    change_requests,
    context_fields,
    dependencies,
    environments,
    events,
    flag,
    flag_edit,
    flags,
    integrations,
    my_tokens,
    playground,
    project_access,
    projects,
    provider_sign_in,
    roles,
    segments,
    service_accounts,
    sign_in,
    signals,
    strategies,
    strategy_copy,
    strategy_definitions,
    tag_types,
    tokens,
    users,
)

__all__ = ["ALL_ROUTES"]

# sign_in last: it ends with the catch-all for unknown /ui/ pages.
ALL_ROUTES: tuple[web.RouteTableDef, ...] = (
    flags.routes,
    flag.routes,
    flag_edit.routes,
    dependencies.routes,
    strategies.routes,
    strategy_copy.routes,
    archive.routes,
    segments.routes,
    context_fields.routes,
    projects.routes,
    environments.routes,
    tokens.routes,
    users.routes,
    my_tokens.routes,
    service_accounts.routes,
    events.routes,
    signals.routes,
    actions.routes,
    applications.routes,
    playground.routes,
    integrations.routes,
    roles.routes,
    project_access.routes,
    change_requests.routes,
    provider_sign_in.routes,
    all_flags.routes,
    tag_types.routes,
    strategy_definitions.routes,
    roles.routes,
    sign_in.routes,
)
