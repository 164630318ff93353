"""The source files of a tree as git would see them: what ``.gitignore`` files leave in.

Each directory's ``.gitignore`` (and the root's ``.git/info/exclude``) is read with
`pathspec`'s git rules; a deeper file's pattern wins over a shallower one, a negation
(``!keep.py``) re-includes, and an ignored directory is never entered (git cannot
re-include a file under an excluded directory either). ``.git`` itself is always skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import attrs
import pathspec

__all__ = ["SOURCE_SUFFIXES", "source_files"]

# The languages `flagcore scan` reads: the official SDKs' and OpenFeature's.
SOURCE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".js",
        ".jsx",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".mts",
        ".cts",
        ".vue",
        ".svelte",
        ".go",
        ".java",
        ".kt",
        ".kts",
        ".rb",
        ".erb",
        ".cs",
        ".cshtml",
        ".razor",
    }
)


@attrs.frozen
class _Rules:
    """One ``.gitignore``: its patterns, relative to the directory it sits in."""

    base: str  # the directory, relative to the root, with a trailing "/" ("" at the root)
    spec: pathspec.GitIgnoreSpec


def _read_rules(path: str, base: str) -> _Rules | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return _Rules(base, spec) if spec.patterns else None


def _ignored(rules: list[_Rules], relative: str) -> bool:
    """Whether git ignores ``relative`` (a directory ends with "/"): the deepest file
    with a pattern matching it decides, as in git."""
    for rule in reversed(rules):
        result = rule.spec.check_file(relative[len(rule.base) :])
        if result.include is not None:
            return result.include
    return False


def source_files(root: str, suffixes: frozenset[str] = SOURCE_SUFFIXES) -> Iterator[str]:
    """Every file under ``root`` with one of ``suffixes`` that git would not ignore, as a
    path relative to ``root`` with "/" separators, in a stable (sorted) order."""
    rules: list[_Rules] = []
    exclude = _read_rules(os.path.join(root, ".git", "info", "exclude"), "")
    if exclude is not None:
        rules.append(exclude)
    yield from _walk(root, "", rules, suffixes)


def _walk(root: str, base: str, rules: list[_Rules], suffixes: frozenset[str]) -> Iterator[str]:
    directory = os.path.join(root, base) if base else root
    try:
        with os.scandir(directory) as entries:
            listed = sorted((entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries)
    except OSError:
        return  # unreadable (permissions, removed meanwhile): nothing to scan there
    own = _read_rules(os.path.join(directory, ".gitignore"), base)
    if own is not None:
        rules = [*rules, own]
    for name, is_dir in listed:
        if is_dir:
            if name == ".git" or _ignored(rules, f"{base}{name}/"):
                continue
            yield from _walk(root, f"{base}{name}/", rules, suffixes)
        elif os.path.splitext(name)[1] in suffixes and not (rules and _ignored(rules, base + name)):
            yield base + name
