"""The import graph of ``src/``: no two modules import each other, directly or round a
loop (a deferred import inside a function counts: it would only hide the loop), and no
module reaches into another's private (``_name``) helpers."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import attrs

SRC = Path(__file__).resolve().parents[2] / "src"


@attrs.frozen
class Import:
    module: str  # the module imported (or the package, for a name it exports)
    names: tuple[str, ...]  # the names taken from it (``from m import a, b``)
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST, own: str, known: dict[str, Path]) -> Iterator[Import]:
    """Every import of a source module at run time, at any depth (not those under
    ``if TYPE_CHECKING:``, which never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and is_type_checking(node):
            yield from (i for child in node.orelse for i in imports(child, own, known))
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield Import(alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = tuple(a.name for a in node.names)
            submodules = [n for n in names if f"{node.module}.{n}" in known]
            for name in submodules:
                yield Import(f"{node.module}.{name}", (), node.lineno)
            others = tuple(n for n in names if n not in submodules)
            if node.module in known and others:
                yield Import(node.module, others, node.lineno)
        yield from imports(node, own, known)


def graph() -> dict[str, list[Import]]:
    known = modules()
    return {
        name: list(imports(ast.parse(path.read_text(), str(path)), name, known))
        for name, path in known.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def test_no_module_of_src_imports_itself_round_a_loop() -> None:
    # A package's __init__ that gathers its submodules is no loop with them, as long as no
    # submodule imports the package back; both directions count, so those are kept.
    edges = {name: {i.module for i in found if i.module != name} for name, found in graph().items()}
    assert cycles(edges) == []


def test_no_module_imports_a_private_name_of_another() -> None:
    private = [
        f"{name}:{i.line} takes {n} from {i.module}"
        for name, found in graph().items()
        for i in found
        for n in i.names
        if n.startswith("_") and not n.startswith("__")
    ]
    private += [
        f"{name} imports the private module {i.module}"
        for name, found in graph().items()
        for i in found
        if i.module.rpartition(".")[2].startswith("_")
        and i.module.rpartition(".")[2] not in ("__init__", "__main__")
        and not is_ancestor(i.module.rpartition(".")[0], name)
    ]
    assert private == []


def test_no_module_uses_a_private_helper_of_a_module_it_imports() -> None:
    """``import m`` then ``m._helper``: as private as ``from m import _helper``."""
    known = modules()
    used = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in known:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in known:
                        aliases[alias.asname] = alias.name
        used.extend(
            f"{name}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        )
    assert used == []


def test_the_loop_finder_names_every_module_of_a_loop_and_only_those() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]


def test_a_deferred_import_counts_and_a_type_checking_one_does_not() -> None:
    known = {"p.m": SRC, "p.n": SRC, "p.o": SRC}
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from p.n import Thing\n"
        "def f():\n    from p.o import _helper\n"
    )
    assert [(i.module, i.names) for i in imports(tree, "p.m", known)] == [("p.o", ("_helper",))]
