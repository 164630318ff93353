"""Which client-features format an SDK gets, from the spec version it says it speaks.

Unleash's ``ClientSpecService``: SDKs send ``Unleash-Client-Spec``; from 4.2.0 on they
read segments by id (format 2, ``"version": 2``: ids on strategies, one list of segments).
Older ones and clients that send nothing get the documented version 1 (format 1): every
segment's constraints inlined, and the legacy ``strategy``/``parameters`` on each flag
(`flagcore.wire.unstructure_flag`).
"""

from __future__ import annotations

from flagcore.operators import SemverKey, semver_key

__all__ = ["client_features_format"]


def _version(text: str) -> SemverKey:
    key = semver_key(text)
    assert key is not None, text
    return key


_SEGMENT_IDS_SINCE = _version("4.2.0")


def client_features_format(client_spec: str | None) -> int:
    """2 for an SDK speaking spec 4.2.0 or later, else 1.

    An unreadable version gets format 1, the one every SDK reads: the payload answers
    200 or 304, never 400.
    """
    if client_spec is None:
        return 1
    key = semver_key(client_spec.strip())
    return 2 if key is not None and key >= _SEGMENT_IDS_SINCE else 1
