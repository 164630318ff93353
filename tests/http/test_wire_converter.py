"""The HTTP layer reads its bodies with its own converter; the core's is never changed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from flagcore import wire
from flagcore.errors import InvalidInput
from flagcore.wire import PlaygroundContext, SchemaSet
from flagcore_http import wire as http_wire
from flagcore_http.wire import ActionSetBody, CreateFlag, CreateToken, PlaygroundBody


def test_importing_the_http_layer_leaves_the_core_converter_unchanged() -> None:
    # A fresh interpreter: in this one, other tests have imported everything already.
    probe = textwrap.dedent(
        """
        import flagcore.wire as wire

        def hooks():
            # The classes each side holds a hook for (cattrs' registry of class hooks; it
            # has no public listing).
            sides = (wire.converter._structure_func, wire.converter._unstructure_func)
            return tuple({c.__qualname__ for c in s._single_dispatch.registry} for s in sides)

        before = hooks()
        import flagcore_http
        from flagcore.service import Service
        flagcore_http.create_app(Service.__new__(Service), flagcore_http.ServerConfig())
        from flagcore_http.wire import CreateToken
        try:
            wire.structure({"tokenName": "t", "type": "client"}, CreateToken)
            read = True
        except Exception:
            read = False
        print(before == hooks() and not read, sorted(hooks()[0] - before[0]), read)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.startswith("True"), result.stdout + result.stderr


def test_a_request_class_is_read_by_the_http_converter_and_not_by_the_core_one() -> None:
    body = {"tokenName": "t", "type": "client", "environment": "development"}
    assert http_wire.structure(body, CreateToken).token_name == "t"
    # The core knows only the model's JSON names: the camelCase key is not one of them.
    with pytest.raises(InvalidInput):
        wire.structure(body, CreateToken)


def test_the_http_converter_reads_request_enums_strictly_and_names_the_camel_case_path() -> None:
    body = {
        "name": "a",
        "match": {"source": "signal-endpoint", "sourceId": 1},
        "actions": [{"action": "EXPLODE", "sortOrder": 1, "executionParams": {"featureName": "f"}}],
    }
    with pytest.raises(InvalidInput) as caught:
        http_wire.structure(body, ActionSetBody)
    assert [d.path for d in caught.value.details] == ["$.actions[0].action"]
    assert caught.value.details[0].message.startswith("expected one of ")


def test_the_http_converter_reads_model_values_as_the_core_does() -> None:
    data = [{"contextName": "userId", "operator": "IN", "values": ["1"], "caseInsensitive": None}]
    from flagcore.model import Constraint

    assert http_wire.structure(data, tuple[Constraint, ...]) == wire.structure(
        data, tuple[Constraint, ...]
    )


def test_a_closed_body_refuses_a_key_it_does_not_name_where_it_is_and_its_schema_says_so() -> None:
    body = {"environment": "development", "context": {"appName": "shop"}, "surprise": 1}
    with pytest.raises(InvalidInput) as caught:
        http_wire.structure(body, PlaygroundBody)
    assert [(d.path, d.message) for d in caught.value.details] == [
        ("$", "unknown field 'surprise' (environment, context, projects)")
    ]
    body = {"environment": "development", "context": {"appName": "shop", "plan": "pro"}}
    with pytest.raises(InvalidInput) as caught:
        http_wire.structure(body, PlaygroundBody)
    (detail,) = caught.value.details
    assert detail.path == "$.context"
    assert detail.message.endswith("; custom fields go in properties")
    # An open body ignores what it does not name, as Unleash's readers do.
    assert http_wire.structure({"name": "f", "surprise": 1}, CreateFlag).name == "f"
    schemas = SchemaSet(http_wire.BODY_NAMES, closed=http_wire.CLOSED_BODIES)
    for cls in (PlaygroundBody, PlaygroundContext, CreateFlag):
        schemas.of(cls)
    closed = {
        name for name, s in schemas.components.items() if s.get("additionalProperties") is False
    }
    assert closed == {"PlaygroundBody", "PlaygroundContext"}
