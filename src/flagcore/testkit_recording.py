"""The recording engine of `flagcore.testkit`: the real `flagcore.Engine` over a test's
flags, keeping every question the code under test asked (flag, context, answer)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from flagcore.context import Context
from flagcore.engine import ContextLike, Engine
from flagcore.variants import VariantResult

__all__ = ["Evaluation", "FlagSource", "RecordingEngine", "UndefinedFlagError", "evaluation_of"]


class UndefinedFlagError(AssertionError):
    """Strict mode: the code under test asked for a flag the test never defined."""


@attrs.frozen
class Evaluation:
    """One question the code under test asked: which flag, with what context (as a
    `flagcore.Context`, whatever form it came in), which method, and the answer."""

    flag: str
    context: Context
    answer: bool | VariantResult
    method: str = "is_enabled"
    defined: bool = True


class FlagSource(Protocol):
    """What a recording engine needs of the flags it answers from (`FlagsBuilder`)."""

    def defines(self, name: str) -> bool: ...

    def current_engine(self, held: tuple[int, Engine] | None) -> tuple[int, Engine]: ...

    def record(self, evaluation: Evaluation) -> None: ...


class RecordingEngine:
    """`flagcore.Engine`'s evaluation methods over a `FlagsBuilder`, recording each call.

    The answers are the real engine's, unchanged: the engine is built from the builder's
    data (again, when the data changes) and every call goes straight to it.
    """

    def __init__(self, builder: FlagSource) -> None:
        self._builder = builder
        self._held: tuple[int, Engine] | None = None

    @property
    def engine(self) -> Engine:
        """The plain engine over the builder's current data."""
        self._held = self._builder.current_engine(self._held)
        return self._held[1]

    def is_enabled(self, name: str, context: ContextLike = None, *, default: bool = False) -> bool:
        answer = self.engine.is_enabled(name, context, default=default)
        self._builder.record(evaluation_of(self._builder, name, context, answer, "is_enabled"))
        return answer

    def get_variant(self, name: str, context: ContextLike = None) -> VariantResult:
        answer = self.engine.get_variant(name, context)
        self._builder.record(evaluation_of(self._builder, name, context, answer, "get_variant"))
        return answer

    def is_impression_data_enabled(self, name: str) -> bool:
        return self.engine.is_impression_data_enabled(name)

    def flag_names(self) -> tuple[str, ...]:
        return self.engine.flag_names()

    @property
    def warnings(self) -> tuple[Any, ...]:
        """Flags the test defined that cannot compile (they answer off)."""
        return self.engine.warnings


def evaluation_of(
    builder: FlagSource, name: str, context: ContextLike, answer: bool | VariantResult, how: str
) -> Evaluation:
    """What is recorded of one call: a copy of the context as the engine saw it."""
    # A copy, properties included: the caller may change its dict after asking.
    if isinstance(context, Context):
        fields = attrs.asdict(context, recurse=False)
        seen = Context(**{**fields, "properties": _plain(context.properties)})
    elif isinstance(context, Mapping):
        data = dict(context)
        if isinstance(data.get("properties"), Mapping):
            data["properties"] = dict(data["properties"])
        seen = Context.from_mapping(data)
    else:
        seen = Context()
    return Evaluation(name, seen, answer, how, builder.defines(name))


def _plain(properties: object) -> dict[str, Any]:
    return dict(properties) if isinstance(properties, Mapping) else {}
