"""Every admin API operation has a UI path a Chromium journey exercises, or is in
docs/ui.md's API-only list with its reason (issue 29).

The operations come from the app's router, not from a hand list; the tables are read from
docs/ui.md, "Every admin API operation in the UI". A new admin route without a row fails
here, and so does a row whose operation, UI route or journey is gone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from flagcore.memory import MemoryStore
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ui.md"
UI_TESTS = ROOT / "tests" / "ui"
SECTION = "## Every admin API operation in the UI"
UI_TABLE = "### UI paths of the admin API"
PENDING_TABLE = "### Coming with the environments and flag-editing pages"
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


def _journeys() -> dict[str, tuple[set[str], str]]:
    """Each file of tests/ui: its test functions, and its source."""
    found = {}
    for path in UI_TESTS.glob("test_*.py"):
        source = path.read_text()
        names = {
            node.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")
        }
        found[path.name] = (names, source)
    return found


def _links() -> dict[str, str]:
    """The names of the links to each page in the UI's header (its navigation and the
    header's own links), read from base.html."""
    base = (ROOT / "src" / "flagcore_http" / "ui" / "templates" / "base.html").read_text()
    links = dict(re.findall(r'\("(/ui/[^"]+)", "([^"]+)"\)', base))
    links.update(re.findall(r'<a href="(/ui/[^"]+)"[^>]*>([^<]+)</a>', base))
    return links


def _opens(source: str, page: str) -> bool:
    """Whether a journey reaches ``page``: by its address, or by its header link."""
    name = _links().get(page)
    return page in source or (name is not None and f'name="{name}"' in source)


def _ui_rows(heading: str) -> Iterator[tuple[Operation, Operation, str]]:
    for cells in _table(heading):
        assert len(cells) == 3, f"{cells}: want operation, UI route, journey"
        yield _operation(cells[0]), _operation(cells[1]), cells[2]


def _listed() -> list[Operation]:
    rows = [*_ui_rows(UI_TABLE), *_ui_rows(PENDING_TABLE)]
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
    pending = {op for op, _ui, _j in _ui_rows(PENDING_TABLE)}
    gone = sorted(set(listed) - operations - pending)
    assert gone == [], f"docs/ui.md lists operations the API does not have: {gone}"


def test_each_ui_path_is_a_route_of_the_app_exercised_by_a_chromium_journey(
    app: web.Application,
) -> None:
    ui_routes = _operations(app, "/ui")
    operations = _operations(app, "/api/admin")
    journeys = _journeys()
    wrong = []
    rows = [(row, False) for row in _ui_rows(UI_TABLE)]
    rows += [(row, True) for row in _ui_rows(PENDING_TABLE)]
    for (operation, ui_route, journey), pending in rows:
        if pending and (operation not in operations or ui_route not in ui_routes):
            continue  # another branch brings it; checked in full once both exist
        if ui_route not in ui_routes:
            wrong.append(f"{operation}: the app has no UI route {ui_route}")
            continue
        file, _, function = journey.partition("::")
        if file not in journeys or function not in journeys[file][0]:
            wrong.append(f"{operation}: no journey {journey} in tests/ui")
            continue
        source = journeys[file][1]
        if "from playwright" not in source:
            wrong.append(f"{operation}: {file} does not drive Chromium")
        page = "/" + "/".join(ui_route[1].split("/")[1:3])  # /ui/<page>
        if not _opens(source, page):
            wrong.append(f"{operation}: {file} never opens {page}")
    assert wrong == [], "\n".join(wrong)


def test_each_api_only_operation_says_why() -> None:
    for cells in _table(API_ONLY_TABLE):
        assert len(cells) == 2, cells
        assert len(cells[1]) > 10, f"{cells[0]}: say why it is API-only"
