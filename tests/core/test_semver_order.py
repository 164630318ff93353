"""SEMVER_* ordering matches SemVer 2.0 precedence (the semver package is the oracle)."""

from __future__ import annotations

import semver
from hypothesis import given
from hypothesis import strategies as st

from flagcore.operators import semver_key

_NUMBER = st.integers(min_value=0, max_value=30).map(str)
_IDENTIFIER = st.one_of(_NUMBER, st.sampled_from(["alpha", "beta", "rc", "a1", "x-y", "0a", "9"]))
_VERSION = st.builds(
    lambda core, pre, build: (
        ".".join(core)
        + (f"-{'.'.join(pre)}" if pre else "")
        + (f"+{'.'.join(build)}" if build else "")
    ),
    st.lists(_NUMBER, min_size=3, max_size=3),
    st.lists(_IDENTIFIER, max_size=3),
    st.lists(st.sampled_from(["build", "1", "sha"]), max_size=2),
)


@given(_VERSION, _VERSION)
def test_precedence_matches_semver_ignoring_build_metadata(left: str, right: str) -> None:
    ours_left, ours_right = semver_key(left), semver_key(right)
    assert ours_left is not None
    assert ours_right is not None
    expected = (
        semver.Version.parse(left)
        .replace(build=None)
        .compare(semver.Version.parse(right).replace(build=None))
    )
    assert ((ours_left > ours_right) - (ours_left < ours_right)) == expected


_NEAR_VERSIONS = st.one_of(
    st.text(max_size=20),
    _VERSION,
    _VERSION.map(lambda v: "v" + v),
    _VERSION.map(lambda v: v + "."),
    _VERSION.map(lambda v: " " + v),
    _VERSION.map(lambda v: v.replace(".", ".0", 1)),
    _VERSION.map(lambda v: v.split("+")[0] + "-"),
)


@given(_NEAR_VERSIONS)
def test_only_valid_versions_parse(text: str) -> None:
    try:
        semver.Version.parse(text)
        valid = text.isascii()
    except ValueError:
        valid = False
    assert (semver_key(text) is not None) == valid
