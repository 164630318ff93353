"""Safe-to-archive suggestions (issue 32): a flag is suggested only when the SDK reports
the server keeps (none, or one answer everywhere) and the code scans agree."""

from __future__ import annotations

from typing import Any

from flagcore.service import Service
from tests.http.conftest import ALL_PROJECTS_CLIENT, CLIENT, Api, bucket_time

SUGGESTIONS = "/api/admin/projects/default/safe-to-archive"


def _report(toggles: dict[str, Any]) -> dict[str, Any]:
    bucket = {"start": bucket_time(), "toggles": toggles}
    return {"appName": "shop", "instanceId": "i-1", "bucket": bucket}


async def _suggested(api: Api) -> dict[str, list[str]]:
    answer = await api.json("GET", SUGGESTIONS)
    return {s["feature"]: s["reasons"] for s in answer["suggestions"]}


async def test_sdk_reports_and_code_scans_must_agree(api: Api, service: Service) -> None:
    for name in ("unused", "always-on", "mixed", "in-code"):
        service.flags.create_flag("default", name)
    dev = _report({"always-on": {"yes": 5}, "mixed": {"yes": 1}, "in-code": {"yes": 2}})
    prod = _report({"always-on": {"yes": 3}, "mixed": {"no": 1}})
    await api.json("POST", "/api/client/metrics", 202, token=CLIENT, json=dev)
    await api.json("POST", "/api/client/metrics", 202, token=ALL_PROJECTS_CLIENT, json=prod)

    suggested = await _suggested(api)
    assert sorted(suggested) == ["always-on", "in-code", "unused"]
    assert suggested["unused"] == [
        "no SDK evaluation in the metrics kept",
        "no code scan was sent: the code was not weighed",
    ]
    assert suggested["always-on"][0] == "always on in the 8 evaluations kept, everywhere"

    scan = {
        "source": "shop",
        "references": [{"flag": "in-code", "file": "app.py", "line": 3, "call": "is_enabled"}],
    }
    await api.json("POST", "/api/admin/code-references", json=scan)
    suggested = await _suggested(api)
    assert sorted(suggested) == ["always-on", "unused"]  # the code still uses in-code
    assert suggested["unused"][1] == "no reference in the last scans of 1 sources"


async def test_an_unknown_project_is_a_404(api: Api) -> None:
    answer = await api.json("GET", "/api/admin/projects/nope/safe-to-archive", 404)
    assert answer["message"] == 'there is no project "nope"'
