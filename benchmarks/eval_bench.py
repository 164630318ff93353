"""flagcore against yggdrasil (Unleash's Rust engine): same answers, evaluation speed, load cost.

Run by hand: ``.venv/bin/python benchmarks/eval_bench.py [--flags N] [--contexts N] [--seed N]
[--quick] [--allow-mismatch]``. See benchmarks/README.md for what it prints.

1. Answers: both engines load the same seeded workload (benchmarks/workload.py) and must
   agree on ``is_enabled`` and ``get_variant`` for every checked (flag, context) pair.
2. Evaluation: one seeded sequence of (flag, context) calls, timed for flagcore with dict
   contexts and with pre-built ``flagcore.Context`` objects, and for yggdrasil with dict
   contexts through both of its calls: ``is_enabled``/``get_variant`` (what UnleashClient
   calls; they also count metrics) and ``check_enabled``/``check_variant`` (no metrics).
   flagcore counts no metrics, so the like-for-like comparison, used for the target, is
   against ``check_*``; the ratio against the metric-counting calls is printed beside it.
3. Load: time to load and to compile every flag (flagcore loads lazily; ``compile_all``
   makes it compile what yggdrasil's ``take_state`` compiles) for 200, 2,000 and 20,000
   flags, and the memory each engine holds, measured in a fresh subprocess per engine
   and size (benchmarks/load_probe.py).

Exits 1 if the engines disagree (unless --allow-mismatch); missed speed or memory targets
are reported, not failed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from yggdrasil_engine.engine import UnleashEngine

from flagcore import Context, Engine
from workload import build_payload, build_workload, describe, flag_names

# Targets from the project brief.
TARGET_SPEEDUP = 10.0  # flagcore is_enabled evals/s over yggdrasil's
TARGET_COMPILE_S = 0.5  # compile 20,000 flags, on the machine the issue measured ...
# ... where yggdrasil's is_enabled took about 30 µs a call. This sandbox has run the same
# calls at 56-73 µs, so seconds alone say more about the machine than about flagcore: the
# verdict measures the compile time in yggdrasil calls timed in the same run, and the
# target is 0.5 s / 30 µs = 16,667 of them. Raw seconds are printed beside it.
REFERENCE_YGG_CALL_US = 30.0
TARGET_COMPILE_YGG_CALLS = TARGET_COMPILE_S / (REFERENCE_YGG_CALL_US * 1e-6)
TARGET_MEMORY_MB = 100.0  # engine with 20,000 flags
LOAD_SIZES = (200, 2_000, 20_000)

Call = Callable[[str, Any], Any]
Answer = tuple[str, bool, bool, Any]  # variant: name, enabled, feature_enabled, payload


@dataclass(frozen=True)
class Settings:
    flags: int
    contexts: int
    seed: int
    check_pairs: int  # at most this many (flag, context) pairs are checked
    calls: int  # length of the timed call sequence
    repeats: int
    load_repeats: tuple[int, ...]  # per size in LOAD_SIZES
    allow_mismatch: bool


def parse_args(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=int, default=300, help="flags in the workload (300)")
    parser.add_argument("--contexts", type=int, default=5000, help="contexts (5000)")
    parser.add_argument("--seed", type=int, default=1, help="workload seed (1)")
    parser.add_argument("--quick", action="store_true", help="fewer checks, calls and repetitions")
    parser.add_argument(
        "--allow-mismatch", action="store_true", help="exit 0 even if the engines disagree"
    )
    args = parser.parse_args(argv)
    if args.quick:
        return Settings(
            args.flags, args.contexts, args.seed, 30_000, 10_000, 3, (3, 3, 1), args.allow_mismatch
        )
    return Settings(
        args.flags, args.contexts, args.seed, 300_000, 60_000, 5, (5, 5, 5), args.allow_mismatch
    )


def _fmt_int(value: float) -> str:
    return f"{value:,.0f}"


def _table(rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    """A plain text table; columns from ``right_from`` on are right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        cells = [
            cell.rjust(width) if i >= right_from else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
        if number == 0:
            lines.append("  " + "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def flagcore_context(data: dict[str, Any]) -> Context:
    return Context(
        user_id=data.get("userId"),
        session_id=data.get("sessionId"),
        remote_address=data.get("remoteAddress"),
        environment=data.get("environment"),
        app_name=data.get("appName"),
        current_time=data.get("currentTime"),
        properties=data.get("properties", {}),
    )


def load_yggdrasil(payload_json: str) -> UnleashEngine:
    engine = UnleashEngine()
    warnings = engine.take_state(payload_json)
    if warnings:
        print(f"yggdrasil warnings: {warnings}")
    return engine


# ---------------------------------------------------------------------------------------------
# 1. Answers


@dataclass
class CheckResult:
    pairs: int
    how: str
    enabled_mismatches: int = 0
    variant_mismatches: int = 0
    context_object_mismatches: int = 0  # flagcore dict context vs flagcore Context
    enabled: int = 0
    named_variants: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def mismatches(self) -> int:
        return self.enabled_mismatches + self.variant_mismatches + self.context_object_mismatches


def check_pairs(flags: int, contexts: int, limit: int) -> tuple[list[tuple[int, int]], str]:
    """(flag index, context index) pairs: all of them, or a stratified sample of ``limit``."""
    if flags * contexts <= limit:
        return [(f, c) for c in range(contexts) for f in range(flags)], "full cross product"
    per_context = max(1, limit // contexts)
    if per_context >= flags:
        return [(f, c) for c in range(contexts) for f in range(flags)], "full cross product"
    stride = flags / per_context
    pairs = [(int(c + j * stride) % flags, c) for c in range(contexts) for j in range(per_context)]
    pairs = pairs[:limit]
    return pairs, (
        f"deterministic sample of the {flags * contexts:,} pairs: every context against "
        f"{per_context} flags spread evenly, so every flag meets ~{len(pairs) // flags:,} contexts"
    )


def _variant_answer(variant: Any) -> Answer:
    payload = variant.payload
    return (
        variant.name,
        variant.enabled,
        variant.feature_enabled,
        dict(payload) if payload is not None else None,
    )


def check_answers(
    engine: Engine,
    ygg: UnleashEngine,
    names: Sequence[str],
    contexts: Sequence[dict[str, Any]],
    context_objects: Sequence[Context],
    limit: int,
) -> CheckResult:
    pairs, how = check_pairs(len(names), len(contexts), limit)
    result = CheckResult(len(pairs), how)
    for flag_index, context_index in pairs:
        name, context = names[flag_index], contexts[context_index]
        ours = engine.is_enabled(name, context)
        theirs = ygg.check_enabled(name, context).is_enabled
        our_variant = _variant_answer(engine.get_variant(name, context))
        their_variant = _variant_answer(ygg.check_variant(name, context).variant)
        obj = context_objects[context_index]
        same_object = ours == engine.is_enabled(name, obj) and our_variant == _variant_answer(
            engine.get_variant(name, obj)
        )
        result.enabled += ours
        result.named_variants += our_variant[1]
        problems = []
        if ours != theirs:
            result.enabled_mismatches += 1
            problems.append(f"is_enabled flagcore={ours} yggdrasil={theirs}")
        if our_variant != their_variant:
            result.variant_mismatches += 1
            problems.append(f"get_variant flagcore={our_variant} yggdrasil={their_variant}")
        if not same_object:
            result.context_object_mismatches += 1
            problems.append("flagcore answers differ between dict and Context")
        if problems and len(result.examples) < 5:
            result.examples.append(
                f"{name!r}: {'; '.join(problems)}\n      context={json.dumps(context)}"
            )
    return result


def print_check(result: CheckResult) -> None:
    print(f"\n== answers: {result.pairs:,} (flag, context) pairs, {result.how}")
    print(
        f"  is_enabled mismatches: {result.enabled_mismatches:,}   "
        f"get_variant mismatches: {result.variant_mismatches:,}   "
        f"flagcore dict-vs-Context mismatches: {result.context_object_mismatches:,}"
    )
    print(
        f"  (enabled in {result.enabled / result.pairs:.1%} of pairs; "
        f"a named variant in {result.named_variants / result.pairs:.1%})"
    )
    for example in result.examples:
        print(f"    {example}")


# ---------------------------------------------------------------------------------------------
# 2. Evaluation speed


@dataclass(frozen=True)
class Timing:
    operation: str
    engine: str
    how: str
    seconds: list[float]
    calls: int

    @property
    def best_us(self) -> float:
        return min(self.seconds) / self.calls * 1e6

    @property
    def median_us(self) -> float:
        return statistics.median(self.seconds) / self.calls * 1e6

    @property
    def per_second(self) -> float:
        return self.calls / min(self.seconds)


def _run(call: Call, names: Sequence[str], contexts: Sequence[Any]) -> float:
    start = time.perf_counter()
    for name, context in zip(names, contexts, strict=True):
        call(name, context)
    return time.perf_counter() - start


def _no_op(_name: str, _context: Any) -> None:
    return None


def time_evaluations(
    engine: Engine,
    ygg: UnleashEngine,
    names: Sequence[str],
    contexts: Sequence[dict[str, Any]],
    context_objects: Sequence[Context],
    settings: Settings,
) -> list[Timing]:
    """Time every call over one seeded (flag, context) sequence; repetitions interleave."""
    rng = random.Random(f"calls:{settings.seed}")
    picks = [
        (rng.randrange(len(names)), rng.randrange(len(contexts))) for _ in range(settings.calls)
    ]
    seq_names = [names[f] for f, _ in picks]
    seq_dicts = [contexts[c] for _, c in picks]
    seq_objects = [context_objects[c] for _, c in picks]
    cases: list[tuple[str, str, str, Call, Sequence[Any]]] = [
        ("is_enabled", "flagcore", "dict context", engine.is_enabled, seq_dicts),
        ("is_enabled", "flagcore", "flagcore.Context", engine.is_enabled, seq_objects),
        ("is_enabled", "yggdrasil", "check_enabled (no metrics)", ygg.check_enabled, seq_dicts),
        ("is_enabled", "yggdrasil", "is_enabled (counts metrics)", ygg.is_enabled, seq_dicts),
        ("get_variant", "flagcore", "dict context", engine.get_variant, seq_dicts),
        ("get_variant", "flagcore", "flagcore.Context", engine.get_variant, seq_objects),
        ("get_variant", "yggdrasil", "check_variant (no metrics)", ygg.check_variant, seq_dicts),
        ("get_variant", "yggdrasil", "get_variant (counts metrics)", ygg.get_variant, seq_dicts),
        ("(loop)", "-", "no-op function, same loop", _no_op, seq_dicts),
    ]
    warm = min(2000, settings.calls)
    for _, _, _, call, seq in cases:
        _run(call, seq_names[:warm], seq[:warm])
    seconds: list[list[float]] = [[] for _ in cases]
    for _ in range(settings.repeats):
        for index, (_, _, _, call, seq) in enumerate(cases):
            seconds[index].append(_run(call, seq_names, seq))
    return [
        Timing(op, who, how, runs, settings.calls)
        for (op, who, how, _, _), runs in zip(cases, seconds, strict=True)
    ]


def _find(timings: Sequence[Timing], operation: str, how_prefix: str) -> Timing:
    return next(t for t in timings if t.operation == operation and t.how.startswith(how_prefix))


def print_timings(timings: Sequence[Timing], settings: Settings) -> None:
    print(
        f"\n== evaluation: {settings.calls:,} calls, one seeded (flag, context) sequence, "
        f"{settings.repeats} repetitions (best; median in the next column)"
    )
    rows = [
        [
            "call",
            "engine",
            "how",
            "µs/call",
            "median",
            "evals/s",
            "× ygg check_*",
            "× ygg (metrics)",
        ]
    ]
    for t in timings:
        ratios = ["", ""]
        if t.engine == "flagcore":
            check = "check_enabled" if t.operation == "is_enabled" else "check_variant"
            counting = "is_enabled" if t.operation == "is_enabled" else "get_variant"
            ratios = [
                f"{t.per_second / _find(timings, t.operation, prefix).per_second:.2f}×"
                for prefix in (check, counting)
            ]
        rows.append(
            [
                t.operation,
                t.engine,
                t.how,
                f"{t.best_us:.2f}",
                f"{t.median_us:.2f}",
                _fmt_int(t.per_second),
                *ratios,
            ]
        )
    print(_table(rows, right_from=3))


# ---------------------------------------------------------------------------------------------
# 3. Load and memory

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "load_probe.py")


def run_probe(kind: str, payload_path: str, repeats: int = 1) -> Any:
    """Run one load_probe.py measurement in a fresh interpreter and return its answer."""
    out = subprocess.run(
        [sys.executable, PROBE, kind, payload_path, str(repeats)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _best_and_median(samples: Sequence[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


@dataclass(frozen=True)
class LoadResult:
    flags: int
    json_mb: float
    flagcore_load_s: tuple[float, float]  # from_client_features (may compile lazily)
    flagcore_s: tuple[float, float]  # ... plus compile_all(): every flag compiled
    flagcore_json_s: tuple[float, float]  # ... with json.loads too
    ygg_s: tuple[float, float]
    ygg_native_s: tuple[float, float]
    flagcore_load_rss_mb: float
    flagcore_rss_mb: float
    flagcore_retained_mb: float
    flagcore_peak_mb: float
    ygg_rss_mb: float
    ygg_native_rss_mb: float

    @property
    def flagcore_memory_mb(self) -> float:
        return max(self.flagcore_rss_mb, self.flagcore_retained_mb)


def _measure_size(size: int, repeats: int, seed: int, directory: str) -> LoadResult:
    payload_json = json.dumps(build_payload(size, seed))
    path = os.path.join(directory, f"payload-{size}.json")
    with open(path, "w", encoding="utf-8") as out:
        out.write(payload_json)
    flagcore_times = run_probe("flagcore-time", path, repeats)
    ygg_times = run_probe("yggdrasil-time", path, repeats)
    traced = run_probe("flagcore-traced", path)
    flagcore_rss = run_probe("flagcore-rss", path)
    return LoadResult(
        flags=size,
        json_mb=len(payload_json.encode("utf-8")) / 1e6,
        flagcore_load_s=_best_and_median(flagcore_times["load"]),
        flagcore_s=_best_and_median(flagcore_times["compile"]),
        flagcore_json_s=_best_and_median(flagcore_times["json"]),
        ygg_s=_best_and_median(ygg_times["public"]),
        ygg_native_s=_best_and_median(ygg_times["native"]),
        flagcore_load_rss_mb=flagcore_rss["load_kib"] / 1024,
        flagcore_rss_mb=flagcore_rss["rss_kib"] / 1024,
        flagcore_retained_mb=traced["retained"] / 2**20,
        flagcore_peak_mb=traced["peak"] / 2**20,
        ygg_rss_mb=run_probe("yggdrasil-rss", path)["rss_kib"] / 1024,
        ygg_native_rss_mb=run_probe("yggdrasil-native-rss", path)["rss_kib"] / 1024,
    )


def measure_load(settings: Settings) -> list[LoadResult]:
    with tempfile.TemporaryDirectory(prefix="flagcore-bench-") as directory:
        return [
            _measure_size(size, repeats, settings.seed, directory)
            for size, repeats in zip(LOAD_SIZES, settings.load_repeats, strict=True)
        ]


def _seconds(pair: tuple[float, float]) -> str:
    best, median = pair
    return f"{best:.3f} ({median:.3f})"


def print_load(results: Sequence[LoadResult], settings: Settings) -> None:
    repeats = "/".join(str(r) for r in settings.load_repeats)
    print(
        f"\n== load / compile time, seconds: best (median) of {repeats} runs for "
        + "/".join(f"{n:,}" for n in LOAD_SIZES)
        + " flags, each engine in a fresh interpreter"
    )
    rows = [
        [
            "flags",
            "JSON MB",
            "fc load",
            "fc load+compile_all",
            "fc json+load+compile",
            "ygg take_state(str)",
            "ygg native only",
            "fc/ygg",
            "fc+json/ygg",
        ]
    ]
    rows.extend(
        [
            f"{r.flags:,}",
            f"{r.json_mb:.1f}",
            _seconds(r.flagcore_load_s),
            _seconds(r.flagcore_s),
            _seconds(r.flagcore_json_s),
            _seconds(r.ygg_s),
            _seconds(r.ygg_native_s),
            f"{r.flagcore_s[0] / r.ygg_s[0]:.2f}×",
            f"{r.flagcore_json_s[0] / r.ygg_s[0]:.2f}×",
        ]
        for r in results
    )
    print(_table(rows))
    print(
        "  fc load: Engine.from_client_features(dict), which compiles flags lazily on first\n"
        "  use; fc load+compile_all: every flag compiled, like yggdrasil's take_state (the\n"
        "  ratios use it). fc/ygg < 1: flagcore is faster. 'ygg take_state(str)' is the public\n"
        "  call, which also json.loads the payload in Python; 'native only' is its Rust part."
    )
    print("\n== memory held by the built engine, MB (each measured in a fresh interpreter)")
    rows = [
        [
            "flags",
            "fc RSS load",
            "fc RSS compiled",
            "fc traced",
            "fc traced peak",
            "ygg RSS",
            "ygg native RSS",
            "fc/ygg native",
        ]
    ]
    rows.extend(
        [
            f"{r.flags:,}",
            f"{r.flagcore_load_rss_mb:.1f}",
            f"{r.flagcore_rss_mb:.1f}",
            f"{r.flagcore_retained_mb:.1f}",
            f"{r.flagcore_peak_mb:.1f}",
            f"{r.ygg_rss_mb:.1f}",
            f"{r.ygg_native_rss_mb:.1f}",
            f"{r.flagcore_memory_mb / max(r.ygg_native_rss_mb, 0.1):.2f}×",
        ]
        for r in results
    )
    print(_table(rows))
    print(
        "  RSS: resident-set growth across one build (flagcore: payload dict already loaded,\n"
        "  after from_client_features and after compile_all; yggdrasil: JSON string already\n"
        "  loaded, library and an empty engine already there; 'ygg RSS' includes what its\n"
        "  wrapper's json.loads leaves resident, 'native' is the FFI call alone). fc traced:\n"
        "  tracemalloc, what the compiled flagcore engine keeps once the caller drops the\n"
        "  payload dict (peak: with the payload dict). fc/ygg native uses the larger of\n"
        "  'fc RSS compiled' and 'fc traced'."
    )


# ---------------------------------------------------------------------------------------------


def _revision() -> str:
    """The git revision of the tree being measured (``-dirty`` if it has local changes)."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_args(argv)
    print(
        f"flagcore {importlib.metadata.version('flagcore')} (git {_revision()}) vs "
        f"yggdrasil-engine {importlib.metadata.version('yggdrasil-engine')} | "
        f"Python {platform.python_version()} | {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    workload = build_workload(settings.flags, settings.contexts, settings.seed)
    payload_json = json.dumps(workload.payload)
    print(
        f"workload: seed {settings.seed}, {len(workload.contexts):,} contexts, "
        f"{len(payload_json) / 1e6:.2f} MB of JSON"
    )
    print("  " + describe(workload.payload).replace("\n", "\n  "))

    engine = Engine.from_client_features(workload.payload)
    for warning in engine.warnings[:5]:
        print(f"flagcore warning: {warning.flag}: {warning.message}")
    ygg = load_yggdrasil(payload_json)
    names = flag_names(workload.payload)
    contexts = workload.contexts
    context_objects = [flagcore_context(c) for c in contexts]

    started = time.perf_counter()
    check = check_answers(engine, ygg, names, contexts, context_objects, settings.check_pairs)
    print_check(check)
    print(f"  ({time.perf_counter() - started:.0f} s)")

    timings = time_evaluations(engine, ygg, names, contexts, context_objects, settings)
    print_timings(timings, settings)

    loads = measure_load(settings)
    print_load(loads, settings)

    fc = _find(timings, "is_enabled", "dict")
    fc_obj = _find(timings, "is_enabled", "flagcore.Context")
    speedup = fc.per_second / _find(timings, "is_enabled", "check_enabled").per_second
    speedup_obj = fc_obj.per_second / _find(timings, "is_enabled", "check_enabled").per_second
    speedup_metrics = fc.per_second / _find(timings, "is_enabled", "is_enabled").per_second
    largest = loads[-1]
    compile_s = largest.flagcore_s[0]
    ygg_call_us = _find(timings, "is_enabled", "check_enabled").best_us
    compile_calls = compile_s / (ygg_call_us * 1e-6)
    print(
        f"\nSUMMARY  is_enabled flagcore/yggdrasil {speedup:.1f}× "
        f"(Context objects {speedup_obj:.1f}×, vs metric-counting is_enabled "
        f"{speedup_metrics:.1f}×) [target ≥{TARGET_SPEEDUP:.0f}×: "
        f"{_verdict(speedup >= TARGET_SPEEDUP)}]"
        f" | {largest.flags:,} flags: load {largest.flagcore_load_s[0]:.2f} s, "
        f"load+compile_all {compile_s:.2f} s (median {largest.flagcore_s[1]:.2f} s) = "
        f"{compile_calls:,.0f} yggdrasil calls of {ygg_call_us:.1f} µs, i.e. "
        f"{compile_s * REFERENCE_YGG_CALL_US / ygg_call_us:.2f} s where a call takes "
        f"{REFERENCE_YGG_CALL_US:.0f} µs [<{TARGET_COMPILE_YGG_CALLS:,.0f} calls (<"
        f"{TARGET_COMPILE_S} s there): {_verdict(compile_calls < TARGET_COMPILE_YGG_CALLS)}; "
        f"<{TARGET_COMPILE_S} s on this machine: {_verdict(compile_s < TARGET_COMPILE_S)}]"
        f" | compiled engine {largest.flagcore_memory_mb:.0f} MB "
        f"[<{TARGET_MEMORY_MB:.0f} MB: "
        f"{_verdict(largest.flagcore_memory_mb < TARGET_MEMORY_MB)}]"
        f" | answers identical on {check.pairs:,} pairs: {check.mismatches:,} mismatches "
        f"[{_verdict(check.mismatches == 0)}]"
    )
    if check.mismatches and not settings.allow_mismatch:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
