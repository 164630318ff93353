"""Unleash's playground: every flag of some projects evaluated for one context, explained.

`answer` answers ``POST /api/admin/playground`` and `advanced_answer` answers
``POST /api/admin/playground/advanced`` in Unleash 8.2's shape (see docs/explain.md), over
what `Playground.read` read from the store. Each answer is built from `Engine.explain`
over the very snapshot the client API serves (`ClientView.client_features`), so a
flag's ``isEnabled`` and ``variant`` are always what an SDK polling that environment
would answer. The rest follows Unleash's playground (its ``feature-evaluator``):

* a disabled strategy is listed, its constraints and segments checked, with
  ``{"enabled": "unknown", "evaluationStatus": "unevaluated"}``; SDKs never see it;
* a strategy without an implementation, and ``applicationHostname`` (which depends on
  the host an SDK runs on), is ``"incomplete"``: ``"unknown"`` when its constraints and
  segments hold, else ``false``;
* ``strategies.result`` is ``true`` when a fully evaluated strategy is on, else
  ``"unknown"`` when one might be, else ``false``; a flag without strategies has its
  environment switch there.

Where Unleash is lenient, this is strict (docs/migrating-from-unleash.md): an unknown
environment or project, an unknown top-level context field, or a value of the wrong type
is a 400 naming its JSON path, and the advanced playground refuses too many context
combinations before making any. The request bodies are read on the HTTP side into typed
values (`flagcore.wire.PlaygroundContext` and the HTTP layer's body classes); their
rules are here (`check_request`, `check_context`), which the admin UI and ``flagcore
explain`` share.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from flagcore.date_reading import parse_chrono_date
from flagcore.engine import Engine
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.explain import (
    ConstraintResult,
    ExplainSources,
    FlagExplanation,
    StrategyResult,
    explain_strategy,
)
from flagcore.model import ClientFeatures, Flag, Strategy
from flagcore.service.client import ClientView
from flagcore.service.context import ServiceContext
from flagcore.strategies import BUILTIN_STRATEGIES
from flagcore.wire import (
    APP_NAME,
    CONTEXT_FIELDS,
    CURRENT_TIME,
    AdvancedPlaygroundFeature,
    AdvancedPlaygroundResult,
    PlaygroundConstraint,
    PlaygroundContext,
    PlaygroundFeature,
    PlaygroundLinks,
    PlaygroundSegment,
    PlaygroundStrategies,
    PlaygroundStrategy,
    PlaygroundVariant,
    StrategyEvaluation,
    StrategyVariant,
)

__all__ = [
    "ADVANCED_LIMIT",
    "CONTEXT_FIELDS",
    "MAX_CONTEXT_NAME_LENGTH",
    "MAX_CONTEXT_PROPERTIES",
    "MAX_CONTEXT_VALUE_LENGTH",
    "Playground",
    "PlaygroundData",
    "PlaygroundRequest",
    "advanced_answer",
    "answer",
    "check_context",
    "check_request",
    "explain_every_flag",
]

JSON = dict[str, Any]

MAX_CONTEXT_PROPERTIES = 100
MAX_CONTEXT_NAME_LENGTH = 100  # Unleash's limit on a context field's name
MAX_CONTEXT_VALUE_LENGTH = 2_000
# Unleash's default limit on environments x flags x context combinations.
ADVANCED_LIMIT = 15_000
_UNKNOWN = "unknown"
# Strategies whose answer depends on where an SDK runs: Unleash's playground cannot know.
_HOST_BOUND_STRATEGIES = frozenset({"applicationHostname"})


def _invalid(message: str, path: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(message, path)])


def check_context(
    context: PlaygroundContext,
    path: str = "$.context",
    *,
    required: Sequence[str] = (),
    order: Sequence[str] = (),
) -> JSON:
    """The playground's rules for a context (the admin API's, the admin UI's, ``flagcore
    explain``'s and an uploaded sample's): every value at most `MAX_CONTEXT_VALUE_LENGTH`
    characters, at most `MAX_CONTEXT_PROPERTIES` properties with names of 1 to
    `MAX_CONTEXT_NAME_LENGTH` characters, the ``required`` fields not empty, a
    ``currentTime`` that is a date and time. The context as the engine reads it (its keys
    in ``order`` first: the order they were sent in, which Unleash's advanced playground
    combines them in), or `InvalidInput` naming the path of the first problem (under
    ``path``).

    Reading JSON into the typed value is the HTTP side's (`PlaygroundContext`'s keys).
    """
    given = context.fields()
    for key, value in given.items():
        _check_length(value, f"{path}.{key}")
    where = f"{path}.properties"
    if len(context.properties) > MAX_CONTEXT_PROPERTIES:
        raise _invalid(f"at most {MAX_CONTEXT_PROPERTIES} properties", where)
    for name, value in context.properties.items():
        if not name or len(name) > MAX_CONTEXT_NAME_LENGTH:
            raise _invalid(f"a property name has 1 to {MAX_CONTEXT_NAME_LENGTH} characters", where)
        _check_length(value, f"{where}.{name}")
    for name in required:
        if not given.get(name):
            raise _invalid(f"{name} is required", f"{path}.{name}")
    if context.current_time is not None and parse_chrono_date(context.current_time) is None:
        raise _invalid(
            f"{CURRENT_TIME} must be a date and time (RFC 3339)", f"{path}.{CURRENT_TIME}"
        )
    read = context.as_json()
    return {**{key: read[key] for key in order if key in read}, **read} if order else read


def _check_length(value: str, path: str) -> None:
    if len(value) > MAX_CONTEXT_VALUE_LENGTH:
        raise _invalid(f"must be at most {MAX_CONTEXT_VALUE_LENGTH} characters", path)


def check_request(
    environments: Sequence[str],
    projects: Sequence[str] | None,
    context: PlaygroundContext,
    *,
    required: Sequence[str] = (APP_NAME,),
    advanced: bool = False,
    order: Sequence[str] = (),
) -> PlaygroundRequest:
    """A request held to the playground's rules: at least one environment, none of them
    empty (each is looked up when read), the context's (`check_context`, ``order`` the
    order its keys were sent in); an environment asked twice is evaluated once.
    ``advanced``: asked as ``{"environments": [...]}``."""
    if not environments:
        raise _invalid("environments must be a non-empty list", "$.environments")
    for index, environment in enumerate(environments):
        if not environment:
            if advanced:
                raise _invalid("must be a non-empty string", f"$.environments[{index}]")
            raise _invalid("environment must be a non-empty string", "$.environment")
    return PlaygroundRequest(
        tuple(dict.fromkeys(environments)),
        None if projects is None else tuple(projects),
        check_context(context, required=required, order=order),
        advanced,
    )


@attrs.frozen
class PlaygroundRequest:
    """A checked playground request: environments, projects (None: all) and context."""

    environments: tuple[str, ...]
    projects: tuple[str, ...] | None
    context: JSON
    advanced: bool = False  # asked as {"environments": [...]}: errors name $.environments[i]


def context_combinations(context: JSON, limit: int) -> list[JSON]:
    """Unleash's advanced playground contexts: every value split on commas, properties
    flattened to the top level, every combination (the first field varying slowest).
    Refuses more than ``limit`` combinations before making any."""
    fields: dict[str, list[str]] = {}
    for key, value in context.items():
        if key == "properties":
            fields.update((name, item.split(",")) for name, item in value.items())
        else:
            fields[key] = value.split(",")
    count = math.prod(len(values) for values in fields.values())
    if count > limit:
        raise _invalid(
            f"the context makes {count} combinations, more than the limit of {limit}", "$.context"
        )
    names = list(fields)
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(fields[name] for name in names))
    ]


@attrs.frozen
class _EnvironmentView:
    """One environment's flags as SDKs see them, plus what the playground also lists."""

    name: str
    flags: tuple[Flag, ...]
    engine: Engine
    placements: Mapping[str, tuple[Strategy, ...]]  # every strategy, disabled ones too
    sources: ExplainSources


@attrs.frozen
class PlaygroundData:
    """What a playground answer needs from the store, read in one go: evaluating it
    (`answer`, `advanced_answer`) touches the store no more, so a server can evaluate
    off the thread that owns the store."""

    views: tuple[_EnvironmentView, ...]


class Playground:
    """Evaluates every flag of some projects for a context, the way Unleash's playground
    shows it (see the module's docstring)."""

    def __init__(self, context: ServiceContext, client: ClientView) -> None:
        self._context = context
        self._client = client

    def read(self, request: PlaygroundRequest) -> PlaygroundData:
        """The flags of each environment of ``request``; `InvalidInput` for an unknown
        environment or project."""
        return PlaygroundData(
            tuple(
                self._view(
                    environment,
                    request.projects,
                    f"$.environments[{index}]" if request.advanced else "$.environment",
                )
                for index, environment in enumerate(request.environments)
            )
        )

    def explain(self, flag: str, request: PlaygroundRequest) -> FlagExplanation:
        """`Engine.explain` of one flag in the request's first environment, as the client
        API's snapshot has it (``flagcore explain --url`` with an admin token asks this).
        Raises `InvalidInput` for an empty name, `NotFound` for a flag that is not there."""
        if not flag:
            raise _invalid("flag must be a non-empty string", "$.flag")
        view = self._view(request.environments[0], request.projects)
        explanation = view.engine.explain(flag, request.context)
        if not explanation.exists:
            raise NotFound(f'there is no flag "{flag}" in "{view.name}"')
        return explanation

    def _view(
        self, environment: str, projects: tuple[str, ...] | None, path: str = "$.environment"
    ) -> _EnvironmentView:
        with self._context.read() as tx:
            if tx.get_environment(environment) is None:
                raise _invalid(f'there is no environment "{environment}"', path)
            known = {project.id for project in tx.list_projects()}
            for index, project in enumerate(projects or ()):
                if project not in known:
                    raise _invalid(f'there is no project "{project}"', f"$.projects[{index}]")
            placements: dict[str, list[Strategy]] = {}
            for placement in tx.list_strategies(environment=environment):
                placements.setdefault(placement.flag, []).append(placement.strategy)
            segments = {segment.id: segment for segment in tx.list_segments()}
        snapshot = self._client.client_features(environment, projects=projects)
        # Every segment, so disabled strategies (not in the snapshot) can be checked too.
        engine = Engine(
            ClientFeatures(snapshot.features, tuple(segments.values())), explainable=True
        )
        return _EnvironmentView(
            environment,
            snapshot.features,
            engine,
            {name: tuple(strategies) for name, strategies in placements.items()},
            ExplainSources(BUILTIN_STRATEGIES, segments.get, lambda _name: None),
        )


def explain_every_flag(data: PlaygroundData, request: PlaygroundRequest) -> list[FlagExplanation]:
    """`Engine.explain` of every flag in the request's first environment, over the same
    snapshot as `answer`: what the admin UI's playground page shows (explained rather
    than in Unleash's JSON)."""
    view = data.views[0]
    return [view.engine.explain(flag.name, request.context) for flag in view.flags]


def answer(data: PlaygroundData, request: PlaygroundRequest) -> tuple[PlaygroundFeature, ...]:
    """The ``features`` of Unleash's playground answer, for the first environment."""
    view = data.views[0]
    return tuple(_feature(view, flag, request.context) for flag in view.flags)


def advanced_answer(
    data: PlaygroundData, request: PlaygroundRequest, *, limit: int = ADVANCED_LIMIT
) -> tuple[AdvancedPlaygroundFeature, ...]:
    """The ``features`` of Unleash's advanced playground answer: per flag, per
    environment, one result per context combination. Refuses more than ``limit``
    environments x flags x contexts, as Unleash does (with its message)."""
    contexts = context_combinations(request.context, limit)
    views = data.views
    total = len(views) * len(views[0].flags) * len(contexts)
    if total > limit:
        raise _invalid(
            f"Rejecting evaluation as it would generate {total} combinations exceeding "
            f"{limit} limit. Please reduce the number of selected environments "
            f"({len(views)}), features ({len(views[0].flags)}), context field "
            f"combinations ({len(contexts)}).",
            "$",
        )
    projects: dict[str, str] = {}
    grouped: dict[str, dict[str, list[AdvancedPlaygroundResult]]] = {}
    for view in views:
        for context in contexts:
            for flag in view.flags:
                projects.setdefault(flag.name, flag.project)
                result = _feature(view, flag, context)
                in_environments = grouped.setdefault(flag.name, {})
                in_environments.setdefault(view.name, []).append(
                    AdvancedPlaygroundResult(
                        **attrs.asdict(result, recurse=False),
                        environment=view.name,
                        context=context,
                    )
                )
    return tuple(
        AdvancedPlaygroundFeature(
            name, projects[name], {env: tuple(results) for env, results in environments.items()}
        )
        for name, environments in grouped.items()
    )


def _feature(view: _EnvironmentView, flag: Flag, context: JSON) -> PlaygroundFeature:
    explanation = view.engine.explain(flag.name, context)
    strategies = _strategies(view, flag, explanation, context)
    enabled = explanation.enabled
    return PlaygroundFeature(
        flag.name,
        flag.project,
        enabled,
        explanation.enabled_in_environment,
        not explanation.dependencies_satisfied,
        PlaygroundStrategies(
            _overall_result(strategies, explanation.enabled_in_environment), strategies
        ),
        _variant(explanation, enabled),
        _variants_shown(strategies, explanation),
    )


def _strategies(
    view: _EnvironmentView, flag: Flag, explanation: FlagExplanation, context: JSON
) -> tuple[PlaygroundStrategy, ...]:
    """Every strategy of the flag in the environment, in order: the evaluated ones from
    the explanation, the disabled ones checked on their own."""
    evaluated = {s.id: s for s in explanation.strategies}
    out = []
    for strategy in view.placements.get(flag.name, ()):
        result = evaluated.pop(strategy.id, None)
        if strategy.disabled:
            explained = explain_strategy(flag.name, strategy, view.sources, context)
            out.append(_strategy(view.name, flag, explained))
        elif result is not None:
            out.append(_strategy(view.name, flag, result))
    # Written between the two reads: shown as the snapshot has them.
    out.extend(_strategy(view.name, flag, result) for result in evaluated.values())
    return tuple(out)


def _strategy(environment: str, flag: Flag, explained: StrategyResult) -> PlaygroundStrategy:
    strategy_id = explained.id or str(uuid.uuid4())  # as Unleash: every entry has an id
    return PlaygroundStrategy(
        explained.name,
        strategy_id,
        explained.title,
        explained.disabled,
        explained.parameters,
        _strategy_result(explained),
        tuple(_constraint(c) for c in explained.constraints),
        tuple(
            PlaygroundSegment(
                segment.name or "",
                segment.id,
                segment.result,
                tuple(_constraint(c) for c in segment.constraints),
            )
            for segment in explained.segments
        ),
        PlaygroundLinks(
            f"/projects/{flag.project}/features/{flag.name}/strategies/edit"
            f"?environmentId={environment}&strategyId={strategy_id}"
        ),
    )


def _strategy_result(explained: StrategyResult) -> StrategyEvaluation:
    if explained.disabled:
        return StrategyEvaluation(_UNKNOWN, "unevaluated")
    if not explained.known or explained.name in _HOST_BOUND_STRATEGIES:
        might = explained.constraints_result and explained.segments_result
        return StrategyEvaluation(_UNKNOWN if might else False, "incomplete")
    choice = explained.variant
    if choice is not None and choice.variant.enabled:
        picked = StrategyVariant(choice.variant.name, True, choice.variant.payload)
        shown = tuple(_without_nulls(v) for v in explained.variants)
        return StrategyEvaluation(explained.result, "complete", picked, shown)
    return StrategyEvaluation(explained.result, "complete")


def _constraint(result: ConstraintResult) -> PlaygroundConstraint:
    return PlaygroundConstraint(
        result.context_name,
        result.operator,
        tuple(result.values),
        result.inverted,
        result.case_insensitive,
        result.value,
        result.result,
    )


def _overall_result(
    strategies: tuple[PlaygroundStrategy, ...], enabled_in_environment: bool
) -> bool | str:
    if not strategies:
        return enabled_in_environment
    results = [s.result for s in strategies]
    if any(r.enabled is True and r.evaluation_status == "complete" for r in results):
        return True
    if any(r.enabled == _UNKNOWN for r in results):
        return _UNKNOWN
    return False


def _variant(explanation: FlagExplanation, enabled: bool) -> PlaygroundVariant:
    """The variant as Unleash's playground writes it: ``feature_enabled`` always, and
    ``featureEnabled`` too where its evaluator sets it (a flag variant, or an enabled flag
    without one), not for a strategy's variant or a disabled flag."""
    variant = explanation.variant
    choice = explanation.variant_choice
    sets_camel = enabled and choice is not None and choice.origin != "strategy"
    return PlaygroundVariant(
        variant.name, variant.enabled, variant.payload, enabled, enabled if sets_camel else None
    )


def _variants_shown(
    strategies: tuple[PlaygroundStrategy, ...], explanation: FlagExplanation
) -> tuple[Mapping[str, Any], ...]:
    """The matching strategy's variants when it has any, else the flag's (as Unleash)."""
    matching = next((s for s in strategies if s.result.enabled is True), None)
    if matching is not None and matching.result.variants is not None:
        return matching.result.variants
    return tuple(_without_nulls(v) for v in explanation.variants)


def _without_nulls(data: Mapping[str, Any]) -> JSON:
    """A variant as Unleash lists it: no null payload, no empty overrides."""
    return {key: value for key, value in data.items() if value is not None and value != []}
