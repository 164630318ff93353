"""Flag names in source code: the calls of the official Unleash SDKs and of OpenFeature.

A reference is a call whose flag name is a string literal, in Python, JavaScript and
TypeScript, Go, Java and Kotlin, Ruby and C#: ``is_enabled("x")``, ``isEnabled('x')``,
``IsEnabled("x")``, ``getVariant``/``get_variant``/``GetVariant``, React's ``useFlag`` and
``useVariant``, OpenFeature's ``getBooleanValue("x", ...)``, ``get_boolean_value``,
``GetBooleanValueAsync``, Go's ``BooleanValue(ctx, "x", ...)``, Ruby's
``is_enabled? "x"`` and ``fetch_boolean_value(flag_key: "x", ...)``. A name built at run
time (a variable, an f-string, a template with ``${}``) cannot be read and is not
reported. Given the server's flag names, any string literal equal to one of them is a
reference too (a constant that names the flag), reported without a call.

Files are read as bytes and matched with one compiled bytes pattern: no decoding, no
parsing, so a 100,000-file tree takes seconds (benchmarks/scan_bench.py). The work is
spread over processes by `scan_files`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor

import attrs
import re2

__all__ = ["MAX_FILE_BYTES", "Reference", "scan_file", "scan_files"]

MAX_FILE_BYTES = 4 * 1024 * 1024  # bigger files are bundles or generated data, not code
_CHUNK = 512  # files per task handed to a worker process

# Calls whose first argument is the flag name.
_NAME_FIRST = (
    rb"is_enabled|is_disabled|get_variant|isEnabled|isDisabled|getVariant|forceGetVariant"
    rb"|IsEnabled|IsDisabled|GetVariant|useFlag|useVariant|useFlagStatus"
    rb"|get_(?:boolean|string|integer|float|object)_(?:value|details)"
    rb"|fetch_(?:boolean|string|number|integer|float|object)_(?:value|details)"
    rb"|get(?:Boolean|String|Number|Integer|Double|Object)(?:Value|Details)"
    rb"|Get(?:Boolean|String|Integer|Double|Object)(?:Value|Details)(?:Async)?"
)
# Ruby's predicate methods, also called without parentheses.
_RUBY = rb"is_enabled\?|is_disabled\?|enabled\?|disabled\?"
# Go's OpenFeature client takes a context first: ``BooleanValue(ctx, "x", false, ec)``.
_CONTEXT_FIRST = rb"(?:Boolean|String|Int|Float|Object)Value(?:Details)?"

_CALL = re.compile(
    rb"\b(?:(?P<ruby>" + _RUBY + rb")(?:[ \t]*\([ \t]*|[ \t]+)"
    rb"|(?P<call>" + _NAME_FIRST + rb")\s*\(\s*"
    rb"|(?P<go>" + _CONTEXT_FIRST + rb")\s*\(\s*[\w.]+(?:\(\))?\s*,\s*)"
    rb"(?:(?:flag_key|flagKey)\s*[:=]\s*)?@?"
    rb"(?P<quote>[\"'`])(?P<name>[^\"'`\\\r\n$]{1,255})(?P=quote)"
)
# A piece of every call name: a file with none of them is not matched at all. RE2 finds
# any of them in one linear pass, several times faster than the pattern (whose
# backreference RE2 lacks) and 2.5x faster than a substring search per piece; most files
# name no flag.
_PIECES = re2.compile(rb"nabled|isabled|ariant|useFlag|Value|_value|etails")
# Any quoted URL-friendly word: compared with the server's flag names.
_LITERAL = re.compile(rb"([\"'`])([A-Za-z0-9_.~-]{1,255})\1")


@attrs.frozen
class Reference:
    """One place a flag name appears: ``call`` is the method, or None for a bare string
    literal equal to a server flag's name."""

    name: str
    file: str
    line: int
    call: str | None


def _read(path: str) -> bytes | None:
    """The file's bytes, read in one system call sized by ``fstat`` (a buffered reader
    asked for "up to 4 MB" allocates that much first: half the time of a scan); None
    when unreadable or over `MAX_FILE_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > MAX_FILE_BYTES:
            return None
        data = os.read(fd, size + 1)
        while len(data) < size and (more := os.read(fd, size + 1 - len(data))):
            data += more  # a short read (a pipe-like file system): keep reading
        return data if len(data) <= MAX_FILE_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def scan_file(root: str, relative: str, known: frozenset[str] = frozenset()) -> list[Reference]:
    """The references in one file (``relative`` to ``root``); an unreadable or oversized
    file has none."""
    data = _read(os.path.join(root, relative))
    if data is None:
        return []
    found: list[Reference] = []
    at: dict[int, None] = {}  # start of each literal a call took, so it is not counted twice
    line, counted = 1, 0
    matches = _CALL.finditer(data) if _PIECES.search(data) else ()
    for match in matches:
        start = match.start("quote")
        line += data.count(b"\n", counted, start)
        counted = start
        name = match["name"].decode("utf-8", "replace")
        call = (match["call"] or match["ruby"] or match["go"]).decode()
        found.append(Reference(name, relative, line, call))
        at[start] = None
    if known:
        line, counted = 1, 0
        for match in _LITERAL.finditer(data):
            name = match[2].decode()
            if name not in known or match.start() in at:
                continue
            start = match.start()
            line += data.count(b"\n", counted, start)
            counted = start
            found.append(Reference(name, relative, line, None))
    return found


def _scan_chunk(root: str, files: Sequence[str], *, known: frozenset[str]) -> list[Reference]:
    references: list[Reference] = []
    for relative in files:
        references += scan_file(root, relative, known)
    return references


def scan_files(
    root: str, files: Iterable[str], known: frozenset[str] = frozenset(), *, jobs: int = 1
) -> tuple[int, list[Reference]]:
    """How many files were read and every reference in them, in file and line order;
    with ``jobs`` > 1, chunks of files are read by that many processes."""
    listed = list(files)
    chunks = [listed[i : i + _CHUNK] for i in range(0, len(listed), _CHUNK)]
    references: list[Reference] = []
    if jobs <= 1 or len(chunks) <= 1:
        for chunk in chunks:
            references += _scan_chunk(root, chunk, known=known)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for part in pool.map(functools.partial(_scan_chunk, root, known=known), chunks):
                references += part
    references.sort(key=lambda r: (r.file, r.line))
    return len(listed), references
