"""The bodies the edge posts to Unleash's /api/client/metrics/bulk (bulkMetricsSchema), and
what a bulk body becomes for an upstream without that path."""

from __future__ import annotations

import json

from flagcore_edge.forwarding import BULK_PATH, BULK_POST_BYTES, HeldReport, bulk_body, split_bulk

TOKEN = "default:production.secret"


def test_registrations_become_applications_and_toggles_become_rows_of_the_tokens_environment() -> (
    None
):
    registration = {"appName": "shop", "instanceId": "i1", "interval": 10000, "strategies": []}
    report = {
        "appName": "shop",
        "instanceId": "i1",
        "bucket": {
            "start": "2026-11-25T08:00:00Z",
            "stop": "2026-11-25T08:01:00Z",
            "toggles": {
                "checkout": {"yes": 3, "no": 1, "variants": {"blue": 2}},
                "search": {"yes": 0, "no": 5},
            },
        },
    }
    body = bulk_body(
        [
            HeldReport("/client/register", TOKEN, registration, "production"),
            HeldReport("/client/metrics", TOKEN, report, "production"),
        ]
    )
    assert body == {
        "applications": [{**registration, "environment": "production"}],
        "metrics": [
            {
                "featureName": "checkout",
                "appName": "shop",
                "environment": "production",
                "timestamp": "2026-11-25T08:00:00Z",
                "yes": 3,
                "no": 1,
                "variants": {"blue": 2},
            },
            {
                "featureName": "search",
                "appName": "shop",
                "environment": "production",
                "timestamp": "2026-11-25T08:00:00Z",
                "yes": 0,
                "no": 5,
                "variants": {},
            },
        ],
    }


def _row(n: int) -> dict[str, object]:
    return {
        "featureName": f"flag-{n:05d}",
        "appName": "shop",
        "environment": "production",
        "timestamp": "2026-11-25T08:00:00Z",
        "yes": n,
        "no": 0,
        "variants": {},
    }


def test_a_big_bulk_body_is_split_into_posts_unleash_takes_and_nothing_is_lost_or_doubled() -> None:
    rows = [_row(n) for n in range(3000)]  # about 400 kB: Unleash reads 100 kB a body
    body = {"applications": [{"appName": "shop", "instanceId": "i1"}], "metrics": rows}
    parts = split_bulk(body, BULK_POST_BYTES)
    assert len(parts) > 1
    for part in parts:
        assert len(json.dumps(part, separators=(",", ":")).encode()) <= BULK_POST_BYTES
    assert [row for part in parts for row in part["metrics"]] == rows
    assert [app for part in parts for app in part["applications"]] == body["applications"]
    assert split_bulk({"applications": [], "metrics": []}, BULK_POST_BYTES) == []


def test_for_an_upstream_without_bulk_a_bulk_body_is_sent_as_registrations_and_reports() -> None:
    body = {
        "applications": [{"appName": "shop", "instanceId": "i1", "environment": "production"}],
        "metrics": [
            {**_row(1), "variants": {"blue": 1}},
            {**_row(1), "yes": 2, "variants": {"blue": 2}},
            _row(2),
        ],
        "seenTokens": ["default:production.other"],
    }
    posts = HeldReport(BULK_PATH, TOKEN, body, "production").posts()
    assert [path for path, _body in posts] == ["/client/register", "/client/metrics"]
    registration = posts[0][1]
    assert registration["interval"] == 0
    assert registration["strategies"] == []
    assert registration["started"]
    assert posts[1][1] == {
        "appName": "shop",
        "bucket": {
            "start": "2026-11-25T08:00:00Z",
            "stop": "2026-11-25T08:00:00Z",
            "toggles": {
                "flag-00001": {"yes": 3, "no": 0, "variants": {"blue": 3}},
                "flag-00002": {"yes": 2, "no": 0, "variants": {}},
            },
        },
    }
