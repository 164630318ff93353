"""Flag types and their expected lifetimes (Unleash's ``/api/admin/feature-types``), and
which flags have outlived theirs: "potentially stale" (issue 32).

Unleash's defaults: release and experiment 40 days, operational 7, kill switch and
permission none. A lifetime of None or 0 means a flag of that type never becomes
potentially stale. A flag is potentially stale when it is active, not already marked
stale, and older than its type's lifetime.

Two events tell integrations: ``feature-potentially-stale-on`` (Unleash's) once per flag
when it becomes so, and flagcore's daily ``feature-potentially-stale-reminder``, one per
project naming its flags still potentially stale, so a project's integration can remind
its owners every day until they act.
"""

from __future__ import annotations

import datetime as dt

import attrs

from flagcore.entities import FeatureTypeLifetime, FlagDefinition, FlagStage, UpkeepDue
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.ports import Records
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import FEATURE_TYPE_LIFETIMES, FLAG_STAGES, UPKEEP_DUE
from flagcore.wire.event_data import FeatureTypeData, StaleReminderData

__all__ = [
    "DEFAULT_FEATURE_TYPES",
    "REMINDER_EVENT",
    "FeatureType",
    "FeatureTypes",
    "is_potentially_stale",
]

MAX_LIFETIME_DAYS = 2**31 - 1  # Unleash's bound (a 32-bit integer)
# Kept beside the lifecycle stages (not one of them): when the flag was announced
# potentially stale, so each flag is announced once until it stops being so.
ANNOUNCED = "potentially-stale"
REMINDER_EVENT = "feature-potentially-stale-reminder"
"""flagcore's daily event per project naming its flags still potentially stale."""
_REMINDER_DUE = "potentially-stale-reminder"  # its row in `UPKEEP_DUE`
MAX_REMINDED_NAMES = 500  # named in one event; ``count`` says how many there are


def _next_due(due: dt.datetime, every: dt.timedelta, now: dt.datetime) -> dt.datetime:
    """The first time after ``now`` on ``due``'s cadence (a node down for days sends one
    reminder when back, not one per day missed)."""
    return due + every * ((now - due) // every + 1)


@attrs.frozen
class FeatureType:
    """A flag type as Unleash lists it, with its expected lifetime in days."""

    id: str
    name: str
    description: str
    lifetime_days: int | None


DEFAULT_FEATURE_TYPES: tuple[FeatureType, ...] = (
    FeatureType(
        "release", "Release", "Release feature toggles are used to release new features.", 40
    ),
    FeatureType(
        "experiment",
        "Experiment",
        "Experiment feature toggles are used to test and verify multiple different versions "
        "of a feature.",
        40,
    ),
    FeatureType(
        "operational",
        "Operational",
        "Operational feature toggles are used to control aspects of a rollout.",
        7,
    ),
    FeatureType(
        "kill-switch",
        "Kill switch",
        "Kill switch feature toggles are used to quickly turn on or off critical functionality "
        "in your system.",
        None,
    ),
    FeatureType(
        "permission",
        "Permission",
        "Permission feature toggles are used to control permissions in your system.",
        None,
    ),
)


def _types(tx: Records) -> list[FeatureType]:
    changed = {kept.id: kept.lifetime_days for kept in tx.list_records(FEATURE_TYPE_LIFETIMES)}
    return [
        attrs.evolve(t, lifetime_days=changed[t.id]) if t.id in changed else t
        for t in DEFAULT_FEATURE_TYPES
    ]


def is_potentially_stale(
    flag: FlagDefinition, lifetimes: dict[str, int | None], now: dt.datetime
) -> bool:
    """Older than its type's lifetime (active, not marked stale already)."""
    days = lifetimes.get(flag.type)
    if not days or flag.archived or flag.stale:
        return False
    return now - flag.created_at > dt.timedelta(days=days)


class FeatureTypes:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_feature_types(self) -> list[FeatureType]:
        with self._context.read() as tx:
            return _types(tx)

    def set_type_lifetime(
        self, type_id: str, lifetime_days: int | None, *, actor: Actor = SYSTEM
    ) -> FeatureType:
        """Change a type's expected lifetime (None or 0: never potentially stale)."""
        actor = authorize(actor, "set_type_lifetime")
        if lifetime_days is not None and not 0 <= lifetime_days <= MAX_LIFETIME_DAYS:
            raise InvalidInput(
                "lifetimeDays must be a whole number of days from 0",
                [ErrorDetail(f"from 0 to {MAX_LIFETIME_DAYS}", "$.lifetimeDays")],
            )
        lifetime_days = lifetime_days or None  # 0 is "never", kept and answered as null
        with self._context.unit() as tx:
            before = {t.id: t for t in _types(tx)}.get(type_id)
            if before is None:
                raise NotFound(f'there is no feature type "{type_id}"')
            tx.save_record(FEATURE_TYPE_LIFETIMES, FeatureTypeLifetime(type_id, lifetime_days))
            after = attrs.evolve(before, lifetime_days=lifetime_days)
            self._context.record_event(
                tx,
                "feature-type-updated",
                actor,
                data=FeatureTypeData(type_id, lifetime_days),
                pre_data=FeatureTypeData(type_id, before.lifetime_days),
            )
        return after

    def lifetimes(self) -> dict[str, int | None]:
        """Each type's lifetime in days, for `is_potentially_stale`."""
        return {t.id: t.lifetime_days for t in self.list_feature_types()}

    def potentially_stale_flags(self, now: dt.datetime | None = None) -> list[FlagDefinition]:
        """The active flags older than their type's lifetime, by name."""
        now = now or self._context.clock()
        with self._context.read() as tx:
            lifetimes = {t.id: t.lifetime_days for t in _types(tx)}
            return [
                flag
                for flag in tx.list_flags(archived=False)
                if is_potentially_stale(flag, lifetimes, now)
            ]

    def announce_potentially_stale(
        self, now: dt.datetime | None = None, *, actor: Actor = SYSTEM
    ) -> list[str]:
        """One ``feature-potentially-stale-on`` event (Unleash's) for each flag that has
        become potentially stale since the last call, and the mark taken away from those
        that stopped being so (a longer lifetime, marked stale, archived), so they are
        announced again if they become so again. The server calls it every hour; the
        names announced."""
        actor = authorize(actor, "announce_potentially_stale")
        now = now or self._context.clock()
        announced: list[str] = []
        with self._context.unit() as tx:
            lifetimes = {t.id: t.lifetime_days for t in _types(tx)}
            marked = {s.flag for s in tx.list_records(FLAG_STAGES, {"stage": ANNOUNCED})}
            stale = {
                flag.name: flag
                for flag in tx.list_flags(archived=None)
                if is_potentially_stale(flag, lifetimes, now)
            }
            for name in sorted(marked - set(stale)):
                tx.delete_record(FLAG_STAGES, (name, ANNOUNCED))
            for name in sorted(set(stale) - marked):
                tx.save_record(FLAG_STAGES, FlagStage(name, ANNOUNCED, now))
                self._context.record_event(
                    tx, "feature-potentially-stale-on", actor, flag=stale[name]
                )
                announced.append(name)
        return announced

    def remind_potentially_stale(
        self, every: dt.timedelta, now: dt.datetime | None = None, *, actor: Actor = SYSTEM
    ) -> dict[str, list[str]]:
        """Once per ``every`` (a day on the server), whatever the nodes calling it: one
        ``feature-potentially-stale-reminder`` event per project naming its flags still
        potentially stale (by name, the first `MAX_REMINDED_NAMES`; ``count`` all of
        them). The time it is next due is kept in the store and moved on in the unit
        that writes the events, and every store runs write units one at a time across
        nodes, so the first node due does it and the others find it not due. The first
        call only sets the first due time, ``every`` later. The projects reminded, each
        with its names."""
        actor = authorize(actor, "remind_potentially_stale")
        if every <= dt.timedelta(0):
            raise InvalidInput("the reminder's interval must be positive")
        now = now or self._context.clock()
        with self._context.read() as tx:  # the common case (not due) writes nothing
            due = tx.get_record(UPKEEP_DUE, _REMINDER_DUE)
        if due is not None and now < due.due_at:
            return {}
        reminded: dict[str, list[str]] = {}
        with self._context.unit() as tx:
            due = tx.get_record(UPKEEP_DUE, _REMINDER_DUE)  # again: another node may be first
            if due is None:
                tx.save_record(UPKEEP_DUE, UpkeepDue(_REMINDER_DUE, now + every))
                return {}
            if now < due.due_at:
                return {}
            tx.save_record(UPKEEP_DUE, UpkeepDue(_REMINDER_DUE, _next_due(due.due_at, every, now)))
            lifetimes = {t.id: t.lifetime_days for t in _types(tx)}
            for flag in tx.list_flags(archived=False):
                if is_potentially_stale(flag, lifetimes, now):
                    reminded.setdefault(flag.project, []).append(flag.name)
            for project in sorted(reminded):
                names = sorted(reminded[project])
                reminded[project] = names
                self._context.record_event(
                    tx,
                    REMINDER_EVENT,
                    actor,
                    project=project,
                    data=StaleReminderData(tuple(names[:MAX_REMINDED_NAMES]), len(names)),
                )
        return reminded
