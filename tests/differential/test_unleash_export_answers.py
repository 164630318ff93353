"""A real Unleash 8.2 export, imported, answers exactly as Unleash's own engine did.

tests/data/unleash-export-8.2/ holds the export (60 flags), the segments it names, and
what yggdrasil answered for every flag on 200 contexts (12,000 answers). Unleash 8.2's own
import reorders strategies and changes 20 of them; ours keeps the file's order, so none
may change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flagcore.model import Constraint
from flagcore.service import Service
from flagcore.wire import read_export, structure
from flagcore_store_sqlite import SqliteStore

DATA = Path(__file__).parent.parent / "data" / "unleash-export-8.2"


def load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def make_segments(service: Service) -> None:
    for segment in load("unleash-export-8.2.segments.json")["segments"]:
        service.segments.create_segment(
            segment["name"],
            structure(segment["constraints"], tuple[Constraint, ...]),
            description=segment["description"],
        )


def test_every_answer_of_an_imported_unleash_export_matches_unleash(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        service = Service(store)
        make_segments(service)
        expected = load("unleash-export-8.2.expected.json")
        report = service.importing.import_export(
            "default", expected["environment"], read_export(load("unleash-export-8.2.json"))
        )
        assert len(report.created) == 60
        engine = service.client.engine(expected["environment"])
        contexts = expected["contexts"]
        differences = []
        for answer in expected["evaluations"]:
            context = contexts[answer["context"]]
            name = answer["flag"]
            variant = engine.get_variant(name, context)
            payload = dict(variant.payload) if variant.payload is not None else None
            got = (engine.is_enabled(name, context), variant.name, payload)
            wanted = (answer["enabled"], answer["variant"], answer["payload"])
            if got != wanted:
                differences.append((name, answer["context"], got, wanted))
        assert len(expected["evaluations"]) == 12_000
        assert differences == [], f"{len(differences)} differences, first: {differences[:5]}"
    finally:
        store.close()
