"""The differential test at scale: flagcore against yggdrasil on many (flag, context) pairs.

Run by hand from the repository root (not in CI; CI runs the same generator on a few
hundred payloads in tests/differential/)::

    .venv/bin/python benchmarks/differential_run.py [--pairs 200000] [--seed 1] [--show 5]

It draws random client-features payloads and contexts with the generator of
``tests/differential/flag_strategies.py`` (Hypothesis, seeded: the same seed draws the
same payloads), loads each payload into both engines, asks ``is_enabled`` and
``get_variant`` of every flag for every context, and counts the pairs whose answers
differ. Draws continue, in batches with seeds ``seed``, ``seed + 1``, ..., until at least
``--pairs`` pairs are checked. Nothing is shrunk: every difference is counted and the
first few are printed with a payload excerpt that reproduces them. Exits 1 on any
difference, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings
from tests.differential.flag_strategies import Scenario, scenarios
from tests.differential.test_against_yggdrasil import (
    Mismatch,
    _describe,
    _flagcore,
    _yggdrasil,
)
from yggdrasil_engine.engine import UnleashEngine

from flagcore import Engine

_BATCH = 100  # payloads per Hypothesis run: a fresh seed often keeps the draws diverse


class _Tally:
    def __init__(self) -> None:
        self.payloads = 0
        self.pairs = 0
        self.mismatches: list[tuple[Scenario, Mismatch]] = []
        self.random_answers = 0  # yggdrasil answering differently twice: a generator bug

    def check(self, scenario: Scenario) -> None:
        wire = json.dumps(scenario.payload)
        reference = UnleashEngine()
        reference.take_state(wire)
        engine = Engine.from_client_features(json.loads(wire))
        self.payloads += 1
        for name in scenario.flag_names:
            for context in scenario.contexts:
                theirs = _yggdrasil(reference, name, context)
                if _yggdrasil(reference, name, context) != theirs:
                    self.random_answers += 1
                ours = _flagcore(engine, name, context)
                self.pairs += 1
                if ours != theirs:
                    self.mismatches.append((scenario, (name, context, ours, theirs)))


def run_batch(tally: _Tally, batch_seed: int, payloads: int) -> None:
    @seed(batch_seed)
    @settings(
        max_examples=payloads,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios())
    def draw(scenario: Scenario) -> None:
        tally.check(scenario)

    draw()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200_000, help="pairs to check (200000)")
    parser.add_argument("--seed", type=int, default=1, help="first Hypothesis seed (1)")
    parser.add_argument("--show", type=int, default=5, help="differences to print (5)")
    args = parser.parse_args(argv)

    tally = _Tally()
    started = time.perf_counter()
    batch_seed = args.seed
    while tally.pairs < args.pairs:
        run_batch(tally, batch_seed, _BATCH)
        batch_seed += 1
        print(
            f"  seeds {args.seed}..{batch_seed - 1}: {tally.payloads:,} payloads, "
            f"{tally.pairs:,} pairs, {len(tally.mismatches)} differences "
            f"({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    for scenario, mismatch in tally.mismatches[: args.show]:
        print(_describe(scenario, [mismatch]))
    print(
        f"differential_run seed={args.seed} seeds={args.seed}..{batch_seed - 1}: "
        f"{tally.pairs:,} (flag, context) pairs checked over {tally.payloads:,} payloads, "
        f"{len(tally.mismatches)} differences, {tally.random_answers} random yggdrasil "
        f"answers, {time.perf_counter() - started:.0f} s"
    )
    return 1 if tally.mismatches or tally.random_answers else 0


if __name__ == "__main__":
    sys.exit(main())
