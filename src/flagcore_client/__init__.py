"""A Python client that follows a flagcore (or Unleash) server and evaluates in-process.

The issue asked for ``flagcore.client``; it lives in its own import package because the
core (``flagcore``) does no I/O and never imports aiohttp. Install it with
``pip install 'flagcore[client]'``.
"""

from flagcore_client.asyncio_client import AsyncFlagClient, FetchMode
from flagcore_client.impact import ImpactMetrics
from flagcore_client.sync_client import FlagClient

__all__ = ["AsyncFlagClient", "FetchMode", "FlagClient", "ImpactMetrics"]
