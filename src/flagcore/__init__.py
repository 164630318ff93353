"""flagcore: Unleash-compatible feature flags for Python.

Everything an embedding user needs is importable from here: the engine (`Engine`,
`Context`), the use cases (`Service`) over a store (`MemoryStore`, or any implementation
of the store port `Store`), the errors, and the values callers build (`Strategy`,
`Constraint`, `Segment`, `Variant`, ..., `Limits`).

The other public modules are `flagcore.service` (what adapters use of the service),
`flagcore.entities` (the admin side's stored values), `flagcore.ports` (the store port in
parts), `flagcore.model`, `flagcore.errors`, `flagcore.testing` (the port contract suite)
and `flagcore.wire` (Unleash's JSON). Every other submodule is the implementation: its
names may change without notice (docs/architecture.md, "Public face").
"""

from flagcore.context import Context
from flagcore.engine import Engine, EngineWarning
from flagcore.errors import (
    Conflict,
    ErrorDetail,
    FlagcoreError,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
    RateLimited,
    StorageError,
    Unauthenticated,
)
from flagcore.limits import Limits
from flagcore.memory import MemoryStore
from flagcore.model import (
    ClientFeatures,
    Constraint,
    Dependency,
    Flag,
    FlagType,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
    WeightType,
)
from flagcore.operators import OPERATORS as _OPERATORS
from flagcore.ports import (
    ActionRepository,
    EventLog,
    FlagRepository,
    MetricsRepository,
    ProjectRepository,
    Records,
    ReportsAvailability,
    RetentionDeletes,
    RevisionFeed,
    SegmentRepository,
    SignalRepository,
    Store,
    StrategyDefinitions,
    StrategyRepository,
    TagRepository,
    TokenRepository,
    Transaction,
)
from flagcore.service import Service
from flagcore.strategies import BUILTIN_STRATEGIES, CustomStrategy
from flagcore.validation import LIST_OPERATORS, MAX_NAME_LENGTH
from flagcore.variants import VariantResult
from flagcore.wire import read_client_features, unstructure_client_features

__version__ = "0.1.0"

# Every constraint operator Unleash defines, in its documented order, and those that take
# a list of values (the others take one value): what a form or a client offers to choose.
CONSTRAINT_OPERATORS: tuple[str, ...] = tuple(_OPERATORS)

__all__ = [
    "BUILTIN_STRATEGIES",
    "CONSTRAINT_OPERATORS",
    "LIST_OPERATORS",
    "MAX_NAME_LENGTH",
    "ActionRepository",
    "ClientFeatures",
    "Conflict",
    "Constraint",
    "Context",
    "CustomStrategy",
    "Dependency",
    "Engine",
    "EngineWarning",
    "ErrorDetail",
    "EventLog",
    "Flag",
    "FlagRepository",
    "FlagType",
    "FlagcoreError",
    "Forbidden",
    "InvalidInput",
    "LimitExceeded",
    "Limits",
    "MemoryStore",
    "MetricsRepository",
    "NameConflict",
    "NotFound",
    "Override",
    "Payload",
    "ProjectRepository",
    "RateLimited",
    "Records",
    "ReportsAvailability",
    "RetentionDeletes",
    "RevisionFeed",
    "Segment",
    "SegmentRepository",
    "Service",
    "SignalRepository",
    "StorageError",
    "Store",
    "Strategy",
    "StrategyDefinitions",
    "StrategyRepository",
    "TagRepository",
    "TokenRepository",
    "Transaction",
    "Unauthenticated",
    "Variant",
    "VariantResult",
    "WeightType",
    "__version__",
    "read_client_features",
    "unstructure_client_features",
]
