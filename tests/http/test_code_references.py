"""Code references (issue 32): ``flagcore scan --upload`` against a real server, the
references read back per flag, each source replaced whole, bad bodies refused with paths."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flagcore.service import Service
from flagcore_cli.main import main
from tests.http.conftest import ADMIN, CLIENT, Api

REPO = Path(__file__).parent.parent / "data" / "scan-repo"


def _reference(flag: str, line: int = 1, **extra: Any) -> dict[str, Any]:
    return {"flag": flag, "file": "app.py", "line": line, "call": "is_enabled", **extra}


async def test_an_uploaded_scan_is_read_back_per_flag_with_its_source(api: Api) -> None:
    body = {"source": "shop", "references": [_reference("checkout", 3), _reference("other", 9)]}
    stored = await api.json("POST", "/api/admin/code-references", json=body)
    assert stored["source"] == "shop"
    assert (stored["references"], stored["flags"]) == (2, 2)
    assert stored["scannedAt"].endswith("Z")
    found = await api.json("GET", "/api/admin/code-references/checkout")
    assert found == {
        "flag": "checkout",
        "references": [{"source": "shop", "file": "app.py", "line": 3, "call": "is_enabled"}],
    }
    listed = await api.json("GET", "/api/admin/code-references")
    assert [(s["source"], s["references"]) for s in listed] == [("shop", 2)]


async def test_the_next_scan_of_a_source_replaces_its_references_and_others_stay(
    api: Api,
) -> None:
    for source in ("shop", "admin"):
        body = {"source": source, "references": [_reference("checkout", 3)]}
        await api.json("POST", "/api/admin/code-references", json=body)
    await api.json("POST", "/api/admin/code-references", json={"source": "shop", "references": []})
    found = await api.json("GET", "/api/admin/code-references/checkout")
    assert [r["source"] for r in found["references"]] == ["admin"]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"references": []}, "$.source"),
        ({"source": "shop"}, "$.references"),
        ({"source": " ", "references": []}, "$.source"),
        ({"source": "shop", "references": [_reference("x", 0)]}, "$.references[0].line"),
        ({"source": "shop", "references": [_reference("")]}, "$.references[0].flag"),
        (
            {"source": "shop", "references": [_reference("x", file="a" * 1001)]},
            "$.references[0].file",
        ),
    ],
)
async def test_a_bad_scan_is_refused_with_its_path_and_nothing_is_kept(
    api: Api, body: dict[str, Any], path: str
) -> None:
    answer = await api.json("POST", "/api/admin/code-references", status=400, json=body)
    assert path in [detail["path"] for detail in answer["details"]], answer
    assert await api.json("GET", "/api/admin/code-references") == []


async def test_more_references_than_the_bound_are_refused(api: Api) -> None:
    body = {"source": "shop", "references": [_reference("x", i + 1) for i in range(10_001)]}
    answer = await api.json("POST", "/api/admin/code-references", status=400, json=body)
    assert answer["name"] == "ExceedsLimitError"
    assert answer["details"][0]["path"] == "$.references"
    assert await api.json("GET", "/api/admin/code-references") == []


async def test_a_client_token_cannot_upload(api: Api) -> None:
    body = {"source": "shop", "references": []}
    answer = await api.request("POST", "/api/admin/code-references", json=body, token=CLIENT)
    assert answer.status in (401, 403)


async def test_flagcore_scan_reads_the_servers_flags_and_uploads_its_references(
    api: Api, service: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("new-checkout", "checkout-colour", "dark-mode", "unused"):
        service.flags.create_flag("default", name)
    url = str(api.client.make_url("/")).rstrip("/")
    argv = ["scan", str(REPO), "--url", url, "--token", ADMIN, "--fail-on-unknown"]
    status = await asyncio.to_thread(main, [*argv, "--upload", "web-shop"])
    out = capsys.readouterr().out
    assert status == 3  # fast-payments, kept-generated and new-chekout are no flags here
    assert "flags no code references: 1\n  unused\n" in out
    found = await api.json("GET", "/api/admin/code-references/new-checkout")
    assert {(r["source"], r["file"], r["line"]) for r in found["references"]} >= {
        ("web-shop", "py/checkout.py", 9),
        ("web-shop", "go/main.go", 11),
    }
    assert len(found["references"]) == 5


async def test_flagcore_scan_with_a_client_token_reads_the_flag_names_it_can_see(
    api: Api, service: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    service.flags.create_flag("default", "new-checkout")
    url = str(api.client.make_url("/")).rstrip("/")
    status = await asyncio.to_thread(main, ["scan", str(REPO), "--url", url, "--token", CLIENT])
    out = capsys.readouterr().out
    assert status == 0
    assert "names in code that no flag has: 5\n" in out
    assert "flags no code references: 0\n" in out
