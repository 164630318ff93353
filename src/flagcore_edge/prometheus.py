"""The edge's Prometheus text: upstream reachability and lag, each token's data age and
requests, the usage held for the upstream. Tokens are named by scope and digest prefix."""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flagcore_edge.edge import Edge

__all__ = ["exposition"]


def _labels(**values: object) -> str:
    inner = ",".join(
        f'{key}="{str(value).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for key, value in values.items()
    )
    return "{" + inner + "}"


def exposition(edge: Edge, requests: Counter[tuple[str, int]]) -> str:
    now = time.time()
    lines = [
        "# HELP flagcore_edge_upstream_up 1 when the upstream answered the last request.",
        "# TYPE flagcore_edge_upstream_up gauge",
        f"flagcore_edge_upstream_up {1 if edge.upstream_up else 0}",
        "# HELP flagcore_edge_upstream_lag_seconds Time since the upstream last answered.",
        "# TYPE flagcore_edge_upstream_lag_seconds gauge",
    ]
    if edge.last_contact is not None:
        lines.append(f"flagcore_edge_upstream_lag_seconds {now - edge.last_contact:.3f}")
    lines += [
        "# HELP flagcore_edge_cache_age_seconds Age of each token's flags.",
        "# TYPE flagcore_edge_cache_age_seconds gauge",
    ]
    for token in edge.followed.values():
        if token.snapshot is not None:
            age = now - token.snapshot.fetched_at
            lines.append(f"flagcore_edge_cache_age_seconds{_labels(token=token.label())} {age:.3f}")
    lines += [
        "# HELP flagcore_edge_token_requests_total SDK requests served per token.",
        "# TYPE flagcore_edge_token_requests_total counter",
    ]
    for token in edge.followed.values():
        lines.append(
            f"flagcore_edge_token_requests_total{_labels(token=token.label(), kind='client')} "
            f"{token.requests}"
        )
    for frontend in edge.frontends.values():
        lines.append(
            f"flagcore_edge_token_requests_total{_labels(token=frontend.label(), kind='frontend')}"
            f" {frontend.requests}"
        )
    lines += [
        "# HELP flagcore_edge_requests_total Requests by route and status.",
        "# TYPE flagcore_edge_requests_total counter",
    ]
    for (route, status), count in sorted(requests.items()):
        lines.append(f"flagcore_edge_requests_total{_labels(route=route, status=status)} {count}")
    forwarder = edge.forwarder
    lines += [
        "# HELP flagcore_edge_usage_held SDK usage reports held for the upstream.",
        "# TYPE flagcore_edge_usage_held gauge",
        f"flagcore_edge_usage_held {forwarder.held}",
        "# TYPE flagcore_edge_usage_forwarded_total counter",
        f"flagcore_edge_usage_forwarded_total {forwarder.forwarded}",
        "# TYPE flagcore_edge_usage_bulk_posts_total counter",
        f"flagcore_edge_usage_bulk_posts_total {forwarder.bulk_posts}",
        "# TYPE flagcore_edge_usage_refused_total counter",
        f"flagcore_edge_usage_refused_total {forwarder.refused}",
        "# HELP flagcore_edge_usage_dropped_total Usage reports turned away (503): the "
        "queue was full.",
        "# TYPE flagcore_edge_usage_dropped_total counter",
        f"flagcore_edge_usage_dropped_total {forwarder.dropped}",
        "# TYPE flagcore_edge_upstream_token_checks_total counter",
        f"flagcore_edge_upstream_token_checks_total {edge.upstream_checks}",
        "# TYPE flagcore_edge_refused_tokens gauge",
        f"flagcore_edge_refused_tokens {len(edge.refused)}",
    ]
    if edge.config.offline:
        lines += [
            "# HELP flagcore_edge_bootstrap_reload_failures_total Re-reads of the offline "
            "file that failed (the last good one kept).",
            "# TYPE flagcore_edge_bootstrap_reload_failures_total counter",
            f"flagcore_edge_bootstrap_reload_failures_total {edge.bootstrap_failures}",
        ]
    return "\n".join(lines) + "\n"
