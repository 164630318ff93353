r"""Differential test: flagcore must answer exactly as yggdrasil, Unleash's own Rust engine.

Hypothesis builds random client-features payloads (every built-in strategy, an unknown
one, every operator plus an unknown one, segments, feature and strategy variants,
dependencies) and random contexts, and every flag is asked both ``is_enabled`` and
``get_variant`` for every context, in both engines. See ``flag_strategies`` for the pools.

Left out on purpose, because yggdrasil answers them with a random number rather than a
hash, so there is no single right answer to compare against:

* rollouts strictly between 0 and 100 with ``random`` stickiness, ``gradualRolloutRandom``
  strictly between 0 and 100, and ``default`` stickiness when some context has neither
  userId nor sessionId;
* variant selection among two or more variants when the stickiness field is missing from
  some context, including ``default`` stickiness without userId and sessionId (yggdrasil
  does not fall back to remoteAddress) and ``random`` stickiness;
* variant lists whose weights add up to 0, on which yggdrasil panics.

Also left out: the places where flagcore differs from yggdrasil on purpose (each is
listed in docs/engine.md): ``applicationHostname`` (always off in yggdrasil 2.0.0), text
that breaks yggdrasil's rule parser (a ``"`` in a group id or context name, a trailing
backslash), regex features RE2 cannot express (``\\p{Letter}``, ``(?R)``, ``(?-u)``,
``\\<``, ``a{1001}``; ``\\b`` next to a non-ASCII letter), and letters whose
Unicode tables differ between Python 3.11, RE2 and Rust (``İ``, ``ı``, ``Ɤ``).

Dates in every form chrono reads (short and signed years, leap seconds, nanoseconds),
IPv4 netmasks, values of one ordinal type under another's operator, Rust's verbose regex
mode and class set operations (which flagcore translates for RE2), unreadable values
(which turn the whole flag off in both) and patterns that make a backtracking engine
explode are all drawn. ``test_value_pools`` crosses the same pools exhaustively, and
``benchmarks/differential_run.py`` runs this generator on 200,000 pairs and more.

The contexts are drawn first and the flags are generated so that none of the above can
happen for any of them. As a guard, every yggdrasil answer is asked twice and must repeat.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from hypothesis import HealthCheck, given, settings
from yggdrasil_engine.engine import UnleashEngine

from flagcore import Engine
from tests.differential.flag_strategies import JSON, Scenario, scenarios


class Answer(NamedTuple):
    """What one engine says about one flag for one context."""

    enabled: bool
    variant: str
    variant_enabled: bool
    feature_enabled: bool
    payload: dict[str, Any] | None


def _flagcore(engine: Engine, name: str, context: JSON) -> Answer:
    variant = engine.get_variant(name, context)
    payload = dict(variant.payload) if variant.payload is not None else None
    return Answer(
        engine.is_enabled(name, context),
        variant.name,
        variant.enabled,
        variant.feature_enabled,
        payload,
    )


def _yggdrasil(engine: UnleashEngine, name: str, context: JSON) -> Answer:
    toggle = engine.check_enabled(name, context)
    found = engine.check_variant(name, context)
    assert toggle.is_found, f"yggdrasil failed to evaluate {name!r}"
    assert found.is_found, f"yggdrasil failed to pick a variant of {name!r}"
    variant = found.variant
    return Answer(
        toggle.is_enabled,
        variant.name,
        variant.enabled,
        variant.feature_enabled,
        variant.payload,
    )


def _excerpt(payload: JSON, name: str) -> JSON:
    """Flag ``name``, the flags it depends on (transitively) and the segments: a rerunnable case."""
    dependencies = {
        flag["name"]: [d["feature"] for d in flag.get("dependencies") or ()]
        for flag in payload["features"]
    }
    wanted, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current not in wanted:
            wanted.add(current)
            pending.extend(dependencies.get(current, ()))
    features = [flag for flag in payload["features"] if flag["name"] in wanted]
    return {**payload, "features": features}


Mismatch = tuple[str, JSON, Answer, Answer]


def _describe(scenario: Scenario, mismatches: list[Mismatch]) -> str:
    lines = [f"{len(mismatches)} answer(s) differ; the first ones, each with what it needs:"]
    for name, context, ours, theirs in mismatches[:3]:
        lines.append(f"payload {json.dumps(_excerpt(scenario.payload, name), ensure_ascii=False)}")
        lines.append(f"flag {name!r} context {json.dumps(context, ensure_ascii=False)}")
        lines.append(f"  flagcore:  {ours}")
        lines.append(f"  yggdrasil: {theirs}")
    return "\n".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_flagcore_answers_like_yggdrasil(scenario: Scenario) -> None:
    wire = json.dumps(scenario.payload)
    reference = UnleashEngine()
    reference.take_state(wire)
    engine = Engine.from_client_features(json.loads(wire))

    mismatches: list[Mismatch] = []
    for name in scenario.flag_names:
        for context in scenario.contexts:
            theirs = _yggdrasil(reference, name, context)
            again = _yggdrasil(reference, name, context)
            assert again == theirs, f"yggdrasil is random for {name!r} with {context}: {wire}"
            ours = _flagcore(engine, name, context)
            if ours != theirs:
                mismatches.append((name, context, ours, theirs))
    assert not mismatches, _describe(scenario, mismatches)
