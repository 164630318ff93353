"""Every body field of every route, sent with the wrong type, missing, too deep or odd:
always a 400 naming the JSON field the client sent (camelCase), never a 500, nothing stored.

The routes and their request classes are found from the app itself: each handler's
source names the class it reads (`read_body(request, X)`, `structure_body(data, X)` or
`wire.structure(data, X`), so a new route is walked as soon as it exists.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pytest

from flagcore import wire
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http import wire as http_wire
from flagcore_http.ui.paths import is_ui_path
from tests.http.conftest import ADMIN, CLIENT, Api, personal_token

_READS = re.compile(
    r"(?:read_body\(request, |wire\.structure\(data, |structure_body\(data, )(.+?)(?:\)$|, \")",
    re.M,
)
# Handlers that read their JSON by hand (free-form, or Unleash's looser SDK bodies).
_HAND_READ = {
    ("POST", "/api/client/register"),
    ("POST", "/api/client/metrics"),
    ("POST", "/api/signal-endpoint/{name}"),
    # Issue #17: the Frontend API's and OFREP's context body is `ContextBody`, read in a
    # helper (OFREP maps its errors to its codes; frontend tokens only, which this walk's
    # admin token is not: tests/http/test_frontend.py and test_ofrep.py walk their fields).
    ("POST", "/api/frontend"),
    ("POST", "/api/frontend/client/metrics"),
    ("POST", "/api/frontend/client/register"),
    ("POST", "/ofrep/v1/evaluate/flags"),
    ("POST", "/ofrep/v1/evaluate/flags/{key}"),
    # Issue 30: an uploaded context sample is JSON lines, each checked as the playground's.
    ("POST", "/api/admin/environments/{environment}/context-sample"),
    # Issue 30: a change or a list of them, each read as ChangeBody, its payload by the
    # service as its action's payload (tests/http/test_change_requests.py).
    ("POST", "/api/admin/projects/{project}/environments/{environment}/change-requests"),
    ("PUT", "/api/admin/projects/{project}/change-requests/{id}/changes/{changeId}"),
}


def _body_routes() -> tuple[list[tuple[str, str, Any]], list[tuple[str, str]]]:
    """(method, path, request type) for handlers that read a typed body; and the rest."""
    app = create_app(Service.__new__(Service), ServerConfig())  # routes only; never served
    typed, others = [], []
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if not path or route.method in ("HEAD", "*") or is_ui_path(path):
            continue  # the UI's HTML forms: tests/ui/test_hostile_forms.py
        handler = inspect.unwrap(route.handler)
        found = _READS.findall(inspect.getsource(handler))
        if found:
            (expression,) = set(found)
            typed.append((route.method, path, eval(expression, handler.__globals__)))
        else:
            others.append((route.method, path))
    return sorted(typed, key=str), sorted(set(others))


TYPED, UNTYPED = _body_routes()
JSON_ROUTES = sorted({(m, p) for m, p, _ in TYPED} | _HAND_READ)


def _url(path: str) -> str:
    # Path parameters that exist where they can: ids are numbers, projects "default".
    values = {"project": "default", "id": "1", "token_id": "1", "environment": "development"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "x"), path)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# The keys the readers read (a key the table spells otherwise than camelCase: mappingsSSO).
_KEYS = {**wire.EXPORT_NAMES, **http_wire.BODY_NAMES}


def _key(cls: type, attribute: str) -> str:
    return _KEYS.get(cls, {}).get(attribute) or _camel(attribute)


def _unwrap_optional(type_: Any) -> tuple[Any, bool]:
    if typing.get_origin(type_) in (types.UnionType, typing.Union):
        options = [t for t in typing.get_args(type_) if t is not type(None)]
        return options[0], True
    return type_, False


def _wrong_values(type_: Any, required: bool) -> list[Any]:
    """JSON values of the wrong type for ``type_`` (and odd values of the right one);
    null is wrong only where the field is required (elsewhere it means the default)."""
    return [*_wrong_types(type_), *([None] if required else [])]


def _wrong_types(type_: Any) -> list[Any]:
    is_union = typing.get_origin(type_) in (types.UnionType, typing.Union)
    options = [t for t in typing.get_args(type_) if t is not type(None)] if is_union else []
    if len(options) == 2 and options[1] is int:  # an enum's name or an id (a root role)
        enum_type, _number = options
        assert issubclass(enum_type, enum.Enum), type_
        return ["NO_SUCH_VALUE", True, 1.5, 0, -1, 2**63, [1]]
    if len(options) > 1:  # one of several kinds ("*" or a list, a tag or its text...)
        return [v for v in _ANY_KIND if not any(_read_as(option, v) for option in options)]
    type_, _optional = _unwrap_optional(type_)
    if type_ is str:
        return [5, True, ["a"], {"a": "b"}]
    if type_ is bool:
        return ["true", 1, 0]
    if type_ is int:
        return ["5", True, 1.5, 2**63, -(2**63) - 1, [1]]
    if type_ is float:
        return ["5", True, [1], {"a": 1}]
    if typing.get_origin(type_) is tuple:
        return ["u1,u2", {"a": 1}, 5]
    if typing.get_origin(type_) is Mapping or type_ is Mapping:
        return [["rollout", "50"], "rollout=50"]
    if typing.get_origin(type_) is dict:
        return [["field"], "field", 5]
    if isinstance(type_, type) and issubclass(type_, enum.Enum):
        return [5, "NO_SUCH_VALUE"]
    if attrs.has(type_):
        return ["x", [], 5]
    raise AssertionError(f"no wrong values known for {type_!r}")


_ANY_KIND: list[Any] = [5, 1.5, True, "NO_SUCH_VALUE", [1], {"a": 1}]


def _read_as(type_: Any, value: Any) -> bool:
    """Whether a reader of ``type_`` might take ``value``'s JSON type (then it is no
    wrong value for a union holding ``type_``)."""
    origin = typing.get_origin(type_)
    if origin is typing.Literal:
        return value in typing.get_args(type_)
    if type_ is str:
        return isinstance(value, str)
    if type_ is bool:
        return type(value) is bool
    if origin is tuple:
        return isinstance(value, list)
    return isinstance(value, dict)  # an attrs class: an object, its fields then walked


def _cases(type_: Any, path: str, required: bool = True) -> Iterator[tuple[Any, str]]:
    """(body, path the 400 must name): one wrong or missing field per body."""
    if type_ is Any:  # any JSON here (an impact metric's keys): its reader's tests walk it
        return
    for wrong in _wrong_values(type_, required):
        yield wrong, path
    type_, _optional = _unwrap_optional(type_)
    origin = typing.get_origin(type_)
    if origin is Mapping:  # parameters: text (numbers as Unleash writes them), nothing else
        yield {"rollout": ["50"]}, f"{path}.rollout"
        yield {"group id": {"a": 1}}, f'{path}["group id"]'
    elif origin is tuple:
        for item, where in _cases(typing.get_args(type_)[0], f"{path}[0]"):
            yield [item], where
    elif origin is dict:  # action-set payload filters: any key, each value a typed object
        for item, where in _cases(typing.get_args(type_)[1], f"{path}.field"):
            yield {"field": item}, where
    elif attrs.has(type_):
        hints = typing.get_type_hints(type_)
        for field in attrs.fields(type_):
            key = _key(type_, field.name)
            required = field.default is attrs.NOTHING
            if required:
                yield {}, f"{path}.{key}"  # the missing field, among others
            for value, where in _cases(hints[field.name], f"{path}.{key}", required):
                yield {key: value}, where


def _case_ids() -> list[Any]:
    return [pytest.param(m, p, t, id=f"{m} {p}") for m, p, t in TYPED]


def test_the_walk_finds_the_request_classes_of_the_admin_api() -> None:
    """A guard on the discovery itself: if it found nothing, the walk would prove nothing."""
    found = {(m, p) for m, p, _ in TYPED}
    assert ("POST", "/api/admin/projects/{project}/features") in found
    assert ("POST", "/api/admin/segments") in found
    assert ("PUT", "/api/admin/projects/{project}/features/{name}/dependencies") in found
    assert len(found) >= 20
    # Every route that takes a body either names its class or is read by hand (listed).
    writes = {(m, p) for m, p in UNTYPED if m in ("POST", "PUT", "PATCH")}
    bodiless = {(m, p) for m, p in writes if "/on" in p or "/off" in p or "/stale/" in p}
    bodiless |= {(m, p) for m, p in writes if p.startswith("/api/admin/archive/revive")}
    bodiless |= {("POST", "/logout")}  # refuses any body (400), reads none
    bodiless |= {(m, p) for m, p in writes if p.endswith("/resend")}  # an integration's delivery
    bodiless |= {(m, p) for m, p in writes if p.endswith(("/deprecate", "/reactivate"))}
    bodiless |= {(m, p) for m, p in writes if p.endswith("/lifecycle/uncomplete")}
    bodiless |= {(m, p) for m, p in writes if p.endswith(("/start", "/resume"))}  # releases
    bodiless |= {(m, p) for m, p in writes if "/release-plan-templates/archive/" in p}
    assert writes - bodiless == _HAND_READ


@pytest.mark.parametrize(("method", "path", "body_type"), _case_ids())
async def test_every_wrong_type_and_missing_field_is_a_400_naming_the_json_field(
    api: Api, service: Service, method: str, path: str, body_type: Any
) -> None:
    token = personal_token(service) if path.startswith("/api/admin/user/tokens") else ADMIN
    events_before = len(service.events.list_events(limit=1000))
    url = _url(path)
    for body, where in _cases(body_type, "$"):
        response = await api.request(method, url, json=body, token=token)
        text = await response.text()
        assert response.status == 400, (body, text)
        error = await response.json()
        assert error["name"] == "BadDataError", text
        paths = [detail.get("path") for detail in error["details"]]
        assert where in paths, (body, where, paths)
        assert not any("_" in (p or "").rpartition(".")[2] for p in paths), paths
    assert len(service.events.list_events(limit=1000)) == events_before  # nothing was written


_SIGN_IN = ("/auth/simple/login",)
_DEEP = b"[" * 5000 + b"]" * 5000
_DEEP_OBJECT = b'{"a":' * 5000 + b"1" + b"}" * 5000


@pytest.mark.parametrize(("method", "path"), JSON_ROUTES, ids=lambda v: str(v))
async def test_thousands_of_nesting_levels_are_a_400_or_401_never_a_500(
    api: Api, service: Service, method: str, path: str
) -> None:
    token = CLIENT if path.startswith(("/api/client", "/ofrep/")) else ADMIN
    if path.startswith("/api/frontend"):  # issue #17: frontend tokens only
        token = "default:development.frontend-secret-for-tests"
        service.tokens.create_token(
            "web", "frontend", projects=("default",), environment="development", secret=token
        )
    if path.startswith("/api/admin/user/tokens"):  # a person's own: a token acting as one
        token = personal_token(service)
    if path.startswith("/api/signal-endpoint"):  # its own kind of token, for endpoint "x"
        endpoint = service.signals.create_signal_endpoint("x")
        token = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
    headers = {"Content-Type": "application/json"}
    for body in (_DEEP, _DEEP_OBJECT, b"[" * 65 + b"]" * 65):
        with_token = await api.request(method, _url(path), token=token, data=body, headers=headers)
        text = await with_token.text()
        assert with_token.status == 400, text
        assert "nested deeper than 64 levels" in (await with_token.json())["message"]
        without = await api.request(method, _url(path), token=None, data=body, headers=headers)
        # Every route refuses a missing token before reading the body, but signing in,
        # which is how a person without one gets a session: the same 400 there.
        assert without.status == (400 if path in _SIGN_IN else 401), await without.text()
    assert service.flags.list_flags() == []


_ODD_JSON = [
    (b'{"name": "\\ud800"}', "$.name", "lone surrogate"),
    (b'{"name": "ok", "description": "a\\udfffb"}', "$.description", "lone surrogate"),
    (b'{"name": "ok", "impressionData": NaN}', "$.impressionData", "NaN"),
    (b'{"name": "ok", "impressionData": Infinity}', "$.impressionData", "Infinity"),
    (b'{"name": "ok", "x": 1e400}', "$.x", "too large"),
    (b'{"name": "ok", "x": 9223372036854775808}', "$.x", "outside"),
    (b'{"name": "ok", "x": -' + b"9" * 5000 + b"}", "$.x", "outside"),
    (b'\xef\xbb\xbf{"name": "ok"}', "$", "not valid JSON"),
    (b'{"name": "ok"} {}', "$", "not valid JSON"),
    (b'{"name": "\xed\xa0\x80"}', "$", "not UTF-8"),
]


@pytest.mark.parametrize(("raw", "where", "words"), _ODD_JSON, ids=lambda v: str(v)[:40])
async def test_json_that_cannot_be_stored_or_written_back_is_refused_at_the_door(
    api: Api, service: Service, raw: bytes, where: str, words: str
) -> None:
    response = await api.request(
        "POST",
        "/api/admin/projects/default/features",
        data=raw,
        headers={"Content-Type": "application/json"},
    )
    error = await response.json()
    assert response.status == 400, error
    assert words in error["message"]
    assert [d["path"] for d in error["details"]] == [where]
    assert service.flags.list_flags() == []


async def test_a_constraint_value_list_sent_as_a_string_is_refused_not_split_into_characters(
    api: Api, service: Service
) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    strategies = "/api/admin/projects/default/features/f/environments/development/strategies"
    constraint = {"contextName": "userId", "operator": "IN", "values": "u1,u2"}
    error = await api.json(
        "POST", strategies, 400, json={"name": "default", "constraints": [constraint]}
    )
    assert error["details"] == [
        {"message": "expected an array, got a string", "path": "$.constraints[0].values"}
    ]
    segment = await api.json(
        "POST", "/api/admin/segments", 400, json={"name": "s", "constraints": [constraint]}
    )
    assert segment["details"][0]["path"] == "$.constraints[0].values"
    assert await api.json("GET", strategies) == []
    assert service.segments.list_segments() == []


async def test_a_constraint_over_the_values_limit_names_its_json_path(
    api: Api, service: Service
) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    strategies = "/api/admin/projects/default/features/f/environments/development/strategies"
    maximum = service.limits.constraint_values
    constraints = [
        {"contextName": "userId", "operator": "IN", "values": ["a"]},
        {"contextName": "userId", "operator": "IN", "values": [str(i) for i in range(maximum + 1)]},
    ]
    error = await api.json(
        "POST", strategies, 400, json={"name": "default", "constraints": constraints}
    )
    assert error["name"] == "ExceedsLimitError"
    assert error["details"] == [
        {"message": f"at most {maximum} (constraint_values)", "path": "$.constraints[1].values"}
    ]
    assert await api.json("GET", strategies) == []


async def test_rust_regex_forms_are_kept_or_refused_with_the_path_as_docs_engine_says(
    api: Api,
) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    strategies = "/api/admin/projects/default/features/f/environments/development/strategies"

    def regex(pattern: str) -> dict[str, Any]:
        constraint = {"contextName": "email", "operator": "REGEX", "value": pattern}
        return {"name": "default", "constraints": [constraint]}

    for translated in ("(?x) a b c # verbose", "^[a-z&&[^aeiou]]+$", "[0-9--4]"):
        stored = await api.json("POST", strategies, 200, json=regex(translated))
        assert stored["constraints"][0]["value"] == translated  # kept as typed
    for untranslatable in ("\\p{Uppercase}", "(?R)a", "(?x)(? i)a"):
        error = await api.json("POST", strategies, 400, json=regex(untranslatable))
        assert [d["path"] for d in error["details"]] == ["$.constraints[0].value"]
    assert len(await api.json("GET", strategies)) == 3


async def test_a_strategy_without_context_name_names_the_json_field(api: Api) -> None:
    await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "f"})
    error = await api.json(
        "POST",
        "/api/admin/projects/default/features/f/environments/development/strategies",
        400,
        json={"name": "default", "constraints": [{"operator": "IN", "values": ["a"]}]},
    )
    assert error["details"] == [
        {"message": "required field missing", "path": "$.constraints[0].contextName"}
    ]


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/api/admin/projects/default/features", "name"),
        ("/api/admin/projects", "id"),
        ("/api/admin/signal-endpoints", "name"),
        ("/api/admin/environments", "name"),
        ("/api/admin/tag-types", "name"),
        ("/api/admin/strategies", "name"),
    ],
)
@pytest.mark.parametrize("name", [".", ".."])
async def test_dot_and_dot_dot_are_refused_as_names_clients_could_not_address(
    api: Api, service: Service, path: str, key: str, name: str
) -> None:
    events_before = len(service.events.list_events(limit=1000))
    error = await api.json("POST", path, 400, json={key: name, "name": "Display"} | {key: name})
    assert error["details"][0]["path"] == f"$.{key}"
    assert "cannot be . or .." in error["details"][0]["message"]
    assert len(service.events.list_events(limit=1000)) == events_before
    # A dot inside a name is still fine (Unleash's URL-friendly rule).
    await api.json(
        "POST", path, 201, json={key: f"a{name}b", "name": "Display"} | {key: f"a{name}b"}
    )


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/api/admin/events?limit=²", "limit"),
        ("/api/admin/events?limit=0", "limit"),
        ("/api/admin/events?limit=1001", "limit"),
        ("/api/admin/events?before=99999999999999999999999", "before"),
        ("/api/admin/events?before=-1", "before"),
        ("/api/admin/events?before=%EF%BC%91", "before"),  # a fullwidth digit one
        ("/api/admin/signals?limit=²", "limit"),
        ("/api/admin/signals?limit=%20%205", "limit"),
        ("/api/admin/signals?before=٣", "before"),
        ("/api/admin/signal-endpoints/1/signals?limit=1e3", "limit"),
        ("/api/admin/signals?before=" + "9" * 5000, "before"),
    ],
)
async def test_query_numbers_are_ascii_digits_within_bounds_or_a_400_naming_them(
    api: Api, path: str, parameter: str
) -> None:
    error = await api.json("GET", path, 400)
    assert error["details"][0]["path"] == f"/query/{parameter}"


@pytest.mark.parametrize("value", ["²", "١", "+1", " 1", "1_000", "9" * 30, "-0", "0x1"])
async def test_ids_in_paths_are_ascii_digits_within_bounds(api: Api, value: str) -> None:
    error = await api.json("GET", f"/api/admin/segments/{value}", 400)
    assert error["details"][0]["path"] == "/params/id"


async def test_numbers_at_the_edges_of_64_bits_are_read_as_integers(
    api: Api, service: Service
) -> None:
    events = (await api.json("GET", f"/api/admin/events?before={2**63 - 1}"))["events"]
    assert [e["id"] for e in events] == [e.id for e in service.events.list_events()]
    missing = await api.json("GET", f"/api/admin/segments/{2**63 - 1}", 404)
    assert missing["name"] == "NotFoundError"


@pytest.mark.parametrize(
    ("operation", "where"),
    [
        ({"op": "replace", "path": "/impressionData", "value": "true"}, "$[0].value"),
        ({"op": "replace", "path": "/stale", "value": 1}, "$[0].value"),
        ({"op": "replace", "path": "/description", "value": ["a"]}, "$[0].value"),
        ({"op": "replace", "path": ["/stale"], "value": True}, "$[0].path"),
        ({"op": ["replace"], "path": "/stale", "value": True}, "$[0].op"),
        ("replace", "$[0]"),
    ],
)
async def test_json_patch_errors_name_the_operation_the_client_sent(
    api: Api, service: Service, operation: Any, where: str
) -> None:
    flags = "/api/admin/projects/default/features"
    await api.json("POST", flags, 201, json={"name": "f", "description": "before"})
    error = await api.json("PATCH", f"{flags}/f", 400, json=[operation])
    assert [d["path"] for d in error["details"]] == [where]
    (flag,) = service.flags.list_flags()
    assert (flag.description, flag.stale, flag.impression_data) == ("before", False, False)


_BIG = str(2**63).encode()


async def test_integers_past_64_bits_in_signal_payloads_metrics_and_register_are_400s(
    api: Api, service: Service
) -> None:
    endpoint = await api.json("POST", "/api/admin/signal-endpoints", 201, json={"name": "e"})
    token = await api.json(
        "POST", f"/api/admin/signal-endpoints/{endpoint['id']}/tokens", 201, json={"name": "t"}
    )
    json_type = {"Content-Type": "application/json"}
    signal = await api.request(
        "POST",
        "/api/signal-endpoint/e",
        token=f"Bearer {token['token']}",
        data=b'{"deploy": {"build": ' + _BIG + b"}}",
        headers=json_type,
    )
    assert signal.status == 400
    assert [d["path"] for d in (await signal.json())["details"]] == ["$.deploy.build"]
    assert service.signals.list_signals() == []
    metrics = await api.request(
        "POST",
        "/api/client/metrics",
        token=CLIENT,
        data=b'{"appName": "a", "bucket": {"start": "2026-01-01T00:00:00Z", "toggles": '
        b'{"f": {"yes": ' + _BIG + b', "no": 0}}}}',
        headers=json_type,
    )
    assert metrics.status == 400
    assert [d["path"] for d in (await metrics.json())["details"]] == ["$.bucket.toggles.f.yes"]
    register = await api.request(
        "POST",
        "/api/client/register",
        token=CLIENT,
        data=b'{"appName": "a", "interval": ' + _BIG + b"}",
        headers=json_type,
    )
    assert register.status == 400
    assert [d["path"] for d in (await register.json())["details"]] == ["$.interval"]


async def test_a_signal_payload_64_levels_deep_is_stored_and_written_back_unchanged(
    api: Api,
) -> None:
    endpoint = await api.json("POST", "/api/admin/signal-endpoints", 201, json={"name": "e"})
    token = await api.json(
        "POST", f"/api/admin/signal-endpoints/{endpoint['id']}/tokens", 201, json={"name": "t"}
    )
    payload: Any = {"n": [2**63 - 1, -(2**63), 1.5e308, "é😀\u2028"]}
    for _ in range(62):  # 62 objects around an object holding a list: 64 levels, the most
        payload = {"a": payload}
    sent = await api.request(
        "POST", "/api/signal-endpoint/e", token=f"Bearer {token['token']}", json=payload
    )
    assert sent.status == 202, await sent.text()
    signals = await api.json("GET", f"/api/admin/signal-endpoints/{endpoint['id']}/signals")
    assert [s["payload"] for s in signals["signals"]] == [payload]


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b"[" + b"9" * 5000 + b"," + b"[" * 50_000 + b"]" * 50_000 + b"]", "$"),
        (b'{"a": [1, ' + b"9" * 5000 + b"]}", "$.a[1]"),
        (b'{"a": {"b": -1e999}}', "$.a.b"),
        (b'[{"\\ud800": 1}]', '$[0]["\\ud800"]'),
        (b'"\\udfff"', "$"),
    ],
)
def test_parse_json_names_the_path_of_what_it_refuses(raw: bytes, where: str) -> None:
    from flagcore.errors import InvalidInput
    from flagcore_http.bodies import parse_json

    with pytest.raises(InvalidInput) as caught:
        parse_json(raw)
    assert [d.path for d in caught.value.details] == [where]


def test_parse_json_reads_what_json_allows_at_its_edges() -> None:
    from flagcore_http.bodies import parse_json

    assert parse_json(b' \r\n\t{"a": [-9223372036854775808, 9223372036854775807]} ') == {
        "a": [-(2**63), 2**63 - 1]
    }
    assert parse_json('"\\ud83d\\ude00 é"'.encode()) == "😀 é"
    assert parse_json(b"1.7976931348623157e308") == 1.7976931348623157e308
    assert parse_json(b"null") is None
