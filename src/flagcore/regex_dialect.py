"""REGEX constraints: Rust's ``regex`` dialect, matched in linear time by RE2.

Unleash's engine (yggdrasil) compiles constraint patterns with Rust's ``regex`` crate,
which never backtracks. Python's ``re`` does: ``^(a+)+$`` against 30 ``a`` and a ``!``
takes seconds, and any caller of the playground, the frontend API or OFREP chooses the
text. So every pattern the product evaluates goes through `compile_rust_pattern`, which
matches with RE2 (``google-re2``), an automaton engine whose time grows linearly with the
text, like Rust's.

RE2 speaks nearly Rust's dialect (POSIX classes, flag groups in mid-pattern with the same
scope, ``$`` as the end of the text, ``\\z``, ``\\x{..}``, ``\\p{..}``, no backreferences,
no lookaround). This module rewrites only what still differs, and refuses what Rust
refuses but RE2 would take, so a pattern Unleash rejects never matches here:

* Unicode-aware shorthands: Rust's ``\\d``, ``\\w`` and ``\\s`` are Unicode classes, RE2's
  are ASCII; they become explicit Unicode classes.
* ``\\u``/``\\U`` escapes and escaped punctuation (``\\_``, ``\\'``) become ``\\x{..}``.
* Stacked repetitions (``a**``, ``a{2}{3}``), which Rust allows, get a group around the
  inner one; white space around a repetition's numbers (``a{ 2 }``) is dropped.
* Verbose mode (``x``: white space and ``#`` comments ignored) is stripped first
  (`flagcore.regex_verbose`), and classes with set operations or nested classes
  (``[a-z&&[^aeiou]]``, ``--``, ``~~``, ``[^\\W…]``) are computed as exact sets of code
  points (`flagcore.regex_class_sets`) and written as one plain class.
* Refused because Rust refuses them and RE2 does not: ``\\Q..\\E``, ``\\C``, octal escapes,
  ``\\p{^..}``, malformed ``{`` repetitions (RE2 reads them as text), surrogate code points.
* Refused because RE2 cannot express them, though Rust can (the constraint is then false,
  the safe side; docs/engine.md lists them): ``\\<``, ``\\>``, ``\\b{..}``, ``(?R)``,
  ``(?-u)``, Unicode property names RE2 does not know (``\\p{Letter}``, ``\\p{sc=Greek}``),
  and class set operations needing more than 32 computed sets. RE2's ``\\b`` is an ASCII
  word boundary.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import re2

from flagcore.regex_class_sets import (
    POSIX_NAMES,
    ClassSyntaxError,
    SetBudget,
    class_set,
    re2_class,
)
from flagcore.regex_verbose import strip_verbose

__all__ = ["RegexMatcher", "UnsupportedPattern", "compile_rust_pattern", "translate_rust_pattern"]

RegexMatcher = Callable[[str], bool]
"""Whether a pattern matches anywhere in a text (an unanchored search, as in Unleash)."""


class UnsupportedPattern(ValueError):
    """The pattern is invalid in Rust's dialect, or cannot be expressed for RE2."""


# Rust's Unicode classes (regex-syntax's perl_word, perl_space, perl_digit). Word is
# Alphabetic + Mark + Decimal_Number + Connector_Punctuation + Join_Control; RE2 has no
# Alphabetic property, so it is letters, letter numbers and the Other_Alphabetic symbols
# (circled and squared letters) that are neither.
_WORD = (
    "\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}"
    "\\x{24B6}-\\x{24E9}\\x{1F130}-\\x{1F149}\\x{1F150}-\\x{1F169}\\x{1F170}-\\x{1F189}"
)
_SPACE = (
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}"
    "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
)
_CLASS_ITEMS = {"d": "\\p{Nd}", "w": _WORD, "s": _SPACE}
_NEGATED = {"D": "d", "W": "w", "S": "s"}
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z-]*)([:)])")
_NAMED_GROUP = re.compile(r"\(\?P?<([A-Za-z_][A-Za-z0-9_.\[\]]*)>")
# Rust reads white space around a repetition's numbers, with or without ``x``.
_BLANKS = "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*"
_COUNTED = re.compile(rf"\{{{_BLANKS}([0-9]+){_BLANKS}(?:(,)(?:{_BLANKS}([0-9]+){_BLANKS})?)?\}}")
_BRACED_HEX = re.compile(r"\\[xuU]\{([0-9A-Fa-f]{1,8})\}")
_PLAIN_HEX = {"x": 2, "u": 4, "U": 8}
_PROPERTY = re.compile(r"\\[pP](?:\{([^}^]+)\}|([A-Za-z]))")
_PLAIN_ESCAPES = set("ntrfva")  # the same control characters in both dialects
_ASSERTIONS = set("AbBz")
_MAX_SCALAR = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def _scalar(value: int) -> str:
    if value > _MAX_SCALAR or value in _SURROGATES:
        raise UnsupportedPattern(f"\\x{{{value:X}}} is not a Unicode scalar value")
    return f"\\x{{{value:X}}}"


def _hex_escape(pattern: str, i: int) -> tuple[str, int]:
    braced = _BRACED_HEX.match(pattern, i)
    if braced:
        return _scalar(int(braced.group(1), 16)), braced.end()
    kind = pattern[i + 1]
    digits = pattern[i + 2 : i + 2 + _PLAIN_HEX[kind]]
    if len(digits) != _PLAIN_HEX[kind] or not all(d in "0123456789abcdefABCDEF" for d in digits):
        raise UnsupportedPattern(f"malformed \\{kind} escape")
    return _scalar(int(digits, 16)), i + 2 + len(digits)


def _escape(pattern: str, i: int, *, in_class: bool) -> tuple[str, int]:
    """One escape starting at ``i``, in RE2's syntax; the index after it.

    Shorthand classes come back as class items (``\\p{Nd}``) in a class and as a whole
    class (``[\\p{Nd}]``) outside one; negated ones outside a class only (see _class).
    """
    if i + 1 >= len(pattern):
        raise UnsupportedPattern("pattern ends with a lone backslash")
    c = pattern[i + 1]
    if c in _PLAIN_HEX:
        return _hex_escape(pattern, i)
    if c in _CLASS_ITEMS:
        items = _CLASS_ITEMS[c]
        return (items if in_class else f"[{items}]"), i + 2
    if c in _NEGATED and not in_class:
        return f"[^{_CLASS_ITEMS[_NEGATED[c]]}]", i + 2
    if c in "pP":
        prop = _PROPERTY.match(pattern, i)
        if prop is None:
            raise UnsupportedPattern(f"malformed or negated \\{c} class")
        return prop.group(0), prop.end()
    if c in _PLAIN_ESCAPES:
        return pattern[i : i + 2], i + 2
    if c in _ASSERTIONS and not in_class:
        if c == "b" and pattern.startswith("{", i + 2):
            raise UnsupportedPattern("\\b{...} word boundaries are not supported")
        return pattern[i : i + 2], i + 2
    if c in "<>" and not in_class:
        raise UnsupportedPattern(f"\\{c} (start or end of word) is not supported")
    if c.isascii() and not c.isalnum() and c not in "<>":  # any other ASCII is itself
        return _scalar(ord(c)), i + 2
    # Digits are backreferences or octal, refused by Rust, as are \Q, \C, \Z, \G, \k, \N.
    raise UnsupportedPattern(f"escape \\{c} is not supported")


_CLASS_ESCAPES = frozenset("dswDSWpP")


def _starts_range(pattern: str, i: int) -> bool:
    """A ``-`` at ``i`` that Rust reads as a range (one before ``]`` or ``-`` is literal)."""
    return pattern.startswith("-", i) and pattern[i + 1 : i + 2] not in ("]", "-", "")


def _class_escape(pattern: str, i: int) -> tuple[str, int]:
    return _escape(pattern, i, in_class=True)


def _exact_class(pattern: str, start: int, fold: bool, budget: SetBudget) -> tuple[str, int]:
    """A class RE2 cannot spell (set operations, nested classes): its exact set."""
    try:
        ranges, end = class_set(pattern, start, _class_escape, fold=fold, budget=budget)
    except ClassSyntaxError as exc:
        raise UnsupportedPattern(str(exc)) from exc
    return re2_class(ranges), end


def _class(
    pattern: str, start: int, fold: bool = False, budget: SetBudget | None = None
) -> tuple[str, int]:
    """Translate ``[...]`` starting at ``start``; return RE2's form and the index after it.

    ``fold``: case-insensitive here, and ``budget``: the pattern's (only a class computed
    as a set needs them)."""
    budget = budget or SetBudget()
    i = start + 1
    negated = pattern.startswith("^", i)
    if negated:
        i += 1
    items: list[str] = []
    complements: list[str] = []  # \W and \S: not class items in RE2
    first = True
    while True:
        if i >= len(pattern):
            raise UnsupportedPattern("unclosed character class")
        c = pattern[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "[":
            posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
            if posix is None or posix.group(2) not in POSIX_NAMES:
                return _exact_class(pattern, start, fold, budget)  # a nested class
            items.append(posix.group(0))  # RE2 knows the same ASCII POSIX classes
            i += posix.end()
            continue
        if c in "&-~" and pattern.startswith(c * 2, i):
            return _exact_class(pattern, start, fold, budget)
        if c == "\\":
            kind = pattern[i + 1 : i + 2]
            if kind in _NEGATED:
                if negated:
                    return _exact_class(pattern, start, fold, budget)
                complements.append(f"[^{_CLASS_ITEMS[_NEGATED[kind]]}]")
                i += 2
            else:
                escape, i = _escape(pattern, i, in_class=True)
                items.append(escape)
            if kind in _CLASS_ESCAPES and _starts_range(pattern, i):
                raise UnsupportedPattern(f"a class (\\{kind}) cannot start a range")
            continue
        items.append(c)
        i += 1
    body = "[" + ("^" if negated else "") + "".join(items) + "]"
    if not complements:
        return body, i
    return "(?:" + "|".join(([body] if items else []) + complements) + ")", i


def _flags(rust_flags: str) -> str:
    """Rust's flags as RE2's: the same letters, less ``u`` (RE2 is always Unicode)."""
    on, dash, off = rust_flags.partition("-")
    if (
        not rust_flags
        or (dash and not off)
        or "-" in off
        or set(on + off) - set("imsuxUR")
        or len(set(on + off)) != len(on + off)
    ):
        raise UnsupportedPattern(f"invalid flag group (?{rust_flags})")
    if set(on + off) & set("xR") or "u" in off:
        raise UnsupportedPattern(f"flags {rust_flags!r} are not supported")
    on = on.replace("u", "")
    return on + ("-" + off if off else "")


class _Translation:
    """The output so far, and where the last repeatable piece starts (for stacking)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.piece: int | None = None  # index in `out` where the last atom starts
        # That atom already carries a repetition, or is an assertion (RE2 repeats neither).
        self.repeated = False

    def atom(self, text: str, *, assertion: bool = False) -> None:
        self.piece, self.repeated = len(self.out), assertion
        self.out.append(text)

    def repeat(self, operator: str) -> None:
        if self.piece is None:
            raise UnsupportedPattern(f"repetition {operator!r} has nothing to repeat")
        if self.repeated:  # Rust allows a**, a{2}{3} and ^*; RE2 wants a group around
            self.out.insert(self.piece, "(?:")
            self.out.append(")")
        self.out.append(operator)
        self.repeated = True


def translate_rust_pattern(pattern: str, *, case_insensitive: bool = False) -> str:
    """Rewrite a Rust ``regex`` pattern into RE2's syntax, with the same matches.

    ``case_insensitive`` is the constraint's own flag (RE2 gets it as an option); the
    translation only needs it where it computes a class's set itself."""
    pattern = strip_verbose(pattern)
    t = _Translation()
    groups: list[tuple[int, bool]] = []  # where each open group starts, the fold outside it
    fold = case_insensitive
    budget = SetBudget()  # shared by every class of the pattern
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            escape, i = _escape(pattern, i, in_class=False)
            t.atom(escape, assertion=escape[1:] in _ASSERTIONS)
        elif c == "[":
            cls, i = _class(pattern, i, fold, budget)
            t.atom(cls)
        elif c == "(":
            opener, i, bare_flags = _group(pattern, i)
            if not bare_flags:
                groups.append((len(t.out), fold))
            fold = _folds(opener, fold)
            t.out.append(opener)
            t.piece = None  # nothing to repeat right after an opening or a flag group
        elif c == ")":
            if not groups:
                raise UnsupportedPattern("unbalanced parenthesis")
            t.out.append(")")
            start, fold = groups.pop()
            t.piece, t.repeated = start, False
            i += 1
        elif c == "|":
            t.out.append("|")
            t.piece = None
            i += 1
        elif c == "{":
            counted = _COUNTED.match(pattern, i)
            if counted is None:
                raise UnsupportedPattern("malformed counted repetition")  # RE2: text
            i = _repeat(pattern, counted.end(), t, _counted(*counted.groups()))
        elif c in "*+?":
            i = _repeat(pattern, i + 1, t, c)
        elif c in "^$":
            t.atom(c, assertion=True)
            i += 1
        else:
            t.atom(c)
            i += 1
    if groups:
        raise UnsupportedPattern("unclosed group")
    return "".join(t.out)


def _counted(low: str, comma: str | None, high: str | None) -> str:
    """``{2}``, ``{2,}``, ``{2,3}`` as RE2 writes them (Rust's numbers are 32-bit)."""
    numbers = [number.lstrip("0") or "0" for number in (low, high) if number is not None]
    if any(len(number) > 10 or int(number) >= 2**32 for number in numbers):
        raise UnsupportedPattern("counted repetition beyond 32 bits")
    if len(numbers) == 2 and int(numbers[1]) < int(numbers[0]):
        raise UnsupportedPattern("counted repetition with min above max")
    return "{" + numbers[0] + ("," if comma else "") + (numbers[1] if high else "") + "}"


_RE2_FLAGS = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?[:)]")


def _folds(opener: str, fold: bool) -> bool:
    """Whether case folding is on after a group's opener (RE2's spelling) in ``fold``."""
    flags = _RE2_FLAGS.match(opener)
    if flags is None:
        return fold
    on, off = flags.group(1), flags.group(2) or ""
    return True if "i" in on else False if "i" in off else fold


def _repeat(pattern: str, i: int, t: _Translation, operator: str) -> int:
    """Append a repetition and its lazy marker, if any (Rust has no possessive ones:
    ``a*+`` is ``(?:a*)+`` there)."""
    if pattern.startswith("?", i):
        t.repeat(operator + "?")
        return i + 1
    t.repeat(operator)
    return i


def _group(pattern: str, i: int) -> tuple[str, int, bool]:
    """An opening group: RE2's opener, the index after it, whether it is a bare flag group."""
    if not pattern.startswith("(?", i):
        return "(?:", i + 1, False  # nothing reads captures: no group numbering needed
    if pattern.startswith("(?:", i):
        return "(?:", i + 3, False
    named = _NAMED_GROUP.match(pattern, i)
    if named:
        return "(?:", named.end(), False
    flags = _FLAG_GROUP.match(pattern, i)
    if flags is None:
        # Lookaround, atomic groups, backreferences by name, conditionals, comments.
        raise UnsupportedPattern(f"group syntax {pattern[i : i + 4]!r} is not supported")
    re2_flags = _flags(flags.group(1))
    if flags.group(2) == ":":
        return (f"(?{re2_flags}:" if re2_flags else "(?:"), flags.end(), False
    # A bare flag group applies to the rest of its group, across alternatives, in RE2 too.
    return (f"(?{re2_flags})" if re2_flags else ""), flags.end(), True


def _options(case_insensitive: bool) -> re2.Options:
    options = re2.Options()
    options.never_capture = True  # a yes/no answer needs no groups: a faster automaton
    options.log_errors = False  # a hostile pattern must not write to stderr
    options.case_sensitive = not case_insensitive
    return options


@functools.lru_cache(maxsize=1024)
def compile_rust_pattern(pattern: str, *, case_insensitive: bool = False) -> RegexMatcher:
    """A linear-time matcher for a Rust-dialect pattern, or `UnsupportedPattern`.

    The one way the product evaluates a REGEX: the matcher answers whether the pattern
    occurs anywhere in a text, as Unleash's engine does. It never backtracks (RE2).
    """
    translated = translate_rust_pattern(pattern, case_insensitive=case_insensitive)
    try:
        compiled = re2.compile(translated, _options(case_insensitive))
    except re2.error as exc:
        raise UnsupportedPattern(str(exc)) from exc
    # RE2's own search, without the wrapper's match object (8x slower for a yes/no). These
    # are the wrapper's internals: should a release rename them, its public search serves.
    match = getattr(getattr(compiled, "_regexp", None), "Match", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if match is None or anchor is None:
        search = compiled.search
        return lambda text: search(text) is not None

    def matches(text: str, match: Any = match, unanchored: Any = anchor) -> bool:
        # Lone surrogates (from JSON's \ud800) pass through as bytes RE2 matches with nothing.
        encoded = text.encode("utf-8", "surrogatepass")
        start: int = match(unanchored, encoded, 0, len(encoded))[0][0]
        return start >= 0

    return matches
