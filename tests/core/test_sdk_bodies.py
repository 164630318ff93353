"""What SDKs post, read from rows (`flagcore.wire.sdk_bodies`): every problem of a
registration named at once with its path, the dialects real SDKs send accepted, and the
published schema made from the same rows as the reader."""

from __future__ import annotations

import datetime as dt

import pytest

from flagcore.errors import InvalidInput
from flagcore.wire import (
    METRICS_SCHEMA,
    REGISTRATION_SCHEMA,
    read_metrics_body,
    read_registration,
    registration_started,
)


def test_a_registration_names_every_missing_or_mistyped_key_at_once() -> None:
    with pytest.raises(InvalidInput) as refused:
        read_registration({"appName": "", "interval": -1, "instanceId": 7}, "refused")
    assert refused.value.message == "refused"
    assert [(d.path, d.message) for d in refused.value.details] == [
        ("$.appName", "appName must be a non-empty string"),
        ("$.interval", "interval must be a number from 0 to 2147483647"),
        ("$.started", "started is required: an RFC 3339 time or a number"),
        ("$.strategies", "strategies is required: a list of strings"),
        ("$.instanceId", "instanceId must be a string"),
    ]


def test_a_registration_takes_what_real_sdks_send_and_ignores_keys_it_does_not_name() -> None:
    body = {
        "appName": "checkout",
        "interval": 15000.0,
        "started": 1_700_000_000_000,
        "strategies": ["default"],
        "platformName": "python",
        "yggdrasilVersion": None,
    }
    registration = read_registration(body, "refused")
    assert (registration.app_name, registration.interval, registration.instance_id) == (
        "checkout",
        15000.0,
        None,
    )
    assert registration_started(registration.started) == dt.datetime(
        2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC
    )


def test_a_metrics_report_keeps_its_counts_as_sent_and_reads_nanosecond_times() -> None:
    toggles = {"f": {"yes": 1, "no": 0, "variants": {"a": 1}}}
    body = {
        "appName": "checkout",
        "bucket": {"start": "2026-01-02T03:04:05.123456789Z", "stop": None, "toggles": toggles},
    }
    report = read_metrics_body(body)
    assert report.toggles is toggles
    assert report.start == dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
    assert (report.instance_id, report.sdk_version) == (None, None)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "$.bucket"),
        ({"bucket": []}, "$.bucket"),
        ({"bucket": {"toggles": []}}, "$.bucket.toggles"),
        ({"bucket": {}, "instanceId": 1}, "$.instanceId"),
        ({"bucket": {"start": "yesterday"}}, "$.bucket.start"),
    ],
)
def test_a_bad_metrics_report_names_its_path(body: dict[str, object], path: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_metrics_body(body)
    assert [d.path for d in refused.value.details] == [path]


def test_the_published_schemas_hold_the_keys_the_readers_read() -> None:
    assert REGISTRATION_SCHEMA["required"] == ["appName", "interval", "started", "strategies"]
    assert set(REGISTRATION_SCHEMA["properties"]) == {
        "appName",
        "interval",
        "started",
        "strategies",
        "instanceId",
        "sdkVersion",
        "environment",
    }
    assert "additionalProperties" not in REGISTRATION_SCHEMA  # SDKs send more
    assert set(METRICS_SCHEMA["properties"]["bucket"]["properties"]) == {
        "start",
        "stop",
        "toggles",
    }
