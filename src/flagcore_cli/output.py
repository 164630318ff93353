"""What the commands print: a line on stdout or stderr, and a progress bar on a terminal."""

from __future__ import annotations

import sys

__all__ = ["progress_bar", "say"]


def say(text: str, *, error: bool = False) -> None:
    """One line, flushed at once (a supervisor or a pipe sees it when it happens)."""
    print(text, file=sys.stderr if error else sys.stdout, flush=True)


def progress_bar(what: str, done: int, total: int, *, end_line: bool = True) -> None:
    """Redraw ``[####    ] done/total what`` on stderr; a new line once all is done, unless
    ``end_line`` is false (the caller draws several bars on one line)."""
    width = 30
    filled = width * done // total if total else width
    sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done}/{total} {what}")
    if end_line and done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()
