"""Safe-to-archive suggestions (issue 32): a flag is suggested only when what SDKs report
and what the code contains agree that nothing depends on it any more.

What SDKs report is the metric buckets the store still keeps (48 hours by default,
``FLAGCORE_METRICS_RETENTION_HOURS``): either no evaluation at all, or the same answer in
every one of them, in every environment (the flag is effectively always on or always
off). What the code contains is the last scan of each source (``flagcore scan
--upload``): no reference in any of them. Without any scan, only what SDKs report is
weighed, and the suggestion says so.
"""

from __future__ import annotations

import attrs

from flagcore.service.context import ServiceContext
from flagcore.service.lookups import require_project
from flagcore.tables import CODE_SCANS

__all__ = ["ArchiveSuggestion", "CleanupSuggestions"]


@attrs.frozen
class ArchiveSuggestion:
    """A flag that looks safe to archive, and why, in words a person reads."""

    flag: str
    project: str
    reasons: tuple[str, ...]


class CleanupSuggestions:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def safe_to_archive(self, project: str) -> list[ArchiveSuggestion]:
        """The project's active flags that no kept SDK report needs (none, or one
        answer everywhere) and no stored scan references, by name."""
        suggestions: list[ArchiveSuggestion] = []
        with self._context.read() as tx:
            require_project(tx, project)
            scans = list(tx.list_records(CODE_SCANS))
            referenced = {r.flag for scan in scans for r in scan.references}
            for flag in tx.list_flags(project=project, archived=False):
                if flag.name in referenced:
                    continue
                rows = [r for r in tx.list_flag_metrics(flag.name) if r.yes or r.no]
                yes, no = sum(r.yes for r in rows), sum(r.no for r in rows)
                if not rows:
                    usage = "no SDK evaluation in the metrics kept"
                elif yes == 0 or no == 0:
                    answer = "on" if no == 0 else "off"
                    usage = f"always {answer} in the {yes + no} evaluations kept, everywhere"
                else:
                    continue
                code = (
                    f"no reference in the last scans of {len(scans)} sources"
                    if scans
                    else "no code scan was sent: the code was not weighed"
                )
                suggestions.append(ArchiveSuggestion(flag.name, flag.project, (usage, code)))
        return suggestions
