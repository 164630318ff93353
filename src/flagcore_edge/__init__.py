"""`flagcore edge`: a drop-in for Unleash Edge in front of an Unleash 8.x or flagcore server.

It follows the upstream's client API per token (ETag polling), keeps each token's
client-features snapshot in memory and in a snapshot file, and serves SDKs from it: the
client API (both formats, ETag/304, the filters), the Frontend API, OFREP, health,
readiness and Prometheus metrics; SDK metrics and registrations are batched and forwarded
upstream. See docs/edge.md.
"""

from __future__ import annotations

from flagcore_edge.app import create_edge_app
from flagcore_edge.config import EdgeConfig
from flagcore_edge.edge import Edge

__all__ = ["Edge", "EdgeConfig", "create_edge_app"]
