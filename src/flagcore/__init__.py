"""flagcore: Unleash-compatible feature flags for Python.

Everything a user needs is importable from here; the submodules are the implementation.
"""

from flagcore.context import Context
from flagcore.engine import Engine, EngineWarning, compile_snapshot
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
from flagcore.strategies import CustomStrategy
from flagcore.variants import VariantResult
from flagcore.wire import read_client_features, unstructure_client_features

__version__ = "0.1.0"

__all__ = [
    "ClientFeatures",
    "Conflict",
    "Constraint",
    "Context",
    "CustomStrategy",
    "Dependency",
    "Engine",
    "EngineWarning",
    "ErrorDetail",
    "Flag",
    "FlagType",
    "FlagcoreError",
    "Forbidden",
    "InvalidInput",
    "LimitExceeded",
    "Limits",
    "NameConflict",
    "NotFound",
    "Override",
    "Payload",
    "RateLimited",
    "Segment",
    "StorageError",
    "Strategy",
    "Unauthenticated",
    "Variant",
    "VariantResult",
    "WeightType",
    "__version__",
    "compile_snapshot",
    "read_client_features",
    "unstructure_client_features",
]
