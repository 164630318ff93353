"""An answer value as a JSON response: written by its table's writer (`flagcore.wire`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from flagcore.wire import write_answer

__all__ = ["answered"]


def answered(
    value: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """``value`` (an answer class of `flagcore.wire`) as ``application/json``."""
    return web.json_response(write_answer(value), status=status, headers=headers)
