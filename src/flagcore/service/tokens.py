"""API tokens: admin tokens, and client and frontend tokens scoped to projects and one
environment."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from typing import Protocol

import attrs

from flagcore.entities import ApiToken, TokenType
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.ports import EventLog, ProjectRepository, TokenRepository
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.wire.event_data import ApiTokenData, TokenNameData, token_name_of

__all__ = ["MIN_GIVEN_SECRET_LENGTH", "CreatedToken", "TokenSpec", "Tokens", "hash_secret"]

# Unleash's `project:environment.secret`: the environment ends at the first "." after the
# colon; the secret part is whatever the operator chose (Unleash's own documented example,
# `default:development.unleash-insecure-api-token`, and ours, `default:development.secret`).
_SECRET_SHAPE = re.compile(
    r"(?P<project>\*|\[\]|[A-Za-z0-9_.~-]+):(?P<environment>\*|[A-Za-z0-9_~-]+)\.[A-Za-z0-9_.~-]+"
)
_TOKEN_EVENTS_PAGE = 500
# A secret someone chose (init tokens) is stored as an unsalted SHA-256 digest, like the
# generated ones: fine for 224 random bits, not for a word. Below this many characters
# in its secret part, a new token with a given secret is refused.
MIN_GIVEN_SECRET_LENGTH = 16
# Listings show this many characters of the secret part, only of secrets at least
# `MIN_GIVEN_SECRET_LENGTH` long: enough to tell two tokens of one scope apart.
_HINT_CHARACTERS = 2


def hash_secret(secret: str) -> str:
    """Secrets are stored as SHA-256 digests: a leaked database leaks no usable token."""
    # "surrogatepass": a string with a lone surrogate (a header that was not UTF-8) still
    # hashes, to a digest no stored token has; every other string hashes as UTF-8.
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class TokenSpec:
    """A token wanted with a known secret (configuration); see `ensure_tokens`."""

    type: TokenType
    secret: str = attrs.field(repr=False)
    projects: tuple[str, ...] = ("*",)
    environment: str | None = None
    name: str = "token"  # the new token is named "<name>-<n>", the first n that is free
    origin: str = "token"  # where it was given, for error messages; never the secret


def _hint(secret: str) -> str:
    """What listings show of a secret: its scope and 2 characters, never more.

    Nothing of a secret part shorter than `MIN_GIVEN_SECRET_LENGTH` (tokens stored
    before that rule). The scope ends at the first "." after the colon: project names may
    hold dots, environment names may not.
    """
    project, _, rest = secret.partition(":")
    environment, _, part = rest.partition(".")
    shown = part[:_HINT_CHARACTERS] if len(part) >= MIN_GIVEN_SECRET_LENGTH else ""
    return f"{project}:{environment}.{shown}…"


def _new_token_id() -> str:
    """A random id: it names the token without saying anything about its secret."""
    return secrets.token_hex(8)


def _first_free_name(base: str, taken: set[str], *, bare_first: bool = False) -> str:
    if bare_first and base not in taken:
        return base
    number = 1
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"


def _check_given_secret(secret: str, projects: tuple[str, ...], environment: str | None) -> None:
    """A given secret has Unleash's shape, and its scope says what the token can do.

    A secret's scope is what people read (`*:*.` is an admin token), so it must agree
    with the token: `*:*` for admin, the token's one project (or `*`) and environment
    for a client token. `[]` (several projects) is only ever generated.
    """
    match = _SECRET_SHAPE.fullmatch(secret)
    if match is None:
        raise InvalidInput(
            "a token secret looks like project:environment.secret "
            "(letters, digits, _ . ~ - in each part)",
            [ErrorDetail("malformed secret", "$.secret")],
        )
    part = secret[match.end("environment") + 1 :]
    if len(part) < MIN_GIVEN_SECRET_LENGTH:
        raise InvalidInput(
            f"the secret part (after project:environment.) has {len(part)} characters; "
            f"a chosen secret needs at least {MIN_GIVEN_SECRET_LENGTH} (a long random one "
            "is best)",
            [ErrorDetail(f"at least {MIN_GIVEN_SECRET_LENGTH} characters", "$.secret")],
        )
    scope = (match["project"], match["environment"])
    expected = (projects[0] if len(projects) == 1 else "[]", environment or "*")
    if scope != expected or scope[0] == "[]":
        raise InvalidInput(
            f"the secret's scope {scope[0]}:{scope[1]} does not match the token "
            f"({expected[0]}:{expected[1]})",
            [ErrorDetail("scope does not match the token", "$.secret")],
        )


@attrs.frozen
class CreatedToken:
    """A new token and its secret; the secret is not kept and cannot be shown again."""

    token: ApiToken
    secret: str


class _TokenWrite(TokenRepository, ProjectRepository, EventLog, Protocol):
    """A token made for projects and an environment that must exist, with the event."""


class Tokens:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def create_token(
        self,
        name: str,
        type: TokenType | str,
        *,
        projects: Sequence[str] = ("*",),
        environment: str | None = None,
        secret: str | None = None,
        actor: Actor = SYSTEM,
    ) -> CreatedToken:
        """Create a token; ``secret`` may be given (initial tokens from configuration)."""
        try:
            kind = TokenType(type)
        except ValueError:
            raise InvalidInput(
                "type must be admin, client or frontend",
                [ErrorDetail("admin, client or frontend", "$.type")],
            ) from None
        actor = authorize(actor, f"create_{kind.value}_token")
        if not name or not name.strip():
            raise InvalidInput(
                "a token needs a name", [ErrorDetail("must not be empty", "$.tokenName")]
            )
        with self._context.unit() as tx:
            return self._create_token(tx, name, kind, projects, environment, secret, actor)

    def _create_token(
        self,
        tx: _TokenWrite,
        name: str,
        kind: TokenType,
        projects: Sequence[str],
        environment: str | None,
        secret: str | None,
        actor: str,
    ) -> CreatedToken:
        projects = tuple(dict.fromkeys(projects)) or ("*",)
        if kind is TokenType.ADMIN:
            projects, environment = ("*",), None
        else:
            if environment is None or tx.get_environment(environment) is None:
                raise InvalidInput(
                    f"a {kind.value} token needs an existing environment; got {environment!r}",
                    [ErrorDetail("unknown environment", "$.environment")],
                )
            for index, project in enumerate(projects):
                if project != "*" and tx.get_project(project) is None:
                    raise NotFound(
                        f'there is no project "{project}"',
                        [ErrorDetail("unknown project", f"$.projects[{index}]")],
                    )
            if "*" in projects:
                projects = ("*",)
        if secret is None:
            scope = projects[0] if len(projects) == 1 else "[]"
            secret = f"{scope}:{environment or '*'}.{secrets.token_hex(28)}"
        else:
            _check_given_secret(secret, projects, environment)
        digest = hash_secret(secret)
        if tx.get_token(digest) is not None:
            raise NameConflict("a token with that secret already exists")
        token = ApiToken(
            name,
            kind,
            digest,
            _hint(secret),
            projects,
            environment,
            self._context.clock(),
            id=_new_token_id(),
        )
        tx.save_token(token)
        self._context.record_event(
            tx,
            "api-token-created",
            actor,
            data=ApiTokenData(name, kind.value, projects, environment),
        )
        return CreatedToken(token, secret)

    def ensure_tokens(self, specs: Sequence[TokenSpec], *, actor: str = SYSTEM) -> list[ApiToken]:
        """Create each token of ``specs`` whose secret is not stored yet, all or none.

        For tokens given in configuration at every start: a secret already stored is left
        alone (if it is of the same type). Each new token gets the first free name
        ``<spec.name>-<n>``, so two starts with different secrets never make two tokens of
        one name (events name tokens as actors). A failure names the spec's ``origin``.
        """
        created: list[ApiToken] = []
        with self._context.unit() as tx:
            names = {token.name for token in tx.list_tokens()}
            for spec in specs:
                try:
                    existing = tx.get_token(hash_secret(spec.secret))
                    if existing is not None:
                        if existing.type is not spec.type:
                            raise InvalidInput(
                                f"this secret is already stored as {existing.type.value} "
                                f'token "{existing.name}"'
                            )
                        continue
                    name = _first_free_name(spec.name, names)
                    names.add(name)
                    made = self._create_token(
                        tx, name, spec.type, spec.projects, spec.environment, spec.secret, actor
                    )
                except (InvalidInput, NotFound, NameConflict) as error:
                    raise type(error)(f"{spec.origin}: {error.message}", error.details) from None
                created.append(made.token)
        return created

    def ensure_admin_token(
        self, *, untrusted_actor: str, actor: str = SYSTEM
    ) -> CreatedToken | None:
        """A new admin token when no admin token can be trusted; else None.

        Trusted admin tokens are those not created by ``untrusted_actor`` (the HTTP adapter
        passes its name for requests made while authentication was off). So an operator
        always has a way in: on a fresh database, or when every admin token was made by
        anyone who could connect.
        """
        untrusted = {token.secret_hash for token in self.tokens_created_by(untrusted_actor)}
        with self._context.unit() as tx:
            tokens = list(tx.list_tokens())
            if any(t.type is TokenType.ADMIN and t.secret_hash not in untrusted for t in tokens):
                return None
            name = _first_free_name("admin", {t.name for t in tokens}, bare_first=True)
            return self._create_token(tx, name, TokenType.ADMIN, ("*",), None, None, actor)

    def tokens_created_by(self, actor: str) -> list[ApiToken]:
        """Live tokens whose creation event names ``actor``.

        Reads the change log newest first, back to the oldest live token's creation. A name
        shared by several tokens counts for all of them: when in doubt, a token is listed.
        """
        with self._context.read() as tx:
            tokens = list(tx.list_tokens())
            if not tokens:
                return []
            oldest = min(token.created_at for token in tokens) - dt.timedelta(seconds=1)
            names: set[str] = set()
            before: int | None = None
            while True:
                page = tx.list_events(limit=_TOKEN_EVENTS_PAGE, before_id=before)
                for event in page:
                    if event.type == "api-token-created" and event.created_by == actor:
                        names.add(token_name_of(event.data))
                if len(page) < _TOKEN_EVENTS_PAGE or page[-1].created_at < oldest:
                    break
                before = page[-1].id
        return [token for token in tokens if token.name in names]

    def list_tokens(self) -> list[ApiToken]:
        with self._context.read() as tx:
            return list(tx.list_tokens())

    def delete_token(
        self, token_ref: str, *, actor: Actor = SYSTEM, admin_without_token: bool = False
    ) -> None:
        """Delete the token ``token_ref`` names: its id, its secret or its secret's digest.

        The last admin token is kept (`Conflict`) unless ``admin_without_token``: the
        server can be administered without one (the HTTP adapter's ``--auth none``).
        Deleting it would lock everyone out until a restart made a new one.
        """
        with self._context.unit() as tx:
            token = _find_token(tx, token_ref)
            if token is None:
                raise NotFound(
                    "there is no such token (give its id, as listed, or its secret)",
                    [ErrorDetail("unknown token", "$.token")],
                )
            actor = authorize(actor, f"delete_{token.type.value}_token")
            if token.type is TokenType.ADMIN and not admin_without_token:
                _keep_an_admin(tx, token)
            tx.delete_token(token.secret_hash)
            self._context.record_event(
                tx, "api-token-deleted", actor, data=TokenNameData(token.name)
            )

    def authenticate(self, secret: str) -> ApiToken | None:
        """The token whose secret this is, or None."""
        digest = hash_secret(secret)
        with self._context.read() as tx:
            token = tx.get_token(digest)
        if token is None or not hmac.compare_digest(token.secret_hash, digest):
            return None
        return token


def _find_token(tx: TokenRepository, token_ref: str) -> ApiToken | None:
    """The token of an id, a secret or a digest (a handful of tokens: a scan is cheap)."""
    found = tx.get_token(token_ref) or tx.get_token(hash_secret(token_ref))
    if found is not None or not token_ref:
        return found
    return next((token for token in tx.list_tokens() if token.id == token_ref), None)


def _keep_an_admin(tx: TokenRepository, leaving: ApiToken) -> None:
    others = [
        token
        for token in tx.list_tokens()
        if token.type is TokenType.ADMIN and token.secret_hash != leaving.secret_hash
    ]
    if not others:
        raise Conflict(
            f'"{leaving.name}" is the last admin token: without it nobody could administer '
            "this server until a restart made a new one. Create another admin token first.",
            [ErrorDetail("the last admin token", "$.token")],
        )
