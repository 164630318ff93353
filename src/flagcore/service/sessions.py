"""Server-side sessions: signing in with a password, and ending sessions from anywhere.

A session's id is 256 random bits, given to the browser once; the store keeps its
SHA-256. Because the row is the session, ending it (signing out, "sign out everywhere",
an admin ending a user's sessions, deleting or disabling the user) takes effect on every
server over the same database at its next request. Each sign-in makes a new id, so an id
planted before sign-in is worth nothing after it.

Session writes are not changes SDKs see: they go through the store directly (as
retention does), so they neither move the revision nor wake in-process readers.

Checking a password is slow by design; `Sessions.password_candidate` and
`flagcore.passwords.verify` are separate steps so a server can run the check off its store
worker, then `Sessions.start` the session. `Sessions.sign_in` does all three in-process.
"""

from __future__ import annotations

import datetime as dt
import secrets
from contextlib import AbstractContextManager

import attrs

from flagcore.errors import Unauthenticated
from flagcore.passwords import dummy_verify, verify
from flagcore.people import User, UserSession
from flagcore.ports import Transaction
from flagcore.principals import Principal
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.roles import principal_in
from flagcore.service.users import end_sessions_of, find_user, secret_digest
from flagcore.tables import USER_PASSWORDS, USER_SESSIONS, USERS

__all__ = [
    "MAX_SESSIONS_PER_USER",
    "PASSWORD_SIGN_IN_OFF",
    "SIGN_IN_REFUSED",
    "PasswordCandidate",
    "SessionHolder",
    "Sessions",
    "StartedSession",
]

MAX_SESSIONS_PER_USER = 5
"""Unleash's ``maxParallelSessions``: a sixth sign-in ends the oldest session."""
SEEN_EVERY = dt.timedelta(minutes=1)
"""A session's (and its user's) last-seen time is written at most this often."""
SIGN_IN_REFUSED = "The combination of password and username you provided is invalid."
PASSWORD_SIGN_IN_OFF = "Password sign-in is turned off on this server; sign in with its provider."


@attrs.frozen(repr=False)
class PasswordCandidate:
    """Who a sign-in names, with the hash to check the password against (never shown)."""

    user: User
    password_hash: str

    def __repr__(self) -> str:
        return f"PasswordCandidate(user={self.user.id})"


@attrs.frozen
class StartedSession:
    """A new session and its id, which only the browser keeps."""

    secret: str
    session: UserSession


@attrs.frozen
class SessionHolder:
    """Who a live session belongs to: a user, or (UI signed in with a token) a token id."""

    session: UserSession
    user: User | None
    # The user with their roles, read in the same transaction (None for a token's session).
    principal: Principal | None = None


class Sessions:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def password_candidate(self, login: str) -> PasswordCandidate | None:
        """The enabled user ``login`` (email or username) names, if they have a password."""
        with self._context.read() as tx:
            user = find_user(tx, login)
            if user is None or user.disabled or user.service_account:
                return None
            password = tx.get_record(USER_PASSWORDS, user.id)
        return None if password is None else PasswordCandidate(user, password.hash)

    def own_password(self, user_id: int) -> PasswordCandidate | None:
        """A signed-in user's password hash, to check the old one before a change."""
        with self._context.read() as tx:
            user = tx.get_record(USERS, user_id)
            password = tx.get_record(USER_PASSWORDS, user_id)
        if user is None or password is None:
            return None
        return PasswordCandidate(user, password.hash)

    def start(
        self,
        *,
        user_id: int | None = None,
        token_id: str | None = None,
        lifetime: dt.timedelta,
        id_token: str | None = None,
    ) -> StartedSession:
        """A new session for a user (the oldest beyond `MAX_SESSIONS_PER_USER` end) or a
        token. A user disabled or deleted since their password was checked gets none.
        ``id_token``: the provider's, when the person signed in there (kept to sign them
        out there too)."""
        secret = secrets.token_urlsafe(32)
        now = self._context.clock()
        session = UserSession(
            secret_digest(secret), user_id, token_id, now, now + lifetime, now, id_token
        )
        with self._quiet() as tx:
            if user_id is not None:
                user = tx.get_record(USERS, user_id)
                if user is None or user.disabled:
                    raise Unauthenticated(SIGN_IN_REFUSED)
                tx.save_record(USERS, attrs.evolve(user, seen_at=now))
                for old in tx.list_records(USER_SESSIONS, {"user_id": user_id})[
                    : -MAX_SESSIONS_PER_USER + 1 or None
                ]:
                    tx.delete_record(USER_SESSIONS, old.id_digest)
            tx.save_record(USER_SESSIONS, session)
        return StartedSession(secret, session)

    def sign_in(self, login: str, password: str, *, lifetime: dt.timedelta) -> StartedSession:
        """Check a password and start a session (`Unauthenticated` with one message for
        every reason, so the answer does not tell which accounts exist)."""
        candidate = self.password_candidate(login)
        if candidate is None:
            dummy_verify(password)
            raise Unauthenticated(SIGN_IN_REFUSED)
        if not verify(candidate.password_hash, password):
            raise Unauthenticated(SIGN_IN_REFUSED)
        return self.start(user_id=candidate.user.id, lifetime=lifetime)

    def holder(self, secret: str) -> SessionHolder | None:
        """Who the live session of ``secret`` belongs to, or None (unknown, expired, or
        its user disabled or gone). Notes it as seen, at most once a `SEEN_EVERY`."""
        digest = secret_digest(secret)
        now = self._context.clock()
        with self._context.read() as tx:
            session = tx.get_record(USER_SESSIONS, digest)
            user = principal = None
            if session is not None and session.user_id is not None:
                user = tx.get_record(USERS, session.user_id)
                principal = principal_in(tx, user) if user is not None else None
        if session is None or session.expires_at <= now:
            return None
        if session.user_id is not None and (user is None or user.disabled):
            return None
        if now - session.last_seen_at >= SEEN_EVERY:
            with self._quiet() as tx:
                tx.save_record(USER_SESSIONS, attrs.evolve(session, last_seen_at=now))
                if user is not None:
                    tx.save_record(USERS, attrs.evolve(user, seen_at=now))
        return SessionHolder(session, user, principal)

    def end(self, secret: str) -> UserSession | None:
        """Sign out: the session ends here and on every other server. The session that
        ended (None: it had ended already), whose ID token a sign-out at the provider
        needs."""
        with self._quiet() as tx:
            session = tx.get_record(USER_SESSIONS, secret_digest(secret))
            tx.delete_record(USER_SESSIONS, secret_digest(secret))
        return session

    def sessions_of_user(
        self, user_id: int, *, current: str | None = None
    ) -> list[tuple[UserSession, bool]]:
        """A user's live sessions, oldest first (their own page lists them), each with
        whether it is the session of the id ``current`` (this browser's)."""
        now = self._context.clock()
        mine = secret_digest(current) if current is not None else None
        with self._context.read() as tx:
            sessions = tx.list_records(USER_SESSIONS, {"user_id": user_id})
        return [(s, s.id_digest == mine) for s in sessions if s.expires_at > now]

    def end_all_of_user(self, user_id: int, *, actor: Actor = SYSTEM) -> int:
        """End every session of one user ("sign out everywhere", or an admin's doing:
        anyone else's sessions need ADMIN). No event: sessions are not logged."""
        if isinstance(actor, Principal) and actor.user_id == user_id:
            actor = actor.actor
        authorize(actor, "end_all_of_user")
        with self._quiet() as tx:
            return end_sessions_of(tx, user_id)

    def count_of_user(self, user_id: int) -> int:
        now = self._context.clock()
        with self._context.read() as tx:
            sessions = tx.list_records(USER_SESSIONS, {"user_id": user_id})
        return sum(1 for s in sessions if s.expires_at > now)

    def _quiet(self) -> AbstractContextManager[Transaction]:
        return self._context.store.transaction()
