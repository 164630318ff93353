"""What a fresh store starts with, as in Unleash: project ``default``, environments
``development`` and ``production``, and tag type ``simple``."""

from __future__ import annotations

import attrs

from flagcore.entities import Environment, Project, TagType
from flagcore.service.context import ServiceContext

__all__ = ["DEFAULT_ENVIRONMENTS", "DEFAULT_PROJECT", "ensure_defaults"]

DEFAULT_PROJECT = Project("default", "Default", "Default project")
DEFAULT_ENVIRONMENTS = (
    Environment("development", "development", 2),
    Environment("production", "production", 3),
)


def ensure_defaults(context: ServiceContext) -> None:
    """Give a store with no project and no environment Unleash's defaults; a store that
    has either is left as it is (an admin may have deleted or renamed them)."""
    with context.read() as tx:
        if tx.list_projects() or tx.list_environments():
            return
    with context.unit() as tx:
        if not tx.get_project(DEFAULT_PROJECT.id):
            tx.save_project(attrs.evolve(DEFAULT_PROJECT, created_at=context.clock()))
        for environment in DEFAULT_ENVIRONMENTS:
            if not tx.get_environment(environment.name):
                tx.save_environment(environment)
        if not tx.get_tag_type("simple"):
            tx.save_tag_type(TagType("simple", "Used to simplify filtering of features"))
