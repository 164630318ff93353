"""flagcore's HTTP server (aiohttp): Unleash's API over a flagcore service.

Install with the ``http`` extra (``server`` adds SQLite). ``flagcore serve`` runs it.
"""

from flagcore_http.app import create_app
from flagcore_http.config import AuthMode, ServerConfig

__all__ = ["AuthMode", "ServerConfig", "create_app"]
