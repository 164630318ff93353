"""REGEX constraints mean what they mean in Unleash's engine (Rust's regex crate)."""

from __future__ import annotations

import pytest

from flagcore.regex_dialect import UnsupportedPattern, compile_rust_pattern


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^[[:alpha:]]+$", "AlphaBeta", True),
        ("^[[:alpha:]]+$", "Alpha1", False),
        ("^[[:^digit:]]+$", "abc", True),
        ("^[[:^digit:]]+$", "ab1", False),
        ("^[x[:digit:]]+$", "x1x2", True),
        ("^(?i)abc$", "AbC", True),
        ("^ab(?i)c$", "abC", True),
        ("^ab(?i)c$", "ABc", False),
        # A mid-pattern flag covers the rest of its group, across alternatives, and no further.
        ("^(a(?i)b|c)d$", "aBd", True),
        ("^(a(?i)b|c)d$", "Cd", True),
        ("^(a(?i)b|c)d$", "abD", False),
        ("(?m)^foo$", "x\nfoo\ny", True),
        ("^foo$", "x\nfoo\ny", False),
        # Rust's $ is the end of the text; Python's would also match before a final newline.
        ("^foo$", "foo\n", False),
        ("foo\\z", "foo", True),
        ("^(?s)a.b$", "a\nb", True),
        ("^a.b$", "a\nb", False),
        ("^(?<word>\\w+)$", "hello", True),
        ("^\\x{263A}$", "\u263a", True),
        ("\\bcat\\b", "a cat b", True),
        ("\\bcat\\b", "concatenate", False),
        ("^a{2,4}?$", "aaa", True),
        ("\\<cat\\>", "the cat sat", True),
        ("\\<cat\\>", "bobcat", False),
    ],
)
def test_rust_patterns_match_as_in_unleash(pattern: str, text: str, matches: bool) -> None:
    assert (compile_rust_pattern(pattern).search(text) is not None) is matches


@pytest.mark.parametrize(
    "pattern",
    [
        "(regex",
        "a)",
        "^(?=a)b$",
        "^(?!a)b$",
        "(?<=a)b",
        "(?<!a)b",
        "^(a)\\1$",
        "(?P<x>a)(?P=x)",
        "(?>a)",
        "a*+",
        "a++",
        "a{2}+",
        "(?#comment)a",
        "\\Z",
        "x{abc}",
        "(?)a",
        "\\",
    ],
)
def test_patterns_unleash_rejects_are_refused(pattern: str) -> None:
    with pytest.raises(UnsupportedPattern):
        compile_rust_pattern(pattern)


@pytest.mark.parametrize(
    "pattern", ["[a-z&&[^aeiou]]", "[[a]]", "\\p{Greek}", "(?x) a b", "(?U)a*"]
)
def test_rust_features_python_cannot_express_are_refused_not_misread(pattern: str) -> None:
    # Unleash accepts these; refusing makes the constraint false instead of matching wrongly.
    with pytest.raises(UnsupportedPattern):
        compile_rust_pattern(pattern)


def test_case_insensitive_flag_of_the_constraint_applies_to_the_whole_pattern() -> None:
    assert compile_rust_pattern("^abc$", case_insensitive=True).search("ABC")
    assert not compile_rust_pattern("^abc$").search("ABC")
