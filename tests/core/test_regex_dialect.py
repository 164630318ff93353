"""REGEX constraints mean what they mean in Unleash's engine (Rust's regex crate)."""

from __future__ import annotations

import time

import pytest

from flagcore import Engine
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
        # Rust's shorthand classes are Unicode classes (RE2's own are ASCII).
        ("^\\w+$", "straße", True),
        ("^\\d+$", "\u0663\u0664", True),
        ("^\\s$", "\u00a0", True),
        ("^[\\w-]+$", "ünï-1", True),
        ("^\\W$", "ß", False),
        ("^[x\\W]+$", "x!x", True),
        ("^\\D$", "\u0663", False),
        ("\\p{Greek}", "αβγ", True),
        # Escapes RE2 spells otherwise, and repetitions Rust stacks.
        ("^\\u0041\\U{42}$", "AB", True),
        ("^a\\_b$", "a_b", True),
        ("^a**$", "aaa", True),
        ("^(?:ab){1}{2}$", "abab", True),
        ("^a*+$", "", True),
    ],
)
def test_rust_patterns_match_as_in_unleash(pattern: str, text: str, matches: bool) -> None:
    assert compile_rust_pattern(pattern)(text) is matches


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
        "(?#comment)a",
        # RE2 would read these (as text, octal, a byte, a literal run); Rust refuses them.
        "x{abc}",
        "a{",
        "a{,3}",
        "\\0",
        "\\141",
        "\\C",
        "\\Qa\\E",
        "\\p{^Greek}",
        "\\x{D800}",
        "(?i-)a",
        "\\Z",
        "(?)a",
        "\\",
    ],
)
def test_patterns_unleash_rejects_are_refused(pattern: str) -> None:
    with pytest.raises(UnsupportedPattern):
        compile_rust_pattern(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "\\p{Letter}",
        "[\\pL&&\\p{Uppercase}]",
        "(?R)a",
        "(?-u)a",
        "\\<cat\\>",
        "\\b{start}cat",
    ],
)
def test_rust_features_python_cannot_express_are_refused_not_misread(pattern: str) -> None:
    # Unleash accepts these; refusing makes the constraint false instead of matching wrongly.
    with pytest.raises(UnsupportedPattern):
        compile_rust_pattern(pattern)


# Each answer was probed on yggdrasil 2.0.0 (regex 1.13); tests/differential crosses them.
@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        # Verbose mode: white space and comments outside escapes are not part of the pattern.
        ("(?x) a b c ", "abc", True),
        ("(?x) a b c ", "a b c", False),
        ("(?x)^a # a comment\n b$", "ab", True),
        ("(?x)a\\ b", "a b", True),
        ("(?x)a\\#b", "a#b", True),
        ("(?x)[a b]+$", "ab ", False),
        ("(?x)^a{1 2}$", "a" * 12, True),
        ("(?ix) A B", "ab", True),
        # Scoped like any flag: to the end of its group, or inside (?x:…), or off with (?-x).
        ("(?x:a b)c d", "abc d", True),
        ("a b(?x) c d", "a bcd", True),
        ("^(a(?x) b| c) d$", "c d", True),
        ("(?x)(?-x: )a", " a", True),
        # Only a counted repetition may be made lazy across white space: a+ ? is (a+)?.
        ("(?x)^a+ ?$", "", True),
        ("(?x)^a{1} ?$", "", False),
        # [: alpha:] is no POSIX class but a class of its letters, verbose or not.
        ("(?x)^[[: alpha:]]+$", ":pal", True),
        ("(?x)[[: alpha:]]", "A", False),
        # Rust escapes any ASCII character that is no letter or digit to itself.
        ("a\\\tb", "a\tb", True),
        # Rust reads white space around a repetition's numbers, verbose or not.
        ("^a{ 2 }$", "aa", True),
        # Class set operations and nested classes.
        ("^[a-z&&[^aeiou]]+$", "bcdf", True),
        ("^[a-z&&[^aeiou]]+$", "abc", False),
        ("[a-y&&xyz]", "z", False),
        ("^[0-9--4]+$", "01234", False),
        ("^[a-g~~b-h]+$", "ah", True),
        ("^[a-g~~b-h]+$", "b", False),
        ("[a&&b]", "ab", False),
        ("^[a[0-9]]+$", "a0", True),
        ("[^[^a]]", "a", True),
        ("[[:foo:]]", "f", True),
        ("^[\\pL--\\p{Greek}]+$", "abc", True),
        ("^[\\pL--\\p{Greek}]+$", "αβγ", False),
        ("[\\w&&\\d]", "\u0663", True),
        ("^[^\\W]+$", "straße", True),
        ("[\\p{Greek}&&\\p{Ll}]", "Ω", False),
        # Under (?i) both sides are folded first: k, K and the Kelvin sign all go.
        ("(?i)^[a-z--k]+$", "\u212a", False),
        ("(?i)^[a-z--k]+$", "abc", True),
        ("(?i)[^k]", "K", False),
    ],
)
def test_forms_re2_lacks_are_translated_to_unleash_answers(
    pattern: str, text: str, matches: bool
) -> None:
    assert compile_rust_pattern(pattern)(text) is matches


@pytest.mark.parametrize(
    "pattern",
    [
        "(?x)(? :a)",  # no white space inside a flag group, verbose or not
        "(?x)(?P<a b>c)",  # nor inside a group's name
        "a(?x)*",  # a flag group has nothing to repeat, even once stripped
        "(?x)(?)",
        "[z-a&&a]",  # a range backwards, wherever it is
        "[a&&\\bx]",
        "[\\d-z]",  # a class cannot start a range
        "[\\<]",
        "a{2, }",
        "a{99999999999}",
    ],
)
def test_malformed_forms_are_refused_as_rust_refuses_them(pattern: str) -> None:
    with pytest.raises(UnsupportedPattern):
        compile_rust_pattern(pattern)


def test_a_constraint_folding_case_folds_class_set_operations_too() -> None:
    assert not compile_rust_pattern("^[a-z--k]+$", case_insensitive=True)("K")
    assert compile_rust_pattern("^[a-z--k]+$")("K") is False
    assert compile_rust_pattern("^[a-z--k]+$")("j")


def test_class_set_operations_are_bounded_and_match_in_linear_time() -> None:
    many = "[" + "".join(f"[\\p{{Greek}}--{chr(97 + i % 26)}]" for i in range(40)) + "]"
    spread = "".join(f"[\\p{{Greek}}--{chr(97 + i % 26)}]" for i in range(40))
    for pattern in (many, spread):  # each computed set costs a search: 32 in a pattern
        with pytest.raises(UnsupportedPattern):
            compile_rust_pattern(pattern)
    matches = compile_rust_pattern("^([a-z&&[^aeiou]]+)+$")
    started = time.perf_counter()
    assert not matches("b" * 50_000 + "!")
    assert time.perf_counter() - started < 1.0


def test_case_insensitive_flag_of_the_constraint_applies_to_the_whole_pattern() -> None:
    assert compile_rust_pattern("^abc$", case_insensitive=True)("ABC")
    assert not compile_rust_pattern("^abc$")("ABC")


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("^(a+)+$", "a" * 50_000 + "!"),
        ("^(a|aa)+$", "a" * 50_000 + "!"),
        ("(x+x+)+y", "x" * 50_000),
        ("^(\\w+\\s?)*$", "word " * 10_000 + "!"),
    ],
)
def test_catastrophic_patterns_answer_in_linear_time(pattern: str, text: str) -> None:
    # With backtracking, ^(a+)+$ took 2.9 s at 26 characters and doubled with each more;
    # these texts are 2,000x longer. A linear matcher takes milliseconds; the bound is
    # generous for a loaded machine and still 10^1000 times below backtracking.
    matches = compile_rust_pattern(pattern)
    started = time.perf_counter()
    assert not matches(text)
    assert time.perf_counter() - started < 1.0


def test_a_catastrophic_regex_constraint_evaluates_quickly_through_the_engine() -> None:
    payload = {
        "version": 2,
        "features": [
            {
                "name": "catastrophic",
                "enabled": True,
                "strategies": [
                    {
                        "name": "default",
                        "constraints": [
                            {"contextName": "userId", "operator": "REGEX", "value": "^(a+)+$"}
                        ],
                    }
                ],
            }
        ],
    }
    engine = Engine.from_client_features(payload)
    started = time.perf_counter()
    assert not engine.is_enabled("catastrophic", {"userId": "a" * 100_000 + "!"})
    assert engine.is_enabled("catastrophic", {"userId": "a" * 100_000})
    assert time.perf_counter() - started < 1.0


def test_a_text_with_a_lone_surrogate_is_searched_without_raising() -> None:
    assert not compile_rust_pattern("^a$")("\ud800")
