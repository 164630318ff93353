"""API tokens: admin tokens, and client and frontend tokens scoped to projects and one
environment."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence

import attrs

from flagcore.entities import ApiToken, TokenType
from flagcore.errors import ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.service._base import SYSTEM, ServiceBase

__all__ = ["TokensMixin", "hash_secret"]

_SECRET_SHAPE = re.compile(r"(\*|\[\]|[A-Za-z0-9_.~-]+):(\*|[A-Za-z0-9_.~-]+)\.[A-Za-z0-9_-]{8,}")


def hash_secret(secret: str) -> str:
    """Secrets are stored as SHA-256 digests: a leaked database leaks no usable token."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@attrs.frozen
class CreatedToken:
    """A new token and its secret; the secret is not kept and cannot be shown again."""

    token: ApiToken
    secret: str


class TokensMixin(ServiceBase):
    def create_token(
        self,
        name: str,
        type: TokenType | str,
        *,
        projects: Sequence[str] = ("*",),
        environment: str | None = None,
        secret: str | None = None,
        actor: str = SYSTEM,
    ) -> CreatedToken:
        """Create a token; ``secret`` may be given (initial tokens from configuration)."""
        try:
            kind = TokenType(type)
        except ValueError:
            raise InvalidInput(
                "type must be admin, client or frontend",
                [ErrorDetail("admin, client or frontend", "$.type")],
            ) from None
        if not name or not name.strip():
            raise InvalidInput(
                "a token needs a name", [ErrorDetail("must not be empty", "$.tokenName")]
            )
        projects = tuple(dict.fromkeys(projects)) or ("*",)
        with self._unit() as tx:
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
            elif not _SECRET_SHAPE.fullmatch(secret):
                raise InvalidInput(
                    "a token secret looks like project:environment.random (8+ characters)",
                    [ErrorDetail("malformed secret", "$.secret")],
                )
            digest = hash_secret(secret)
            if tx.get_token(digest) is not None:
                raise NameConflict("a token with that secret already exists")
            token = ApiToken(
                name,
                kind,
                digest,
                secret[: secret.index(".") + 5] + "…",
                projects,
                environment,
                self.clock(),
            )
            tx.save_token(token)
            self._event(
                tx,
                "api-token-created",
                actor,
                data={
                    "tokenName": name,
                    "type": kind.value,
                    "projects": list(projects),
                    "environment": environment,
                },
            )
        return CreatedToken(token, secret)

    def list_tokens(self) -> list[ApiToken]:
        with self._read() as tx:
            return list(tx.list_tokens())

    def delete_token(self, secret_or_hash: str, *, actor: str = SYSTEM) -> None:
        with self._unit() as tx:
            token = tx.get_token(secret_or_hash) or tx.get_token(hash_secret(secret_or_hash))
            if token is None:
                raise NotFound("there is no such token")
            tx.delete_token(token.secret_hash)
            self._event(tx, "api-token-deleted", actor, data={"tokenName": token.name})

    def authenticate(self, secret: str) -> ApiToken | None:
        """The token whose secret this is, or None."""
        digest = hash_secret(secret)
        with self._read() as tx:
            token = tx.get_token(digest)
        if token is None or not hmac.compare_digest(token.secret_hash, digest):
            return None
        return token
