"""The export file flagcore writes (``flagcore export``, ``POST
/api/admin/features-batch/export``), written from answer-table rows, must stay byte for
byte what the hand-written writer wrote: Unleash's import reads it. The sample is Unleash
8.2's own export (60 flags, every part of the format) read and written again by the
hand-written writer, before the rows replaced it."""

from __future__ import annotations

import json
from pathlib import Path

from flagcore.wire import read_export, write_export

DATA = Path(__file__).resolve().parents[1] / "data"


def test_an_unleash_export_read_and_written_again_is_written_as_the_sample_holds() -> None:
    source = DATA / "unleash-export-8.2" / "unleash-export-8.2.json"
    export = read_export(json.loads(source.read_text(encoding="utf-8")))
    written = json.dumps(write_export(export), ensure_ascii=False, separators=(",", ":"))
    sample = (DATA / "export" / "unleash-export-8.2.written.json").read_text(encoding="utf-8")
    assert written + "\n" == sample


def test_what_is_written_reads_back_as_the_same_export() -> None:
    source = DATA / "unleash-export-8.2" / "unleash-export-8.2.json"
    export = read_export(json.loads(source.read_text(encoding="utf-8")))
    again = read_export(write_export(export))
    assert again.features == export.features
    assert [s.feature_name for s in again.feature_strategies] == [
        s.feature_name for s in export.feature_strategies
    ]
    assert again.dependencies == export.dependencies
