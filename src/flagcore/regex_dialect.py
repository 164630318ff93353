"""Unleash's REGEX operator speaks the Rust ``regex`` crate's dialect; Python's ``re`` does not.

Unleash's engine (yggdrasil) compiles constraint patterns with Rust's ``regex`` crate, so
a pattern must mean the same thing here as there. This module rewrites a Rust pattern
into an equivalent Python pattern, or refuses it:

* Rust features with no Python twin are translated: POSIX classes (``[[:alpha:]]``),
  flag groups in mid-pattern (``^(?i)abc$``, which Python 3.11 rejects), ``\\z``,
  ``\\x{...}`` escapes, ``(?<name>...)``, and ``$`` (end of text only in Rust, while
  Python's ``$`` also matches before a final newline).
* Python features Rust lacks are refused, so a pattern that Unleash rejects can never
  enable a flag here: lookaround, backreferences, atomic groups, possessive quantifiers,
  conditionals, comments.
* Rust features that Python's engine cannot express are refused too (Unicode property
  classes ``\\p{..}``, class set operations, verbose mode, ``U``/``R`` flags). Unleash would
  accept these; refusing is the safe side (the constraint is false) and is documented.
"""

from __future__ import annotations

import functools
import re
import warnings

__all__ = ["UnsupportedPattern", "compile_rust_pattern", "translate_rust_pattern"]


class UnsupportedPattern(ValueError):
    """The pattern is invalid in Rust's dialect, or cannot be expressed in Python's."""


_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\x0b\\x0c\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_FLAG_GROUP = re.compile(r"\(\?([imsuxUR-]*)([:)])")
_NAMED_GROUP = re.compile(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>")
_COUNTED = re.compile(r"\{(\d+)(,(\d*))?\}")
_BRACED_HEX = re.compile(r"\\[xuU]\{([0-9A-Fa-f]{1,8})\}")
_PLAIN_HEX = {"x": 2, "u": 4, "U": 8}
_ALLOWED_ESCAPES = set("AbBdDsSwWntrfva") | set("\\.+*?()|[]{}^$#&-~ /\"'`!%,:;<=>@_")


class _Scope:
    """One group level: whether ``$`` is multiline here, and flag groups opened inside it."""

    __slots__ = ("multiline", "opened")

    def __init__(self, multiline: bool) -> None:
        self.multiline = multiline
        self.opened: list[str] = []


def _python_flags(rust_flags: str) -> tuple[str, bool | None]:
    """Translate a Rust flag string; return Python's flags and the new multiline state."""
    if not rust_flags or rust_flags.endswith("-") or rust_flags.count("-") > 1:
        raise UnsupportedPattern(f"empty or dangling flag group (?{rust_flags})")
    on, _, off = rust_flags.partition("-")
    if set(on + off) & set("xUR") or "u" in off:
        raise UnsupportedPattern(f"flags {rust_flags!r} have no Python equivalent")
    on, off = on.replace("u", ""), off
    multiline: bool | None = None
    if "m" in on:
        multiline = True
    if "m" in off:
        multiline = False
    return (on + ("-" + off if off else "")), multiline


def _translate_class(pattern: str, start: int) -> tuple[str, int]:
    """Translate ``[...]`` starting at ``start``; return the Python class and the index after it."""
    i = start + 1
    negated = pattern.startswith("^", i)
    if negated:
        i += 1
    parts: list[str] = []
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
            if posix is None or posix.group(2) not in _POSIX_CLASSES:
                raise UnsupportedPattern("nested character classes are not supported")
            if posix.group(1):
                # A negated POSIX class can only stand alone: [[:^digit:]] == [^0-9].
                end = i + posix.end()
                if negated or parts or not pattern.startswith("]", end):
                    raise UnsupportedPattern("a negated POSIX class must stand alone")
                return f"[^{_POSIX_CLASSES[posix.group(2)]}]", end + 1
            parts.append(_POSIX_CLASSES[posix.group(2)])
            i += posix.end()
            continue
        if c in "&-~" and pattern.startswith(c * 2, i):
            raise UnsupportedPattern("character class set operations are not supported")
        if c == "\\":
            escape, i = _translate_escape(pattern, i, in_class=True)
            parts.append(escape)
            continue
        parts.append(c)
        i += 1
    return "[" + ("^" if negated else "") + "".join(parts) + "]", i


def _translate_escape(pattern: str, i: int, *, in_class: bool) -> tuple[str, int]:
    if i + 1 >= len(pattern):
        raise UnsupportedPattern("pattern ends with a lone backslash")
    c = pattern[i + 1]
    braced = _BRACED_HEX.match(pattern, i)
    if braced:
        return f"\\U{int(braced.group(1), 16):08x}", braced.end()
    if c in _PLAIN_HEX:
        digits = pattern[i + 2 : i + 2 + _PLAIN_HEX[c]]
        if len(digits) != _PLAIN_HEX[c] or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise UnsupportedPattern(f"malformed \\{c} escape")
        return pattern[i : i + 2 + _PLAIN_HEX[c]], i + 2 + _PLAIN_HEX[c]
    if c == "z" and not in_class:
        return "\\Z", i + 2
    if c in "<>" and not in_class:
        return ("\\b(?=\\w)" if c == "<" else "\\b(?<=\\w)"), i + 2
    if c not in _ALLOWED_ESCAPES or (in_class and c in "AbBz"):
        # Digits are backreferences or octal, both refused by Rust; \p, \k, \N, \Z, \G
        # and friends are not part of Rust's syntax or not expressible here.
        raise UnsupportedPattern(f"escape \\{c} is not supported")
    if c.isalnum() or c in "\\.+*?()|[]{}^$-#&~":
        return pattern[i : i + 2], i + 2
    return re.escape(c), i + 2


def translate_rust_pattern(pattern: str) -> str:
    """Rewrite a Rust ``regex`` pattern into a Python ``re`` pattern with the same matches."""
    out: list[str] = []
    scopes = [_Scope(multiline=False)]
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        scope = scopes[-1]
        if c == "\\":
            escape, i = _translate_escape(pattern, i, in_class=False)
            out.append(escape)
        elif c == "[":
            cls, i = _translate_class(pattern, i)
            out.append(cls)
        elif c == "(":
            i = _open_group(pattern, i, out, scopes)
        elif c == ")":
            if len(scopes) == 1:
                raise UnsupportedPattern("unbalanced parenthesis")
            out.append(")" * len(scope.opened))
            scopes.pop()
            out.append(")")
            i += 1
        elif c == "|":
            out.append(")" * len(scope.opened) + "|" + "".join(scope.opened))
            i += 1
        elif c == "$":
            out.append("$" if scope.multiline else "\\Z")
            i += 1
        elif c == "{":
            counted = _COUNTED.match(pattern, i)
            if counted is None:
                raise UnsupportedPattern("malformed counted repetition")
            out.append(counted.group(0))
            i = counted.end()
            i = _refuse_possessive(pattern, i)
        elif c in "*+?":
            out.append(c)
            i += 1
            if pattern.startswith("?", i):
                out.append("?")
                i += 1
            else:
                i = _refuse_possessive(pattern, i)
        else:
            out.append(c)
            i += 1
    if len(scopes) != 1:
        raise UnsupportedPattern("unclosed group")
    out.append(")" * len(scopes[0].opened))
    return "".join(out)


def _refuse_possessive(pattern: str, i: int) -> int:
    if pattern.startswith("+", i):
        raise UnsupportedPattern("possessive quantifiers are not supported")
    if pattern.startswith("?", i):
        return i  # lazy marker after a counted repetition, handled by the caller's next pass
    return i


def _open_group(pattern: str, i: int, out: list[str], scopes: list[_Scope]) -> int:
    scope = scopes[-1]
    if not pattern.startswith("(?", i):
        scopes.append(_Scope(scope.multiline))
        out.append("(")
        return i + 1
    named = _NAMED_GROUP.match(pattern, i)
    if named:
        scopes.append(_Scope(scope.multiline))
        out.append(f"(?P<{named.group(1)}>")
        return named.end()
    if pattern.startswith("(?:", i):
        scopes.append(_Scope(scope.multiline))
        out.append("(?:")
        return i + 3
    flags = _FLAG_GROUP.match(pattern, i)
    if flags is None:
        # Lookaround, atomic groups, backreferences by name, conditionals, comments.
        raise UnsupportedPattern(f"group syntax {pattern[i : i + 4]!r} is not supported")
    python_flags, multiline = _python_flags(flags.group(1))
    opener = f"(?{python_flags}:" if python_flags else "(?:"
    if flags.group(2) == ":":
        scopes.append(_Scope(scope.multiline if multiline is None else multiline))
        out.append(opener)
    else:
        # Rust applies a bare flag group to the rest of the enclosing group; Python 3.11 only
        # allows it at the very start, so open a scoped group that closes with the enclosing one.
        if multiline is not None:
            scope.multiline = multiline
        scope.opened.append(opener)
        out.append(opener)
    return flags.end()


@functools.lru_cache(maxsize=1024)
def compile_rust_pattern(pattern: str, *, case_insensitive: bool = False) -> re.Pattern[str]:
    """Compile a Rust-dialect pattern; raise `UnsupportedPattern` if Unleash would not match it."""
    translated = translate_rust_pattern(pattern)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(translated, re.IGNORECASE if case_insensitive else 0)
    except (re.error, OverflowError, RecursionError) as exc:
        raise UnsupportedPattern(str(exc)) from exc
