"""Rust's verbose flag (``x``) for REGEX constraints, which RE2 lacks: the pattern is
rewritten without what the flag makes Rust ignore, and without the flag itself.

Under ``x`` Rust's parser skips white space (Unicode's, ``char::is_whitespace``) and
``#`` comments up to the end of the line between any two pieces of a pattern, inside
character classes and counted repetitions too (``[a b]`` is ``[ab]``, ``a{1 2}`` is
``a{12}``), but never right after a backslash (``\\ `` and ``\\#`` are the characters) nor
inside a group's flags or name. The flag has the scope of any flag: ``(?x)`` to the end of
its group, ``(?x:…)`` inside, ``(?-x)`` turns it off. Stripping changes nothing else, so
the result means in the non-verbose dialect what the pattern meant in the verbose one.
"""

from __future__ import annotations

import re

__all__ = ["strip_verbose"]

_WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_FLAGS = re.compile(r"\?([A-Za-z-]*)([:)])")
_POSIX = re.compile(r"\[:\^?[A-Za-z]*:\]")


class _Stripper:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.out: list[str] = []
        self.verbose = False
        self.frames: list[bool] = []  # the flag as each open group found it

    def skip(self, i: int) -> int:
        """Past white space and comments, when the flag is on."""
        pattern, n = self.pattern, len(self.pattern)
        while self.verbose and i < n:
            if pattern[i] in _WHITE_SPACE:
                i += 1
            elif pattern[i] == "#":
                end = pattern.find("\n", i)
                i = n if end < 0 else end + 1
            else:
                break
        return i

    def run(self) -> str:
        pattern, n, i = self.pattern, len(self.pattern), 0
        repeated = False  # the last piece written is ``*``, ``+`` or ``?``
        while True:
            skipped = self.skip(i)
            spaced, i = skipped > i, skipped
            if i >= n:
                return "".join(self.out)
            c = pattern[i]
            if c == "?" and repeated and spaced:
                # ``a+ ?`` is ``(a+)?`` in Rust: only a counted repetition's laziness may
                # come after white space. ``{0,1}`` is that ``?`` without the lazy reading.
                self.out.append("{0,1}")
                i += 1
                continue
            repeated = c in "*+?"
            if c == "\\":
                self.out.append(pattern[i : i + 2])
                i += 2
            elif c == "[":
                i = self.bracketed(i)
            elif c == "(":
                i = self.group(i)
            elif c == ")":
                self.out.append(c)
                if self.frames:
                    self.verbose = self.frames.pop()
                i += 1
            else:
                self.out.append(c)
                i += 1

    def group(self, i: int) -> int:
        pattern = self.pattern
        self.out.append("(")
        i = self.skip(i + 1)
        if pattern.startswith(("?P<", "?<"), i):  # a name is read as written
            end = pattern.find(">", i)
            end = len(pattern) if end < 0 else end + 1
            self.out.append(pattern[i:end])
            self.frames.append(self.verbose)
            return end
        if not pattern.startswith("?", i):
            self.frames.append(self.verbose)
            return i
        flags = _FLAGS.match(pattern, i)
        if flags is None:  # not flags (lookaround, ``(? i)``): as written, for the translator
            end = min(
                (j for j in (pattern.find(":", i), pattern.find(")", i)) if j >= 0), default=-1
            )
            end = len(pattern) if end < 0 else end + 1
            self.out.append(pattern[i:end])
            self.frames.append(self.verbose)
            return end
        letters, closer = flags.groups()
        on, _, off = letters.partition("-")
        verbose = self.verbose if "x" not in letters else "x" in on
        kept_on, kept_off = on.replace("x", ""), off.replace("x", "")
        # Without x, or malformed (``(?)``, ``(?xx)``, ``(?x-)``): as written, for the
        # translator to read or refuse.
        as_written = (
            "x" not in letters or len(set(letters)) != len(letters) or letters.endswith("-")
        )
        kept = letters if as_written else kept_on + ("-" + kept_off if kept_off else "")
        if closer == ")":
            # ``(?x)`` alone becomes ``(?u)`` (Unicode, on anyway): still a flag group, after
            # which a repetition has nothing to repeat, as in Rust (``a(?x)*`` is refused).
            self.out.append(f"?{kept if as_written else kept or 'u'})")
            self.verbose = verbose
        else:
            self.out.append(f"?{kept}:")
            self.frames.append(self.verbose)
            self.verbose = verbose
        return flags.end()

    def bracketed(self, i: int) -> int:
        """Copy a class (its nested classes too), stripped; the index after it."""
        pattern, n = self.pattern, len(self.pattern)
        i = self.open_class(i)
        depth = 1
        while True:
            i = self.skip(i)
            if i >= n:
                return i  # unclosed: the translator refuses it
            c = pattern[i]
            if c == "\\":
                self.out.append(pattern[i : i + 2])
                i += 2
            elif c == "[":
                posix = _POSIX.match(pattern, i)
                if posix is not None:
                    self.out.append(posix.group(0))
                    i = posix.end()
                else:
                    i = self.open_class(i)
                    depth += 1
            elif c == "]":
                self.out.append(c)
                i += 1
                depth -= 1
                if depth == 0:
                    return i
            else:
                self.out.append(c)
                i += 1

    def open_class(self, i: int) -> int:
        """``[``, ``^``, leading ``-`` and a first ``]``, which are literal, as Rust reads them."""
        pattern = self.pattern
        self.out.append("[")
        i = self.skip(i + 1)
        if pattern.startswith(":", i):  # ``[ :alpha:]`` is no POSIX class, nor once stripped
            self.out.append("\\:")
            i += 1
        if pattern.startswith("^", i):
            self.out.append("^")
            i = self.skip(i + 1)
        dashes = False
        while pattern.startswith("-", i):
            self.out.append("-")
            dashes = True
            i = self.skip(i + 1)
        if not dashes and pattern.startswith("]", i):
            self.out.append("]")
            i += 1
        return i


def strip_verbose(pattern: str) -> str:
    """``pattern`` without what Rust's ``x`` flag makes it ignore, and without the flag."""
    if "x" not in pattern:
        return pattern
    return _Stripper(pattern).run()
