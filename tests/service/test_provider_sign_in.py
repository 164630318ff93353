"""Who a verified ID token signs in as (issue 28, OpenID Connect), over every store: the
rules refuse with a reason and write nothing; a first sign-in creates the user."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from flagcore.errors import Unauthenticated
from flagcore.people import RootRole
from flagcore.service import NewGroup, NewUser, ProviderIdentity, ProviderRules, Service
from tests.service.store_factories import FACTORIES

ISSUER = "https://sso.example.io/realms/main"
RULES = ProviderRules(
    default_role=RootRole.VIEWER,
    email_domains=("example.io",),
    group_roles=(("developers", RootRole.EDITOR), ("flag-admins", RootRole.ADMIN)),
)


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        yield Service(store)
    finally:
        store.close()


def _person(email: str | None = "ann@example.io", **claims: object) -> ProviderIdentity:
    fields: dict[str, object] = {"email_verified": True, "name": "Ann", **claims}
    return ProviderIdentity(ISSUER, "sub-1", email, **fields)  # type: ignore[arg-type]


def test_a_first_sign_in_creates_the_user_with_the_strongest_role_their_groups_map_to(
    service: Service,
) -> None:
    user = service.provider_sign_in.user_for(
        _person(groups=("developers", "flag-admins", "other")), RULES
    )
    assert (user.email, user.name, user.root_role) == ("ann@example.io", "Ann", RootRole.ADMIN)
    events = service.events.list_events()
    assert events[0].type == "user-created"
    assert events[0].data is not None
    assert events[0].data["signedInWith"] == ISSUER


def test_without_a_mapped_group_a_new_user_gets_the_default_role(service: Service) -> None:
    user = service.provider_sign_in.user_for(_person(groups=("other",)), RULES)
    assert user.root_role is RootRole.VIEWER


def test_a_later_sign_in_finds_the_user_by_email_whatever_its_case_and_keeps_their_role(
    service: Service,
) -> None:
    made = service.users.create_user(NewUser(RootRole.VIEWER, email="Ann@Example.io"))
    found = service.provider_sign_in.user_for(
        _person("ann@EXAMPLE.io", groups=("flag-admins",)), RULES
    )
    assert (found.id, found.root_role) == (made.id, RootRole.VIEWER)
    assert len(service.users.list_users()) == 1


@pytest.mark.parametrize(
    ("identity", "reason"),
    [
        (_person("eve@elsewhere.org"), "Email addresses at elsewhere.org may not sign in here."),
        (_person(email_verified=False), "has not verified your email address"),
        (_person(None), "did not tell us your email address"),
        (_person("a" * 250 + "@example.io"), "longer than 255 characters"),
    ],
)
def test_a_refused_sign_in_says_why_and_creates_nobody(
    service: Service, identity: ProviderIdentity, reason: str
) -> None:
    with pytest.raises(Unauthenticated, match=reason):
        service.provider_sign_in.user_for(identity, RULES)
    assert service.users.list_users() == []


def test_a_disabled_user_is_refused(service: Service) -> None:
    made = service.users.create_user(NewUser(RootRole.EDITOR, email="ann@example.io"))
    service.users.update_user(made.id, disabled=True)
    with pytest.raises(Unauthenticated, match="disabled"):
        service.provider_sign_in.user_for(_person(), RULES)


def test_no_allow_list_lets_every_domain_in(service: Service) -> None:
    rules = ProviderRules(default_role=RootRole.EDITOR)
    user = service.provider_sign_in.user_for(_person("eve@elsewhere.org"), rules)
    assert user.root_role is RootRole.EDITOR


def test_a_later_sign_in_finds_the_user_by_their_provider_account_after_their_email_changed(
    service: Service,
) -> None:
    first = service.provider_sign_in.user_for(_person(), RULES)
    again = service.provider_sign_in.user_for(_person("ann.new@example.io"), RULES)
    assert again.id == first.id
    assert again.email == "ann@example.io"  # the user's email is the admin's to change
    assert len(service.users.list_users()) == 1


def test_an_email_of_a_user_linked_to_another_account_at_the_provider_is_refused(
    service: Service,
) -> None:
    service.provider_sign_in.user_for(_person(), RULES)
    other = ProviderIdentity(ISSUER, "sub-2", "ann@example.io", email_verified=True)
    with pytest.raises(Unauthenticated, match="another account at this provider"):
        service.provider_sign_in.user_for(other, RULES)


def test_deleting_a_user_forgets_their_provider_account(service: Service) -> None:
    first = service.provider_sign_in.user_for(_person(), RULES)
    service.users.delete_user(first.id)
    again = service.provider_sign_in.user_for(_person(), RULES)
    assert again.id != first.id
    assert [u.id for u in service.users.list_users()] == [again.id]


def test_every_sign_in_brings_group_memberships_in_line_with_the_claim(service: Service) -> None:
    """Not only the first: a group claimed later is joined, one no longer claimed is left,
    and a membership an admin gave stays whatever the provider says."""
    rules = attrs.evolve(RULES, sync_groups=True)
    groups = service.groups
    devs = groups.create_group(NewGroup("Devs", mappings_sso=("developers",))).group
    ops = groups.create_group(NewGroup("Ops", mappings_sso=("ops", "sre"))).group
    ann = service.provider_sign_in.user_for(_person(groups=("developers",)), rules)
    assert [g.name for g in groups.groups_of(ann.id)] == ["Devs"]
    kept = groups.create_group(NewGroup("Hand-picked", mappings_sso=("ops",), user_ids=(ann.id,)))

    service.provider_sign_in.user_for(_person(groups=("sre",)), rules)
    assert [g.name for g in groups.groups_of(ann.id)] == ["Ops", "Hand-picked"]
    members = service.groups.get_group(ops.id).members
    assert [(m.created_by, m.via_provider) for m, _ in members] == [("system", True)]
    moves = [(e.type, e.data) for e in service.events.list_events(limit=3)]
    assert ("group-user-removed", {"groupId": devs.id, "userId": ann.id}) in moves
    assert ("group-user-added", {"groupId": ops.id, "userId": ann.id}) in moves

    service.provider_sign_in.user_for(_person(groups=()), rules)
    assert [g.id for g in groups.groups_of(ann.id)] == [kept.group.id]
    # Without a group claim configured, memberships are left as they are.
    service.provider_sign_in.user_for(_person(groups=("developers",)), RULES)
    assert [g.id for g in groups.groups_of(ann.id)] == [kept.group.id]
