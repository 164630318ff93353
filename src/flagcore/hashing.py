"""Unleash's normalised murmur3 hash: the one function every SDK agrees on.

Stickiness buckets (1..100) and variant buckets (1..total weight) both hash
``"<groupId>:<identifier>"`` with 32-bit murmur3 (x86), read as unsigned; only the
seed and the modulus differ. Any drift here moves users between buckets, so the
client specification and the differential test pin it.
"""

from __future__ import annotations

import mmh3

__all__ = ["STRATEGY_SEED", "VARIANT_SEED", "normalized_hash", "percentage_bucket"]

STRATEGY_SEED = 0
VARIANT_SEED = 86028157

_hash = mmh3.hash


def normalized_hash(group_id: str, identifier: str, modulus: int, seed: int = STRATEGY_SEED) -> int:
    """Bucket in ``1..modulus`` for ``identifier`` within ``group_id``."""
    return _hash(f"{group_id}:{identifier}", seed, False) % modulus + 1


def percentage_bucket(group_id: str, identifier: str) -> int:
    """Bucket in ``1..100`` used by the gradual and flexible rollouts."""
    return _hash(f"{group_id}:{identifier}", STRATEGY_SEED, False) % 100 + 1
