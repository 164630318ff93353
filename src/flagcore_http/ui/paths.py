"""Which paths are the UI's: HTML pages and the site's icon, kept out of the API's OpenAPI
document and its JSON error contract (the UI answers errors as pages)."""

from __future__ import annotations

__all__ = ["FAVICON_PATH", "is_ui_path"]

# Where browsers look for a site's icon when a page names none (the API docs, a bookmark).
FAVICON_PATH = "/favicon.ico"


def is_ui_path(path: str) -> bool:
    return path in ("/", "/ui", FAVICON_PATH) or path.startswith("/ui/")
