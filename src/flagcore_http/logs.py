"""Log lines nobody can forge and that carry no secret (docs/security.md, "Logs").

Everything a client sends is hostile: a request path can hold ``%0a`` (a newline once
decoded), a header can hold a token. So every log line is one line: control characters in
any value become ``\\xNN``, and what looks like a secret becomes ``<secret>`` before the
line is written. Tracebacks keep their frames on indented continuation lines; a message
that a client wrote can never start a line of its own.

Two formats (``--log-format``): ``text``, the line above, and ``json``, one JSON object per
line for log collectors. Both go through `redacted` and `printable`, the one place that
decides what may be logged. The standard library's `logging` does it (not structlog): the
access line is one record built by aiohttp's access-logger hook, every other record comes
from aiohttp or our own loggers already, and a formatter is the one place both pass
through; a second logging library would add a dependency and a second path to keep safe.

Which requests get a line (``--access-log``) is `flagcore_http.request_log`'s to decide;
every record is formatted and written off the event loop by `flagcore_http.log_writer`.

A request line in JSON carries the route template (``/api/admin/api-tokens/{token}``),
never the raw path or query string, in its ``route`` field and in its ``message`` alike,
so a secret in either never reaches it; the text line keeps the path, redacted.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
import os
import re
import string
import sys
import traceback
from types import TracebackType
from typing import Any, TextIO

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError

from flagcore_http.log_writer import BatchWriter

__all__ = [
    "ACCESS_LOGGER",
    "APP_NAME_HEADER",
    "LINE_FORMAT",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "REQUEST_FIELDS",
    "REQUEST_ID_HEADER",
    "AccessLog",
    "JsonFormatter",
    "SafeFormatter",
    "close_logging",
    "configure_logging",
    "flush_logging",
    "printable",
    "redacted",
    "request_id",
    "route_template",
]

LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

# Unleash-shaped secrets (`project:environment.secret`, `*:*.secret`), the value after an
# Authorization header name, and long hex runs (generated secrets and their digests).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_.~*\[\]-])(?:\*|\[\]|[A-Za-z0-9_.~-]+):(?:\*|[A-Za-z0-9_~-]+)"
    r"\.[A-Za-z0-9_.~-]{4,}"
)
_AUTHORIZATION = re.compile(r"(?i)(authorization\s*[:=]\s*)(?:bearer\s+)?[^\s'\",;]+")
_HEX_RUN = re.compile(r"\b[0-9A-Fa-f]{32,}\b")
# Paths whose segments are secrets: `DELETE /api/admin/api-tokens/<secret>` (but not the
# route's own template, `/api/admin/api-tokens/{token}`, which JSON lines name).
# A query's ``token=`` (the one-time links that set a user's password: /ui/set-password).
_TOKEN_QUERY = re.compile(r"(?i)([?&;]token=)[^&#\s\"']*")
_SECRET_PATHS = re.compile(r"(?i)(/api/admin/api-tokens/)(?!\{token\}(?:[/?#\s\"']|$))[^/?#\s\"']*")


def printable(text: str) -> str:
    """``text`` on one line: control characters as ``\\xNN``, Unicode line breaks as ``\\uNNNN``."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def redacted(text: str) -> str:
    """``text`` with anything shaped like a secret replaced by ``<secret>``.

    A pattern is skipped only when the text cannot hold what it needs (a token and an
    Authorization value need ``:`` or ``=``; for ASCII text, the case-insensitive words
    are looked for in its lower case first): the common request line costs one pass.
    """
    folded = text.lower() if text.isascii() else None
    if folded is None or "api-tokens/" in folded:
        text = _SECRET_PATHS.sub(r"\1<secret>", text)
    if ":" in text or "=" in text:
        text = _TOKEN.sub("<secret>", text)
        if folded is None or "token=" in folded:
            text = _TOKEN_QUERY.sub(r"\1<secret>", text)
        if folded is None or "authorization" in folded:
            text = _AUTHORIZATION.sub(r"\1<secret>", text)
    return _HEX_RUN.sub("<secret>", text)


def _safe(text: str) -> str:
    return printable(redacted(text))


def _copy(record: logging.LogRecord) -> logging.LogRecord:
    """A copy of ``record`` to change (another handler may get the same record), made
    without `logging.LogRecord.__init__` (which reads the clock, the thread, the process)."""
    copy = logging.LogRecord.__new__(logging.LogRecord)
    copy.__dict__.update(record.__dict__)
    return copy


class SafeFormatter(logging.Formatter):
    """One line per record, escaped and redacted; exception frames indented below it."""

    def format(self, record: logging.LogRecord) -> str:
        safe = _copy(record)
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


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC), level, logger, message, and for a request
    the fields `AccessLog` gives it; every string escaped and redacted like a text line."""

    def format(self, record: logging.LogRecord) -> str:
        created = dt.datetime.fromtimestamp(record.created, dt.UTC)
        fields = getattr(record, REQUEST_FIELDS, None)
        if not isinstance(fields, dict):
            fields = None
        request = fields is not None and fields.get("kind") == "request"
        line: dict[str, Any] = {
            "time": created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _safe(
                _request_message(fields) if fields is not None and request else record.getMessage()
            ),
        }
        if fields is not None:
            for key, value in fields.items():
                line[key] = _safe(value) if isinstance(value, str) else value
        if record.exc_info and record.exc_info[1] is not None:
            line["error"] = SafeFormatter._exception(*record.exc_info).strip("\n :")
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def _request_message(fields: dict[str, Any]) -> str:
    """A request's JSON ``message``: the text line's shape with the route template where the
    text line has the path, so neither the raw path nor its query string is in a JSON line."""
    return (
        f'{fields["remote"] or "-"} "{fields["method"]} {fields["route"] or "-"}" '
        f"{fields['status']} {fields['bytes']} {fields['duration_ms'] / 1000:.6f}s "
        f"{fields['request_id']}"
    )


# --- request ids (X-Request-Id, put on each answer by flagcore_http.metrics) ---
REQUEST_ID_HEADER = "X-Request-Id"
MAX_REQUEST_ID_LENGTH = 128
_REQUEST_ID_CHARS = string.ascii_letters + string.digits + "-_."
# Generated ids: a random prefix per process and a counter (unique, and far cheaper per
# request than a UUID's system call); short hex runs, so no id ever looks like a secret.
_ID_PREFIX = os.urandom(6).hex() + "-"
_ID_COUNTER = itertools.count(1)


def request_id(incoming: str | None) -> str:
    """``incoming`` when it is short and only letters, digits, ``-``, ``_`` and ``.``
    (what a proxy or a caller's tracing puts there); a new id otherwise, never an error."""
    if (
        incoming
        and len(incoming) <= MAX_REQUEST_ID_LENGTH
        and not incoming.strip(_REQUEST_ID_CHARS)
    ):
        return incoming
    return f"{_ID_PREFIX}{next(_ID_COUNTER):x}"


def _incoming_id(request: web.BaseRequest) -> str:
    """For an answer without an id (the admin UI's pages, a request refused before any
    route): the caller's ``X-Request-Id`` when it is one `request_id` keeps, else ``-``."""
    incoming = request.headers.get(REQUEST_ID_HEADER)
    return incoming if incoming and request_id(incoming) == incoming else "-"


REQUEST_FIELDS = "flagcore_request"  # the record attribute holding a request line's fields
ACCESS_LOGGER = "flagcore_http.access"
APP_NAME_HEADER = "UNLEASH-APPNAME"
MAX_APP_NAME_LENGTH = 200


def route_template(request: web.BaseRequest) -> str | None:
    """The template of the route that answered (``/api/admin/features/{name}``), never the
    path itself (it may hold a secret); None when aiohttp refused the request before any
    route. Read from the router's match after the answer, when a line is written or a
    request counted (`flagcore_http.request_log`); nothing is stored per request."""
    match = getattr(request, "_match_info", None)
    route = getattr(match, "route", None)
    resource = getattr(route, "resource", None)
    if resource is None:
        return None
    canonical: str = resource.canonical
    return "/{unmatched_path}" if canonical.startswith("/{unmatched_path") else canonical


_LINE = '%s "%s %s" %s %s %.6fs %s'


class AccessLog(AbstractAccessLogger):
    """``address "METHOD path" status bytes seconds id``, the path escaped and redacted;
    the JSON format has the route template instead of the path, and the client's name.

    Nothing is escaped, redacted or formatted here, on the event loop: the record carries
    the raw values and the formatter, on the log writer's thread, makes them safe
    (`SafeFormatter` the whole text line, `JsonFormatter` each string field).
    """

    @property
    def enabled(self) -> bool:
        """Whether aiohttp calls `log` at all: not when info records are not written."""
        return self.logger.isEnabledFor(logging.INFO)

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        rid = response.headers.get(REQUEST_ID_HEADER) or _incoming_id(request)
        fields = {
            "kind": "request",
            "method": request.method,
            "route": route_template(request),
            "status": response.status,
            "duration_ms": round(time * 1000, 3),
            "bytes": response.body_length,
            "app_name": (request.headers.get(APP_NAME_HEADER) or "")[:MAX_APP_NAME_LENGTH] or None,
            "request_id": rid,
            "remote": request.remote,
        }
        # `Logger.info` without its search of the caller's frame: the line names no source.
        logger = self.logger
        args = (
            request.remote or "-",
            request.method,
            _logged_path(request),
            response.status,
            response.body_length,
            time,
            rid,
        )
        extra = {REQUEST_FIELDS: fields}
        logger.handle(
            logger.makeRecord(logger.name, logging.INFO, "", 0, _LINE, args, None, None, extra)
        )


# Addresses whose query holds a credential: a sign-in code and state coming back from the
# OpenID provider, a set-password link's token. Their lines show the path alone.
_SECRET_QUERY_PATHS = frozenset({"/ui/sign-in/oidc/callback", "/ui/set-password"})


def _logged_path(request: web.BaseRequest) -> str:
    if request.path in _SECRET_QUERY_PATHS:
        return request.raw_path.partition("?")[0]
    return request.raw_path


LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")


def configure_logging(
    stream: TextIO | None = None, *, log_format: str = "text", level: str = "info"
) -> None:
    """Send every logger (ours and aiohttp's) through one safe formatter on stderr, written
    off the event loop in batches (`flagcore_http.log_writer`)."""
    formatter = JsonFormatter() if log_format == "json" else SafeFormatter(LINE_FORMAT)
    handler = BatchWriter(stream or sys.stderr, formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        if isinstance(old, BatchWriter):
            old.close()
    root.addHandler(handler)
    root.setLevel(level.upper())


def flush_logging() -> None:
    """Write every line queued so far (at a stop, before saying the server stopped)."""
    for handler in logging.getLogger().handlers:
        handler.flush()


def close_logging() -> None:
    """Write every queued line and stop the writer `configure_logging` started."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, BatchWriter):
            root.removeHandler(handler)
            handler.close()
