"""The use cases behind every admin operation, with Unleash's rules.

HTTP handlers are thin calls into `Service`; an in-process caller gets the same rules.
Each area lives in its own module; `Service` puts them together over one store.
"""

from __future__ import annotations

from flagcore.service._base import SYSTEM
from flagcore.service.actions import ActionsMixin
from flagcore.service.client import ClientMixin, LiveEngine
from flagcore.service.flags import FlagsMixin
from flagcore.service.metrics import MetricsMixin
from flagcore.service.projects import ProjectsMixin
from flagcore.service.retention import PruneReport, RetentionMixin, RetentionSettings
from flagcore.service.segments import SegmentsMixin
from flagcore.service.signals import CreatedSignalToken, SignalsMixin
from flagcore.service.strategies import BUILTIN_DEFINITIONS, StrategiesMixin
from flagcore.service.tags import TagsMixin
from flagcore.service.tokens import CreatedToken, TokensMixin, hash_secret

__all__ = [
    "BUILTIN_DEFINITIONS",
    "SYSTEM",
    "CreatedSignalToken",
    "CreatedToken",
    "LiveEngine",
    "PruneReport",
    "RetentionSettings",
    "Service",
    "hash_secret",
]


class Service(
    ProjectsMixin,
    FlagsMixin,
    StrategiesMixin,
    SegmentsMixin,
    TagsMixin,
    TokensMixin,
    MetricsMixin,
    RetentionMixin,
    SignalsMixin,
    ActionsMixin,
    ClientMixin,
):
    """Every use case of flagcore over one `flagcore.ports.Store`.

    Creating a service makes sure the store has Unleash's defaults: project ``default``,
    environments ``development`` and ``production``, and tag type ``simple``.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.ensure_defaults()
