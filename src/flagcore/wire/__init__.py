"""Unleash's JSON and the model, in one package: the only place that knows its keys.

- `fields`: the table: each model class's attributes, their JSON keys and defaults, and
  the legacy and client-only keys. Readers, writers and the converter are built from it.
- `reading` / `writing`: the fast paths, generated from the table.
- `converter`: the strict cattrs converter (the reference reader, with JSON paths in its
  errors); adapters that read classes of their own take ``converter.copy()``.
- `client_features`: whole payloads, deltas, formats 1 and 2; `client_payload`: the
  payload's envelope as a typed answer (its schema; the server's fast writer is checked
  against its derived one).
- `unleash_export`: Unleash's feature export file as read; `export_answers`: as written.
- `schema`: JSON Schemas of the same classes, for the published API contract.
- `answer_table` / `admin_answers` / `delta_events`: the answers (typed values, each with
  its row of keys: the writer and the schema are generated from it), the admin API's
  answer classes, and Unleash's delta events (read back by `apply_delta_events`).
- `signal_answers`: signal endpoints, signals and project action sets as answers.
- `frontend_answers`: the Frontend API's and OFREP's answers.
- `playground_answers`: Unleash's playground answers; `playground_context`: the context
  a playground request gives, as a typed value.
- `import_answers`: import validation and import reports, the context field list.
- `user_answers`: users, their root roles, reset links (issue 28).
- `preview_answers`: the preview of a flag change (who it flips), uploaded samples.
- `catalog_answers`: one tag type, and the flag search across projects.
- `change_request_answers`: change requests, their config and reviewers (issue 30).
- `code_reference_answers`: where code names flags, as scans reported it (issue 32).
- `lifecycle_answers`: a flag's lifecycle stages, in Unleash 7's shape (issue 32).
- `usage_answers`: a flag's usage history in Unleash's client-metrics shapes (issue 32).
- `release_plan_answers`: release templates and plans, in Unleash's shape (issue 32).
- `sdk_bodies`: what SDKs post (registrations, metrics reports), read from rows.
- `edge_bodies`: what downstream edges post (``/api/client/metrics/bulk``,
  ``/edge/validate``), read strictly; the validated tokens answer.
- `event_data`: what each event of the change log carries (``data``, ``preData``), as
  typed values written by the answer table.
"""

from __future__ import annotations

from flagcore.wire import (
    admin_answers,
    catalog_answers,
    change_payloads,
    change_request_answers,
    client_payload,
    code_reference_answers,
    delta_events,
    edge_bodies,
    event_data,
    export_answers,
    frontend_answers,
    impact_metrics,
    import_answers,
    integration_answers,
    lifecycle_answers,
    playground_answers,
    playground_context,
    preview_answers,
    release_plan_answers,
    sdk_bodies,
    signal_answers,
    usage_answers,
    user_answers,
)
from flagcore.wire.admin_answers import *  # noqa: F403
from flagcore.wire.answer_table import (
    ANSWER_FIELDS,
    AnswerField,
    answer,
    iso_time,
    write_answer,
)
from flagcore.wire.catalog_answers import *  # noqa: F403
from flagcore.wire.change_payloads import *  # noqa: F403
from flagcore.wire.change_request_answers import *  # noqa: F403
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
from flagcore.wire.client_payload import *  # noqa: F403
from flagcore.wire.code_reference_answers import *  # noqa: F403
from flagcore.wire.converter import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_ERROR_DETAILS,
    OutOfRange,
    UnknownKey,
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
from flagcore.wire.delta_events import *  # noqa: F403
from flagcore.wire.edge_bodies import *  # noqa: F403
from flagcore.wire.event_data import *  # noqa: F403
from flagcore.wire.export_answers import *  # noqa: F403
from flagcore.wire.fields import FIELDS, WIRE_NAMES, WireField, wire_name
from flagcore.wire.frontend_answers import *  # noqa: F403
from flagcore.wire.impact_metrics import *  # noqa: F403
from flagcore.wire.import_answers import *  # noqa: F403
from flagcore.wire.integration_answers import *  # noqa: F403
from flagcore.wire.lifecycle_answers import *  # noqa: F403
from flagcore.wire.playground_answers import *  # noqa: F403
from flagcore.wire.playground_context import *  # noqa: F403
from flagcore.wire.preview_answers import *  # noqa: F403
from flagcore.wire.reading import NotFast
from flagcore.wire.release_plan_answers import *  # noqa: F403
from flagcore.wire.schema import JsonSchema, SchemaSet, schema_ref
from flagcore.wire.sdk_bodies import *  # noqa: F403
from flagcore.wire.signal_answers import *  # noqa: F403

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
    structure_export,
)
from flagcore.wire.usage_answers import *  # noqa: F403
from flagcore.wire.user_answers import *  # noqa: F403
from flagcore.wire.writing import write_constraint, write_flag, write_segment

__all__ = [
    "ANSWER_FIELDS",
    "EXPORT_NAMES",
    "FIELDS",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ERROR_DETAILS",
    "WIRE_NAMES",
    "AnswerField",
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
    "UnknownKey",
    "WireField",
    "WrongType",
    "answer",
    "apply_delta_events",
    "converter",
    "enum_hook",
    "error_details",
    "index_client_features",
    "iso_time",
    "json_member",
    "json_type",
    "read_client_features",
    "read_export",
    "register_class",
    "schema_ref",
    "structure",
    "structure_constraints",
    "structure_dependencies",
    "structure_export",
    "structure_flag",
    "structure_segment",
    "structure_variants",
    "structure_with",
    "unstructure_client_features",
    "unstructure_flag",
    "wire_name",
    "write_answer",
    "write_constraint",
    "write_flag",
    "write_segment",
]
# Each answer module's face is the package's own: a new answer class is exported where it
# is written, with no edit here.
__all__ += admin_answers.__all__
__all__ += client_payload.__all__
__all__ += export_answers.__all__
__all__ += delta_events.__all__
__all__ += frontend_answers.__all__
__all__ += import_answers.__all__
__all__ += playground_answers.__all__
__all__ += playground_context.__all__
__all__ += signal_answers.__all__
__all__ += sdk_bodies.__all__
__all__ += user_answers.__all__
__all__ += preview_answers.__all__
__all__ += integration_answers.__all__
__all__ += catalog_answers.__all__
__all__ += change_request_answers.__all__
__all__ += change_payloads.__all__
__all__ += code_reference_answers.__all__
__all__ += lifecycle_answers.__all__
__all__ += usage_answers.__all__
__all__ += release_plan_answers.__all__
__all__ += impact_metrics.__all__
__all__ += edge_bodies.__all__
__all__ += event_data.__all__
