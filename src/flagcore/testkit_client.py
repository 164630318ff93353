"""The client double of `flagcore.testkit`: `flagcore_client.FlagClient`'s evaluation
methods over a test's flags, with no server and no thread."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flagcore.context import Context
from flagcore.engine import ContextLike
from flagcore.testkit_recording import FlagSource, RecordingEngine
from flagcore.variants import VariantResult

__all__ = ["FakeFlagClient"]


class FakeFlagClient:
    """Stands in for `flagcore_client.FlagClient` in tests: the same evaluation methods
    (``is_enabled``, ``get_variant``, ``flag_names``, ``ready``, ``close``, ``with``),
    answered by the real engine over a `FlagsBuilder`, with no server and no thread.

    Like the real client, a context without ``appName`` gets the client's ``app_name``
    and ``environment``; what is recorded is the context the engine saw.
    """

    def __init__(
        self, builder: FlagSource, *, app_name: str = "tests", environment: str | None = None
    ) -> None:
        self.app_name = app_name
        self._environment = environment
        self._default_context = Context(app_name=app_name, environment=environment)
        self._engine = RecordingEngine(builder)
        self._closed = False

    def _context(self, context: ContextLike) -> Context | Mapping[str, Any]:
        if context is None:
            return self._default_context
        if isinstance(context, Mapping) and "appName" not in context:
            return {"appName": self.app_name, "environment": self._environment, **context}
        return context

    def is_enabled(self, name: str, context: ContextLike = None, *, default: bool = False) -> bool:
        return self._engine.is_enabled(name, self._context(context), default=default)

    def get_variant(self, name: str, context: ContextLike = None) -> VariantResult:
        return self._engine.get_variant(name, self._context(context))

    @property
    def ready(self) -> bool:
        """Always true: the flags are there from the start."""
        return True

    @property
    def flag_names(self) -> list[str]:
        return sorted(self._engine.flag_names())

    @property
    def closed(self) -> bool:
        """Whether the code under test closed the client."""
        return self._closed

    def close(self, timeout: float = 10.0) -> None:
        self._closed = True

    def __enter__(self) -> FakeFlagClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
