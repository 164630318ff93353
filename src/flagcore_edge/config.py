"""What an edge is told at start (``flagcore edge --help`` lists each with its default)."""

from __future__ import annotations

from pathlib import Path

import attrs

__all__ = ["EdgeConfig"]


@attrs.frozen
class EdgeConfig:
    """An edge's settings; times in seconds. ``upstream`` is None only in offline mode."""

    data_dir: Path
    upstream: str | None = None
    upstream_tokens: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 3063  # Unleash Edge's port
    interval: float = 10.0  # Unleash Edge polls every 10 s
    upstream_streaming: bool = True  # an upstream's stream, where offered, triggers polls
    request_timeout: float = 10.0
    token_ttl: float = 3600.0  # a frontend token is checked upstream again after this
    refused_ttl: float = 60.0  # an unknown token is refused from memory this long
    refused_capacity: int = 10_000
    max_tokens: int = 1_000  # client tokens followed at once
    metrics_interval: float = 60.0
    metrics_capacity: int = 10_000  # SDK reports held for the upstream
    offline: bool = False
    bootstrap: Path | None = None
    offline_tokens: tuple[str, ...] = ()
    offline_frontend_tokens: tuple[str, ...] = ()
    reload_interval: float = 0.0  # offline: seconds between looks at the file (0: never)
    log_format: str = "text"
