"""The preview ("who will this flip?") scoring 100,000 contexts, old and new, against 1 s.

Run by hand: ``.venv/bin/python benchmarks/preview_bench.py [--contexts N] [--rounds N]
[--seed N]``. Each context is distinct (seeded userIds, sessionIds and properties: no
batching of identical contexts helps here), evaluated under the old and the new rules
by `flagcore.preview.preview_flag_change`, the function the preview API calls, for two
changes of one realistic flag (a flexibleRollout with constraints on two properties, a
segment, a userWithId strategy, and a dependency on a parent flag):

* ``rollout``: 10% → 50% (on/off only, each context twice through ``is_enabled``);
* ``variants``: the same flag with three weighted variants, one changed weight (each
  context twice through ``get_variant``).

Prints the best and median time of each over ``--rounds`` rounds and the ratio of the
best to the 1 s ceiling (under 1.0 meets it); exits 1 if a best time misses it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from typing import Any

import attrs

from flagcore.model import (
    ClientFeatures,
    Constraint,
    Dependency,
    Flag,
    Segment,
    Strategy,
    Variant,
)
from flagcore.preview import preview_flag_change, with_flag

CEILING_SECONDS = 1.0


def _flags(rollout: str, variants: tuple[Variant, ...]) -> ClientFeatures:
    parent = Flag("parent", enabled=True, strategies=(Strategy("default"),))
    child = Flag(
        "checkout",
        enabled=True,
        strategies=(
            Strategy(
                "flexibleRollout",
                {"rollout": rollout, "stickiness": "default", "groupId": "checkout"},
                constraints=(
                    Constraint("country", "IN", ("DE", "FR", "NL", "SE", "PL")),
                    Constraint("plan", "NOT_IN", ("blocked",)),
                ),
                segments=(1,),
            ),
            Strategy("userWithId", {"userIds": "u1,u2,u3,u4,u5"}),
        ),
        variants=variants,
        dependencies=(Dependency("parent"),),
    )
    segment = Segment(1, "beta", (Constraint("appName", "STR_STARTS_WITH", ("web",)),))
    return ClientFeatures((parent, child), (segment,))


def _contexts(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    countries = ("DE", "FR", "NL", "SE", "PL", "US", "GB", "ES")
    plans = ("free", "pro", "team", "blocked")
    return [
        {
            "userId": f"user-{i}-{rng.randrange(10**9)}",
            "sessionId": f"s{rng.randrange(10**12)}",
            "appName": rng.choice(("web", "web-beta", "ios")),
            "environment": "production",
            "properties": {"country": rng.choice(countries), "plan": rng.choice(plans)},
        }
        for i in range(count)
    ]


def _variants(weights: tuple[int, int, int]) -> tuple[Variant, ...]:
    return tuple(
        Variant(name, weight, stickiness="default")
        for name, weight in zip(("blue", "green", "red"), weights, strict=True)
    )


def _timed(before: ClientFeatures, after: ClientFeatures, contexts: list[Any]) -> float:
    started = time.perf_counter()
    answer = preview_flag_change(before, after, "checkout", "production", contexts)
    elapsed = time.perf_counter() - started
    total = answer.off_to_on.count + answer.on_to_off.count + answer.stayed_on + answer.stayed_off
    assert total == len(contexts), (total, len(contexts))
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--contexts", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args(argv)
    contexts = _contexts(args.contexts, args.seed)
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")
    print(f"{args.contexts:,} distinct contexts, {args.rounds} rounds, ceiling 1 s")
    old = _flags("10", ())
    new = with_flag(
        old, attrs.evolve(old.features[1], strategies=_flags("50", ()).features[1].strategies)
    )
    old_variants = _flags("10", _variants((334, 333, 333)))
    new_variants = with_flag(
        old_variants, attrs.evolve(old_variants.features[1], variants=_variants((500, 250, 250)))
    )
    missed = False
    for label, before, after in (
        ("rollout", old, new),
        ("variants", old_variants, new_variants),
    ):
        times = [_timed(before, after, contexts) for _ in range(args.rounds)]
        best = min(times)
        ratio = best / CEILING_SECONDS
        missed = missed or ratio >= 1.0
        print(
            f"{label:9} best {best:.3f} s, median {statistics.median(times):.3f} s, "
            f"ratio to the 1 s ceiling {ratio:.2f}"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
