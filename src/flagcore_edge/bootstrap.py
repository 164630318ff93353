"""Offline mode's file: a client-features payload, or an Unleash feature export."""

from __future__ import annotations

from pathlib import Path

from flagcore import MemoryStore
from flagcore.model import ClientFeatures
from flagcore.service import Service
from flagcore.wire import read_client_features, read_export
from flagcore_http.bodies import parse_json

__all__ = ["read_bootstrap"]


def read_bootstrap(path: Path) -> ClientFeatures:
    """A client-features payload, or an Unleash feature export (imported into project
    ``default`` of its environment through the service, then read as SDKs see it).
    Raises `OSError`, `ValueError` or a `flagcore.errors.FlagcoreError` (an export the
    importer refuses) for a file that cannot be served."""
    data = parse_json(path.read_bytes(), what="the bootstrap file")
    if isinstance(data, dict) and "featureStrategies" in data:
        export = read_export(data, "the bootstrap file")
        named = [e.environment for e in export.feature_environments if e.environment]
        environment = named[0] if named else "development"
        service = Service(MemoryStore())
        service.importing.import_export("default", environment, export)
        return service.client.client_features(environment)
    if not isinstance(data, dict) or not isinstance(data.get("features"), list):
        raise ValueError("the bootstrap file is neither client features nor an Unleash export")
    return read_client_features(data).snapshot
