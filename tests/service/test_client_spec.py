"""Which payload format an SDK gets from its ``Unleash-Client-Spec`` header."""

from __future__ import annotations

import pytest

from flagcore.service import client_features_format


@pytest.mark.parametrize(
    ("client_spec", "format_"),
    [
        (None, 1),
        ("4.1.9", 1),
        ("4.2.0-beta.1", 1),  # a pre-release comes before its release
        ("4.2.0", 2),
        (" 4.2.0 ", 2),
        ("5.1.9+build.7", 2),
        ("garbage", 1),
        ("5", 1),
        ("", 1),
    ],
)
def test_segments_by_id_from_spec_4_2_0_and_inlined_for_anything_else(
    client_spec: str | None, format_: int
) -> None:
    assert client_features_format(client_spec) == format_
