"""Rust's character-class set operations for REGEX constraints, which RE2 lacks: nested
classes (``[a[0-9]]``, ``[^[^a]]``), intersection ``&&``, difference ``--`` and symmetric
difference ``~~`` (``[a-z&&[^aeiou]]``), computed exactly as sets of code points and
written back as one plain RE2 class, so matching stays linear.

Rust's rules: a class's items are a union; the three operations bind less than the union,
all alike, left to right; a nested class is folded (under ``i``) and then negated. Under
``i`` Rust folds both sides of every operation, so every result is closed under folding
and RE2 folding it again changes nothing.

A leaf (a literal, a range, an escape such as ``\\d`` or ``\\p{Greek}``, a POSIX class)
means what it means everywhere else in flagcore's REGEX: its set and its case folding are
RE2's, read by searching one text of every Unicode scalar value (cached per distinct set;
at most `MAX_SET_SEARCHES` a pattern).
"""

from __future__ import annotations

import array
import functools
import re
import sys
from collections.abc import Callable, Iterable

import re2

__all__ = [
    "POSIX_NAMES",
    "ClassSyntaxError",
    "Ranges",
    "SetBudget",
    "class_set",
    "re2_class",
    "re2_members",
]

Ranges = tuple[tuple[int, int], ...]
"""Sorted, disjoint, non-adjacent inclusive ranges of scalar values (no surrogates)."""

EscapeReader = Callable[[str, int], tuple[str, int]]
"""Reads one escape at an index (RE2's spelling, the index after it), as in a class."""


class ClassSyntaxError(ValueError):
    """The class is not valid Rust syntax, or needs more sets than a pattern may ask for."""


_MAX = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
_POSIX = re.compile(r"\[:(\^?)([a-z]+):\]")
POSIX_NAMES = frozenset(
    {
        "alnum",
        "alpha",
        "ascii",
        "blank",
        "cntrl",
        "digit",
        "graph",
        "lower",
        "print",
        "punct",
        "space",
        "upper",
        "word",
        "xdigit",
    }
)
_LITERAL_ESCAPE = re.compile(r"\\x\{([0-9A-F]+)\}")
_CONTROL_ESCAPES = {"\\n": 10, "\\t": 9, "\\r": 13, "\\f": 12, "\\v": 11, "\\a": 7}
_NEGATED_SHORTHANDS = {"D": "\\d", "W": "\\w", "S": "\\s"}


def _normal(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, merged, without surrogates."""
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    result: list[tuple[int, int]] = []
    for low, high in merged:
        if low < _SURROGATES[0] <= high or low <= _SURROGATES[1] < high:
            if low < _SURROGATES[0]:
                result.append((low, _SURROGATES[0] - 1))
            if high > _SURROGATES[1]:
                result.append((_SURROGATES[1] + 1, high))
        elif not _SURROGATES[0] <= low <= _SURROGATES[1]:
            result.append((low, high))
    return tuple(result)


def complement(ranges: Ranges) -> Ranges:
    gaps, start = [], 0
    for low, high in ranges:
        if low > start:
            gaps.append((start, low - 1))
        start = high + 1
    if start <= _MAX:
        gaps.append((start, _MAX))
    return _normal(gaps)


def union(*sets: Ranges) -> Ranges:
    return _normal(r for ranges in sets for r in ranges)


def intersection(a: Ranges, b: Ranges) -> Ranges:
    return complement(union(complement(a), complement(b)))


def difference(a: Ranges, b: Ranges) -> Ranges:
    return intersection(a, complement(b))


_OPERATIONS: dict[str, Callable[[Ranges, Ranges], Ranges]] = {
    "&&": intersection,
    "--": difference,
    "~~": lambda a, b: union(difference(a, b), difference(b, a)),
}


@functools.lru_cache(maxsize=1)
def _universe_text() -> str:
    """Every scalar value once, in order (4.4 MB, built on first use: ~0.2 s)."""
    codes = array.array("I", range(_SURROGATES[0]))
    codes.extend(range(_SURROGATES[1] + 1, _MAX + 1))
    return codes.tobytes().decode(f"utf-32-{sys.byteorder[0]}e")


def _code_point(index: int) -> int:
    """The scalar value at ``index`` of the universe text (which skips the surrogates)."""
    return index if index < _SURROGATES[0] else index + (_SURROGATES[1] - _SURROGATES[0] + 1)


@functools.lru_cache(maxsize=128)
def re2_members(re2_class: str) -> Ranges:
    """The scalar values RE2's class (``[\\p{Greek}]``, written as RE2 reads it) holds."""
    options = re2.Options()
    options.log_errors = False
    try:
        compiled = re2.compile(f"(?:{re2_class})+", options)
    except re2.error as exc:
        raise ClassSyntaxError(str(exc)) from exc
    found = (match.span() for match in compiled.finditer(_universe_text()))
    return _normal((_code_point(start), _code_point(end - 1)) for start, end in found)


# Each distinct set RE2 is asked for costs a search of the 4.4 MB universe text (10-200
# ms); a pattern may ask for this many, so no pattern can make compiling slow.
MAX_SET_SEARCHES = 32


class SetBudget:
    """The sets RE2 may still be asked for while one pattern is translated."""

    def __init__(self, searches: int = MAX_SET_SEARCHES) -> None:
        self.left = searches

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise ClassSyntaxError(
                f"more than {MAX_SET_SEARCHES} escapes, POSIX classes or folded operands "
                "in class set operations"
            )


class _Parser:
    def __init__(self, pattern: str, escape: EscapeReader, fold: bool, budget: SetBudget) -> None:
        self.pattern = pattern
        self.escape = escape
        self.fold = fold
        self.budget = budget

    def members(self, re2_class: str) -> Ranges:
        self.budget.spend()
        return re2_members(re2_class)

    def operand(self, items: list[Ranges]) -> Ranges:
        """A union of items, folded under ``i`` (Rust folds each side of an operation)."""
        members = union(*items)
        if not self.fold or not members:
            return members
        return self.members(f"(?i:{re2_class(members)})")

    def bracketed(self, i: int) -> tuple[Ranges, int]:
        """The class opening at ``i`` (``[``): its set, and the index after it."""
        pattern = self.pattern
        i += 1
        negated = pattern.startswith("^", i)
        i += negated
        items: list[Ranges] = []
        while pattern.startswith("-", i):
            items.append(((0x2D, 0x2D),))
            i += 1
        if not items and pattern.startswith("]", i):
            items.append(((0x5D, 0x5D),))
            i += 1
        result: Ranges | None = None
        operation = ""
        while True:
            if i >= len(pattern):
                raise ClassSyntaxError("unclosed character class")
            c = pattern[i]
            if c == "]":
                i += 1
                break
            if c in "&-~" and pattern.startswith(c * 2, i):
                result = self.combine(result, operation, self.operand(items))
                operation, items = c * 2, []
                i += 2
                continue
            if c == "[":
                posix = _POSIX.match(pattern, i)
                if posix is not None and posix.group(2) in POSIX_NAMES:
                    items.append(self.members(f"[{posix.group(0)}]"))
                    i = posix.end()
                else:
                    nested, i = self.bracketed(i)
                    items.append(nested)
                continue
            item, i = self.range_item(i)
            items.append(item)
        result = self.combine(result, operation, self.operand(items))
        return (complement(result) if negated else result), i

    @staticmethod
    def combine(left: Ranges | None, operation: str, right: Ranges) -> Ranges:
        return right if left is None else _OPERATIONS[operation](left, right)

    def range_item(self, i: int) -> tuple[Ranges, int]:
        """A single item, or a range ``a-z`` (a ``-`` before ``]`` or ``-`` is literal)."""
        pattern = self.pattern
        first, i = self.item(i)
        if not pattern.startswith("-", i) or i + 1 >= len(pattern) or pattern[i + 1] in "]-":
            return first[1], i
        last, i = self.item(i + 1)
        if first[0] is None or last[0] is None:
            raise ClassSyntaxError("a range's ends must be single characters")
        if first[0] > last[0]:
            raise ClassSyntaxError("a range's start is above its end")
        return _normal(((first[0], last[0]),)), i

    def item(self, i: int) -> tuple[tuple[int | None, Ranges], int]:
        """(the code point if it is one character, else None; its set), the index after."""
        pattern = self.pattern
        if pattern[i] != "\\":
            cp = ord(pattern[i])
            return (cp, ((cp, cp),)), i + 1
        kind = pattern[i + 1 : i + 2]
        if kind in _NEGATED_SHORTHANDS:
            members = self.members(f"[{self.escape(_NEGATED_SHORTHANDS[kind], 0)[0]}]")
            return (None, complement(members)), i + 2
        text, end = self.escape(pattern, i)
        literal = _LITERAL_ESCAPE.fullmatch(text)
        code = int(literal.group(1), 16) if literal else _CONTROL_ESCAPES.get(text)
        if code is not None:
            return (code, ((code, code),)), end
        return (None, self.members(f"[{text}]")), end


def class_set(
    pattern: str, start: int, escape: EscapeReader, *, fold: bool, budget: SetBudget
) -> tuple[Ranges, int]:
    """The set of the Rust class at ``start`` (under case folding if ``fold``), and the
    index after it; `ClassSyntaxError` where Rust refuses the class, or ``budget`` (the
    pattern's, shared by its classes) runs out."""
    return _Parser(pattern, escape, fold, budget).bracketed(start)


def re2_class(ranges: Ranges) -> str:
    """RE2's spelling of exactly ``ranges`` (an empty set matches nothing)."""
    if not ranges:
        return "[^\\x00-\\x{10FFFF}]"
    parts = (
        f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}"
        for low, high in ranges
    )
    return "[" + "".join(parts) + "]"
