"""Limits on what admins may create, with Unleash's defaults; each can be overridden."""

from __future__ import annotations

import attrs

from flagcore.errors import LimitExceeded

__all__ = ["Limits", "enforce"]


@attrs.frozen(kw_only=True)
class Limits:
    """Exceeding one raises `flagcore.LimitExceeded` naming the field below."""

    constraint_values: int = 250
    constraints_per_strategy: int = 30
    segments: int = 300
    segments_per_strategy: int = 5
    segment_values: int = 1000
    signal_endpoints: int = 5
    tokens_per_signal_endpoint: int = 5
    signals_per_second: float = 1.0
    signal_payload_bytes: int = 100_000
    action_sets_per_project: int = 5
    filters_per_action_set: int = 5
    values_per_action_filter: int = 25
    actions_per_action_set: int = 10
    # What one SDK metrics post may carry (Unleash sets none; these keep one post's work on
    # the store thread bounded). A real SDK reports the flags it evaluated, at most as many
    # as the server has; variant names per flag are as few as its variants.
    metrics_toggles_per_post: int = 10_000
    metrics_variants_per_toggle: int = 100
    # When a metrics bucket may start, around now: an SDK reports its last interval, or
    # what it kept through an outage of up to Unleash's 48 h retention; a bucket outside
    # (a skewed clock, a made-up 2999) is dropped, never stored where retention cannot
    # reach it. The 5 minutes ahead forgive ordinary clock skew.
    metrics_bucket_past_hours: float = 48
    metrics_bucket_future_minutes: float = 5
    # appName, instanceId, sdkVersion and strategy names an SDK reports about itself.
    client_field_length: int = 255
    client_strategies_reported: int = 100


def enforce(limits: Limits, name: str, count: int, what: str, path: str = "$") -> None:
    """Raise `LimitExceeded` naming ``name`` if ``count`` (of ``what``, at JSON path ``path``
    of the input; ``$`` for the input as a whole) is over that limit."""
    maximum = getattr(limits, name)
    if count > maximum:
        raise LimitExceeded(f"{count} {what}, over the limit of {maximum}", name, maximum, path)
