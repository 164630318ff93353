"""Which paths are the UI's: HTML pages, kept out of the API's OpenAPI document and its
JSON error contract (the UI answers errors as pages)."""

from __future__ import annotations

__all__ = ["is_ui_path"]


def is_ui_path(path: str) -> bool:
    return path == "/" or path == "/ui" or path.startswith("/ui/")
