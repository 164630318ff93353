"""Evaluating every flag of one scope for one context: Unleash's Frontend API and OFREP.

Browsers and phones cannot hold a server token or evaluate rules, so the server answers
for them. A `FrontendView` is one compiled `Engine` over the flags of one environment and
project list, built from one store revision; the HTTP layer keeps one per scope and
builds a new one when the revision moves, so a write shows on the next request.

Answers are rendered straight to JSON text: each flag's fixed part (name, impression
data) is written once when the view is built, and each variant's JSON once the first
time it is picked, both by the writers of the answer classes
(`flagcore.wire.FrontendToggle`, `FrontendVariant`), so their keys come from one table.
Answering a context is then one `Engine.get_variant` per flag and a string join, with no
object built per flag. OFREP's answers are values (`OfrepEvaluation`,
`OfrepParseFailure`).

The OFREP mapping (a variant's payload typed as string, number or object) lives here too,
so the HTTP adapter and the in-process OpenFeature provider (`flagcore.openfeature`) give
the same values, variants and reasons.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from flagcore.engine import Engine
from flagcore.entities import TokenType
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.model import ClientFeatures, Flag
from flagcore.variants import DISABLED_VARIANT, VariantResult
from flagcore.wire import (
    FrontendToggle,
    FrontendVariant,
    OfrepEvaluation,
    OfrepMetadata,
    OfrepParseFailure,
    write_answer,
)

if TYPE_CHECKING:
    from flagcore.service import Service

__all__ = [
    "MAX_CONTEXT_PROPERTIES",
    "MAX_CONTEXT_VALUE_LENGTH",
    "STANDARD_FIELDS",
    "FrontendView",
    "Resolution",
    "UntypedPayload",
    "build_frontend_view",
    "bulk_lists_off_flags",
    "frontend_context",
    "payload_value",
    "resolve_remote",
]

# A context is a handful of short strings; these bounds are far above any real one and
# keep one request from making the server hash or hold much.
MAX_CONTEXT_PROPERTIES: Final = 100
MAX_CONTEXT_KEY_LENGTH: Final = 255
MAX_CONTEXT_VALUE_LENGTH: Final = 4096
STANDARD_FIELDS: Final = (
    "userId",
    "sessionId",
    "remoteAddress",
    "environment",
    "appName",
    "currentTime",
)
# Variants of one flag whose JSON is kept; a flag has far fewer (Unleash allows 100s).
_VARIANT_TEXTS_PER_FLAG = 1_000


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _variant_text(result: VariantResult) -> str:
    """Unleash's frontend variant: both spellings of featureEnabled, payload when set."""
    return _dumps(write_answer(FrontendVariant.of(result)))


def _toggle_prefix(name: str, impression_data: bool) -> str:
    """A toggle's JSON up to its variant (the table's last key), written once per flag."""
    written = write_answer(FrontendToggle(name, True, impression_data, _NO_VARIANT))
    variant_key = written.popitem()[0]  # the last key: what each answer adds
    return _dumps(written)[:-1] + "," + _dumps(variant_key) + ":"


_NO_VARIANT = FrontendVariant("", False, None, False, False)


class UntypedPayload(ValueError):
    """A variant payload that cannot be read as its declared type (OFREP's PARSE_ERROR)."""


def payload_value(payload: Mapping[str, str]) -> Any:
    """A variant payload as OpenFeature sees it: ``string``/``csv`` text, ``number`` an int
    (when written without a fraction or exponent) or a float, ``json`` the parsed value."""
    kind, text = payload.get("type"), payload.get("value")
    if not isinstance(text, str):
        raise UntypedPayload("the payload has no text value")
    if kind == "number":
        try:
            number: int | float = int(text) if text.strip().lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise UntypedPayload(f"the payload {text[:50]!r} is not a number") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise UntypedPayload(f"the payload {text[:50]!r} is not a finite number")
        return number
    if kind == "json":
        try:
            return json.loads(text)
        except ValueError:
            raise UntypedPayload("the payload is not valid JSON") from None
    return text  # string, csv, and any type Unleash adds later: the text as it is


@attrs.frozen
class Resolution:
    """One flag for one context in OpenFeature's terms (no requested type: OFREP's view).

    ``value``: the flag's on/off when no variant applies, else the variant's payload typed
    (`payload_value`), else the variant's name. ``reason``: ``TARGETING_MATCH`` when the
    flag is on for the context, ``DISABLED`` when it is off (disabled in the environment,
    or no strategy matched: the engine answers the same for both).
    """

    value: Any
    variant: str
    reason: str
    feature_enabled: bool
    has_variant: bool


def resolve_remote(result: VariantResult) -> Resolution:
    """`Resolution` of a `VariantResult`; raises `UntypedPayload` for an unreadable payload."""
    if not result.feature_enabled:
        return Resolution(False, "disabled", "DISABLED", False, False)
    if not result.enabled:  # on, and no variant applies
        return Resolution(True, "enabled", "TARGETING_MATCH", True, False)
    value: Any = result.name if result.payload is None else payload_value(result.payload)
    return Resolution(value, result.name, "TARGETING_MATCH", True, True)


class _FlagSlot:
    """What a view keeps of one flag: its name, the fixed JSON before its variant, and the
    variant texts already written."""

    __slots__ = ("name", "prefix", "project", "variants")

    def __init__(self, name: str, impression_data: bool, project: str) -> None:
        self.name = name
        self.project = project
        self.prefix = _toggle_prefix(name, impression_data)
        self.variants: dict[VariantResult, str] = {}

    def variant_text(self, result: VariantResult) -> str:
        text = self.variants.get(result)
        if text is None:
            text = _variant_text(result)
            if len(self.variants) < _VARIANT_TEXTS_PER_FLAG:
                self.variants[result] = text
        return text


def _variant_names(flag: Flag) -> frozenset[str]:
    names = {variant.name for variant in flag.variants}
    names.update(v.name for strategy in flag.strategies for v in strategy.variants)
    return frozenset((*names, DISABLED_VARIANT.name))


class FrontendView:
    """The flags of one scope (environment, projects) at one revision, compiled."""

    def __init__(self, snapshot: ClientFeatures, environment: str, revision: int) -> None:
        self.environment = environment
        self.revision = revision
        self.engine = Engine(snapshot)
        self.engine.compile_all()  # here, off the event loop: evaluation only looks up
        flags = sorted(snapshot.features, key=lambda flag: flag.name)
        self._slots = tuple(_FlagSlot(f.name, f.impression_data, f.project) for f in flags)
        self._by_name = {slot.name: slot for slot in self._slots}
        self._variant_names = {flag.name: _variant_names(flag) for flag in flags}

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def variant_names(self, name: str) -> frozenset[str]:
        """The variant names a browser can have been given for flag ``name`` (its flag and
        strategy variants, and ``disabled``); none for a flag outside the scope. Browser
        metrics are counted for these only: any other name is one no answer contained."""
        return self._variant_names.get(name, frozenset())

    def __len__(self) -> int:
        return len(self._slots)

    def frontend_body(self, context: dict[str, Any]) -> str:
        """``{"toggles": [...]}``: the flags on for ``context``, by name, as Unleash's
        Frontend API lists them."""
        get_variant = self.engine.get_variant
        parts = []
        for slot in self._slots:
            result = get_variant(slot.name, context)
            if result.feature_enabled:
                parts.append(slot.prefix + slot.variant_text(result) + "}")
        return '{"toggles":[' + ",".join(parts) + "]}"

    def ofrep_evaluation(
        self, name: str, context: dict[str, Any]
    ) -> OfrepEvaluation | OfrepParseFailure:
        """OFREP's evaluation of one flag (success or, for a bad payload, failure)."""
        slot = self._by_name.get(name)
        if slot is None:
            raise NotFound(f"flag {name[:100]!r} was not found")
        return _ofrep_item(slot, self.engine.get_variant(name, context))

    def ofrep_bulk_body(self, context: dict[str, Any], *, off_flags: bool = True) -> str:
        """OFREP's bulk answer: every flag of the scope; without ``off_flags`` only those on
        for ``context`` (`bulk_lists_off_flags`)."""
        get_variant = self.engine.get_variant
        items = []
        for slot in self._slots:
            result = get_variant(slot.name, context)
            if off_flags or result.feature_enabled:
                items.append(_dumps(write_answer(_ofrep_item(slot, result))))
        return '{"flags":[' + ",".join(items) + "]}"


def bulk_lists_off_flags(token_type: TokenType | None) -> bool:
    """Whether a bulk evaluation for a caller with this kind of token lists off flags.

    A frontend token is public (it ships in web pages), so, as on Unleash's Frontend API,
    it sees only the flags on for its context: listing the others would tell anyone the
    names of flags not yet released (Unleash Edge calls its endpoints that list them "a
    potential security vulnerability"). A client token is a server's secret and sees every
    flag of its scope, as the client API lists disabled flags; so does a caller of a
    server run without authentication.
    """
    return token_type is not TokenType.FRONTEND


def _ofrep_item(slot: _FlagSlot, result: VariantResult) -> OfrepEvaluation | OfrepParseFailure:
    try:
        resolution = resolve_remote(result)
    except UntypedPayload as problem:
        return OfrepParseFailure(slot.name, "PARSE_ERROR", str(problem))
    return OfrepEvaluation(
        slot.name,
        resolution.value,
        resolution.reason,
        resolution.variant,
        OfrepMetadata(slot.project, resolution.feature_enabled),
    )


def build_frontend_view(
    service: Service, environment: str, projects: Collection[str] | None, revision: int
) -> FrontendView:
    """The view of ``environment`` (the flags of ``projects``; all for None) at ``revision``
    (read before this call: if a write lands meanwhile, the next request sees a newer
    revision and builds again). An unknown environment has no flags."""
    try:
        snapshot = service.client.client_features(environment, projects=projects)
    except NotFound:
        snapshot = ClientFeatures()
    return FrontendView(snapshot, environment, revision)


# --- the context a frontend or OFREP caller sends ---


def frontend_context(
    fields: Mapping[str, Any],
    path: Callable[[str], str],
    defaults: Mapping[str, str],
    properties: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Unleash's context from what a browser sent, checked, as a plain camelCase dict.

    ``fields`` are the top-level names; ``properties`` the explicit ``properties``. As in
    Unleash's frontend API, a top-level name that is not a standard field becomes a
    property (an explicit property of the same name wins). Values must be strings; there
    are at most `MAX_CONTEXT_PROPERTIES` properties; ``defaults`` fill standard fields
    not sent (the caller's address, the token's environment). ``path`` names a field in
    error details, in the caller's terms.
    """
    context: dict[str, Any] = {}
    merged: dict[str, str] = {}
    for key, value in fields.items():
        where = path(key)
        _check_key(key, where)
        text = _string(value, where)
        if key in STANDARD_FIELDS:
            if key == "currentTime":
                _check_time(text, where)
            context[key] = text
        else:
            merged[key] = text
    for key, value in (properties or {}).items():
        if value is None:  # null means "not set", as for the top-level fields
            continue
        where = path(f"properties.{key}")
        _check_key(key, where)
        merged[key] = _string(value, where)
    if len(merged) > MAX_CONTEXT_PROPERTIES:
        raise InvalidInput(
            f"a context has at most {MAX_CONTEXT_PROPERTIES} properties, not {len(merged)}",
            [ErrorDetail("too many properties", path("properties"))],
        )
    for key, value in defaults.items():
        context.setdefault(key, value)
    if merged:
        context["properties"] = merged
    return context


def _check_key(key: str, where: str) -> None:
    if not key or len(key) > MAX_CONTEXT_KEY_LENGTH:
        raise InvalidInput(
            f"a context field name has 1 to {MAX_CONTEXT_KEY_LENGTH} characters",
            [ErrorDetail("bad field name", where[: MAX_CONTEXT_KEY_LENGTH + 20])],
        )


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(
            "context values must be strings", [ErrorDetail(f"expected a string at {where}", where)]
        )
    if len(value) > MAX_CONTEXT_VALUE_LENGTH:
        raise InvalidInput(
            f"a context value has at most {MAX_CONTEXT_VALUE_LENGTH} characters",
            [ErrorDetail("too long", where)],
        )
    return value


def _check_time(text: str, where: str) -> None:
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            "currentTime must be an ISO 8601 time", [ErrorDetail("not a time", where)]
        ) from None
