"""An OpenFeature provider over flagcore's in-process engine (the ``openfeature`` extra).

``FlagcoreProvider(source)`` wraps an `Engine` (a fixed snapshot) or a `LiveEngine`
(``service.client.engine("production")``: it follows the store). It does no I/O of its own:
evaluation is the engine's, and values, variants and reasons are the ones the server's
OFREP endpoint gives (`flagcore.service.frontend.resolve_remote`):

- boolean: whether the flag is on for the context (``TARGETING_MATCH``, else ``DISABLED``);
- string, integer, float, object: the payload of the variant picked (``TARGETING_MATCH``);
  the default with ``DISABLED`` when the flag is off, with ``DEFAULT`` when it is on and no
  variant applies, with ``ERROR`` and ``TYPE_MISMATCH`` when the payload is of another
  type (an integer payload is accepted as a float), ``PARSE_ERROR`` when it cannot be read;
- an unknown flag: the default, ``ERROR`` and ``FLAG_NOT_FOUND``.

``targetingKey`` is Unleash's ``userId``; attributes named like Unleash's standard fields
(``sessionId``, ``remoteAddress``, ``environment``, ``appName``, ``currentTime``) are those
fields, any other attribute a property (numbers and booleans as their JSON text, dates in
ISO 8601; a list or mapping cannot be matched by any rule: ``INVALID_CONTEXT``).

Events: when the `LiveEngine` picks up a change, the provider emits
``PROVIDER_CONFIGURATION_CHANGED``. It notices on the next evaluation, or when the
application calls `FlagcoreProvider.check_for_changes` (from its own timer, if it wants
events while nothing is evaluated); the check costs what the `LiveEngine`'s own does
(one revision read at most every ``poll_interval`` seconds).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

from openfeature.evaluation_context import EvaluationContext
from openfeature.event import ProviderEventDetails
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import FlagResolutionDetails, FlagValueType, Reason
from openfeature.provider import AbstractProvider, Metadata

from flagcore.engine import Engine
from flagcore.service.client import LiveEngine
from flagcore.service.frontend import STANDARD_FIELDS, UntypedPayload, resolve_remote

__all__ = ["FlagcoreProvider", "InvalidContext", "unleash_context"]

_T = TypeVar("_T")
ObjectValue = Sequence[FlagValueType] | Mapping[str, FlagValueType]


class InvalidContext(ValueError):
    """An evaluation context flagcore cannot read (OpenFeature's ``INVALID_CONTEXT``)."""


def unleash_context(context: EvaluationContext | None) -> dict[str, Any]:
    """OpenFeature's context as Unleash's camelCase mapping (see the module docstring)."""
    if context is None:
        return {}
    out: dict[str, Any] = {}
    properties: dict[str, str] = {}
    for key, value in context.attributes.items():
        text = _text(key, value)
        if key in STANDARD_FIELDS:
            out[key] = text
        else:
            properties[key] = text
    if context.targeting_key and "userId" not in out:
        out["userId"] = context.targeting_key
    if properties:
        out["properties"] = properties
    return out


def _text(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidContext(f"attribute {key!r} is not a finite number")
        return json.dumps(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise InvalidContext(f"attribute {key!r} is a {type(value).__name__}: no rule can match it")


class FlagcoreProvider(AbstractProvider):
    """OpenFeature's provider interface over an `Engine` or a `LiveEngine`."""

    def __init__(self, source: Engine | LiveEngine) -> None:
        super().__init__()
        self._source = source
        self._lock = threading.Lock()
        self._seen: Engine | None = None
        self._names: frozenset[str] = frozenset()

    def get_metadata(self) -> Metadata:
        return Metadata(name="flagcore")

    def check_for_changes(self) -> bool:
        """Whether the flags changed since last seen; emits ``PROVIDER_CONFIGURATION_CHANGED``
        if they did."""
        _engine, changed = self._current()
        return changed

    def _current(self) -> tuple[Engine, bool]:
        """The engine to answer from, and whether it replaced the one seen before."""
        source = self._source
        engine = source.engine if isinstance(source, LiveEngine) else source
        if engine is self._seen:
            return engine, False
        with self._lock:
            if engine is self._seen:
                return engine, False
            first = self._seen is None
            self._names = frozenset(engine.flag_names())
            self._seen = engine
        if not first:
            self.emit_provider_configuration_changed(
                ProviderEventDetails(message="flags changed in the store")
            )
        return engine, not first

    def _evaluate(self, flag_key: str, context: EvaluationContext | None) -> Any:
        """The engine's `VariantResult`, or a failed resolution (unknown flag, bad context)."""
        engine, _changed = self._current()
        if flag_key not in self._names:
            return ErrorCode.FLAG_NOT_FOUND, f"flag {flag_key!r} was not found"
        try:
            unleash = unleash_context(context)
        except InvalidContext as problem:
            return ErrorCode.INVALID_CONTEXT, str(problem)
        return engine.get_variant(flag_key, unleash)

    def resolve_boolean_details(
        self,
        flag_key: str,
        default_value: bool,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[bool]:
        result = self._evaluate(flag_key, evaluation_context)
        if isinstance(result, tuple):
            return _failed(default_value, *result)
        on = result.feature_enabled
        variant = result.name if result.enabled else ("enabled" if on else "disabled")
        reason = Reason.TARGETING_MATCH if on else Reason.DISABLED
        return FlagResolutionDetails(on, reason=reason, variant=variant)

    def resolve_string_details(
        self,
        flag_key: str,
        default_value: str,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[str]:
        return self._typed(flag_key, default_value, evaluation_context, (str,), "a string")

    def resolve_integer_details(
        self,
        flag_key: str,
        default_value: int,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[int]:
        return self._typed(flag_key, default_value, evaluation_context, (int,), "an integer")

    def resolve_float_details(
        self,
        flag_key: str,
        default_value: float,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[float]:
        details = self._typed(flag_key, default_value, evaluation_context, (int, float), "a number")
        if details.error_code is None and isinstance(details.value, int):
            details.value = float(details.value)  # "3" is a fine float payload
        return details

    def resolve_object_details(
        self,
        flag_key: str,
        default_value: ObjectValue,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[ObjectValue]:
        return self._typed(flag_key, default_value, evaluation_context, (dict, list), "JSON")

    def _typed(
        self,
        flag_key: str,
        default_value: _T,
        context: EvaluationContext | None,
        kinds: tuple[type, ...],
        what: str,
    ) -> FlagResolutionDetails[_T]:
        result = self._evaluate(flag_key, context)
        if isinstance(result, tuple):
            return _failed(default_value, *result)
        try:
            resolution = resolve_remote(result)
        except UntypedPayload as problem:
            return _failed(default_value, ErrorCode.PARSE_ERROR, str(problem))
        if not resolution.feature_enabled:
            return FlagResolutionDetails(default_value, reason=Reason.DISABLED, variant="disabled")
        if not resolution.has_variant:
            return FlagResolutionDetails(default_value, reason=Reason.DEFAULT, variant="enabled")
        value: Any = resolution.value
        if isinstance(value, bool) or not isinstance(value, kinds):
            return _failed(
                default_value,
                ErrorCode.TYPE_MISMATCH,
                f"variant {resolution.variant!r} of {flag_key!r} is not {what}",
            )
        checked = cast(_T, value)  # of the kind asked for: checked just above
        return FlagResolutionDetails(
            checked, reason=Reason.TARGETING_MATCH, variant=resolution.variant
        )


def _failed(default_value: _T, code: ErrorCode, message: str) -> FlagResolutionDetails[_T]:
    return FlagResolutionDetails(
        default_value, error_code=code, error_message=message, reason=Reason.ERROR
    )
