"""Unleash's JSON and the model, in one package: the only place that knows its keys.

- `fields`: the table: each model class's attributes, their JSON keys and defaults, and
  the legacy and client-only keys. Readers, writers and the converter are built from it.
- `reading` / `writing`: the fast paths, generated from the table.
- `converter`: the strict cattrs converter (the reference reader, with JSON paths in its
  errors); adapters that read classes of their own take ``converter.copy()``.
- `client_features`: whole payloads, deltas, formats 1 and 2.
- `unleash_export`: Unleash's feature export file (its import and export).
- `schema`: JSON Schemas of the same classes, for the published API contract.
"""

from __future__ import annotations

from flagcore.wire.client_features import (
    ClientFeaturesReading,
    IndexedClientFeatures,
    apply_delta_events,
    index_client_features,
    read_client_features,
    structure_constraints,
    structure_dependencies,
    structure_flag,
    structure_segment,
    structure_variants,
    unstructure_client_features,
    unstructure_flag,
)
from flagcore.wire.converter import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_ERROR_DETAILS,
    OutOfRange,
    WrongType,
    converter,
    enum_hook,
    error_details,
    json_member,
    json_type,
    register_class,
    structure,
    structure_with,
)
from flagcore.wire.fields import FIELDS, WIRE_NAMES, WireField, wire_name
from flagcore.wire.reading import NotFast
from flagcore.wire.schema import JsonSchema, SchemaSet, schema_ref

# Unleash's feature export format (branch importer).
from flagcore.wire.unleash_export import (
    EXPORT_NAMES,
    ExportedContextField,
    ExportedDependencies,
    ExportedEnvironment,
    ExportedFlag,
    ExportedSegment,
    ExportedStrategy,
    ExportedTag,
    ExportedTagType,
    FeatureExport,
    LegalValue,
    read_export,
    write_export,
)
from flagcore.wire.writing import write_constraint, write_flag, write_segment

__all__ = [
    "EXPORT_NAMES",
    "FIELDS",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ERROR_DETAILS",
    "WIRE_NAMES",
    "ClientFeaturesReading",
    "ExportedContextField",
    "ExportedDependencies",
    "ExportedEnvironment",
    "ExportedFlag",
    "ExportedSegment",
    "ExportedStrategy",
    "ExportedTag",
    "ExportedTagType",
    "FeatureExport",
    "IndexedClientFeatures",
    "JsonSchema",
    "LegalValue",
    "NotFast",
    "OutOfRange",
    "SchemaSet",
    "WireField",
    "WrongType",
    "apply_delta_events",
    "converter",
    "enum_hook",
    "error_details",
    "index_client_features",
    "json_member",
    "json_type",
    "read_client_features",
    "read_export",
    "register_class",
    "schema_ref",
    "structure",
    "structure_constraints",
    "structure_dependencies",
    "structure_flag",
    "structure_segment",
    "structure_variants",
    "structure_with",
    "unstructure_client_features",
    "unstructure_flag",
    "wire_name",
    "write_constraint",
    "write_export",
    "write_flag",
    "write_segment",
]
