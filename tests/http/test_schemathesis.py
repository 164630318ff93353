"""Schemathesis against a live server: every operation of /docs/openapi.json, with data
generated from its schemas; no answer is a server error, every answer's status is
documented for its operation, and every JSON answer conforms to its documented schema.

The server is the real one (`create_app` over a SQLite file) on 127.0.0.1, run in a thread
of its own so schemathesis's synchronous client can call it. Each request carries the
token its path needs (admin, client, frontend). The run is bounded (a few examples per
operation, derandomized: the same cases every run) to stay near a minute of CI; the long
run is ``FLAGCORE_SCHEMATHESIS_EXAMPLES=200 pytest tests/http/test_schemathesis.py`` or
the CLI command in docs/api-contract.md.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from flagcore.entities import TokenType
from flagcore.memory import MemoryStore
from flagcore.service import Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.openapi import document as openapi_document
from flagcore_http.openapi import operations
from flagcore_store_sqlite import SqliteStore

ADMIN = "*:*.schemathesis-admin-secret"
CLIENT = "*:development.schemathesis-client-secret"
FRONTEND = "*:development.schemathesis-frontend-secret"
EXAMPLES = int(os.environ.get("FLAGCORE_SCHEMATHESIS_EXAMPLES", "12"))
# Bodies sent to the seeded things (a real flag, strategy, segment...), where a body gets
# past the lookups and reaches the rules and the store: schemathesis's coverage cases
# (every declared bound, each optional field alone), then this many generated ones. The
# coverage cases find issue 23 §3's overflow on the code before the fix (a strategy stored
# at the declared maximum, then one without sortOrder: max + 1); generated ones found a
# registration whose ``started`` looped forever.
BODY_EXAMPLES = int(os.environ.get("FLAGCORE_SCHEMATHESIS_BODY_EXAMPLES", "25"))
STATEFUL_RUNS = int(os.environ.get("FLAGCORE_SCHEMATHESIS_STATEFUL_RUNS", "15"))
CHECKS = [
    schemathesis.checks.not_a_server_error,
    status_code_conformance,
    response_schema_conformance,
]
# An SSE stream answers 200 and never ends: the streaming tests (test_streaming*.py) cover
# it; here its contract is checked without opening one (test_openapi_contract.py).
NEVER_ENDS = "/api/client/streaming"


class LiveServer:
    """`create_app` over a SQLite file, served from a thread with its own event loop."""

    def __init__(self, database: Path) -> None:
        self.store = SqliteStore(database)
        service = Service(self.store)
        service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
        service.tokens.create_token("sdk", "client", environment="development", secret=CLIENT)
        service.tokens.create_token(
            "web", TokenType.FRONTEND, environment="development", secret=FRONTEND
        )
        self.seeded = self._seed(service)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner = web.AppRunner(create_app(service, ServerConfig()))
        self._run(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self._run(site.start())
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    @staticmethod
    def _seed(service: Service) -> dict[str, str]:
        """Something for reads to find, and the path parameters that name it: a flag with
        a strategy, a segment, a signal endpoint, a tag type."""
        service.flags.create_flag("default", "seeded")
        service.environments.set_environment_enabled("default", "seeded", "development", True)
        service.tags.create_tag_type("team", "who owns it")
        (strategy,) = service.strategies.list_strategies("default", "seeded", "development")
        segment = service.segments.create_segment("seeded", [])
        endpoint = service.signals.create_signal_endpoint("seeded")
        return {
            "project": "default",
            "name": "seeded",
            "environment": "development",
            "strategy_id": strategy.id or "",
            "segment": str(segment.id),
            "endpoint": str(endpoint.id),
        }

    def path_parameters(self, path: str) -> dict[str, str]:
        """The seeded things ``path`` can name (``{id}`` is a segment's or an endpoint's)."""
        names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
        ids = {"id": self.seeded["endpoint" if "signal-endpoints" in path else "segment"]}
        known = {**self.seeded, **ids}
        return {name: known[name] for name in names if name in known}

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def close(self) -> None:
        self._run(self.runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()
        self.store.close()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path_factory.mktemp("schemathesis") / "flags.db")
    yield server
    server.close()


def token_for(path: str) -> str:
    """The token a path wants: a wrong kind would only ever be 403."""
    if path.startswith("/api/client"):
        return CLIENT
    if path.startswith(("/api/frontend", "/ofrep/")):
        return FRONTEND
    return ADMIN


def _operations() -> list[tuple[str, str]]:
    """Every operation of the document, read from an app over a store in memory (the
    live server's document is the same: the routes are the code's)."""
    app = create_app(Service(MemoryStore()), ServerConfig())
    return [(method, path) for method, path, _handler in operations(app) if path != NEVER_ENDS]


@pytest.fixture(scope="module")
def api_schema(live_server: LiveServer) -> Any:
    schema = schemathesis.openapi.from_url(live_server.url + "/docs/openapi.json")
    schema.config.update(base_url=live_server.url)

    @schema.auth(refresh_interval=None)
    class Tokens:
        """The token each path wants, set last (a generated header does not replace it)."""

        def get(self, case: Any, context: Any) -> str:
            return token_for(context.operation.path)

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": data}

    return schema


@pytest.mark.parametrize(("method", "path"), _operations())
def test_every_operation_answers_within_its_documented_contract(
    api_schema: Any, method: str, path: str
) -> None:
    operation = api_schema[path][method.upper()]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=operation.as_strategy())
    def answers_within_contract(case: Any) -> None:
        case.call_and_validate(checks=CHECKS)

    answers_within_contract()


def _body_operations() -> list[tuple[str, str]]:
    """The operations that read a JSON body (the document's ``requestBody``)."""
    app = create_app(Service(MemoryStore()), ServerConfig())
    document = openapi_document(app)
    return [
        (method, path)
        for method, path in _operations()
        if "requestBody" in document["paths"][path][method]
    ]


@pytest.mark.parametrize(("method", "path"), _body_operations())
def test_every_body_sent_to_seeded_things_answers_within_its_documented_contract(
    api_schema: Any, live_server: LiveServer, method: str, path: str
) -> None:
    """The path names what exists, so the generated body is what decides the answer: its
    values reach the service's rules and the store (a random path would stop at 404).

    First schemathesis's coverage cases (each declared bound, minimum and maximum, each
    optional field alone and left out), then ``BODY_EXAMPLES`` generated bodies."""
    operation = api_schema[path][method.upper()]
    seeded = live_server.path_parameters(path)
    coverage = api_schema.iter_coverage_cases(
        operation,
        generation_modes=[GenerationMode.POSITIVE],
        generation_config=api_schema.config.generation_for(operation=operation),
    )
    for case in coverage:
        case.path_parameters = {**(case.path_parameters or {}), **seeded}
        case.headers = {**(case.headers or {}), "Authorization": token_for(path)}
        case.call_and_validate(checks=CHECKS)

    @settings(
        max_examples=BODY_EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=operation.as_strategy(path_parameters=seeded))
    def answers_within_contract(case: Any) -> None:
        case.call_and_validate(checks=CHECKS)

    answers_within_contract()


def test_create_then_read_update_and_delete_follow_the_contract(
    api_schema: Any, tmp_path: Path
) -> None:
    """Stateful: the documented links (a created segment's id, a created flag's name...)
    chain operations, so reads, updates and deletes meet things that exist.

    Each run of the state machine gets a fresh server: what it chooses next depends on
    what the server answered, so every run must start from the same state (hypothesis
    refuses generation that depends on leftovers from an earlier run).
    """
    workflow = api_schema.exclude(path=NEVER_ENDS).as_state_machine()
    runs = iter(range(10**6))

    class Workflow(workflow):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            self.server = LiveServer(tmp_path / f"run-{next(runs)}.db")

        def teardown(self) -> None:
            self.server.close()

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": self.server.url}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS)

    Workflow.run(
        settings=settings(
            max_examples=STATEFUL_RUNS,
            stateful_step_count=10,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
    )
