"""Every admin API operation has a UI path a Chromium journey exercises, or is in
docs/ui.md's API-only list with its reason (issue 29).

The operations come from the app's router, not from a hand list; the tables are read from
docs/ui.md, "Every admin API operation in the UI". A new admin route without a row fails
here, and so does a row whose operation, UI route or journey is gone.

A row's journey is checked as a test function, not as a file: the function (with the
helpers of tests/ui it calls) must open the route's page and, for a form's route (a
POST), name the form: a button (its text or ``aria-label``) of a form in the templates
whose ``action`` posts to the route, or the route's own address when no page is there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import attrs
import pytest
from aiohttp import web

from flagcore.memory import MemoryStore
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ui.md"
UI_TESTS = ROOT / "tests" / "ui"
TEMPLATES = ROOT / "src" / "flagcore_http" / "ui" / "templates"
SECTION = "## Every admin API operation in the UI"
UI_TABLE = "### UI paths of the admin API"
API_ONLY_TABLE = "### API-only operations"
_ROW = re.compile(r"^\|(.+)\|\s*$")
_OPERATION = re.compile(r"^(GET|POST|PUT|PATCH|DELETE) (/\S+)$")

Operation = tuple[str, str]  # method, the router's path pattern


def _operations(app: web.Application, prefix: str) -> set[Operation]:
    found = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = str(info.get("formatter") or info.get("path") or "")
        if path.startswith(prefix) and route.method not in ("HEAD", "OPTIONS", "*"):
            found.add((route.method, path))
    return found


@pytest.fixture(scope="module")
def app() -> web.Application:
    return create_app(Service(MemoryStore()), ServerConfig())


def _table(heading: str) -> list[list[str]]:
    """The rows of the table under ``heading`` in docs/ui.md's coverage section, each a
    list of its cells without their backquotes."""
    text = DOC.read_text()
    assert SECTION in text, f"docs/ui.md has no section {SECTION!r}"
    after = text.split(SECTION, 1)[1]
    assert heading in after, f"docs/ui.md's coverage section has no {heading!r}"
    block = after.split(heading, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in block.splitlines():
        match = _ROW.match(line.strip())
        if match is None:
            continue
        cells = [cell.strip().strip("`") for cell in match.group(1).split("|")]
        if cells[0] in ("API operation", "---"):
            continue
        rows.append(cells)
    assert rows, f"the table under {heading!r} is empty"
    return rows


def _operation(cell: str) -> Operation:
    match = _OPERATION.match(cell)
    assert match, f"{cell!r} is not 'METHOD /path'"
    return match.group(1), match.group(2)


# --- what a journey says: its function and the helpers of tests/ui it calls -------------


@attrs.frozen
class Journey:
    source: str  # the function's text and its helpers'
    strings: tuple[str, ...]  # every string they hold; an f-string's fields as "\x00"


@cache
def _source(path: Path) -> str:
    return path.read_text()


@cache
def _module(path: Path) -> ast.Module:
    return ast.parse(_source(path))


@cache
def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {
        node.name: node
        for node in _module(path).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _imported_helpers(path: Path) -> dict[str, Path]:
    """Names the module imports from other modules of tests/ui, with their file."""
    found = {}
    for node in _module(path).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.ui."):
            source = UI_TESTS / f"{node.module.rsplit('.', 1)[1]}.py"  # type: ignore[union-attr]
            for alias in node.names:
                found[alias.asname or alias.name] = source
    return found


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else "\x00" for part in node.values
        )
    return None


@cache
def _journey(path: Path, function: str) -> Journey | None:
    """The test function ``function`` of ``path`` with every helper it calls (functions of
    its file, and those it imports from other files of tests/ui), read transitively."""
    if function not in _functions(path):
        return None
    sources: list[str] = []
    strings: list[str] = []
    todo, seen = [(path, function)], set()
    while todo:
        file, name = todo.pop()
        node = _functions(file).get(name)
        if node is None or (file, name) in seen:
            continue
        seen.add((file, name))
        lines = _source(file).splitlines()[node.lineno - 1 : node.end_lineno]
        sources.append("\n".join(lines))
        helpers = _imported_helpers(file)
        for inner in ast.walk(node):
            if isinstance(inner, ast.JoinedStr):
                strings.append(_text(inner) or "")
            elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                strings.append(inner.value)
            elif isinstance(inner, ast.Name):
                if inner.id in _functions(file):
                    todo.append((file, inner.id))
                elif inner.id in helpers:
                    todo.append((helpers[inner.id], inner.id))
    return Journey("\n".join(sources), tuple(strings))


def _links() -> dict[str, str]:
    """The names of the links to each page in the UI's header (its navigation and the
    header's own links), read from base.html."""
    base = (TEMPLATES / "base.html").read_text()
    links = dict(re.findall(r'\("(/ui/[^"]+)", "([^"]+)"\)', base))
    links.update(re.findall(r'<a href="(/ui/[^"]+)"[^>]*>([^<]+)</a>', base))
    return links


_SIGNS_IN = re.compile(r"\bsigned_in\b|\b_?(password_)?sign_in\(")
"""Signing in (the ``signed_in`` fixture, `sign_in`, a password sign-in) lands on the
Flags page."""


def _opens(journey: Journey, page: str) -> bool:
    """Whether a journey reaches ``page``: by its address, or by its header link."""
    if page == "/ui/flags" and _SIGNS_IN.search(journey.source):
        return True
    name = _links().get(page)
    return page in journey.source or (name is not None and name in journey.strings)


# --- the forms of the templates: where each posts, and the buttons that send it --------

_WILD = "\x00"  # one value the template fills in
_SET = re.compile(r"{%-?\s*set\s+(\w+)\s*=\s*(.+?)\s*-?%}")
_EXPRESSION = re.compile(r"{{-?\s*(.+?)\s*-?}}")
_STATEMENT = re.compile(r"{%.*?%}", re.S)
_FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S)
_BUTTON = re.compile(r"<button\b([^>]*)>(.*?)</button>", re.S)
_MACRO = re.compile(r"{%-?\s*macro\s+(\w+)\(.*?%}(.*?){%-?\s*endmacro", re.S)
# A macro of a page's own, with its parameters: its forms are read once per call, each
# parameter standing for the expression the call passes.
_LOCAL_MACRO = re.compile(r"{%-?\s*macro\s+(\w+)\((.*?)\)\s*-?%}(.*?){%-?\s*endmacro", re.S)
# A page's macros from another template (``{% from "x.html" import f with context %}``),
# read as the page's own.
_FROM_IMPORT = re.compile(r'{%-?\s*from\s+"([^"]+)"\s+import\s+(.+?)\s*-?%}')
# What a name ``{% set %}`` may hold: a page's own value, or any page's (included pages).
Sets = dict[str, list[str]]


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside quotes and parentheses."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        char = text[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i = i + len(separator)
            continue
        i += 1
    return [*parts, text[start:]]


def _values(expression: str, sets: Sets, depth: int = 0) -> list[str]:
    """What a Jinja expression may print, as texts where `_WILD` stands for a value only
    known when drawn: quoted strings as they are, names ``{% set %}`` in a template
    followed, ``a if c else b`` both ways, anything else one value."""
    expression = expression.strip()
    chosen = _split_top(expression, " if ")
    if len(chosen) == 2:
        otherwise = _split_top(chosen[1], " else ")
        other = _values(otherwise[1], sets, depth) if len(otherwise) == 2 else [""]
        return _values(chosen[0], sets, depth) + other
    texts = [""]
    for piece in _split_top(expression, "~"):
        piece = piece.strip()
        name = piece.split("|", 1)[0].strip()
        if piece.startswith("(") and piece.endswith(")") and depth < 5:
            options = _values(piece[1:-1], sets, depth + 1)
        elif len(piece) >= 2 and piece[0] == piece[-1] and piece[0] in "'\"":
            options = [piece[1:-1]]
        elif name in sets and depth < 5:
            options = [text for value in sets[name] for text in _values(value, sets, depth + 1)]
        else:
            options = [_WILD]
        texts = [text + option for text in texts for option in options]
    return texts


def _filled(text: str, sets: Sets) -> list[str]:
    """A template's text with each ``{{ … }}`` replaced by what it may print."""
    texts = [""]
    at = 0
    for match in _EXPRESSION.finditer(text):
        literal = text[at : match.start()]
        texts = [t + literal + v for t in texts for v in _values(match.group(1), sets)]
        at = match.end()
    return [t + text[at:] for t in texts]


@attrs.frozen
class Button:
    """A button's accessible name, `_WILD` where Jinja fills something in."""

    name: str

    @classmethod
    def of(cls, text: str, sets: Sets) -> list[Button]:
        """The names a button may have (``{{ 'Unmark' if … else 'Mark' }}``: both)."""
        names = []
        for filled in _filled(text, sets):
            plain = _STATEMENT.sub(_WILD, re.sub(r"<[^>]+>", " ", filled))
            names.append(cls(" ".join(plain.split())))
        return names

    def called(self, text: str) -> bool:
        """Whether a journey's string names this button: the whole name (an f-string's
        fields standing for what Jinja fills in), or its first four characters or more
        as written (Playwright's ``name=`` matches a part of a name). A name Jinja
        writes whole is never matched: it says nothing of which button it is."""
        if not self.name.replace(_WILD, "").strip():
            return False
        pattern = ".+?".join(re.escape(piece) for piece in self.name.split(_WILD))
        if re.fullmatch(pattern, text.replace(_WILD, "x"), re.S):
            return True
        return _WILD not in text and len(text) >= 4 and self.name.startswith(text)


@attrs.frozen
class Form:
    template: str
    actions: tuple[str, ...]  # where it may post (`_WILD` for a value drawn in)
    buttons: tuple[Button, ...]


@cache
def _forms() -> tuple[Form, ...]:
    texts = {path.name: path.read_text() for path in TEMPLATES.glob("*.html")}
    every_set: Sets = {}
    for text in texts.values():
        for name, value in _SET.findall(text):
            every_set.setdefault(name, []).append(value)
    macros = dict(_MACRO.findall(texts["macros.html"]))
    forms = []
    for template, text in sorted(texts.items()):
        # A page's own ``{% set %}`` names win: two pages may both set ``base``.
        own: Sets = {}
        for name, value in _SET.findall(text):
            own.setdefault(name, []).append(value)
        sets = {**every_set, **own}
        forms += _forms_in(template, text, sets, macros)
        defined = _LOCAL_MACRO.findall(text) + [
            found
            for source, imported in _FROM_IMPORT.findall(text)
            for found in _LOCAL_MACRO.findall(texts[source])
            if found[0] in re.findall(r"\w+", imported.split(" with ")[0])
        ]
        for name, parameters, body in defined:
            names = [p.split("=", 1)[0].strip() for p in _split_top(parameters, ",")]
            for call in re.findall(rf"\b{name}\((.*?)\)\s*-?}}}}", text):
                given = [a.strip() for a in _split_top(call, ",")]
                bound = {**sets, **{n: [a] for n, a in zip(names, given, strict=False)}}
                forms += _forms_in(template, body, bound, macros)
    return tuple(forms)


def _forms_in(template: str, text: str, sets: Sets, macros: dict[str, str]) -> list[Form]:
    """The posting forms written in ``text`` (a page, or one call of a page's macro)."""
    forms = []
    for attributes, body in _FORM.findall(text):
        method = re.search(r'method="([^"]*)"', attributes)
        action = re.search(r'action="([^"]*)"', attributes)
        if method is None or method.group(1).lower() != "post" or action is None:
            continue
        called = re.findall(r"\bm\.(\w+)\(", body)
        body += "".join(macros.get(name, "") for name in called)
        buttons = []
        for button_attributes, label in _BUTTON.findall(body):
            aria = re.search(r'aria-label="([^"]*)"', button_attributes)
            buttons += Button.of(aria.group(1) if aria else label, sets)
        forms.append(Form(template, tuple(_filled(action.group(1), sets)), tuple(buttons)))
    return forms


def _posts_to(action: str, route: str) -> bool:
    """Whether a form's action (with `_WILD` values) is an address of ``route``."""
    wanted, given = route.split("/"), action.split("?", 1)[0].split("/")
    if len(wanted) != len(given):
        return False
    for expected, segment in zip(wanted, given, strict=True):
        if expected.startswith("{"):
            if _WILD not in segment:
                return False
        elif _WILD in segment:
            if not re.fullmatch(".+?".join(map(re.escape, segment.split(_WILD))), expected):
                return False
        elif segment != expected:
            return False
    return True


def _buttons_posting_to(route: str) -> list[Button]:
    return [
        button
        for form in _forms()
        if any(_posts_to(action, route) for action in form.actions)
        for button in form.buttons
    ]


def _names_a_button(journey: Journey, buttons: list[Button]) -> bool:
    return any(button.called(text) for text in journey.strings for button in buttons)


def _names_the_address(journey: Journey, route: str) -> bool:
    pattern = re.sub(r"\\\{[^}]*\\\}", "[^/\\\\s\"']+", re.escape(route))
    return any(re.search(pattern + r"(?![\w/-])", text) for text in journey.strings)


# --- the tests ---------------------------------------------------------------------------


def _ui_rows(heading: str) -> Iterator[tuple[Operation, Operation, str]]:
    for cells in _table(heading):
        assert len(cells) == 3, f"{cells}: want operation, UI route, journey"
        yield _operation(cells[0]), _operation(cells[1]), cells[2]


def _listed() -> list[Operation]:
    rows = list(_ui_rows(UI_TABLE))
    return [op for op, _ui, _j in rows] + [_operation(c[0]) for c in _table(API_ONLY_TABLE)]


def test_every_admin_api_operation_is_listed_once_as_a_ui_path_or_api_only(
    app: web.Application,
) -> None:
    operations = _operations(app, "/api/admin")
    listed = _listed()
    twice = sorted({op for op in listed if listed.count(op) > 1})
    assert twice == [], f"listed more than once in docs/ui.md: {twice}"
    missing = sorted(operations - set(listed))
    assert missing == [], f"admin API operations with no row in docs/ui.md: {missing}"
    gone = sorted(set(listed) - operations)
    assert gone == [], f"docs/ui.md lists operations the API does not have: {gone}"


def test_each_ui_path_is_a_route_a_chromium_journey_opens_and_sends_the_form_of(
    app: web.Application,
) -> None:
    ui_routes = _operations(app, "/ui")
    pages = {path for method, path in ui_routes if method == "GET"}
    wrong = []
    for operation, ui_route, named in _ui_rows(UI_TABLE):
        method, route = ui_route
        if ui_route not in ui_routes:
            wrong.append(f"{operation}: the app has no UI route {ui_route}")
            continue
        file, _, function = named.partition("::")
        path = UI_TESTS / file
        journey = _journey(path, function) if path.is_file() else None
        if journey is None:
            wrong.append(f"{operation}: no journey {named} in tests/ui")
            continue
        if "from playwright" not in _source(path):
            wrong.append(f"{operation}: {file} does not drive Chromium")
        page = "/" + "/".join(route.split("/")[1:3])  # /ui/<page>
        if not _opens(journey, page):
            wrong.append(f"{operation}: {named} never opens {page}")
        if method != "POST":
            continue
        buttons = _buttons_posting_to(route)
        address = route not in pages and _names_the_address(journey, route)
        if not buttons and route in pages:
            wrong.append(f"{operation}: no template has a form posting to {route}")
        elif not (_names_a_button(journey, buttons) or address):
            wrong.append(f"{operation}: {named} presses no button of the form posting to {route}")
    assert wrong == [], "\n".join(wrong)


def test_the_form_reader_finds_the_buttons_of_a_route() -> None:
    """The check above can fail: a route's buttons are found, others' are not."""
    names = [b.name for b in _buttons_posting_to("/ui/environments/{name}/toggle")]
    assert names == [f"Environment {_WILD} enabled"]
    toggle = Journey("", ("Environment qa enabled",))
    assert _names_a_button(toggle, _buttons_posting_to("/ui/environments/{name}/toggle"))
    assert not _names_a_button(toggle, _buttons_posting_to("/ui/environments/{name}/type"))
    assert not _names_a_button(Journey("", ("Save",)), _buttons_posting_to("/ui/tokens"))


def test_each_api_only_operation_says_why() -> None:
    for cells in _table(API_ONLY_TABLE):
        assert len(cells) == 2, cells
        assert len(cells[1]) > 10, f"{cells[0]}: say why it is API-only"
