"""Personal access tokens and service accounts in the service (issue 28), over every store:
who a token acts as, and that using one is not a change SDKs see."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.errors import InvalidInput, NotFound
from flagcore.people import RootRole
from flagcore.service import NewUser, Service
from tests.service.store_factories import FACTORIES

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=sorted(FACTORIES))
def service(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Service]:
    store = FACTORIES[request.param](tmp_path)
    try:
        yield Service(store, clock=clock)
    finally:
        store.close()


def _ann(service: Service) -> int:
    return service.users.create_user(NewUser(RootRole.EDITOR, email="ann@x.io", name="Ann")).id


def test_a_token_acts_as_its_owner_until_it_expires(service: Service, clock: Clock) -> None:
    ann = _ann(service)
    made = service.personal_tokens.create_personal_token(ann, "ci", START + dt.timedelta(days=2))
    holder = service.personal_tokens.token_holder(made.secret)
    assert holder is not None
    assert (holder.user.id, holder.token.id) == (ann, made.token.id)
    assert holder.actor == f"user:{ann}:Ann (personal token {made.token.id})"
    assert service.personal_tokens.token_holder(made.secret + "0") is None
    clock.now = START + dt.timedelta(days=2)
    assert service.personal_tokens.token_holder(made.secret) is None


def test_using_a_token_does_not_move_the_revision(service: Service, clock: Clock) -> None:
    ann = _ann(service)
    made = service.personal_tokens.create_personal_token(ann, "ci", START + dt.timedelta(days=2))
    revision = service.storage.revision()
    for minutes in (0, 0.5, 2):  # last-seen written, at most once a minute
        clock.now = START + dt.timedelta(minutes=minutes)
        assert service.personal_tokens.token_holder(made.secret) is not None
    assert service.storage.revision() == revision
    (token,) = service.personal_tokens.list_of(ann)
    assert token.seen_at == START + dt.timedelta(minutes=2)


def test_the_expiry_is_bounded_and_the_store_keeps_only_a_digest(service: Service) -> None:
    ann = _ann(service)
    for expires in (START, START + dt.timedelta(days=366, seconds=1)):
        with pytest.raises(InvalidInput) as refused:
            service.personal_tokens.create_personal_token(ann, "ci", expires)
        assert [d.path for d in refused.value.details] == ["$.expiresAt"]
    made = service.personal_tokens.create_personal_token(ann, "ci", START + dt.timedelta(days=366))
    assert made.secret not in repr(made)
    (kept,) = service.personal_tokens.list_of(ann)
    assert kept.secret_digest == hashlib.sha256(made.secret.encode()).hexdigest()


def test_people_and_service_accounts_reach_only_their_own_kind(service: Service) -> None:
    ann = _ann(service)
    bot = service.service_accounts.create_service_account(
        name="Bot", username="bot", root_role=RootRole.VIEWER
    )
    with pytest.raises(NotFound):
        service.personal_tokens.list_of(bot.id)  # a service account's are an admin's to manage
    with pytest.raises(NotFound):
        service.service_accounts.tokens_of(ann)
    with pytest.raises(NotFound):
        service.users.get_user(bot.id)
    assert [u.id for u in service.users.list_users()] == [ann]
    assert service.sessions.password_candidate("bot") is None
