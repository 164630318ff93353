"""One error tree for the whole product; adapters translate their own errors into it."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = [
    "Conflict",
    "ErrorDetail",
    "FlagcoreError",
    "Forbidden",
    "InvalidInput",
    "LimitExceeded",
    "NameConflict",
    "NotFound",
    "RateLimited",
    "ServiceUnavailable",
    "StorageError",
    "Unauthenticated",
]


@attrs.frozen
class ErrorDetail:
    """One problem in an input: ``path`` is a JSON path such as ``$.strategies[0].name``."""

    message: str
    path: str | None = None


class FlagcoreError(Exception):
    """Base of every error flagcore raises on purpose."""

    def __init__(self, message: str, details: Sequence[ErrorDetail] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.details = tuple(details)


class NotFound(FlagcoreError):
    """The named thing does not exist."""


class NameConflict(FlagcoreError):
    """The name or id is already taken."""


class Conflict(FlagcoreError):
    """The current state forbids the change (a segment in use, a flag not archived, ...)."""


class InvalidInput(FlagcoreError):
    """The input breaks a rule; ``details`` say where."""


class LimitExceeded(FlagcoreError):
    """A configured limit would be exceeded; ``limit`` names it.

    Its one detail says where, like every other error's: ``path`` is the JSON path of what
    is over the limit (``$.constraints[0].values``), or ``$`` when the request as a whole is
    one too many (a sixth signal endpoint, a body over its size)."""

    def __init__(self, message: str, limit: str, maximum: int, path: str = "$") -> None:
        super().__init__(message, [ErrorDetail(f"at most {maximum} ({limit})", path)])
        self.limit = limit
        self.maximum = maximum
        self.path = path


class RateLimited(FlagcoreError):
    """Too many requests; retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Forbidden(FlagcoreError):
    """The caller is known but may not do this."""


class StorageError(FlagcoreError):
    """The store could not do its part (disk full, file unreadable, locked too long)."""


class Unauthenticated(FlagcoreError):
    """The caller did not prove who it is."""


class ServiceUnavailable(FlagcoreError):
    """The server is too busy to take this request now; retry after ``retry_after`` seconds.

    Raised when the store's work queue is full, so no caller can queue unbounded work.
    """

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after
