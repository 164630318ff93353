"""Signal intake under hostile load: token first, whole bodies, strict JSON (issue #12).

Bodies are sent over raw sockets to the real server, so the framing (chunked, split
segments, a lying Content-Length) is exactly what the test says it is.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from flagcore.entities import TokenType
from flagcore.errors import InvalidInput, Unauthenticated
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import ADMIN, Api

E = "/api/admin/signal-endpoints"


class CountingStore(SqliteStore):
    """The real SQLite store, counting the transactions it opens (read or write)."""

    transactions = 0

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Any]:
        self.transactions += 1
        with super().transaction(write=write) as tx:
            yield tx


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    store = CountingStore(tmp_path / "flags.db")
    service = Service(store)
    service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
    yield service
    store.close()


def _store(service: Service) -> CountingStore:
    assert isinstance(service.store, CountingStore)
    return service.store


@pytest.fixture
async def quick_api(service: Service) -> AsyncIterator[Api]:
    """A server whose signal bodies must arrive within half a second
    (``FLAGCORE_SIGNAL_BODY_TIMEOUT_SECONDS=0.5``)."""
    config = ServerConfig.from_env({"FLAGCORE_SIGNAL_BODY_TIMEOUT_SECONDS": "0.5"})
    app = create_app(service, config)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


async def _endpoint_with_token(api: Api, name: str) -> tuple[int, str]:
    created = await api.json("POST", E, 201, json={"name": name})
    token = await api.json("POST", f"{E}/{created['id']}/tokens", 201, json={"name": "t"})
    return created["id"], token["token"]


class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


def _at(api: Api) -> tuple[str, int]:
    server = api.client.server
    assert server.port is not None
    return server.host, server.port


async def _raw(
    address: tuple[str, int],
    head: bytes,
    parts: Sequence[bytes] = (),
    *,
    pause: float = 0.05,
    half_close: bool = False,
) -> RawResponse:
    """Send ``head`` then each part as its own TCP segment; read one response."""
    reader, writer = await asyncio.open_connection(*address)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        writer.write(head)
        await writer.drain()
        for part in parts:
            await asyncio.sleep(pause)
            writer.write(part)
            await writer.drain()
        if half_close:
            writer.write_eof()
        return await asyncio.wait_for(_read_response(reader), timeout=30)
    finally:
        writer.close()
        with suppress(ConnectionError):
            await writer.wait_closed()


async def _read_response(reader: asyncio.StreamReader) -> RawResponse:
    status_line = await reader.readline()
    if not status_line:
        return RawResponse(0, {}, b"")  # the server closed without answering
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return RawResponse(status, headers, body)


def _head(
    name: str,
    token: str | bytes | None,
    *,
    length: int | None = None,
    chunked: bool = False,
) -> bytes:
    lines = [f"POST /api/signal-endpoint/{name} HTTP/1.1".encode(), b"Host: 127.0.0.1"]
    lines.append(b"Content-Type: application/json")
    if token is not None:
        raw = token.encode() if isinstance(token, str) else token
        lines.append(b"Authorization: Bearer " + raw)
    if length is not None:
        lines.append(f"Content-Length: {length}".encode())
    if chunked:
        lines.append(b"Transfer-Encoding: chunked")
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"


# --- token first ---


# Only the requests of a test could use the store: no upkeep look falls in its window.
QUIET = ServerConfig(
    integration_sweep_interval=3600.0,
    schedule_check_interval=3600.0,
    instance_write_interval=3600.0,
    retention_interval=3600.0,
    stale_check_interval=3600.0,
    preview_sample_flush_interval=3600.0,
    db_revision_check_interval=3600.0,
)


async def test_a_flood_of_bad_tokens_opens_no_store_transaction(service: Service) -> None:
    async with TestClient(TestServer(create_app(service, QUIET), host="127.0.0.1")) as client:
        await _flooded(Api(client), service)


async def _flooded(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    response = await api.request(
        "POST",
        "/api/signal-endpoint/alerts",
        token=None,
        headers={"Authorization": f"Bearer {token}"},
        json={"warm": "cache"},
    )
    assert response.status == 202
    # The action-set run the signal queued is done once a later call on the single store
    # worker answers; from here on, only the flood could open transactions.
    await api.json("GET", E)
    before = _store(service).transactions
    deep = b"[" * 100_000 + b"]" * 100_000
    statuses: list[int] = []

    async def flood(sender: int) -> None:
        for attempt in range(25):
            name = "alerts" if attempt % 2 else f"nope-{sender}"
            headers = {"Content-Type": "application/json"}
            if attempt % 3:
                headers["Authorization"] = f"Bearer wrong-{sender}-{attempt}"
            response = await api.request(
                "POST", f"/api/signal-endpoint/{name}", token=None, data=deep, headers=headers
            )
            statuses.append(response.status)

    await asyncio.gather(*(flood(n) for n in range(8)))
    assert statuses == [401] * 200
    assert _store(service).transactions == before
    assert len(service.signals.list_signals()) == 1


async def test_a_burst_from_a_valid_token_costs_one_transaction(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "flags.db")
    frozen = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
    service = Service(store, clock=lambda: frozen)  # every signal in the same instant
    endpoint = service.signals.create_signal_endpoint("alerts")
    secret = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        app = create_app(service, QUIET)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            first = await client.post("/api/signal-endpoint/alerts", headers=headers, json={})
            assert first.status == 202
            # /ready runs on the single store worker: the queued action-set run is done.
            assert (await client.get("/ready")).status == 200
            before = store.transactions
            burst = await asyncio.gather(
                *(
                    client.post("/api/signal-endpoint/alerts", headers=headers, json={"n": n})
                    for n in range(40)
                )
            )
            assert [r.status for r in burst] == [429] * 40
            assert {r.headers["Retry-After"] for r in burst} == {"1"}
            assert store.transactions == before
        assert len(service.signals.list_signals()) == 1
    finally:
        store.close()


async def test_a_bad_token_is_refused_before_the_body_arrives(api: Api) -> None:
    await _endpoint_with_token(api, "alerts")
    # Declares a body it never sends: the answer cannot have waited for it.
    response = await _raw(_at(api), _head("alerts", "wrong", length=50_000))
    assert response.status == 401
    assert response.json()["name"] == "AuthenticationRequired"


async def test_unknown_endpoints_and_bad_tokens_get_the_same_answer(api: Api) -> None:
    await _endpoint_with_token(api, "alerts")
    for token in (None, "wrong"):
        known = await _raw(_at(api), _head("alerts", token, length=2), [b"{}"])
        unknown = await _raw(_at(api), _head("no-such-endpoint", token, length=2), [b"{}"])
        assert known.status == unknown.status == 401
        assert known.body == unknown.body


async def test_an_undecodable_token_header_is_a_401_not_a_500(api: Api) -> None:
    await _endpoint_with_token(api, "alerts")
    response = await _raw(_at(api), _head("alerts", b"\xff\xfe\xc3(", length=2), [b"{}"])
    assert response.status == 401


async def test_an_overlong_token_is_refused_unhashed(api: Api, service: Service) -> None:
    await _endpoint_with_token(api, "alerts")
    credentials = service.signals.signal_credentials()
    with pytest.raises(Unauthenticated):
        credentials.sender("alerts", "\ud800" * 2_000)  # would not even encode to hash
    response = await _raw(_at(api), _head("alerts", "a" * 8_000, length=2), [b"{}"])
    assert response.status == 401


async def test_an_unknown_endpoint_name_is_not_echoed_whole(api: Api) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    name = "n" * 7_000
    response = await _raw(_at(api), _head(name, token, length=2), [b"{}"])
    assert response.status == 404
    assert len(response.json()["message"]) < 200


async def test_token_changes_are_seen_by_the_next_signal(api: Api, service: Service) -> None:
    endpoint_id, first = await _endpoint_with_token(api, "alerts")
    assert (await _raw(_at(api), _head("alerts", first, length=2), [b"{}"])).status == 202
    second = await api.json("POST", f"{E}/{endpoint_id}/tokens", 201, json={"name": "second"})
    (first_token,) = [
        t
        for t in (await api.json("GET", f"{E}/{endpoint_id}/tokens"))["tokens"]
        if t["name"] == "t"
    ]
    await api.json("DELETE", f"{E}/{endpoint_id}/tokens/{first_token['id']}")
    assert (await _raw(_at(api), _head("alerts", first, length=2), [b"{}"])).status == 401
    await asyncio.sleep(1.0)  # past the rate limit: the new token is accepted, not throttled
    accepted = await _raw(_at(api), _head("alerts", second["token"], length=2), [b"{}"])
    assert accepted.status == 202
    await api.json("PUT", f"{E}/{endpoint_id}", json={"enabled": False})
    assert (await _raw(_at(api), _head("alerts", second["token"], length=2), [b"{}"])).status == 403
    assert len(service.signals.list_signals()) == 2


def test_a_token_revoked_after_it_was_checked_stores_nothing(service: Service) -> None:
    endpoint = service.signals.create_signal_endpoint("alerts")
    created = service.signals.create_signal_endpoint_token(endpoint.id, "t")
    sender = service.signals.signal_credentials().sender("alerts", created.secret)
    service.signals.delete_signal_endpoint_token(endpoint.id, created.token.id)
    with pytest.raises(Unauthenticated):
        service.signals.accept_signal(sender, {"late": True})
    assert service.signals.list_signals() == []


# --- whole bodies, whatever the framing ---


async def test_a_chunked_body_is_read_whole(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    body = json.dumps({"severity": "critical", "text": "x" * 5000}).encode()
    parts = [_chunk(body[i : i + 700]) for i in range(0, len(body), 700)] + [LAST_CHUNK]
    response = await _raw(_at(api), _head("alerts", token, chunked=True), parts, pause=0.01)
    assert response.status == 202
    (signal,) = service.signals.list_signals()
    assert signal.payload == {"severity": "critical", "text": "x" * 5000}


async def test_a_chunked_body_over_the_limit_is_413_and_stores_nothing(
    api: Api, service: Service
) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    megabyte = b'"' + b"a" * (1_000_000 - 2) + b'"'
    parts = [_chunk(megabyte[i : i + 64_000]) for i in range(0, len(megabyte), 64_000)]
    response = await _raw(_at(api), _head("alerts", token, chunked=True), [*parts, LAST_CHUNK])
    assert response.status == 413
    assert response.json()["name"] == "ContentTooLarge"
    assert service.signals.list_signals() == []


async def test_a_chunked_body_of_exactly_the_limit_is_accepted(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    limit = service.limits.signal_payload_bytes
    exactly = b'"' + b"a" * (limit - 2) + b'"'
    parts = [_chunk(exactly[i : i + 30_000]) for i in range(0, limit, 30_000)]
    response = await _raw(_at(api), _head("alerts", token, chunked=True), [*parts, LAST_CHUNK])
    assert response.status == 202
    (signal,) = service.signals.list_signals()
    assert signal.payload == "a" * (limit - 2)


async def test_a_body_split_across_tcp_segments_is_read_whole(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    body = b'{"severity": "critical", "service": "checkout"}'
    parts = [body[:10], body[10:30], body[30:]]
    response = await _raw(_at(api), _head("alerts", token, length=len(body)), parts, pause=0.1)
    assert response.status == 202
    (signal,) = service.signals.list_signals()
    assert signal.payload == {"severity": "critical", "service": "checkout"}


async def test_a_body_cut_short_by_the_sender_stores_nothing_and_is_no_server_error(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = service.signals.create_signal_endpoint("alerts")
    token = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
    # Served as `flagcore serve` does (aiohttp's test server cancels handlers instead).
    runner = web.AppRunner(create_app(service, ServerConfig()))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        host, port = runner.addresses[0][:2]
        # aiohttp closes a connection whose sender stopped sending: no one is left to answer.
        response = await _raw(
            (host, port),
            _head("alerts", token, length=100),
            [b'{"short": true}'],
            half_close=True,
        )
        assert response.status == 0
        await asyncio.sleep(0.2)  # the handler sees the end of the body
        assert service.signals.list_signals() == []
        assert [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")] == []
        accepted = await _raw((host, port), _head("alerts", token, length=2), [b"{}"])
        assert accepted.status == 202
    finally:
        await runner.cleanup()


async def test_a_declared_length_over_what_is_sent_times_out_with_408(
    quick_api: Api, service: Service
) -> None:
    api = quick_api
    _id, token = await _endpoint_with_token(api, "alerts")
    started = asyncio.get_running_loop().time()
    response = await _raw(_at(api), _head("alerts", token, length=100), [b'{"short": true}'])
    assert response.status == 408
    assert response.json()["name"] == "RequestTimeout"
    assert response.headers.get("connection", "").lower() == "close"
    assert asyncio.get_running_loop().time() - started >= 0.5
    assert service.signals.list_signals() == []


async def test_a_body_dripped_past_the_timeout_is_408(quick_api: Api, service: Service) -> None:
    api = quick_api
    _id, token = await _endpoint_with_token(api, "alerts")
    body = b'{"drip": "' + b"d" * 20 + b'"}'
    # Every byte arrives well within any per-read timeout; the whole body does not.
    parts = [body[i : i + 1] for i in range(len(body))]
    response = await _raw(_at(api), _head("alerts", token, length=len(body)), parts, pause=0.1)
    assert response.status == 408
    assert service.signals.list_signals() == []


async def test_broken_chunked_framing_is_refused_within_the_body_timeout(
    quick_api: Api, service: Service
) -> None:
    api = quick_api
    _id, token = await _endpoint_with_token(api, "alerts")
    broken = [_chunk(b'{"a":'), b"zz\r\n1}\r\n", LAST_CHUNK]  # "zz" is no chunk size
    response = await _raw(_at(api), _head("alerts", token, chunked=True), broken)
    # aiohttp never ends such a body (408 at the timeout); a 400 would do as well.
    assert response.status in (400, 408)
    assert service.signals.list_signals() == []


async def test_a_declared_length_under_what_is_sent_takes_the_declared_bytes(
    api: Api, service: Service
) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    response = await _raw(_at(api), _head("alerts", token, length=9), [b'{"a": 1}  trailing'])
    assert response.status == 202
    (signal,) = service.signals.list_signals()
    assert signal.payload == {"a": 1}


# --- strict JSON, refused with the path ---


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b'{"n": 9223372036854775808}', "$.n"),
        (b'{"n": -9223372036854775809}', "$.n"),
        (b'{"list": [1, 2, 1' + b"0" * 5000 + b"]}", "$.list[2]"),
        (b'{"text": "\\ud800"}', "$.text"),
        (b'{"a": {"\\udfff": 1}}', '$.a["\\udfff"]'),
        (b'{"n": NaN}', "$.n"),
        (b'{"n": -Infinity}', "$.n"),
        (b'{"n": 1e400}', "$.n"),
    ],
)
async def test_payloads_no_store_can_hold_are_400_naming_the_field(
    api: Api, service: Service, body: bytes, path: str
) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    response = await _raw(_at(api), _head("alerts", token, length=len(body)), [body])
    assert response.status == 400, response.body
    error = response.json()
    assert error["name"] == "BadDataError"
    assert path in [d.get("path") for d in error["details"]]
    assert service.signals.list_signals() == []


async def test_deep_nesting_is_400_with_a_token_and_401_without(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    for levels in (65, 1_000, 15_000):  # 15,000 levels still fit in 100 kB
        body = b'{"a":' * levels + b"1" + b"}" * levels
        refused = await _raw(_at(api), _head("alerts", token, length=len(body)), [body])
        assert refused.status == 400, (levels, refused.body)
        assert "nest" in refused.json()["message"]
        unauthenticated = await _raw(_at(api), _head("alerts", None, length=len(body)), [body])
        assert unauthenticated.status == 401
    assert service.signals.list_signals() == []
    body = b'{"a":' * 63 + b"[1]" + b"}" * 63  # 64 levels: the most a payload may nest
    assert (await _raw(_at(api), _head("alerts", token, length=len(body)), [body])).status == 202


async def test_the_edges_of_64_bit_integers_are_stored_exactly(api: Api, service: Service) -> None:
    _id, token = await _endpoint_with_token(api, "alerts")
    body = b'{"low": -9223372036854775808, "high": 9223372036854775807}'
    assert (await _raw(_at(api), _head("alerts", token, length=len(body)), [body])).status == 202
    (signal,) = service.signals.list_signals()
    assert signal.payload == {"low": -(2**63), "high": 2**63 - 1}


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"n": 2**63}, "$.n"),
        ({"text": "\ud800"}, "$.text"),
        ({"n": float("nan")}, "$.n"),
        ({"deep": [[[[]]]] * 1, "x": {1: "not a string key"}}, "$.x"),
        ({"object": object()}, "$.object"),
    ],
)
def test_in_process_callers_get_the_same_payload_rules(
    service: Service, payload: Any, path: str
) -> None:
    endpoint = service.signals.create_signal_endpoint("alerts")
    secret = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
    with pytest.raises(InvalidInput) as refused:
        service.signals.receive_signal("alerts", secret, payload)
    assert path in [d.path for d in refused.value.details]
    assert service.signals.list_signals() == []


def test_in_process_deep_payloads_are_refused_not_crashed(service: Service) -> None:
    endpoint = service.signals.create_signal_endpoint("alerts")
    secret = service.signals.create_signal_endpoint_token(endpoint.id, "t").secret
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(InvalidInput):
        service.signals.receive_signal("alerts", secret, deep)
    assert service.signals.list_signals() == []
