"""Log lines nobody can forge and that carry no secret (docs/security.md, "Logs").

Everything a client sends is hostile: a request path can hold ``%0a`` (a newline once
decoded), a header can hold a token. So every log line is one line: control characters in
any value become ``\\xNN``, and what looks like a secret becomes ``<secret>`` before the
line is written. Tracebacks keep their frames on indented continuation lines; a message
that a client wrote can never start a line of its own.
"""

from __future__ import annotations

import logging
import re
import sys
import traceback
from types import TracebackType
from typing import TextIO

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError

__all__ = [
    "LINE_FORMAT",
    "AccessLog",
    "SafeFormatter",
    "configure_logging",
    "printable",
    "redacted",
]

LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

# Unleash-shaped secrets (`project:environment.secret`, `*:*.secret`), the value after an
# Authorization header name, and long hex runs (generated secrets and their digests).
_SECRETS = (
    (
        re.compile(
            r"(?<![A-Za-z0-9_.~*\[\]-])(?:\*|\[\]|[A-Za-z0-9_.~-]+):(?:\*|[A-Za-z0-9_~-]+)"
            r"\.[A-Za-z0-9_.~-]{4,}"
        ),
        "<secret>",
    ),
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(?:bearer\s+)?[^\s'\",;]+"), r"\1<secret>"),
    (re.compile(r"\b[0-9A-Fa-f]{32,}\b"), "<secret>"),
)
# Paths whose segments are secrets: `DELETE /api/admin/api-tokens/<secret>`.
_SECRET_PATHS = re.compile(r"(?i)(/api/admin/api-tokens/)[^/?#\s\"']*")


def printable(text: str) -> str:
    """``text`` on one line: control characters as ``\\xNN``, Unicode line breaks as ``\\uNNNN``."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def redacted(text: str) -> str:
    """``text`` with anything shaped like a secret replaced by ``<secret>``."""
    text = _SECRET_PATHS.sub(r"\1<secret>", text)
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _safe(text: str) -> str:
    return printable(redacted(text))


class SafeFormatter(logging.Formatter):
    """One line per record, escaped and redacted; exception frames indented below it."""

    def format(self, record: logging.LogRecord) -> str:
        safe = logging.makeLogRecord(record.__dict__)
        safe.msg, safe.args = _safe(record.getMessage()), None
        safe.exc_info, safe.exc_text, safe.stack_info = None, None, None
        line = super().format(safe)
        if record.exc_info and record.exc_info[1] is not None:
            line += self._exception(*record.exc_info)
        return line

    @staticmethod
    def _exception(
        kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> str:
        if isinstance(error, HttpProcessingError):
            # A malformed request: aiohttp's message quotes the raw bytes (headers, tokens).
            # What went wrong is on its first line; the quote is the client's own data.
            first = str(error.message).splitlines()[0] if error.message else ""
            return f": {type(error).__name__} {error.code} {_safe(first)}"
        lines = "".join(traceback.format_exception(kind, error, tb)).splitlines()
        return "".join(f"\n    | {_safe(text)}" for text in lines)


class AccessLog(AbstractAccessLogger):
    """``address "METHOD path" status bytes seconds``; the path escaped and redacted."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %s %s %.6fs',
            _safe(request.remote or "-"),
            _safe(request.method),
            _safe(request.raw_path),
            response.status,
            response.body_length,
            time,
        )


def configure_logging(stream: TextIO | None = None) -> None:
    """Send every logger (ours and aiohttp's) through `SafeFormatter` on stderr."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(SafeFormatter(LINE_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
