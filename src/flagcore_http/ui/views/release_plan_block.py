"""What the flag page shows of release plans (issue 32), per environment: the plan, its
milestones with the active one, when the next starts on its own, a safeguard's pause, and
the templates a plan can be made from. Kept apart from the page's module so the forms
(`release_plans`) can answer with the page without an import loop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from flagcore.entities import FlagDefinition
from flagcore.service import AGGREGATION_MODES, ChangeRequestConfig
from flagcore_http.calls import call
from flagcore_http.ui.pages import svc

__all__ = ["TYPED_PROGRESSION", "TYPED_SAFEGUARD", "TYPED_TEMPLATE", "release_view"]

TYPED_TEMPLATE = web.RequestKey("typed_release_template", tuple[str, str])
"""The request's key for the template a refused "add a plan" form chose (shown again)."""
TYPED_SAFEGUARD = web.RequestKey("typed_safeguard", tuple[str, dict[str, str]])
"""A refused safeguard form: its environment and its fields as typed."""
TYPED_PROGRESSION = web.RequestKey("typed_progression", tuple[str, str, str])
"""A refused progression form: its environment, milestone id and minutes as typed."""


async def release_view(
    request: web.Request, flag: FlagDefinition, config: Sequence[ChangeRequestConfig]
) -> dict[str, Any]:
    """``plans``: environment → its plan; ``templates``: those a plan can be made from;
    ``typed``, ``typed_safeguard``, ``typed_progression``: a refused form as typed;
    ``drafting``: the environments whose changes go to a draft (from the page's ``config``,
    the project's change-request settings, read once for the whole page)."""
    if flag.archived:
        return {"plans": {}, "templates": [], "typed": None, "drafting": set()}
    service = svc(request)
    plans = await call(
        request, service.release_plans.release_plans_of_flag, flag.project, flag.name
    )
    templates = await call(request, service.release_templates.list_release_plan_templates)
    return {
        # where change requests are on, each form adds to the person's draft (issue 30)
        "drafting": {row.environment for row in config if row.enabled},
        "plans": {plan.environment: plan for plan in plans},
        "templates": templates,
        "typed": request.get(TYPED_TEMPLATE),
        "typed_safeguard": request.get(TYPED_SAFEGUARD),
        "typed_progression": request.get(TYPED_PROGRESSION),
        "aggregation_modes": AGGREGATION_MODES,
    }
