"""Safe-to-archive suggestions (issue 32): a flag is suggested only when what SDKs report
and what the code contains agree that nothing depends on it any more.

What SDKs report is the usage history of the last N days (``FLAGCORE_SAFE_TO_ARCHIVE_DAYS``,
30; hour buckets and the day buckets they were rolled up into): either no evaluation at
all, or the same answer in every one of them, in every environment (the flag is
effectively always on or always off). A flag younger than N days is never suggested: it
has not been unused, or constant, for N days. What the code contains is the last scan of
each source (``flagcore scan --upload``): no reference in any of them. Without any scan,
only what SDKs report is weighed, and the suggestion says so.
"""

from __future__ import annotations

import datetime as dt

import attrs

from flagcore.service.context import ServiceContext
from flagcore.service.lookups import require_project
from flagcore.service.usage_history import history_rows
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

    def safe_to_archive(self, project: str, *, days: int = 30) -> list[ArchiveSuggestion]:
        """The project's active flags at least ``days`` old that no SDK report of the
        last ``days`` days needs (none, or one answer everywhere) and no stored scan
        references, by name. The window starts at midnight UTC of its first day (day
        buckets are whole days)."""
        since = self._context.clock() - dt.timedelta(days=days)
        span = f"the last {days} day{'' if days == 1 else 's'}"
        suggestions: list[ArchiveSuggestion] = []
        with self._context.read() as tx:
            require_project(tx, project)
            scans = list(tx.list_records(CODE_SCANS))
            referenced = {r.flag for scan in scans for r in scan.references}
            for flag in tx.list_flags(project=project, archived=False):
                if flag.name in referenced or flag.created_at > since:
                    continue
                day_rows, hour_rows = history_rows(tx, flag.name, since)
                rows = [r for r in (*day_rows, *hour_rows) if r.yes or r.no]
                yes, no = sum(r.yes for r in rows), sum(r.no for r in rows)
                if not rows:
                    usage = f"no SDK evaluation in {span}"
                elif yes == 0 or no == 0:
                    answer = "on" if no == 0 else "off"
                    usage = f"always {answer} in the {yes + no} evaluations of {span}, everywhere"
                else:
                    continue
                code = (
                    f"no reference in the last scan of {len(scans)} source"
                    if len(scans) == 1
                    else f"no reference in the last scans of {len(scans)} sources"
                    if scans
                    else "no code scan was sent: the code was not weighed"
                )
                suggestions.append(ArchiveSuggestion(flag.name, flag.project, (usage, code)))
        return suggestions
