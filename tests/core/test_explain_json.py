"""`FlagExplanation.to_json` is the base of ``flagcore explain``, the explain route and
the playground: its JSON, written from the answer table's rows, must stay byte for byte
what it was when written by hand. The sample holds every client-specification case's
explanation as the hand-written writer wrote it (``tests/data/explain/``), with Python's
``random`` seeded before each, as the engine draws a bucket when no sticky value is given."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from flagcore import Engine
from tests.conftest import client_spec_dir

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "explain" / "client-specification.json"


def _written(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_every_client_specification_explanation_is_written_as_the_sample_holds() -> None:
    samples = json.loads(SAMPLES.read_text(encoding="utf-8"))
    specs = client_spec_dir() / "specifications"
    engines: dict[str, Engine] = {}
    seen = 0
    for sample in samples:
        name = sample["file"]
        if name not in engines:
            state = json.loads((specs / name).read_text(encoding="utf-8"))["state"]
            engines[name] = Engine.from_client_features(state, explainable=True)
        # Rollouts and variants without a sticky value draw at random: the same draws.
        random.seed(27)
        explained = engines[name].explain(sample["toggleName"], sample["context"])
        assert _written(explained.to_json()) == _written(sample["explanation"]), (
            name,
            sample["toggleName"],
        )
        seen += 1
    assert seen == 279
