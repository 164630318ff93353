"""An SDK's registration ``started``: an RFC 3339 time (nanoseconds kept to microseconds)
or a 400 naming ``$.started``, whatever text is sent; never a 500."""

from __future__ import annotations

import pytest

from tests.http.conftest import CLIENT, Api


@pytest.mark.parametrize(
    "started", ["\u00e70J\u009e\u0000.:D\u00b4\u0086", "x.", "2026.1234567.", ".........."]
)
async def test_a_started_that_is_no_time_is_a_400_naming_it(api: Api, started: str) -> None:
    """Found by schemathesis: text with a dot once made the nanosecond retry loop forever."""
    body = {"appName": "a", "interval": 1000, "started": started, "strategies": []}
    refused = await api.json("POST", "/api/client/register", 400, json=body, token=CLIENT)
    assert [d["path"] for d in refused["details"]] == ["$.started"]


async def test_a_started_with_nanoseconds_is_accepted(api: Api) -> None:
    body = {
        "appName": "a",
        "interval": 1000,
        "started": "2026-11-22T08:23:08.951132123Z",
        "strategies": [],
    }
    await api.json("POST", "/api/client/register", 202, json=body, token=CLIENT)
