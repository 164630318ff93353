"""The body the edge posts to Unleash's /api/client/metrics/bulk (bulkMetricsSchema)."""

from __future__ import annotations

from flagcore_edge.forwarding import HeldReport, bulk_body

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
