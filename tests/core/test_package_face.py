"""The package face: everything public is importable from ``flagcore`` (or one of the few
public modules), documented, and the only way adapters, examples and docs reach the core."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import flagcore
import flagcore.ports
import flagcore.service

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ADAPTERS = (
    "flagcore_cli",
    "flagcore_http",
    "flagcore_store_sqlite",
    "flagcore_store_postgres",
    "flagcore_sql",
    "flagcore_client",
    "flagcore_edge",
)

# The modules adapters, examples and docs may import from (docs/architecture.md, "Public
# face"); every other module of flagcore is the implementation, reached through these.
PUBLIC_MODULES = frozenset(
    {
        "flagcore",
        "flagcore.entities",
        "flagcore.errors",
        "flagcore.model",
        "flagcore.ports",
        # The generic keyed repository: the table descriptions, and the port's named
        # methods written over it, which a store inherits (issue 27 §2).
        "flagcore.tables",
        "flagcore.repositories",
        "flagcore.service",
        "flagcore.testing",
        # The OpenFeature provider (the `openfeature` extra).
        "flagcore.openfeature",
        # Unleash's JSON: the one mapping between the model and the wire format.
        "flagcore.wire",
        # The test kit for code that uses flags, and its pytest plugin (issue 19 §4).
        "flagcore.testkit",
        "flagcore.pytest_plugin",
        # Why a flag is on or off: `Engine.explain`'s decision model (issue 19).
        "flagcore.explain",
        # Unleash's playground built from explanations (issue 19).
        "flagcore.service.playground",
        # People (issue 28): users and sessions, and the password policy and hashing.
        "flagcore.people",
        # Roles (issue 28 part 2): permission names, the operation table, roles, and the
        # principal the service is told acts (other ways in build one).
        "flagcore.permissions",
        "flagcore.principals",
        "flagcore.passwords",
        # Change requests (issue 30): their states, actions and stored values.
        "flagcore.change_requests",
        # Release plans (issue 32): templates, plans, milestones and safeguards.
        "flagcore.release_plans",
    }
)


def _own_docstring(member: object) -> str | None:
    if inspect.isclass(member):
        return member.__dict__.get("__doc__")
    return inspect.getdoc(member)


def _undocumented(module: ModuleType) -> list[str]:
    """Classes and functions in ``module.__all__`` without a docstring of their own."""
    return [
        name
        for name in module.__all__
        if (inspect.isclass(member := getattr(module, name)) or inspect.isfunction(member))
        and not (_own_docstring(member) or "").strip()
    ]


def test_every_name_in_all_is_exported_and_documented() -> None:
    for name in flagcore.__all__:
        assert hasattr(flagcore, name), name
    public = {name for name in vars(flagcore) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(flagcore, name)).__name__ == "module"}
    assert public - modules == set(flagcore.__all__) - {"__version__"}
    assert _undocumented(flagcore) == []


def test_the_face_holds_what_an_embedding_user_needs() -> None:
    for name in ("Engine", "Context", "Service", "MemoryStore", "Store", "Transaction"):
        assert name in flagcore.__all__, name
    for name in ("Strategy", "Constraint", "Segment", "Variant", "Limits", "FlagcoreError"):
        assert name in flagcore.__all__, name
    # Every part of the store port is on the face, so a third-party store needs no other.
    assert set(flagcore.ports.__all__) <= set(flagcore.__all__)
    service = flagcore.Service(flagcore.MemoryStore())
    assert flagcore.Engine(service.client.client_features("development")).flag_names() == ()


def test_the_service_face_is_documented() -> None:
    for name in flagcore.service.__all__:
        assert hasattr(flagcore.service, name), name
    assert _undocumented(flagcore.service) == []


@pytest.mark.parametrize("name", sorted(PUBLIC_MODULES))
def test_each_public_module_declares_what_it_exports_and_nothing_private(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported), name
    for member in exported:
        assert hasattr(module, member), (name, member)
        assert not member.startswith("_") or member == "__version__", (name, member)


def _imports(tree: ast.AST) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) of every import of flagcore in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = tuple(alias.name for alias in node.names)
            yield node.lineno, node.module, names
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()


def _import_problems(module: str, names: tuple[str, ...]) -> list[str]:
    if module != "flagcore" and not module.startswith("flagcore."):
        return []
    if module not in PUBLIC_MODULES:
        return [f"imports {module}, which is not public"]
    exported = set(importlib.import_module(module).__all__)
    if module == "flagcore":
        exported |= {m.removeprefix("flagcore.") for m in PUBLIC_MODULES}
    return [f"imports {module}.{n}, not in its __all__" for n in names if n not in exported]


def _code_blocks(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each line inside a ```python block of a Markdown file."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            inside = not inside and line.strip() == "```python"
        elif inside:
            yield number, line


_DOC_IMPORT = re.compile(r"^\s*from (flagcore[\w.]*) import ([\w, ]+)|^\s*import (flagcore[\w.]*)")
_DOC_REFERENCE = re.compile(r"\bflagcore(?:\.[a-z_]\w*)+")


def _doc_problems(path: Path) -> list[str]:
    problems = []
    for number, line in _code_blocks(path.read_text(encoding="utf-8")):
        where = f"{path.relative_to(ROOT)}:{number}"
        match = _DOC_IMPORT.match(line)
        if match and match[1]:
            names = tuple(n.strip() for n in match[2].split(",") if n.strip())
            problems += [f"{where} {p}" for p in _import_problems(match[1], names)]
        elif match:
            problems += [f"{where} {p}" for p in _import_problems(match[3], ())]
        # A reference in a snippet (``flagcore.memory.MemoryStore()``) teaches a path too.
        for reference in _DOC_REFERENCE.findall(line):
            parts = reference.split(".")
            on_the_face = len(parts) == 2 and parts[1] in flagcore.__all__
            if not on_the_face and ".".join(parts[:2]) not in PUBLIC_MODULES:
                problems.append(f"{where} refers to {reference}, which is not public")
    return problems


def test_adapters_examples_and_docs_reach_flagcore_only_through_its_public_face() -> None:
    problems = []
    sources = [p for package in ADAPTERS for p in (ROOT / "src" / package).rglob("*.py")]
    for path in sorted([*sources, *EXAMPLES.glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, module, names in _imports(tree):
            where = f"{path.relative_to(ROOT)}:{line}"
            problems += [f"{where} {p}" for p in _import_problems(module, names)]
    for path in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        problems += _doc_problems(path)
    assert problems == []


def test_the_face_check_catches_a_private_import() -> None:
    tree = ast.parse("from flagcore.operators import semver_key\nfrom flagcore import Engine")
    found = [p for _, m, n in _imports(tree) for p in _import_problems(m, n)]
    assert found == ["imports flagcore.operators, which is not public"]
    assert _import_problems("flagcore.service", ("Flags",)) == [
        "imports flagcore.service.Flags, not in its __all__"
    ]


# Every adapter package and every driver or framework one of them uses: the core imports
# none of them, not even a submodule.
FORBIDDEN_IN_CORE = (
    *ADAPTERS,
    "flagcore_store_",  # any store package, today's two and the next
    "psycopg",
    "psycopg_pool",
    "aiohttp",
    "sqlite3",
    "sqlite_utils",
)


def _is_forbidden_in_core(module: str) -> bool:
    root = module.split(".")[0]
    return any(
        root == forbidden or (forbidden.endswith("_") and root.startswith(forbidden))
        for forbidden in FORBIDDEN_IN_CORE
    )


def _forbidden_in_core(tree: ast.AST) -> list[str]:
    return [module for _, module, _names in _imports(tree) if _is_forbidden_in_core(module)]


def test_the_core_imports_no_adapter_driver_or_io_framework() -> None:
    source = Path(flagcore.__file__).parent
    problems = {}
    for module in sorted(source.rglob("*.py")):
        found = _forbidden_in_core(ast.parse(module.read_text(encoding="utf-8")))
        if found:
            problems[str(module.relative_to(ROOT))] = found
    assert problems == {}


def test_the_core_import_check_catches_every_adapter_and_driver() -> None:
    code = "\n".join(
        [
            "import psycopg",
            "from psycopg_pool import ConnectionPool",
            "import sqlite3",
            "from sqlite_utils import Database",
            "from aiohttp import web",
            "import flagcore_sql.schema",
            "from flagcore_store_sqlite import SqliteStore",
            "from flagcore_store_mysql.store import MysqlStore",
            "from flagcore_store_postgres.store import PostgresStore",
            "from flagcore_client import FlagClient",
            "from flagcore_http.app import create_app",
            "import flagcore.engine",
            "import sqlparse",
        ]
    )
    assert _forbidden_in_core(ast.parse(code)) == [
        "psycopg",
        "psycopg_pool",
        "sqlite3",
        "sqlite_utils",
        "aiohttp",
        "flagcore_sql.schema",
        "flagcore_store_sqlite",
        "flagcore_store_mysql.store",
        "flagcore_store_postgres.store",
        "flagcore_client",
        "flagcore_http.app",
    ]


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_examples_run(
    example: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [str(example)])  # examples read their arguments
    runpy.run_path(str(example), run_name="__main__")
    assert capsys.readouterr().out
