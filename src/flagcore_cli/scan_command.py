"""``flagcore scan PATH...``: which flags the code uses, and which names no flag has.

The references are the SDK and OpenFeature calls `flagcore_cli.code_scan` finds in the
files `flagcore_cli.source_tree` lists (``.gitignore`` respected). Given the server's
flags (``--db``, or ``--url`` with ``--token``), string literals equal to a flag's name
count too, and the report adds the flags no code references and the names in code that no
flag has (typos, or flags removed too early). ``--upload`` sends the references to the
server (``POST /api/admin/code-references``) so each flag's page lists them.

Exit status: 0 done; 1 a source could not be read (database, server); 2 bad input;
3 ``--fail-on-unknown`` and a name in code that no flag has.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs

from flagcore.errors import FlagcoreError
from flagcore.service import Service
from flagcore_cli.code_scan import Reference, scan_files
from flagcore_cli.explain_command import server_root
from flagcore_cli.source_tree import source_files
from flagcore_cli.stores import is_postgres, open_store
from flagcore_http.config import ServerConfig

__all__ = ["ScanReport", "add_parser", "run"]

FETCH_TIMEOUT = 30.0  # seconds, for --url
MAX_ANSWER_BYTES = 64 * 1024 * 1024
UNKNOWN_EXIT = 3


class BadInput(Exception):
    """What the user typed cannot be used: exit status 2."""


class Unavailable(Exception):
    """The flags cannot be read from the source named: exit status 1."""


@attrs.frozen
class ServerFlags:
    """The server's flag names: active ones, and archived ones (a reference to an
    archived flag is named as such, not as a typo)."""

    active: frozenset[str]
    archived: frozenset[str]


@attrs.frozen
class ScanReport:
    """What a scan found; ``server`` is None when no server was asked."""

    roots: tuple[str, ...]
    files: int
    references: tuple[Reference, ...]
    server: ServerFlags | None

    def by_flag(self) -> dict[str, list[Reference]]:
        flags: dict[str, list[Reference]] = {}
        for reference in self.references:
            flags.setdefault(reference.name, []).append(reference)
        return dict(sorted(flags.items()))

    def status(self, name: str) -> str | None:
        if self.server is None:
            return None
        if name in self.server.active:
            return "active"
        return "archived" if name in self.server.archived else "unknown"

    def unknown(self) -> list[str]:
        return [name for name in self.by_flag() if self.status(name) == "unknown"]

    def unreferenced(self) -> list[str]:
        if self.server is None:
            return []
        used = {reference.name for reference in self.references}
        return sorted(self.server.active - used)

    def to_json(self) -> dict[str, Any]:
        return {
            "roots": list(self.roots),
            "filesScanned": self.files,
            "flags": [
                {
                    "name": name,
                    "status": self.status(name),
                    "references": [_reference_json(r) for r in references],
                }
                for name, references in self.by_flag().items()
            ],
            "unknown": self.unknown(),
            "unreferenced": self.unreferenced() if self.server is not None else None,
        }


def _reference_json(reference: Reference) -> dict[str, Any]:
    return {"file": reference.file, "line": reference.line, "call": reference.call}


def add_parser(commands: Any) -> None:
    """The ``scan`` subcommand, on ``flagcore``'s subparsers."""
    parser = commands.add_parser(
        "scan",
        help="find the flags a source tree uses (SDK and OpenFeature calls)",
        description="Find flag names in the source files under PATH (Python, JavaScript, "
        "TypeScript, Go, Java, Kotlin, Ruby, C#; .gitignore respected): each flag with its "
        "files and lines; with the server's flags (--db, or --url and --token), the flags no "
        "code references and the names no flag has. Exit 3 with --fail-on-unknown when a name "
        "in code is no flag's.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="directories to scan")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--db", metavar="PATH|URL", help="SQLite file or postgresql:// URL, as serve takes"
    )
    source.add_argument(
        "--url", metavar="URL", help="a running server (with --token), as http://host:4242"
    )
    parser.add_argument("--token", metavar="TOKEN", help="client or admin token for --url")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for CI)")
    parser.add_argument(
        "--fail-on-unknown",
        action="store_true",
        help="exit 3 when code names a flag the server does not have",
    )
    parser.add_argument(
        "--upload",
        metavar="SOURCE",
        help="send the references to the server (--url, admin token) under this name, "
        "e.g. the repository's; the flag pages list them",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="processes reading files (default: one per CPU)",
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``flagcore scan``; the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        _check(args)
        server = _server_flags(args)
        report = scan(args.paths, server, jobs=args.jobs)
        if args.upload is not None:
            _upload(args.url, args.token, args.upload, report)
    except BadInput as problem:
        print(f"flagcore scan: {problem}", file=err)
        return 2
    except Unavailable as problem:
        print(f"flagcore scan: {problem}", file=err)
        return 1
    if args.json:
        out.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(render(report))
    out.flush()
    return UNKNOWN_EXIT if args.fail_on_unknown and report.unknown() else 0


def _check(args: argparse.Namespace) -> None:
    if not args.paths:
        raise BadInput("name the directories to scan: flagcore scan PATH ...")
    for path in args.paths:
        if not Path(path).is_dir():
            raise BadInput(f"{path!r} is not a directory")
    if args.jobs < 1:
        raise BadInput("--jobs must be at least 1")
    if args.token is not None and args.url is None:
        raise BadInput("--token goes with --url")
    if args.url is not None and not args.token:
        raise BadInput("--url needs --token (a client or admin token)")
    if args.fail_on_unknown and args.db is None and args.url is None:
        raise BadInput("--fail-on-unknown needs the server's flags: --db, or --url and --token")
    if args.upload is not None:
        if args.url is None:
            raise BadInput("--upload needs --url and an admin --token")
        if not args.upload.strip() or len(args.upload) > 255:
            raise BadInput("--upload needs a name of 1 to 255 characters")


def scan(paths: Sequence[str], server: ServerFlags | None, *, jobs: int = 1) -> ScanReport:
    """Every reference under ``paths``; with the server's names, literals equal to one."""
    known = server.active | server.archived if server is not None else frozenset()
    files = 0
    references: list[Reference] = []
    for path in paths:
        root = os.path.normpath(path)
        count, found = scan_files(root, source_files(root), known, jobs=jobs)
        files += count
        prefix = "" if len(paths) == 1 else root.rstrip("/") + "/"
        references += [attrs.evolve(r, file=prefix + r.file) for r in found] if prefix else found
    return ScanReport(tuple(paths), files, tuple(references), server)


def render(report: ScanReport) -> str:
    """The report for a person: each flag with its places, then what does not match."""
    flags = report.by_flag()
    places = sum(len(references) for references in flags.values())
    lines = [f"{len(flags)} flag names in {places} places ({report.files} files scanned)"]
    for name, references in flags.items():
        status = report.status(name)
        note = "" if status in (None, "active") else f" ({status})"
        lines.append(f"{name}{note}: {len(references)}")
        for reference in references:
            call = f"  {reference.call}" if reference.call else ""
            lines.append(f"  {reference.file}:{reference.line}{call}")
    if report.server is not None:
        unknown = report.unknown()
        lines.append(f"names in code that no flag has: {len(unknown)}")
        lines += [f"  {name}" for name in unknown]
        unreferenced = report.unreferenced()
        lines.append(f"flags no code references: {len(unreferenced)}")
        lines += [f"  {name}" for name in unreferenced]
    return "\n".join(lines) + "\n"


def _server_flags(args: argparse.Namespace) -> ServerFlags | None:
    if args.db is not None:
        return _from_store(args.db)
    if args.url is not None:
        return _from_server(args.url, args.token)
    return None


def _from_store(db: str) -> ServerFlags:
    if not is_postgres(db) and not Path(db).is_file():
        raise BadInput(f"there is no SQLite database at {db[:200]!r}")
    try:
        store = open_store(ServerConfig(db=db))
    except Exception as problem:
        raise Unavailable(f"cannot open {db[:200]!r}: {problem}") from None
    try:
        service = Service(store)
        active = frozenset(flag.name for flag in service.flags.list_flags())
        archived = frozenset(flag.flag.name for flag in service.archive.list_archived_flags())
    except FlagcoreError as problem:
        raise Unavailable(problem.message) from None
    finally:
        store.close()
    return ServerFlags(active, archived)


def _from_server(url: str, token: str) -> ServerFlags:
    """The names through the admin API (an admin token: archived ones too), or through
    the client API (a client token: every flag is in each environment's payload)."""
    root = _root(url)
    projects = _get(root + "/api/admin/projects", token, wrong_kind=403)
    if projects is None:
        client = _get(root + "/api/client/features", token)
        return ServerFlags(_names(client, "features"), frozenset())
    active: set[str] = set()
    for project in _listed(projects, "projects"):
        quoted = urllib.parse.quote(str(project.get("id")), safe="")
        active |= _names(_get(f"{root}/api/admin/projects/{quoted}/features", token), "features")
    archived = _names(_get(root + "/api/admin/archive/features", token), "features")
    return ServerFlags(frozenset(active), archived)


def _root(url: str) -> str:
    try:
        return server_root(url)
    except Exception as problem:  # explain's BadInput: the same words
        raise BadInput(str(problem)) from None


def _listed(answer: Any, key: str) -> list[dict[str, Any]]:
    items = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise Unavailable(f"the server's answer has no {key} list")
    return items


def _names(answer: Any, key: str) -> frozenset[str]:
    names = [item.get("name") for item in _listed(answer, key)]
    return frozenset(name for name in names if isinstance(name, str))


def _get(url: str, token: str, *, wrong_kind: int = 0) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    return _send(request, token, wrong_kind=wrong_kind)


def _send(request: urllib.request.Request, token: str, *, wrong_kind: int = 0) -> Any:
    """The JSON answer; None when the server refuses the token as the wrong kind."""
    request.add_header("Authorization", token)
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:
            body: bytes = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as refused:
        if refused.code == wrong_kind:
            return None
        raise _refusal(refused) from None
    except (urllib.error.URLError, OSError) as problem:
        raise Unavailable(f"cannot reach the server: {problem}") from None
    if len(body) > MAX_ANSWER_BYTES:
        raise Unavailable(f"the server's answer is larger than {MAX_ANSWER_BYTES // 2**20} MiB")
    try:
        return json.loads(body) if body else None
    except ValueError:
        raise Unavailable("the server's answer is not JSON") from None


def _refusal(refused: urllib.error.HTTPError) -> Exception:
    try:
        message = json.loads(refused.read(64 * 1024))["message"]
    except (ValueError, KeyError, TypeError, OSError):
        message = refused.reason
    text = f"the server answered {refused.code}: {str(message)[:300]}"
    return BadInput(text) if 400 <= refused.code < 500 else Unavailable(text)


def _upload(url: str, token: str, source: str, report: ScanReport) -> None:
    body = {
        "source": source,
        "references": [
            {"flag": r.name, "file": r.file, "line": r.line, "call": r.call}
            for r in report.references
        ],
    }
    request = urllib.request.Request(
        _root(url) + "/api/admin/code-references",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    _send(request, token)
