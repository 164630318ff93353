"""One load measurement in a fresh interpreter; eval_bench.py runs this, once per engine and size.

``python benchmarks/load_probe.py KIND PAYLOAD.json [REPEATS]`` prints one JSON object:

* ``flagcore-time``: seconds of ``Engine.from_client_features(payload)`` (payload dict
  already loaded; flagcore may compile lazily, flag by flag, on first use), of that plus
  ``engine.compile_all()`` (every flag compiled, as yggdrasil's ``take_state`` does), and
  of the latter with ``json.loads`` included, REPEATS times each;
* ``yggdrasil-time``: seconds of ``UnleashEngine().take_state(text)`` (the public call) and
  of its native part alone (the FFI ``take_state``, without the wrapper's own ``json.loads``);
* ``flagcore-rss`` / ``yggdrasil-rss`` / ``yggdrasil-native-rss``: resident-set growth (KiB)
  across one build, from /proc/self/status, with the input already in memory (flagcore:
  after loading, and after compiling every flag);
* ``flagcore-traced``: tracemalloc's count of what the flagcore engine, every flag
  compiled, keeps once the caller drops the payload dict, and the peak (which includes
  the payload dict).

Only the build runs in the process, so neither engine pays for the other's heap (a large
Python heap makes the garbage collector, and so any build of Python objects, slower).
"""

from __future__ import annotations

import gc
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

EMPTY_STATE = '{"version": 2, "features": [], "segments": []}'


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _timed(
    build: Callable[[Any], object], repeats: int, setup: Callable[[], Any] = lambda: None
) -> list[float]:
    """Seconds of ``build(setup())`` (the build only), ``repeats`` times."""
    samples = []
    for _ in range(repeats):
        prepared = setup()
        gc.collect()
        start = time.perf_counter()
        built = build(prepared)
        samples.append(time.perf_counter() - start)
        del built, prepared
    return samples


def _rss_growth(build: Callable[[], object]) -> dict[str, Any]:
    """Resident-set growth across ``build()``, keeping what it built alive."""
    gc.collect()
    before = rss_kib()
    built = build()
    gc.collect()
    growth = rss_kib() - before
    del built
    return {"rss_kib": growth}


def _flagcore_compiled(payload: Any) -> Any:
    """A flagcore engine with every flag compiled (``compile_all`` where loading is lazy)."""
    from flagcore import Engine

    engine = Engine.from_client_features(payload)
    compile_all = getattr(engine, "compile_all", None)
    if compile_all is not None:
        compile_all()
    return engine


def _ygg_native_take_state(engine: Any, text: str) -> None:
    """yggdrasil's FFI ``take_state`` alone (the wrapper also parses the JSON in Python)."""
    response = engine.lib.take_state(engine.state, text.encode("utf-8"))
    engine.lib.free_response(response)


def probe(kind: str, text: str, repeats: int) -> dict[str, Any]:
    if kind.startswith("flagcore"):
        from flagcore import Engine

        if kind == "flagcore-traced":
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            payload = json.loads(text)
            del text
            engine = _flagcore_compiled(payload)
            del payload
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            del engine
            return {"retained": current - base, "peak": peak - base}
        payload = json.loads(text)
        if kind == "flagcore-rss":
            del text
            gc.collect()
            before = rss_kib()
            engine = Engine.from_client_features(payload)
            gc.collect()
            loaded = rss_kib() - before
            compile_all = getattr(engine, "compile_all", None)
            if compile_all is not None:
                compile_all()
            gc.collect()
            return {"load_kib": loaded, "rss_kib": rss_kib() - before}
        if kind == "flagcore-time":
            return {
                "load": _timed(lambda _: Engine.from_client_features(payload), repeats),
                "compile": _timed(lambda _: _flagcore_compiled(payload), repeats),
                "json": _timed(lambda _: _flagcore_compiled(json.loads(text)), repeats),
            }
    else:
        from yggdrasil_engine.engine import UnleashEngine

        engine = UnleashEngine()
        engine.take_state(EMPTY_STATE)  # the library is loaded before any measurement
        if kind == "yggdrasil-time":
            return {
                "public": _timed(lambda fresh: fresh.take_state(text), repeats, UnleashEngine),
                "native": _timed(
                    lambda fresh: _ygg_native_take_state(fresh, text), repeats, UnleashEngine
                ),
            }
        if kind == "yggdrasil-rss":
            return _rss_growth(lambda: engine.take_state(text))
        if kind == "yggdrasil-native-rss":
            return _rss_growth(lambda: _ygg_native_take_state(engine, text))
    raise SystemExit(f"unknown probe {kind!r}")


def main() -> int:
    kind, path = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with open(path, encoding="utf-8") as source:
        text = source.read()
    print(json.dumps(probe(kind, text, repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
