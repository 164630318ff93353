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

__all__ = ["BadInput", "TreeNode", "add_parser", "decision_tree", "run", "server_root"]

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
    it (`flagcore.service.playground.check_context`)."""
    if len(arguments) > MAX_CONTEXT_ARGUMENTS:
        raise BadInput(f"at most {MAX_CONTEXT_ARGUMENTS} --context arguments")
    data: dict[str, Any] = {}
    properties: dict[str, str] = {}
    for argument in arguments:
        field, equals, value = argument.partition("=")
        if not equals or not field:
            raise BadInput(f"--context {_quoted(argument[:100])} is not FIELD=VALUE")
        if field.startswith("properties."):
            properties[field.removeprefix("properties.")] = value
        elif field in CONTEXT_FIELDS:
            data[field] = value
        else:
            raise BadInput(
                f"--context {_quoted(field[:100])} is not a context field "
                f"({', '.join(CONTEXT_FIELDS)}); write properties.{field[:100]} for a custom one"
            )
    if properties:
        data["properties"] = properties
    try:
        return check_context(data, "--context")
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
        raise BadInput(f"there is no flag {_quoted(args.flag)} in {_quoted(environment)}")
    return {"environment": environment, **explanation.to_json()}


def _from_store(db: str, environment: str) -> Engine:
    from flagcore_http.cli import is_postgres, open_store  # the cli imports this module
    from flagcore_http.config import ServerConfig

    if not is_postgres(db) and not Path(db).is_file():
        raise BadInput(f"there is no SQLite database at {_quoted(db[:200])}")
    try:
        store = open_store(ServerConfig(db=db))
    except Exception as problem:
        raise Unavailable(f"cannot open {_quoted(db[:200])}: {problem}") from None
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
        raise BadInput(f"--url {_quoted(url[:200])} is not an http(s) URL")
    if parts.query or parts.fragment:
        raise BadInput(f"--url {_quoted(url[:200])}: give the server's URL without ? or #")
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
        raise BadInput(f"cannot read {_quoted(path[:200])}: {problem.strerror}") from None
    return _parse(body, _quoted(path[:200]))


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
        raise BadInput(f"there is no environment {_quoted(asked)} the token can read")
    if asked is not None and isinstance(served, str) and served != asked:
        raise BadInput(
            f"the flags are those of environment {_quoted(served)}, not {_quoted(asked)}"
        )
    environment = served if isinstance(served, str) else asked or DEFAULT_ENVIRONMENT
    try:
        engine = Engine.from_client_features(payload, explainable=True)
    except InvalidInput as problem:
        raise BadInput(f"the payload cannot be read: {problem.message}") from None
    return engine, environment


# --- the tree -----------------------------------------------------------------------------


def _quoted(text: str) -> str:
    """User text, quoted with every control character escaped: nothing typed into a flag
    or a context can move the cursor or colour the terminal."""
    return json.dumps(text, ensure_ascii=False)


class _Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def yes(self, text: str) -> str:
        return self._wrap("32", text)

    def no(self, text: str) -> str:
        return self._wrap("31", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def verdict(self, on: bool | None, yes: str = "yes", no: str = "no") -> str:
        if on is None:
            return self.dim("unknown")
        return self.yes(yes) if on else self.no(no)


TreeNode = tuple[str, list["TreeNode"]]
_Node = TreeNode
JSON = dict[str, Any]


def render_tree(explanation: JSON, context: JSON, *, colour: bool) -> str:
    """An explanation (`FlagExplanation.to_json`, with its ``environment``) as an
    indented tree, one decision per line."""
    style = _Style(colour)
    verdict = style.verdict(explanation["enabled"], "ON", "OFF")
    head = f"{style.bold(_quoted(explanation['name']))} is {verdict}"
    head += f" in {_quoted(explanation['environment'])}"
    lines = [head, f"context {json.dumps(context, ensure_ascii=False, sort_keys=True)}"]
    lines.extend(_draw(decision_tree(explanation, colour=colour), ""))
    return "\n".join(lines) + "\n"


def decision_tree(explanation: JSON, *, colour: bool = False) -> list[TreeNode]:
    """The tree's branches, each ``(text, branches below)``: the CLI draws them with
    box characters, the admin UI's playground page as nested lists (one wording)."""
    style = _Style(colour)
    switch = style.verdict(explanation["enabledInEnvironment"], "on", "off")
    children: list[_Node] = [(f"environment switch: {switch}", [])]
    if explanation["problem"] is not None:
        children.append((style.no(f"cannot be evaluated: {explanation['problem']}"), []))
    if explanation["dependencies"]:
        satisfied = style.verdict(
            explanation["dependenciesSatisfied"], "satisfied", "not satisfied"
        )
        children.append(
            (
                f"dependencies: {satisfied}",
                [_dependency(d, style) for d in explanation["dependencies"]],
            )
        )
    children.append(_strategies(explanation, style))
    children.append(_variant(explanation, style))
    return children


def _draw(nodes: list[_Node], prefix: str) -> list[str]:
    out = []
    for index, (text, below) in enumerate(nodes):
        last = index == len(nodes) - 1
        out.append(prefix + ("└─ " if last else "├─ ") + text)
        out.extend(_draw(below, prefix + ("   " if last else "│  ")))
    return out


def _dependency(dependency: JSON, style: _Style) -> _Node:
    wanted = "enabled" if dependency["requiredEnabled"] else "disabled"
    if dependency["requiredVariants"]:
        wanted += " with variant "
        wanted += " or ".join(_quoted(v) for v in dependency["requiredVariants"])
    if not dependency["found"]:
        seen = "missing"
    else:
        seen = "enabled" if dependency["parentEnabled"] else "disabled"
        if dependency["parentVariant"] is not None:
            seen += f", variant {_quoted(dependency['parentVariant'])}"
    text = f"{_quoted(dependency['feature'])} must be {wanted}: it is {seen}"
    return (f"{text} → {style.verdict(dependency['satisfied'])}", [])


def _strategies(explanation: JSON, style: _Style) -> _Node:
    strategies = explanation["strategies"]
    if not strategies:
        return ("no strategies: on for everyone when the flag is on", [])
    verdict = style.verdict(explanation["strategiesResult"], "one matches", "none matches")
    matched = explanation["matchedStrategy"]
    return (f"strategies: {verdict}", [_strategy(s, matched, style) for s in strategies])


def _strategy(strategy: JSON, matched: int | None, style: _Style) -> _Node:
    name = _quoted(strategy["name"])
    if strategy["title"]:
        name += f" ({_quoted(strategy['title'])})"
    label = f"{strategy['index'] + 1}. {name}"
    if strategy["disabled"]:
        label += style.dim(" [disabled]")
    verdict = style.verdict(strategy["result"], "matches", "does not match")
    if strategy["index"] == matched:
        verdict += style.bold(" ← decides")
    below: list[_Node] = []
    parameters = strategy["parameters"]
    if parameters:
        shown = ", ".join(f"{k}={_quoted(v)}" for k, v in sorted(parameters.items()))
        below.append((style.dim(f"parameters: {shown}"), []))
    below.extend(_constraint(c, style) for c in strategy["constraints"])
    below.extend(_segment(s, style) for s in strategy["segments"])
    if not strategy["known"]:
        below.append((style.no("no implementation of this strategy: off"), []))
    elif strategy["rollout"] is not None:
        below.append(_rollout(strategy, style))
    elif strategy["strategyResult"] is not None:
        below.append((f"{name} rule → {style.verdict(strategy['strategyResult'])}", []))
    if "problem" in strategy:
        below.append((style.no(f"problem: {strategy['problem']}"), []))
    if strategy["variant"] is not None:
        where = "its variants give" if strategy["result"] else "its variants would give"
        below.append(_choice(where, strategy["variant"], style))
    return (f"{label} → {verdict}", below)


def _constraint(constraint: JSON, style: _Style) -> _Node:
    values = constraint["values"] if "value" not in constraint else [constraint["value"]]
    shown = ", ".join(_quoted(v) for v in values[:10])
    if len(values) > 10:
        shown += f", … ({len(values)} values)"
    operator = ("NOT " if constraint["inverted"] else "") + constraint["operator"]
    if constraint["caseInsensitive"]:
        operator += " (case-insensitive)"
    value = constraint["contextValue"]
    seen = "no value" if value is None else _quoted(value)
    text = f"{_quoted(constraint['contextName'])} {operator} [{shown}]: the context has {seen}"
    below: list[_Node] = []
    if "problem" in constraint:
        below.append((style.no(constraint["problem"]), []))
    return (f"{text} → {style.verdict(constraint['result'])}", below)


def _segment(segment: JSON, style: _Style) -> _Node:
    name = "missing" if segment["name"] is None else _quoted(segment["name"])
    below = [_constraint(c, style) for c in segment["constraints"]]
    if "problem" in segment:
        below.append((style.no(segment["problem"]), []))
    return (f"segment {segment['id']} {name} → {style.verdict(segment['result'])}", below)


def _rollout(strategy: JSON, style: _Style) -> _Node:
    rollout = strategy["rollout"]
    percentage = "?" if rollout["percentage"] is None else f"{rollout['percentage']}%"
    group = "none (off)" if rollout["groupId"] is None else _quoted(rollout["groupId"])
    text = f"rollout {percentage} by {_quoted(rollout['stickiness'])}, group {group}: "
    if rollout["random"]:
        text += "no sticky value, a random bucket"
    elif rollout["stickinessValue"] is None:
        text += "the context has no value to hash"
    else:
        text += f"{_quoted(rollout['stickinessValue'])} hashes to bucket {rollout['bucket']}"
    return (f"{text} → {style.verdict(strategy['strategyResult'])}", [])


def _variant(explanation: JSON, style: _Style) -> _Node:
    choice = explanation["variantChoice"]
    if choice is None:
        return (f"variant: {_quoted(explanation['variant']['name'])} (the flag is off)", [])
    where = "flag variants"
    if choice["origin"] == "strategy":
        where = f"variants of strategy {choice.get('strategyIndex', 0) + 1}"
    return _choice(where, choice, style)


def _choice(where: str, choice: JSON, style: _Style) -> _Node:
    variant = choice["variant"]
    name = style.bold(_quoted(variant["name"]))
    if choice["origin"] == "none" or "how" not in choice:
        return (f"variant: {name} (no variants)", [])
    how = choice["how"]
    stickiness = _quoted(choice["stickiness"])
    if how == "override":
        override = choice["override"]
        reason = f"override: {_quoted(override['contextName'])} is {_quoted(override['value'])}"
    elif how == "hash":
        bucket = f"bucket {choice['bucket']} of {choice['totalWeight']}"
        reason = f"{stickiness} {_quoted(choice['stickinessValue'])} → {bucket}"
    elif how == "random":
        reason = f"no {stickiness} value: a random bucket"
    else:
        reason = "no weights"
    payload = ""
    if "payload" in variant:
        payload = f", payload {json.dumps(variant['payload'], ensure_ascii=False)}"
    return (f"{where}: {name}{payload} ({reason})", [])
