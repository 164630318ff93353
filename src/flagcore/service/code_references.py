"""Code references (issue 32): where source code names each flag, as scans report it.

A scan (``flagcore scan --upload SOURCE``) replaces everything its source reported
before, so a call removed from the code disappears from the flag's page at the next
scan. Each source is bounded (`MAX_CODE_REFERENCES`, `MAX_CODE_SOURCES`); a reference
may name a flag that does not exist (a typo is what the scan is there to show). Storing a
scan records no event: it changes no flag, and the revision SDKs poll stays put.
"""

from __future__ import annotations

from flagcore.entities import CodeReference, CodeScan, SourcedReference
from flagcore.errors import ErrorDetail, InvalidInput, LimitExceeded
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import CODE_SCANS
from flagcore.validation import MAX_NAME_LENGTH, check_text

__all__ = [
    "MAX_CODE_REFERENCES",
    "MAX_CODE_SOURCES",
    "MAX_FILE_PATH_LENGTH",
    "CodeReferences",
]

MAX_CODE_REFERENCES = 10_000  # per source: about what a 1 MB body (the default) holds
MAX_CODE_SOURCES = 100  # repositories reporting to one server
MAX_FILE_PATH_LENGTH = 1_000
MAX_CALL_LENGTH = 100
MAX_LINE = 2**31 - 1


def _bounded(value: object, path: str, maximum: int, *, optional: bool = False) -> None:
    check_text(value, path, optional=optional)
    if isinstance(value, str) and not value.strip():
        raise InvalidInput(f"{path} is empty", [ErrorDetail("must not be empty", path)])
    if isinstance(value, str) and len(value) > maximum:
        raise InvalidInput(
            f"{path} is longer than {maximum} characters",
            [ErrorDetail(f"at most {maximum} characters", path)],
        )


def checked_scan(source: str, references: tuple[CodeReference, ...]) -> None:
    """`InvalidInput` naming the JSON path of each bad part; `LimitExceeded` past the
    bound on references."""
    _bounded(source, "$.source", MAX_NAME_LENGTH)
    if len(references) > MAX_CODE_REFERENCES:
        raise LimitExceeded(
            f"a scan holds at most {MAX_CODE_REFERENCES} references; this one {len(references)}",
            "code references per source",
            MAX_CODE_REFERENCES,
            "$.references",
        )
    for i, reference in enumerate(references):
        at = f"$.references[{i}]"
        _bounded(reference.flag, f"{at}.flag", MAX_NAME_LENGTH)
        _bounded(reference.file, f"{at}.file", MAX_FILE_PATH_LENGTH)
        _bounded(reference.call, f"{at}.call", MAX_CALL_LENGTH, optional=True)
        if type(reference.line) is not int or not 1 <= reference.line <= MAX_LINE:
            raise InvalidInput(
                f"{at}.line must be a line number from 1",
                [ErrorDetail(f"a whole number from 1 to {MAX_LINE}", f"{at}.line")],
            )


class CodeReferences:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def store_code_scan(
        self, source: str, references: tuple[CodeReference, ...], *, actor: Actor = SYSTEM
    ) -> CodeScan:
        """Replace ``source``'s references with this scan's (all or nothing)."""
        authorize(actor, "store_code_scan")
        checked_scan(source, references)
        ordered = tuple(sorted(set(references), key=lambda r: (r.flag, r.file, r.line)))
        scan = CodeScan(source, ordered, self._context.clock())
        with self._context.unit() as tx:
            known = {s.source for s in tx.list_records(CODE_SCANS)}
            if source not in known and len(known) >= MAX_CODE_SOURCES:
                raise LimitExceeded(
                    f"at most {MAX_CODE_SOURCES} sources report code references",
                    "code reference sources",
                    MAX_CODE_SOURCES,
                    "$.source",
                )
            tx.save_record(CODE_SCANS, scan)
        return scan

    def list_code_scans(self) -> list[CodeScan]:
        with self._context.read() as tx:
            return list(tx.list_records(CODE_SCANS))

    def references_to(self, flag: str) -> list[SourcedReference]:
        """Every place the last scan of each source found ``flag``, by source, file, line."""
        with self._context.read() as tx:
            return [
                SourcedReference(scan.source, reference)
                for scan in tx.list_records(CODE_SCANS)
                for reference in scan.references
                if reference.flag == flag
            ]
