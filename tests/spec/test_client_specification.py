"""Every case of Unleash's client specification, one pytest case each.

The data is Unleash's own conformance suite, vendored in ``tests/spec/client-specification``
(or ``FLAGCORE_CLIENT_SPEC``). A missing directory is a failure, not a skip: the engine's
claim to match Unleash rests on these cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flagcore import Engine
from tests.conftest import client_spec_dir

EXPECTED_CASES = 279


def _load_cases() -> list[Any]:
    specs = client_spec_dir() / "specifications"
    index = specs / "index.json"
    if not index.is_file():
        return [pytest.param(None, None, None, None, id="client-specification-missing")]
    cases = []
    for file_name in json.loads(index.read_text(encoding="utf-8")):
        spec = json.loads((specs / file_name).read_text(encoding="utf-8"))
        for kind in ("tests", "variantTests"):
            for number, case in enumerate(spec.get(kind, [])):
                case_id = f"{Path(file_name).stem}/{kind}/{number}:{case['description']}"
                cases.append(pytest.param(spec["state"], kind, case, file_name, id=case_id))
    return cases


CASES = _load_cases()
_ENGINES: dict[str, Engine] = {}


def _engine(file_name: str, state: dict[str, Any]) -> Engine:
    if file_name not in _ENGINES:
        _ENGINES[file_name] = Engine.from_client_features(state)
    return _ENGINES[file_name]


def test_the_whole_specification_is_present() -> None:
    assert (client_spec_dir() / "specifications" / "index.json").is_file(), (
        f"client specification not found at {client_spec_dir()} (set FLAGCORE_CLIENT_SPEC)"
    )
    assert len(CASES) == EXPECTED_CASES


@pytest.mark.parametrize(("state", "kind", "case", "file_name"), CASES)
def test_specification_case(state: Any, kind: str, case: Any, file_name: str) -> None:
    assert case is not None, "client specification missing"
    engine = _engine(file_name, state)
    if kind == "tests":
        assert engine.is_enabled(case["toggleName"], case["context"]) is case["expectedResult"]
    else:
        expected = dict(case["expectedResult"])
        actual = engine.get_variant(case["toggleName"], case["context"]).to_mapping()
        assert actual == expected
