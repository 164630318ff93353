"""Code references (issue 32) as the admin API answers them: flagcore's own shape
(Unleash has no code references), camelCase like the rest of the API."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import attrs

from flagcore.entities import CodeScan, SourcedReference
from flagcore.wire.answer_table import AnswerField, answer

__all__ = ["CodeReferenceAnswer", "CodeScanAnswer", "FlagCodeReferencesAnswer"]


@answer(
    AnswerField("source", "source"),
    AnswerField("scanned_at", "scannedAt"),
    AnswerField("references", "references"),
    AnswerField("flags", "flags"),
)
@attrs.frozen
class CodeScanAnswer:
    """What a stored scan holds: how many references, to how many distinct names."""

    source: str
    scanned_at: dt.datetime | None
    references: int
    flags: int

    @classmethod
    def of(cls, scan: CodeScan) -> CodeScanAnswer:
        names = {reference.flag for reference in scan.references}
        return cls(scan.source, scan.scanned_at, len(scan.references), len(names))


@answer(
    AnswerField("source", "source"),
    AnswerField("file", "file"),
    AnswerField("line", "line"),
    AnswerField("call", "call"),
)
@attrs.frozen
class CodeReferenceAnswer:
    source: str
    file: str
    line: int
    call: str | None


@answer(AnswerField("flag", "flag"), AnswerField("references", "references"))
@attrs.frozen
class FlagCodeReferencesAnswer:
    """Every place the sources' last scans found one flag."""

    flag: str
    references: tuple[CodeReferenceAnswer, ...]

    @classmethod
    def of(cls, flag: str, found: Sequence[SourcedReference]) -> FlagCodeReferencesAnswer:
        return cls(
            flag,
            tuple(
                CodeReferenceAnswer(f.source, f.reference.file, f.reference.line, f.reference.call)
                for f in found
            ),
        )
