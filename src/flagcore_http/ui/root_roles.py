"""The root-role field of the Users and Service accounts pages: the predefined roles by
name, the custom root roles by id, read back into what the service takes (a
`RootRole`, or a custom root role's id, which the service checks)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.people import RootRole, User
from flagcore.permissions import Role

__all__ = [
    "RootRoleOption",
    "posted_root_role",
    "root_role_names",
    "root_role_options",
    "value_of",
]

_MAX_ID_DIGITS = 15


@attrs.frozen
class RootRoleOption:
    """One choice: ``value`` is what the form posts, ``label`` what a person reads."""

    value: str
    label: str


def root_role_options(custom: Sequence[Role]) -> list[RootRoleOption]:
    return [
        *(RootRoleOption(role.value, role.value) for role in RootRole),
        *(RootRoleOption(str(role.id), role.name) for role in custom),
    ]


def root_role_names(custom: Sequence[Role]) -> dict[int, str]:
    """Each root role's name by id, for the tables."""
    return {**{r.role_id: r.value for r in RootRole}, **{r.id: r.name for r in custom}}


def value_of(user: User) -> str:
    """What the field holds for ``user``'s current root role."""
    return str(user.custom_root_role) if user.custom_root_role else user.root_role.value


def posted_root_role(raw: str) -> RootRole | int:
    """A predefined role's name, or a custom root role's id; else refused at
    ``$.rootRole``, the form drawn again as typed."""
    if raw in RootRole.__members__.values():
        return RootRole(raw)
    if raw.isascii() and raw.isdigit() and len(raw) <= _MAX_ID_DIGITS and int(raw) > 0:
        return int(raw)
    raise InvalidInput("Choose a root role.", [ErrorDetail("choose one", "$.rootRole")])
