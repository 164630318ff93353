"""The builder of `flagcore.testkit`: the flags a test defines (on, off, for some users,
for a share of them, with variants, or loaded from a client-features snapshot or an Unleash
feature export), the engines and clients that answer from them, and what they were asked."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from flagcore.context import Context
from flagcore.engine import Engine
from flagcore.entities import StrategyDefinition
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import (
    ClientFeatures,
    Constraint,
    Dependency,
    Flag,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
    WeightType,
)
from flagcore.service import Service
from flagcore.service.variants import variants_in_unleash_order
from flagcore.strategies import CustomStrategy
from flagcore.testkit_client import FakeFlagClient
from flagcore.testkit_recording import Evaluation, RecordingEngine, UndefinedFlagError
from flagcore.validation import check_name, check_variants
from flagcore.wire import fields as keys
from flagcore.wire import (
    read_client_features,
    structure,
    structure_dependencies,
    structure_segment,
    structure_variants,
    unleash_export,
    unstructure_client_features,
)

__all__ = ["FlagsBuilder", "seed_service", "variant"]

# A JSON file a test names is the test's own data, but a wrong path (a log, a dump) must
# fail fast with a message, not fill the memory.
MAX_JSON_FILE_BYTES = 64 * 1024 * 1024

# What Unleash itself adds when a flag is turned on without rules (and what
# `Service.environments.set_environment_enabled` adds): a 100% flexible rollout.
_ROLLOUT = "flexibleRollout"
_ROLLOUT_PERCENT = "rollout"
_USER_ID = "userId"

# The keys of Unleash's feature export (`POST /api/admin/features-batch/export`), named
# once in `flagcore.wire.unleash_export`; `flagcore.wire` maps the values inside.
_EXPORT_FEATURES = unleash_export.FEATURES
_EXPORT_STRATEGIES = unleash_export.FEATURE_STRATEGIES
_EXPORT_ENVIRONMENTS = unleash_export.FEATURE_ENVIRONMENTS
_EXPORT_FEATURE_NAME = unleash_export.FEATURE_NAME
_EXPORT_ENVIRONMENT = unleash_export.ENVIRONMENT
_EXPORT_ARCHIVED = unleash_export.ARCHIVED


def variant(
    name: str,
    payload: Payload | str | int | float | Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    weight: int | None = None,
    stickiness: str = "default",
    users: Sequence[str] = (),
) -> Variant:
    """A variant for `FlagsBuilder`: ``payload`` text is a ``string`` payload, a number a
    ``number`` one, a dict or list a ``json`` one; ``weight`` (out of 1000) makes it a
    fixed share, otherwise variable variants share what is left equally, as in Unleash;
    ``users`` (userIds) are pinned to it."""
    overrides = (Override(_USER_ID, tuple(users)),) if users else ()
    return Variant(
        name,
        weight=weight or 0,
        weight_type=WeightType.FIX if weight is not None else WeightType.VARIABLE,
        stickiness=stickiness,
        payload=_payload(payload),
        overrides=overrides,
    )


def _payload(value: object) -> Payload | None:
    if value is None or isinstance(value, Payload):
        return value
    if isinstance(value, str):
        return Payload("string", value)
    try:
        if isinstance(value, bool):  # JSON: Unleash has no boolean payload type
            return Payload("json", json.dumps(value))
        if isinstance(value, (int, float)):
            return Payload("number", json.dumps(value, allow_nan=False))
        if isinstance(value, (Mapping, list, tuple)):
            plain = dict(value) if isinstance(value, Mapping) else value
            return Payload("json", json.dumps(plain, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError) as error:
        raise InvalidInput(
            f"the payload is not JSON: {error}", [ErrorDetail("not JSON", "$.payload")]
        ) from None
    raise InvalidInput(
        f"a payload is text, a number, or a dict or list (JSON); got {type(value).__name__}",
        [ErrorDetail("text, a number, or JSON", "$.payload")],
    )


class FlagsBuilder:
    """The flags a test defines, and the engines and clients that answer from them.

    Every method that defines a flag replaces what the flag was (``disable`` keeps its
    rules and turns it off) and returns the builder, so calls chain. Engines and clients
    made by `engine` and `client` follow later changes: a test can flip a flag halfway.
    Everything they answer is recorded in `evaluations`.
    """

    def __init__(
        self,
        *,
        environment: str = "development",
        strict: bool = False,
        custom_strategies: Mapping[str, CustomStrategy] | None = None,
    ) -> None:
        self.environment = environment
        self.strict = strict
        self.custom_strategies = dict(custom_strategies or {})
        self._flags: dict[str, Flag] = {}
        self._segments: dict[int, Segment] = {}
        self._version = 0
        self._log: list[Evaluation] = []
        self._lock = threading.Lock()

    # --- defining flags -----------------------------------------------------------
    def enable(
        self, name: str, *, variants: Iterable[Variant | str] = (), project: str = "default"
    ) -> FlagsBuilder:
        """On for everyone (a 100% rollout, as Unleash makes when a flag is turned on)."""
        return self._define(name, _rollout(name, 100, "default"), variants, project)

    def disable(self, name: str) -> FlagsBuilder:
        """Off; a flag defined before keeps its rules (what the server does too)."""
        existing = self._flags.get(name)
        flag = Flag(_checked_name(name)) if existing is None else existing
        return self.add(attrs.evolve(flag, enabled=False))

    def enable_for_users(
        self,
        name: str,
        *user_ids: str,
        variants: Iterable[Variant | str] = (),
        project: str = "default",
    ) -> FlagsBuilder:
        """On only for these userIds (a 100% rollout constrained to ``userId IN``)."""
        if not user_ids or not all(isinstance(u, str) and u for u in user_ids):
            raise InvalidInput(
                f'enable_for_users("{name}", ...) needs at least one userId, each a non-empty '
                "string",
                [ErrorDetail("non-empty strings", "$.userIds")],
            )
        strategy = attrs.evolve(
            _rollout(name, 100, "default"),
            constraints=(Constraint(_USER_ID, "IN", tuple(user_ids)),),
        )
        return self._define(name, strategy, variants, project)

    def rollout(
        self,
        name: str,
        percentage: int,
        *,
        stickiness: str = "default",
        group_id: str | None = None,
        variants: Iterable[Variant | str] = (),
        project: str = "default",
    ) -> FlagsBuilder:
        """On for ``percentage`` % of users, bucketed by ``stickiness`` (``default``:
        userId, else sessionId, else random; or any context field), as Unleash's
        ``flexibleRollout`` does; ``group_id`` (the flag's name by default) seeds the
        buckets, so two flags with the same group pick the same users."""
        if type(percentage) is not int or not 0 <= percentage <= 100:
            raise InvalidInput(
                f"a rollout is a whole percentage from 0 to 100, not {percentage!r}",
                [ErrorDetail("a whole number from 0 to 100", "$.parameters.rollout")],
            )
        strategy = _rollout(group_id or name, percentage, stickiness)
        return self._define(name, strategy, variants, project)

    def add(self, flag: Flag) -> FlagsBuilder:
        """Add (or replace) a flag given as a model value, with any rules it holds."""
        if not isinstance(flag, Flag):
            raise InvalidInput(
                f"add() takes a flagcore.Flag, not {type(flag).__name__}",
                [ErrorDetail("a flagcore.Flag", "$")],
            )
        _checked_name(flag.name)
        with self._lock:
            self._flags[flag.name] = flag
            self._version += 1
        return self

    def add_segment(self, segment: Segment) -> FlagsBuilder:
        """Add (or replace) a segment that strategies refer to by id."""
        with self._lock:
            self._segments[segment.id] = segment
            self._version += 1
        return self

    def _define(
        self, name: str, strategy: Strategy, variants: Iterable[Variant | str], project: str
    ) -> FlagsBuilder:
        given = tuple(v if isinstance(v, Variant) else variant(v) for v in variants)
        check_variants(given, "$.variants")
        flag = Flag(
            _checked_name(name),
            enabled=True,
            project=project,
            strategies=(strategy,),
            # As the service stores them: weights normalised, then in Unleash's name order.
            variants=variants_in_unleash_order(given),
        )
        return self.add(flag)

    # --- loading ------------------------------------------------------------------
    def load_client_features(self, source: Mapping[str, Any] | str | Path) -> FlagsBuilder:
        """Add every flag and segment of an ``/api/client/features`` payload (or a file
        holding one). A flag that cannot be read fails the load (`InvalidInput`, with JSON
        paths) instead of quietly going missing, as it would in an SDK."""
        payload = _json_object(source, "client features")
        reading = read_client_features(payload)
        if reading.problems:
            details = [
                ErrorDetail(f"{where}: {problem.message}", detail.path)
                for where, problem in reading.problems
                for detail in (problem.details or [ErrorDetail(problem.message)])
            ]
            raise InvalidInput(f"client features could not be read: {details[0].message}", details)
        return self._add_all(reading.snapshot)

    def load_unleash_export(
        self,
        source: Mapping[str, Any] | str | Path,
        *,
        environment: str | None = None,
        segments: Sequence[Mapping[str, Any]] | Mapping[str, Any] | str | Path | None = None,
    ) -> FlagsBuilder:
        """Add the flags of an Unleash feature export (``POST
        /api/admin/features-batch/export``, or a file holding one), as they are in
        ``environment`` (needed only when the export holds several).

        An export names segments (``{id, name}``) without their constraints; pass
        ``segments``, what ``GET /api/admin/segments`` answered on the exporting server
        (its ``{"segments": [...]}`` body, the list, or a file), matched by name.
        """
        export = _json_object(source, "an Unleash export")
        known = _segment_constraints(segments)
        return self._add_all(_from_export(export, environment, known))

    def _add_all(self, snapshot: ClientFeatures) -> FlagsBuilder:
        """Every flag and segment of ``snapshot``, or (a name refused) none of them."""
        for flag in snapshot.features:
            _checked_name(flag.name)
        with self._lock:
            self._flags.update((flag.name, flag) for flag in snapshot.features)
            self._segments.update((segment.id, segment) for segment in snapshot.segments)
            self._version += 1
        return self

    # --- what the flags are -------------------------------------------------------
    def snapshot(self) -> ClientFeatures:
        """The flags and segments as one `ClientFeatures` value."""
        with self._lock:
            return ClientFeatures(tuple(self._flags.values()), tuple(self._segments.values()))

    def client_features(self) -> dict[str, Any]:
        """The flags as Unleash's ``/api/client/features`` JSON (format 2), as SDKs see
        them: without disabled strategies."""
        return unstructure_client_features(_as_sdks_see_it(self.snapshot()), pause_gc=False)

    def defines(self, name: str) -> bool:
        """Whether the test defined ``name`` (on or off)."""
        return name in self._flags

    # --- answering ----------------------------------------------------------------
    def engine(self) -> RecordingEngine:
        """A real `flagcore.Engine` over these flags that records every evaluation."""
        return RecordingEngine(self)

    def client(self, *, app_name: str = "tests", environment: str | None = None) -> FakeFlagClient:
        """A `flagcore_client.FlagClient` stand-in over these flags: no network, no thread."""
        return FakeFlagClient(self, app_name=app_name, environment=environment)

    # --- what was asked -----------------------------------------------------------
    @property
    def evaluations(self) -> tuple[Evaluation, ...]:
        """Every evaluation made so far, in order."""
        with self._lock:
            return tuple(self._log)

    def evaluations_of(self, name: str) -> tuple[Evaluation, ...]:
        """The evaluations of one flag, in order."""
        return tuple(e for e in self.evaluations if e.flag == name)

    def asked(self, name: str, **context: Any) -> bool:
        """Whether ``name`` was evaluated with a context holding these fields (Unleash's
        names: ``userId="42"``, ``appName=...``, or any custom property)."""
        return any(_holds(e.context, context) for e in self.evaluations_of(name))

    def assert_asked(self, name: str, **context: Any) -> None:
        """`asked`, as an assertion whose message lists how ``name`` was asked instead."""
        if self.asked(name, **context):
            return
        seen = [e.context.to_mapping() for e in self.evaluations_of(name)]
        wanted = ", ".join(f"{key}={value!r}" for key, value in context.items())
        if not seen:
            raise AssertionError(f'flag "{name}" was never evaluated')
        listed = "\n".join(f"  {json.dumps(c, default=str, sort_keys=True)}" for c in seen[:20])
        more = f"\n  ... and {len(seen) - 20} more" if len(seen) > 20 else ""
        raise AssertionError(
            f'flag "{name}" was never evaluated with {wanted}; it was asked with:\n{listed}{more}'
        )

    @property
    def undefined_flags(self) -> tuple[str, ...]:
        """Flags the code asked for that the test never defined, each once, in order."""
        return tuple(dict.fromkeys(e.flag for e in self.evaluations if not e.defined))

    def clear_evaluations(self) -> None:
        """Forget what was asked so far (to check only what happens next)."""
        with self._lock:
            self._log.clear()

    def record(self, evaluation: Evaluation) -> None:
        """Keep what an engine or client made of this builder answered (`RecordingEngine`);
        in strict mode, fail the test on a flag it never defined."""
        with self._lock:
            self._log.append(evaluation)
        if not evaluation.defined and self.strict:
            raise UndefinedFlagError(
                f'the code asked for flag "{evaluation.flag}", which this test never defined '
                f"(defined: {', '.join(sorted(self._flags)) or 'none'})"
            )

    def current_engine(self, held: tuple[int, Engine] | None) -> tuple[int, Engine]:
        """The engine for the current data, with the version of the data it was built
        from: ``held`` while the data is unchanged (`RecordingEngine` keeps it)."""
        if held is not None and held[0] == self._version:
            return held
        with self._lock:
            version = self._version
            snapshot = ClientFeatures(tuple(self._flags.values()), tuple(self._segments.values()))
        engine = Engine(
            _as_sdks_see_it(snapshot), custom_strategies=self.custom_strategies, pause_gc=False
        )
        return version, engine


def seed_service(
    service: Service,
    snapshot: ClientFeatures,
    environment: str,
    *,
    custom_strategies: Iterable[str] = (),
) -> None:
    """Write ``snapshot`` into ``service`` as flags in ``environment``, through the use
    cases (so the server's rules apply): the environment, projects, segments and the
    ``custom_strategies`` (names, defined as Unleash needs them before a flag uses them)
    made as needed, segment ids renumbered, dependencies set once every flag exists."""
    if environment not in {e.name for e in service.environments.list_environments()}:
        service.environments.create_environment(environment)
    defined = {d.name for d in service.strategy_definitions.list_strategy_definitions()}
    for name in custom_strategies:
        if name not in defined:
            service.strategy_definitions.create_strategy_definition(StrategyDefinition(name))
    known_projects = {project.id for project in service.projects.list_projects()}
    segment_ids: dict[int, int] = {}
    for segment in snapshot.segments:
        made = service.segments.create_segment(
            segment.name or f"segment-{segment.id}",
            segment.constraints,
            description=segment.description,
        )
        segment_ids[segment.id] = made.id
    for flag in snapshot.features:
        if flag.project not in known_projects:
            service.projects.create_project(flag.project, flag.project)
            known_projects.add(flag.project)
        service.flags.create_flag(
            flag.project,
            flag.name,
            type=flag.type,
            description=flag.description,
            impression_data=flag.impression_data,
        )
        for strategy in flag.strategies:
            renumbered = tuple(segment_ids.get(s, s) for s in strategy.segments)
            service.strategies.add_strategy(
                flag.project,
                flag.name,
                environment,
                attrs.evolve(strategy, id=None, sort_order=None, segments=renumbered),
            )
        if flag.variants:
            service.variants.set_flag_variants(flag.project, flag.name, environment, flag.variants)
        if flag.enabled:
            service.environments.set_environment_enabled(flag.project, flag.name, environment, True)
        if flag.stale:
            service.flags.mark_stale(flag.project, flag.name, True)
    for flag in snapshot.features:
        if flag.dependencies:
            service.dependencies.set_dependencies(flag.project, flag.name, flag.dependencies)


# --- helpers --------------------------------------------------------------------------
def _rollout(group_id: str, percentage: int, stickiness: str) -> Strategy:
    return Strategy(
        _ROLLOUT,
        {
            _ROLLOUT_PERCENT: str(percentage),
            keys.PARAMETER_STICKINESS: stickiness,
            keys.PARAMETER_GROUP_ID: group_id,
        },
    )


def _checked_name(name: object) -> str:
    # The server's rule, so flags a test defines can be served by `flagcore serve` too.
    return check_name(name, "flag")


def _as_sdks_see_it(snapshot: ClientFeatures) -> ClientFeatures:
    """Without disabled strategies, as the server's client view leaves them out (the
    engine would count one as active: a client payload never carries them)."""
    if not any(s.disabled for flag in snapshot.features for s in flag.strategies):
        return snapshot
    flags = tuple(
        attrs.evolve(flag, strategies=tuple(s for s in flag.strategies if not s.disabled))
        for flag in snapshot.features
    )
    return ClientFeatures(flags, snapshot.segments)


def _holds(context: Context, wanted: Mapping[str, Any]) -> bool:
    fields = context.to_mapping()
    properties = fields.get("properties", {})
    return all(
        fields.get(key, properties.get(key)) == value
        if key != "properties"
        else all(properties.get(k) == v for k, v in value.items())
        for key, value in wanted.items()
    )


def _json_object(source: Mapping[str, Any] | str | Path, what: str) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    path = Path(source)
    try:
        size = path.stat().st_size
        if size > MAX_JSON_FILE_BYTES:
            raise InvalidInput(
                f"{path} holds {size} bytes; {what} file is read up to {MAX_JSON_FILE_BYTES}",
                [ErrorDetail("file too large", str(path))],
            )
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidInput(
            f"cannot read {what} from {path}: {error.strerror or error}",
            [ErrorDetail("cannot read the file", str(path))],
        ) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidInput(
            f"{path} is not JSON: {error}", [ErrorDetail("not JSON", str(path))]
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{path} holds a JSON {type(data).__name__}, not the object {what} is",
            [ErrorDetail("a JSON object", "$")],
        )
    return data


def _rows(export: Mapping[str, Any], key: str) -> list[tuple[str, Mapping[str, Any]]]:
    """``export[key]`` as (JSON path, object) pairs; a missing key is an empty list."""
    rows = export.get(key) or []
    if not isinstance(rows, list):
        raise InvalidInput(
            f"$.{key} must be an array", [ErrorDetail("expected an array", f"$.{key}")]
        )
    out = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise InvalidInput(
                f"$.{key}[{index}] must be an object",
                [ErrorDetail("expected an object", f"$.{key}[{index}]")],
            )
        out.append((f"$.{key}[{index}]", row))
    return out


def _text(row: Mapping[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        raise InvalidInput(
            f"{where}.{key} must be a string", [ErrorDetail("expected a string", f"{where}.{key}")]
        )
    return value


def _segment_constraints(
    source: Sequence[Mapping[str, Any]] | Mapping[str, Any] | str | Path | None,
) -> dict[str, Segment]:
    """Segments with their constraints, by name (what ``GET /api/admin/segments`` gives)."""
    if source is None:
        return {}
    if isinstance(source, (str, Path)):
        source = _json_object(source, "segments")
    listed = source.get(keys.SEGMENTS, []) if isinstance(source, Mapping) else source
    wrapped = {keys.SEGMENTS: list(listed)}
    out = {}
    for where, row in _rows(wrapped, keys.SEGMENTS):
        name = _text(row, keys.NAME, where)
        # Read by the one wire mapping; the id is the export's, set when matched by name.
        out[name] = structure_segment({**row, keys.ID: 0})
    return out


def _from_export(
    export: Mapping[str, Any], environment: str | None, known: Mapping[str, Segment]
) -> ClientFeatures:
    environments = _rows(export, _EXPORT_ENVIRONMENTS)
    environment = _export_environment(environments, environment)
    states = {
        _text(row, _EXPORT_FEATURE_NAME, where): (where, row)
        for where, row in environments
        if row.get(_EXPORT_ENVIRONMENT, environment) == environment
    }
    strategies: dict[str, list[Strategy]] = {}
    for where, row in _rows(export, _EXPORT_STRATEGIES):
        if row.get(_EXPORT_ENVIRONMENT, environment) != environment:
            continue
        owner = _text(row, _EXPORT_FEATURE_NAME, where)
        strategy = structure(row, Strategy, where)  # disabled ones stay, as on a server
        # An export lists each flag's strategies in evaluation order (sortOrder is null).
        # Weights are normalised as the service stores them: Unleash's answers for an
        # exported flag follow that normalisation, not the weights written in the file.
        variants = variants_in_unleash_order(strategy.variants)
        strategies.setdefault(owner, []).append(attrs.evolve(strategy, variants=variants))
    dependencies: dict[str, tuple[Dependency, ...]] = {}
    for where, row in _rows(export, keys.DEPENDENCIES):
        owner = _text(row, keys.FEATURE, where)
        dependencies[owner] = structure_dependencies(row.get(keys.DEPENDENCIES) or [])
    segments = _export_segments(export, known)
    flags = []
    for where, row in _rows(export, _EXPORT_FEATURES):
        if row.get(_EXPORT_ARCHIVED) is True:
            continue  # SDKs never see archived flags
        flag = structure(row, Flag, where)
        state_where, state = states.get(flag.name, (where, {}))
        enabled = state.get(keys.ENABLED, False)
        if not isinstance(enabled, bool):
            raise InvalidInput(
                f"{state_where}.enabled must be a boolean",
                [ErrorDetail("expected a boolean", f"{state_where}.enabled")],
            )
        own = tuple(strategies.get(flag.name, ()))
        _check_segments_known(flag.name, own, segments)
        flags.append(
            attrs.evolve(
                flag,
                enabled=enabled,
                strategies=own,
                variants=variants_in_unleash_order(
                    structure_variants(state.get(keys.VARIANTS) or [])
                ),
                dependencies=dependencies.get(flag.name, ()),
            )
        )
    return ClientFeatures(tuple(flags), tuple(s for s in segments.values() if s is not None))


def _export_environment(
    environments: list[tuple[str, Mapping[str, Any]]], wanted: str | None
) -> str:
    present = sorted({_text(row, _EXPORT_ENVIRONMENT, where) for where, row in environments})
    if wanted is None:
        if len(present) > 1:
            raise InvalidInput(
                f"the export holds environments {', '.join(present)}: name one with environment=",
                [ErrorDetail("several environments", f"$.{_EXPORT_ENVIRONMENTS}")],
            )
        return present[0] if present else "development"
    if present and wanted not in present:
        raise InvalidInput(
            f'the export has no environment "{wanted}" (it holds {", ".join(present)})',
            [ErrorDetail("no such environment", f"$.{_EXPORT_ENVIRONMENTS}")],
        )
    return wanted


def _export_segments(
    export: Mapping[str, Any], known: Mapping[str, Segment]
) -> dict[int, Segment | None]:
    """The export's segments by id, with constraints from ``known`` (None: unknown)."""
    out: dict[int, Segment | None] = {}
    for where, row in _rows(export, keys.SEGMENTS):
        segment_id = row.get(keys.ID)
        if type(segment_id) is not int:
            raise InvalidInput(
                f"{where}.id must be a number", [ErrorDetail("expected a number", f"{where}.id")]
            )
        name = _text(row, keys.NAME, where)
        given = known.get(name)
        out[segment_id] = None if given is None else attrs.evolve(given, id=segment_id)
    return out


def _check_segments_known(
    flag: str, strategies: tuple[Strategy, ...], segments: Mapping[int, Segment | None]
) -> None:
    for strategy in strategies:
        for segment_id in strategy.segments:
            if segments.get(segment_id) is None:
                raise InvalidInput(
                    f'flag "{flag}" uses segment {segment_id}, whose constraints an Unleash '
                    "export does not carry: pass segments= (GET /api/admin/segments on the "
                    "exporting server), matched by name",
                    [ErrorDetail("segment constraints unknown", f"$.{keys.SEGMENTS}")],
                )
