"""Users, passwords, server-side sessions and single-use links (issue 28), over every store."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.errors import InvalidInput, NameConflict, NotFound, Unauthenticated
from flagcore.passwords import NewPassword
from flagcore.people import LinkKind, RootRole
from flagcore.service import NewUser, Service
from tests.service.store_factories import FACTORIES

GOOD = "Correct-Horse-9"
HOUR = dt.timedelta(hours=1)


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        yield Service(store)
    finally:
        store.close()


@pytest.fixture(scope="module")
def good_password() -> NewPassword:
    return NewPassword.of(GOOD)


def _ann(service: Service, password: NewPassword | None) -> int:
    new = NewUser(RootRole.EDITOR, email="Ann@Example.io", name="Ann", password=password)
    return service.users.create_user(new, actor="token:admin").id


@pytest.mark.parametrize(
    ("password", "rule"),
    [
        ("Sh0rt!", "at least 10 characters"),
        ("all-lowercase-1", "uppercase"),
        ("ALL-UPPERCASE-1", "lowercase"),
        ("No-Digits-Here", "number"),
        ("NoSymbols123", "special character"),
        ("Aaa-bbb-1234", "three times in a row"),
    ],
)
def test_a_password_breaking_unleashs_policy_is_refused_naming_the_field(
    password: str, rule: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        NewPassword.of(password)
    assert [d.path for d in refused.value.details] == ["$.password"]
    assert rule in refused.value.details[0].message


def test_sign_in_by_email_in_any_case_or_username_makes_a_new_session_each_time(
    service: Service, good_password: NewPassword
) -> None:
    user_id = _ann(service, good_password)
    first = service.sessions.sign_in("ann@example.IO", GOOD, lifetime=HOUR)
    second = service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR)
    assert first.secret != second.secret
    holder = service.sessions.holder(first.secret)
    assert holder is not None
    assert holder.user is not None
    assert holder.user.id == user_id
    assert service.users.get_user(user_id).seen_at is not None
    with pytest.raises(Unauthenticated):
        service.sessions.sign_in("ann@example.io", "Wrong-Horse-9", lifetime=HOUR)
    with pytest.raises(Unauthenticated):
        service.sessions.sign_in("nobody@example.io", GOOD, lifetime=HOUR)


def test_emails_and_usernames_are_unique_whatever_their_case(service: Service) -> None:
    _ann(service, None)
    with pytest.raises(NameConflict) as taken:
        service.users.create_user(NewUser(RootRole.VIEWER, email="ANN@example.io"))
    assert taken.value.details[0].path == "$.email"
    service.users.create_user(NewUser(RootRole.VIEWER, username="Bob"))
    with pytest.raises(NameConflict):
        service.users.create_user(NewUser(RootRole.VIEWER, username="bob"))
    with pytest.raises(InvalidInput) as nameless:
        service.users.create_user(NewUser(RootRole.VIEWER, name="No Login"))
    assert nameless.value.details[0].path == "$.email"


def test_signing_out_deleting_disabling_or_a_new_password_ends_sessions_at_once(
    service: Service, good_password: NewPassword
) -> None:
    user_id = _ann(service, good_password)
    started = [service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR) for _ in range(3)]
    service.sessions.end(started[0].secret)
    assert service.sessions.holder(started[0].secret) is None
    assert service.sessions.holder(started[1].secret) is not None
    service.users.update_user(user_id, disabled=True, actor="token:admin")
    assert service.sessions.holder(started[1].secret) is None
    with pytest.raises(Unauthenticated):
        service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR)
    service.users.update_user(user_id, disabled=False)
    again = service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR)
    service.users.set_password(user_id, NewPassword.of("Another-Horse-7"))
    assert service.sessions.holder(again.secret) is None
    latest = service.sessions.sign_in("ann@example.io", "Another-Horse-7", lifetime=HOUR)
    service.users.delete_user(user_id, actor="token:admin")
    assert service.sessions.holder(latest.secret) is None
    with pytest.raises(NotFound):
        service.users.get_user(user_id)


def test_a_sixth_sign_in_ends_the_oldest_session(
    service: Service, good_password: NewPassword
) -> None:
    _ann(service, good_password)
    started = [service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR) for _ in range(6)]
    assert service.sessions.holder(started[0].secret) is None
    assert all(service.sessions.holder(s.secret) is not None for s in started[1:])


def test_an_expired_session_is_refused(service: Service, good_password: NewPassword) -> None:
    _ann(service, good_password)
    started = service.sessions.sign_in("ann@example.io", GOOD, lifetime=dt.timedelta(0))
    assert service.sessions.holder(started.secret) is None


def test_a_reset_link_works_once_and_ends_the_users_sessions(
    service: Service, good_password: NewPassword
) -> None:
    user_id = _ann(service, good_password)
    session = service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR)
    created = service.users.create_link("ANN@example.io", actor="token:admin")
    assert created.link.kind is LinkKind.RESET
    assert service.users.link_user(created.token).id == user_id
    service.users.use_link(created.token, NewPassword.of("Brand-New-Pass-1"))
    assert service.sessions.holder(session.secret) is None
    with pytest.raises(NotFound):
        service.users.use_link(created.token, NewPassword.of("Brand-New-Pass-2"))
    service.sessions.sign_in("ann@example.io", "Brand-New-Pass-1", lifetime=HOUR)
    with pytest.raises(NotFound):
        service.users.create_link("nobody@example.io")


def test_only_the_newest_link_works_and_a_password_or_disabling_spends_it(
    service: Service, good_password: NewPassword
) -> None:
    """As Unleash expires a user's reset tokens: a new link, a link used, a password set
    and a user disabled each leave no older link working."""
    user_id = _ann(service, good_password)
    older = service.users.create_link("ann@example.io").token
    newer = service.users.create_link("ann@example.io").token
    with pytest.raises(NotFound):  # a newer link was made
        service.users.link_user(older)
    service.users.set_password(user_id, NewPassword.of("Brand-New-Pass-1"))
    with pytest.raises(NotFound):  # a password was set
        service.users.use_link(newer, NewPassword.of("Brand-New-Pass-2"))
    unused = service.users.create_link("ann@example.io").token
    service.users.update_user(user_id, disabled=True)
    service.users.update_user(user_id, disabled=False)
    with pytest.raises(NotFound):  # the user was disabled meanwhile
        service.users.use_link(unused, NewPassword.of("Brand-New-Pass-3"))
    last = service.users.create_link("ann@example.io").token
    service.users.update_user(user_id, disabled=True)
    with pytest.raises(NotFound):
        service.users.link_user(last)


def test_the_first_start_makes_one_admin_with_an_invitation(service: Service) -> None:
    created = service.users.ensure_first_admin()
    assert created is not None
    admin = service.users.get_user(created.link.user_id)
    assert (admin.username, admin.root_role) == ("admin", RootRole.ADMIN)
    assert service.users.ensure_first_admin() is None
    service.users.use_link(created.token, NewPassword.of(GOOD))
    assert service.sessions.sign_in("admin", GOOD, lifetime=HOUR).session.user_id == admin.id


def test_no_event_carries_a_password_or_its_hash(
    service: Service, good_password: NewPassword
) -> None:
    user_id = _ann(service, good_password)
    service.users.set_password(user_id, NewPassword.of("Another-Horse-7"))
    logged = json.dumps(
        [(e.type, e.data, e.pre_data) for e in service.events.list_events(limit=50)]
    )
    assert "user-created" in logged
    assert "user-password-changed" in logged
    assert "$argon2id$" not in logged
    assert GOOD not in logged


def test_retention_deletes_expired_sessions_and_keeps_live_ones(
    service: Service, good_password: NewPassword
) -> None:
    _ann(service, good_password)
    expired = service.sessions.sign_in("ann@example.io", GOOD, lifetime=dt.timedelta(0))
    live = service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR)
    assert service.retention.prune().sessions == 1
    assert service.retention.prune().sessions == 0
    assert service.sessions.holder(live.secret) is not None
    assert service.sessions.holder(expired.secret) is None


def test_session_writes_do_not_move_the_revision(
    service: Service, good_password: NewPassword
) -> None:
    _ann(service, good_password)
    revision = service.storage.revision()
    started = service.sessions.sign_in("ann@example.io", GOOD, lifetime=HOUR)
    service.sessions.end(started.secret)
    assert service.storage.revision() == revision
