"""``flagcore explain FLAG --context userId=42``: why a flag is on or off, as a tree.

The flags come from a local store (``--db``, as ``flagcore serve`` takes it), a running
server (``--url`` and ``--token``: its ``/api/client/features``) or a client-features
JSON file (``--file``). The decision is `Engine.explain`'s (docs/explain.md), printed as
a tree: in colour on a terminal (unless ``NO_COLOR`` is set), plain when piped, or as
JSON with ``--json``. Bad input (an unknown flag or environment, a malformed context) is
one line on stderr and exit status 2; a source that cannot be read is exit status 1.
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

from flagcore import Engine
from flagcore.errors import FlagcoreError, InvalidInput, NotFound
from flagcore.service import Service
from flagcore.service.playground import CONTEXT_FIELDS, check_context
from flagcore.wire import PlaygroundContext
from flagcore_cli.stores import is_postgres, open_store
from flagcore_http.config import ServerConfig
from flagcore_http.decision_tree import JSON, quoted, render_tree
from flagcore_http.wire import structure

__all__ = ["BadInput", "add_parser", "parse_context", "run", "server_root"]

DEFAULT_ENVIRONMENT = "development"
MAX_PAYLOAD_BYTES = 256 * 1024 * 1024  # a client-features payload of ~200,000 flags
FETCH_TIMEOUT = 30.0  # seconds, for --url
MAX_CONTEXT_ARGUMENTS = 200


class BadInput(Exception):
    """What the user typed cannot be used: exit status 2."""


class Unavailable(Exception):
    """The source cannot be read: exit status 1."""


def add_parser(commands: Any) -> None:
    """The ``explain`` subcommand, on ``flagcore``'s subparsers."""
    parser = commands.add_parser(
        "explain",
        help="show why a flag is on or off for a context",
        description="Show why FLAG is on or off for a context: its environment switch, "
        "dependencies, each strategy with its constraints, segments and rollout bucket, "
        "and how the variant was chosen.",
    )
    # Optional here so that a missing one is run's one-line error, not argparse's usage.
    parser.add_argument("flag", metavar="FLAG", nargs="?")
    parser.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a context field (userId=42) or property (properties.plan=pro); repeatable",
    )
    parser.add_argument(
        "--env", metavar="NAME", help=f"environment (default {DEFAULT_ENVIRONMENT})"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--db", metavar="PATH|URL", help="SQLite file or postgresql:// URL, as serve takes"
    )
    source.add_argument(
        "--url",
        metavar="URL",
        help="a running server (with --token), as http://host:4242 or the URL SDKs are "
        "given, http://host:4242/api",
    )
    source.add_argument("--file", metavar="PATH", help="a client-features JSON file")
    parser.add_argument("--token", metavar="TOKEN", help="client or admin token for --url")
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``flagcore explain``; the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        context = parse_context(args.context)
        explanation = _explanation(args, context)
    except BadInput as problem:
        print(f"flagcore explain: {problem}", file=err)
        return 2
    except Unavailable as problem:
        print(f"flagcore explain: {problem}", file=err)
        return 1
    if args.json:
        text = json.dumps(explanation, indent=2, ensure_ascii=False) + "\n"
    else:
        colour = out.isatty() and not os.environ.get("NO_COLOR")
        text = render_tree(explanation, context, colour=colour)
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # The reader stopped early (``| head``): nothing more to say, and no traceback
        # when Python flushes stdout at exit.
        if out is sys.stdout:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def parse_context(arguments: Sequence[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` arguments as an Unleash context, checked as the playground checks
    it (read as `flagcore.wire.PlaygroundContext`, then
    `flagcore.service.playground.check_context`)."""
    if len(arguments) > MAX_CONTEXT_ARGUMENTS:
        raise BadInput(f"at most {MAX_CONTEXT_ARGUMENTS} --context arguments")
    data: dict[str, Any] = {}
    properties: dict[str, str] = {}
    for argument in arguments:
        field, equals, value = argument.partition("=")
        if not equals or not field:
            raise BadInput(f"--context {quoted(argument[:100])} is not FIELD=VALUE")
        if field.startswith("properties."):
            properties[field.removeprefix("properties.")] = value
        elif field in CONTEXT_FIELDS:
            data[field] = value
        else:
            raise BadInput(
                f"--context {quoted(field[:100])} is not a context field "
                f"({', '.join(CONTEXT_FIELDS)}); write properties.{field[:100]} for a custom one"
            )
    if properties:
        data["properties"] = properties
    try:
        return check_context(structure(data, PlaygroundContext, "--context"), "--context")
    except InvalidInput as problem:
        detail = problem.details[0] if problem.details else None
        where = detail.path if detail is not None and detail.path else "--context"
        message = detail.message if detail is not None else problem.message
        raise BadInput(f"{where.replace('--context.', '--context ')}: {message}") from None


def _explanation(args: argparse.Namespace, context: JSON) -> JSON:
    """The explanation as JSON (`FlagExplanation.to_json`), with its ``environment``."""
    if not args.flag:
        raise BadInput("name the flag to explain: flagcore explain FLAG ...")
    if args.db is None and args.url is None and args.file is None:
        raise BadInput(
            "say where the flags are: --db PATH|URL, --url URL --token TOKEN, or --file PATH"
        )
    if args.token is not None and args.url is None:
        raise BadInput("--token goes with --url")
    if args.db is not None:
        environment = args.env or DEFAULT_ENVIRONMENT
        engine = _from_store(args.db, environment)
    elif args.url is not None:
        if not args.token:
            raise BadInput("--url needs --token (a client or admin token)")
        payload = _fetch(args.url, args.token, args.env)
        if payload is None:  # an admin token: the server explains
            return _explained_by_server(args.url, args.token, args.flag, args.env, context)
        engine, environment = _from_payload(payload, args.env)
    else:
        engine, environment = _from_payload(_read_file(args.file), args.env)
    explanation = engine.explain(args.flag, context)
    if not explanation.exists:
        raise BadInput(f"there is no flag {quoted(args.flag)} in {quoted(environment)}")
    return {"environment": environment, **explanation.to_json()}


def _from_store(db: str, environment: str) -> Engine:
    if not is_postgres(db) and not Path(db).is_file():
        raise BadInput(f"there is no SQLite database at {quoted(db[:200])}")
    try:
        store = open_store(ServerConfig(db=db))
    except Exception as problem:
        raise Unavailable(f"cannot open {quoted(db[:200])}: {problem}") from None
    try:
        snapshot = Service(store).client.client_features(environment)
    except NotFound as missing:
        raise BadInput(missing.message) from None
    except FlagcoreError as problem:
        raise Unavailable(problem.message) from None
    finally:
        store.close()
    return Engine(snapshot, explainable=True)


def server_root(url: str) -> str:
    """The server's root from ``--url``: ``http://host:4242`` and ``http://host:4242/api``
    (the URL Unleash SDKs are given) name the same server; `BadInput` unless http(s)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(f"--url {quoted(url[:200])} is not an http(s) URL")
    if parts.query or parts.fragment:
        raise BadInput(f"--url {quoted(url[:200])}: give the server's URL without ? or #")
    path = parts.path.rstrip("/")
    path = path.removesuffix("/api")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _fetch(url: str, token: str, environment: str | None) -> Any:
    """The server's client features for ``token``; None when the client API refuses the
    token as the wrong kind (403: an admin token, which the playground takes)."""
    query = (
        "" if environment is None else "?" + urllib.parse.urlencode({"environment": environment})
    )
    body = _send(urllib.request.Request(server_root(url) + "/api/client/features" + query), token)
    return None if body is None else _parse(body, "the server's answer")


def _send(request: urllib.request.Request, token: str, *, wrong_kind: int = 403) -> bytes | None:
    request.add_header("Authorization", token)
    request.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:
            body: bytes = response.read(MAX_PAYLOAD_BYTES + 1)
            return body
    except urllib.error.HTTPError as refused:
        if refused.code == wrong_kind:
            return None
        raise _refusal(refused) from None
    except (urllib.error.URLError, OSError) as problem:
        raise Unavailable(f"cannot reach the server: {problem}") from None


def _refusal(refused: urllib.error.HTTPError) -> Exception:
    try:
        message = json.loads(refused.read(64 * 1024))["message"]
    except (ValueError, KeyError, TypeError, OSError):
        message = refused.reason
    text = f"the server answered {refused.code}: {str(message)[:300]}"
    return BadInput(text) if 400 <= refused.code < 500 else Unavailable(text)


def _explained_by_server(
    url: str, token: str, flag: str, environment: str | None, context: JSON
) -> JSON:
    body = {"flag": flag, "environment": environment or DEFAULT_ENVIRONMENT, "context": context}
    request = urllib.request.Request(
        server_root(url) + "/api/admin/playground/explain",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    answer = _send(request, token, wrong_kind=0)
    assert answer is not None
    try:
        explanation = json.loads(answer)
    except ValueError:
        explanation = None
    if not isinstance(explanation, dict) or not isinstance(explanation.get("strategies"), list):
        raise Unavailable("the server's answer is not an explanation")
    return explanation


def _read_file(path: str) -> Any:
    try:
        with open(path, "rb") as file:
            body = file.read(MAX_PAYLOAD_BYTES + 1)
    except OSError as problem:
        raise BadInput(f"cannot read {quoted(path[:200])}: {problem.strerror}") from None
    return _parse(body, quoted(path[:200]))


def _parse(body: bytes, what: str) -> Any:
    if len(body) > MAX_PAYLOAD_BYTES:
        raise BadInput(f"{what} is larger than {MAX_PAYLOAD_BYTES // 2**20} MiB")
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        raise BadInput(f"{what} is not JSON") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("features"), list):
        raise BadInput(f"{what} is not a client-features payload (no features list)")
    return payload


def _from_payload(payload: dict[str, Any], asked: str | None) -> tuple[Engine, str]:
    query = payload.get("query")
    served = query.get("environment") if isinstance(query, dict) else None
    if isinstance(query, dict) and query.get("matchesNothing") and asked is not None:
        raise BadInput(f"there is no environment {quoted(asked)} the token can read")
    if asked is not None and isinstance(served, str) and served != asked:
        raise BadInput(f"the flags are those of environment {quoted(served)}, not {quoted(asked)}")
    environment = served if isinstance(served, str) else asked or DEFAULT_ENVIRONMENT
    try:
        engine = Engine.from_client_features(payload, explainable=True)
    except InvalidInput as problem:
        raise BadInput(f"the payload cannot be read: {problem.message}") from None
    return engine, environment
