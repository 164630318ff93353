"""Reading the UI's HTML forms into the domain's values, with errors at the field's path.

Rows are numbered fields (``constraints-0-context``, ``variants-2-weight``); rows left
exactly as the form drew them empty are dropped, and a form re-rendered after an error
shows the rows as read, so the service's paths (``$.constraints[1].values``) name the
row on screen. Nothing here
decides a rule the service also checks: it only turns text into typed values, and a
value that is not what its field says (a weight that is no number, a JSON payload that is
not JSON) is refused here, never guessed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable

from multidict import MultiDict

from flagcore import LIST_OPERATORS
from flagcore.entities import Tag
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Constraint, Override, Payload, Variant, WeightType

__all__ = [
    "BLANK_CONSTRAINT",
    "BLANK_LEGAL_VALUE",
    "BLANK_PARAMETER",
    "BLANK_VARIANT",
    "CONSTRAINT_COLUMNS",
    "MAX_ROWS",
    "PAYLOAD_TYPES",
    "VARIANT_COLUMNS",
    "Row",
    "checked",
    "constraint_rows",
    "constraints_from",
    "legal_value_rows",
    "optional_text",
    "parameter_rows",
    "rows_of_constraints",
    "rows_of_variants",
    "segment_ids_from",
    "tags_from",
    "variant_rows",
    "variants_from",
]

# More rows than any limit allows (30 constraints, a few hundred variants at most in use).
MAX_ROWS = 300
PAYLOAD_TYPES = ("string", "json", "csv", "number")


Row = dict[str, str]

# The empty rows the editors draw (templates get them from here): a row still equal to
# one of these was not touched.
BLANK_CONSTRAINT: Row = {
    "context": "",
    "operator": "IN",
    "values": "",
    "inverted": "",
    "case_insensitive": "",
}
BLANK_VARIANT: Row = {
    "name": "",
    "weight": "",
    "stickiness": "default",
    "payload_type": "string",
    "payload_value": "",
    "overrides": "",
}
BLANK_LEGAL_VALUE: Row = {"value": "", "description": ""}
BLANK_PARAMETER: Row = {"name": "", "type": "string", "description": "", "required": ""}
CONSTRAINT_COLUMNS = tuple(BLANK_CONSTRAINT)
VARIANT_COLUMNS = tuple(BLANK_VARIANT)


def optional_text(fields: MultiDict[str], key: str) -> str | None:
    """A free text, None when blank; line breaks as typed (``\n``: browsers send a
    textarea's as ``\r\n``)."""
    value = fields.get(key, "").replace("\r\n", "\n")
    return value if value.strip() else None


def checked(fields: MultiDict[str], key: str) -> bool:
    return fields.get(key) == "on"


def _lines(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def _rows(fields: MultiDict[str], prefix: str, blank: Row) -> Iterable[Row]:
    """Each numbered row's columns as typed, in order. A row counts when any column
    differs from the empty row the form draws (a select changed alone counts too, so
    nothing a person touched is dropped); rows left as drawn are skipped."""
    for index in range(MAX_ROWS):
        present = any(f"{prefix}-{index}-{c}" in fields for c in blank)
        if not present:
            return
        row = {c: _posted(fields, f"{prefix}-{index}-{c}") for c in blank}
        if any(value.strip() != blank[key] for key, value in row.items()):
            yield row


def _posted(fields: MultiDict[str], key: str) -> str:
    """A column as posted; a multiple select (a constraint's legal values) posts one
    value per chosen option: they read as the textarea's lines would."""
    return "\n".join(fields.getall(key, [""]))


def constraint_rows(fields: MultiDict[str], prefix: str = "constraints") -> list[Row]:
    return list(_rows(fields, prefix, BLANK_CONSTRAINT))


def legal_value_rows(fields: MultiDict[str], prefix: str = "legalValues") -> list[Row]:
    return list(_rows(fields, prefix, BLANK_LEGAL_VALUE))


def variant_rows(fields: MultiDict[str], prefix: str = "variants") -> list[Row]:
    return list(_rows(fields, prefix, BLANK_VARIANT))


def parameter_rows(fields: MultiDict[str], prefix: str = "parameters") -> list[Row]:
    """A custom strategy's parameter rows as typed (the strategy definition editor)."""
    return list(_rows(fields, prefix, BLANK_PARAMETER))


def rows_of_constraints(constraints: Iterable[Constraint]) -> list[Row]:
    """Stored constraints as the editor shows them (values one per line)."""
    return [
        {
            "context": c.context_name,
            "operator": c.operator,
            "values": "\n".join(c.values) if c.values else (c.value or ""),
            "inverted": "on" if c.inverted else "",
            "case_insensitive": "on" if c.case_insensitive else "",
        }
        for c in constraints
    ]


def rows_of_variants(variants: Iterable[Variant]) -> list[Row]:
    """Stored variants as the editor shows them: a fixed weight as a percentage."""
    return [
        {
            "name": v.name,
            "weight": f"{v.weight / 10:g}" if v.weight_type == WeightType.FIX else "",
            "stickiness": v.stickiness,
            "payload_type": v.payload.type if v.payload else "string",
            "payload_value": v.payload.value if v.payload else "",
            "overrides": "\n".join(
                f"{o.context_name}: {', '.join(map(_override_value, o.values))}"
                for o in v.overrides
            ),
        }
        for v in variants
    ]


def constraints_from(rows: Iterable[Row], prefix: str = "constraints") -> list[Constraint]:
    constraints = []
    for index, row in enumerate(rows):
        values = _lines(row["values"])
        operator = row["operator"]
        single = None
        if operator and operator not in LIST_OPERATORS:
            if len(values) > 1:
                raise InvalidInput(
                    f"{operator} compares with one value",
                    [ErrorDetail("one value only", f"$.{prefix}[{index}].value")],
                )
            single, values = (values[0] if values else None), ()
        constraints.append(
            Constraint(
                row["context"].strip(),
                operator,
                values,
                single,
                inverted=row["inverted"] == "on",
                case_insensitive=row["case_insensitive"] == "on",
            )
        )
    return constraints


def variants_from(rows: Iterable[Row], prefix: str = "variants") -> list[Variant]:
    """Variants; a weight is a percentage with at most one decimal, fixed when given."""
    variants = []
    for index, row in enumerate(rows):
        here = f"$.{prefix}[{index}]"
        weight, weight_type = 0, WeightType.VARIABLE
        if row["weight"].strip():
            weight, weight_type = _per_mille(row["weight"], f"{here}.weight"), WeightType.FIX
        if not row["stickiness"].strip():
            raise InvalidInput(
                "a variant needs a stickiness (default, userId, sessionId, random, ...)",
                [ErrorDetail("required", f"{here}.stickiness")],
            )
        payload = None
        if row["payload_value"].strip():
            payload = _payload(row["payload_type"], row["payload_value"], f"{here}.payload")
        variants.append(
            Variant(
                row["name"].strip(),
                weight,
                weight_type,
                row["stickiness"].strip(),
                payload,
                _overrides(row["overrides"], f"{here}.overrides"),
            )
        )
    return variants


def _override_value(value: str) -> str:
    """One override value as the form shows it: in double quotes (``""`` for a quote)
    when it holds a comma or a quote, so saving the form again keeps it whole."""
    if "," in value or '"' in value:
        return '"' + value.replace('"', '""') + '"'
    return value


def _overrides(text: str, path: str) -> tuple[Override, ...]:
    """``contextName: value, value`` per line (``"a, b"`` is one value holding a comma);
    a line without a name is refused."""
    overrides = []
    for index, line in enumerate(_lines(text)):
        context_name, sep, values = line.partition(":")
        try:
            read = next(csv.reader([values], skipinitialspace=True, strict=True), [])
        except csv.Error:  # a quote left open, or text after a closing quote
            read = []
        listed = tuple(v.strip() for v in read if v.strip())
        if not sep or not context_name.strip() or not listed:
            raise InvalidInput(
                f"an override is contextName: value, value, not {line[:60]!r}",
                [ErrorDetail("contextName: value, value", f"{path}[{index}]")],
            )
        overrides.append(Override(context_name.strip(), listed))
    return tuple(overrides)


def _per_mille(text: str, path: str) -> int:
    try:
        percent = float(text.strip().removesuffix("%"))
    except ValueError:
        percent = -1.0
    if not 0 <= percent <= 100 or round(percent * 10) != percent * 10:
        raise InvalidInput(
            f"a weight is a percentage from 0 to 100 (one decimal at most), not {text[:40]!r}",
            [ErrorDetail("a percentage from 0 to 100", path)],
        )
    return round(percent * 10)


def _payload(kind: str, value: str, path: str) -> Payload:
    if kind not in PAYLOAD_TYPES:
        raise InvalidInput(
            "unknown payload type", [ErrorDetail("string, json, csv or number", path)]
        )
    if kind == "json":
        try:
            json.loads(value)
        except ValueError as error:
            raise InvalidInput(
                f"the payload is not valid JSON: {error}", [ErrorDetail("not valid JSON", path)]
            ) from None
    if kind == "number":
        try:
            float(value)
        except ValueError:
            raise InvalidInput(
                "the payload is not a number", [ErrorDetail("not a number", path)]
            ) from None
    return Payload(kind, value.replace("\r\n", "\n"))


def segment_ids_from(posted: Iterable[str]) -> tuple[int, ...]:
    ids = []
    for raw in posted:
        if not raw.isdigit() or len(raw) > 12:
            raise InvalidInput("unknown segment", [ErrorDetail("unknown segment", "$.segments")])
        ids.append(int(raw))
    return tuple(ids)


def tags_from(text: str, path: str = "$.tags") -> list[Tag]:
    """``type:value`` per line or comma-separated; a bare value is a ``simple`` tag."""
    tags = []
    for index, item in enumerate(part.strip() for part in text.replace("\n", ",").split(",")):
        if not item:
            continue
        kind, sep, value = item.partition(":")
        if not sep:
            kind, value = "simple", item
        if not kind.strip() or not value.strip():
            raise InvalidInput(
                f"a tag is type:value, not {item[:60]!r}",
                [ErrorDetail("type:value", f"{path}[{index}]")],
            )
        tags.append(Tag(kind.strip(), value.strip()))
    return tags
