"""Passwords: Unleash's policy, and hashing with Argon2id.

The policy is Unleash's (its ``owasp-password-strength-test`` settings, passphrases not
allowed): 10 to 128 characters, no character three times in a row, at least one lower
case letter, one upper case letter, one digit and one other character. Every rule broken
is named, all at once, on the field's JSON path.

Hashes are Argon2id through argon2-cffi with its defaults (RFC 9106's low-memory profile:
3 passes over 64 MiB, 4 lanes), kept as the PHC string, which carries its own parameters
and salt: a later change of parameters still checks old hashes, and `needs_rehash` says
when to store a fresh one. Hashing is deliberately slow (tens of milliseconds), so callers
that serve many people run it off their event loop and off the store's worker.
"""

from __future__ import annotations

import functools
import re

import argon2
import attrs

from flagcore.errors import ErrorDetail, InvalidInput

__all__ = [
    "MAX_PASSWORD_LENGTH",
    "MIN_PASSWORD_LENGTH",
    "NewPassword",
    "check_policy",
    "dummy_verify",
    "needs_rehash",
    "verify",
]

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 128

_HASHER = argon2.PasswordHasher(type=argon2.Type.ID)

_RULES: tuple[tuple[re.Pattern[str], bool, str], ...] = (
    (re.compile(r"(.)\1\1", re.DOTALL), False, "may not contain a character three times in a row"),
    (re.compile(r"[a-z]"), True, "must contain at least one lowercase letter"),
    (re.compile(r"[A-Z]"), True, "must contain at least one uppercase letter"),
    (re.compile(r"[0-9]"), True, "must contain at least one number"),
    (re.compile(r"[^A-Za-z0-9]"), True, "must contain at least one special character"),
)


def check_policy(password: str, path: str = "$.password") -> None:
    """Refuse ``password`` unless it meets the policy; the error lists every rule broken."""
    broken: list[str] = []
    if len(password) < MIN_PASSWORD_LENGTH:
        broken.append(f"must be at least {MIN_PASSWORD_LENGTH} characters long")
    if len(password) > MAX_PASSWORD_LENGTH:
        broken.append(f"must be at most {MAX_PASSWORD_LENGTH} characters long")
    for pattern, wanted, message in _RULES:
        if bool(pattern.search(password)) is not wanted:
            broken.append(message)
    if broken:
        raise InvalidInput(
            "The password is too weak: it " + "; it ".join(broken) + ".",
            [ErrorDetail(f"The password {rule}.", path) for rule in broken],
        )


@attrs.frozen(repr=False)
class NewPassword:
    """A password that met the policy, already hashed (the plain text is not kept).

    Made by `NewPassword.of` off the store's worker (hashing is slow), then handed to the
    service, which stores only its hash.
    """

    hash: str

    @classmethod
    def of(cls, password: str, path: str = "$.password") -> NewPassword:
        check_policy(password, path)
        return cls(_HASHER.hash(password))

    def __repr__(self) -> str:
        return "NewPassword(<hidden>)"


def verify(password_hash: str, password: str) -> bool:
    """Whether ``password`` is the one ``password_hash`` was made from."""
    try:
        return _HASHER.verify(password_hash, password)
    except argon2.exceptions.VerificationError:
        return False
    except argon2.exceptions.InvalidHashError:
        return False


@functools.cache
def _dummy_hash() -> str:
    return _HASHER.hash("flagcore: no such user, same cost")


def dummy_verify(password: str) -> None:
    """Spend what `verify` spends, for a sign-in naming nobody: the answer's time does not
    tell which accounts exist."""
    verify(_dummy_hash(), password)


def needs_rehash(password_hash: str) -> bool:
    """Whether a stored hash was made with other parameters than today's."""
    return _HASHER.check_needs_rehash(password_hash)
