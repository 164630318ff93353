"""Integrations on Unleash's addons API (issue 31), over a real server and SQLite file,
delivering to real receivers on 127.0.0.1: the API's shape, the SSRF rules, signed
deliveries verified with the Standard Webhooks reference library, retries, the
delivery log, and sending again."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import attrs
import pytest
from aiohttp.test_utils import TestClient, TestServer
from standardwebhooks.webhooks import Webhook
from yarl import URL

from flagcore.entities import FlagDefinition
from flagcore.service import REMINDER_EVENT, IntegrationSpec, Service
from flagcore_http import ServerConfig, create_app
from flagcore_http.integration_targets import PinnedResolver, Target
from tests.http.conftest import Api
from tests.http.receiver import Huge, Received, Receiver, Slow, receiving

ADDONS = "/api/admin/addons"
CONFIG = ServerConfig(
    integration_allow_list=("127.0.0.1",), integration_retry_seconds=30, integration_timeout=2
)


@pytest.fixture
async def hooks(service: Service) -> AsyncIterator[Api]:
    app = create_app(service, CONFIG)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield Api(client)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving() as made:
        yield made


def _webhook(url: str, **more: Any) -> dict[str, Any]:
    return {
        "provider": "webhook",
        "enabled": True,
        "parameters": {"url": url, **more},
        "events": ["feature-created", "feature-environment-enabled"],
    }


async def _deliveries(api: Api, addon_id: int, count: int) -> list[dict[str, Any]]:
    """The delivery log once it holds ``count`` entries (deliveries are sent behind)."""
    for _ in range(600):
        log = await api.json("GET", f"{ADDONS}/{addon_id}/deliveries")
        if len(log["deliveries"]) >= count:
            return list(log["deliveries"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"the log never held {count} deliveries: {log}")


async def test_the_list_names_every_provider_with_its_parameters_and_events(hooks: Api) -> None:
    listed = await hooks.json("GET", ADDONS)
    assert listed["addons"] == []
    providers = {p["name"]: p for p in listed["providers"]}
    assert set(providers) == {"webhook", "slack", "teams", "datadog", "new-relic"}
    url = next(p for p in providers["webhook"]["parameters"] if p["name"] == "url")
    assert url == {
        "name": "url",
        "displayName": "URL",
        "type": "url",
        "description": "(Required) The URL each event is posted to.",
        "required": True,
        "sensitive": True,
    }
    assert "feature-environment-enabled" in providers["slack"]["events"]
    for provider in providers.values():  # flagcore's daily reminder, for every provider
        assert REMINDER_EVENT in provider["events"]


async def test_secrets_are_written_but_never_answered_and_the_signing_secret_shown_once(
    hooks: Api, receiver: Receiver
) -> None:
    made = await hooks.json(
        "POST", ADDONS, 201, json=_webhook(receiver.url, authorization="Bearer s3cret")
    )
    assert made["signingSecret"].startswith("whsec_")
    assert made["parameters"] == {"url": "*****", "authorization": "*****"}
    for answer in (
        await hooks.json("GET", f"{ADDONS}/{made['id']}"),
        (await hooks.json("GET", ADDONS))["addons"][0],
    ):
        assert "signingSecret" not in answer
        assert "s3cret" not in str(answer)
        assert receiver.url not in str(answer)
    kept = {**_webhook("*****", authorization="*****"), "description": "ops", "enabled": False}
    updated = await hooks.json("PUT", f"{ADDONS}/{made['id']}", json=kept)
    assert updated["description"] == "ops"
    assert updated["enabled"] is False
    await hooks.json("DELETE", f"{ADDONS}/{made['id']}")
    await hooks.json("GET", f"{ADDONS}/{made['id']}", 404)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2/hook",
        "http://10.0.0.8/hook",
        "http://192.168.1.1/hook",
        "http://172.16.0.1/hook",  # 172.16.0.0/12: its first and last /16
        "http://172.31.255.254/hook",
        "http://172.20.10.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[fd00::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[2002:7f00:1::1]/hook",  # 6to4 of 127.0.0.1
        "http://[64:ff9b::a00:1]/hook",  # NAT64 of 10.0.0.1
        "http://[fe80::1]/hook",
        "http://100.100.100.200/latest/meta-data",  # a cloud's metadata, shared range
        "http://0.0.0.0/hook",
        # The rest of the list, each range once.
        "http://192.0.0.8/hook",
        "http://192.0.2.1/hook",
        "http://198.19.1.1/hook",
        "http://198.51.100.7/hook",
        "http://203.0.113.9/hook",
        "http://224.0.0.251/hook",
        "http://240.0.0.1/hook",
        "http://255.255.255.255/hook",
        "http://[::]/hook",
        "http://[fec0::1]/hook",
        "http://[fc00::1]/hook",
        "http://[ff02::1]/hook",
        "http://[2001:db8::1]/hook",
        "http://[64:ff9b:1::a00:1]/hook",
        "ftp://127.0.0.1/hook",
        "file:///etc/passwd",
        "http:///no-host",
    ],
)
async def test_a_url_that_is_not_public_and_not_allowed_is_refused_naming_the_parameter(
    hooks: Api, url: str
) -> None:
    refused = await hooks.json("POST", ADDONS, 400, json=_webhook(url))
    assert [d["path"] for d in refused["details"]] == ["$.parameters.url"]
    assert (await hooks.json("GET", ADDONS))["addons"] == []


@pytest.mark.parametrize("url", ["http://172.15.255.254/hook", "http://172.32.0.1/hook"])
async def test_the_public_neighbours_of_172_16_0_0_12_are_accepted(hooks: Api, url: str) -> None:
    made = await hooks.json("POST", ADDONS, 201, json=_webhook(url))
    assert made["provider"] == "webhook"


async def test_an_allow_list_entry_by_host_name_allows_that_name_and_not_its_address(
    service: Service,
) -> None:
    # The receiver listens where this machine resolves "localhost" first.
    (first, *_rest) = socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)
    address = str(first[4][0])
    config = attrs.evolve(CONFIG, integration_allow_list=("localhost",))
    app = create_app(service, config)
    async with (
        receiving(host=address) as receiver,
        TestClient(TestServer(app, host="127.0.0.1")) as client,
    ):
        api = Api(client)
        port = URL(receiver.url).port
        by_address = await api.json("POST", ADDONS, 400, json=_webhook(receiver.url))
        assert [d["path"] for d in by_address["details"]] == ["$.parameters.url"]
        assert "not a public address" in by_address["details"][0]["message"]
        made = await api.json("POST", ADDONS, 201, json=_webhook(f"http://LocalHost:{port}/hook"))
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "n"})
        (logged,) = await _deliveries(api, made["id"], 1)
        assert (logged["state"], logged["statusCode"]) == ("delivered", 200)
        assert receiver.received[0].headers["Host"] == f"localhost:{port}"


async def test_a_host_name_is_resolved_and_refused_when_it_points_inside(
    service: Service,
) -> None:
    app = create_app(service, attrs.evolve(CONFIG, integration_allow_list=()))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        refused = await Api(client).json("POST", ADDONS, 400, json=_webhook("http://localhost/"))
    assert "not a public address" in refused["details"][0]["message"]


async def test_a_delivery_is_signed_per_standard_webhooks_and_carries_the_event(
    hooks: Api, receiver: Receiver
) -> None:
    made = await hooks.json(
        "POST",
        ADDONS,
        201,
        json=_webhook(
            receiver.url, authorization="Bearer s3cret", customHeaders='{"X-Team": "flags"}'
        ),
    )
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "shiny"})
    await receiver.wait_for(lambda got: len(got) == 1)
    (got,) = receiver.received
    verified = Webhook(made["signingSecret"]).verify(got.body, got.headers)
    assert verified["type"] == "feature-created"
    assert verified["featureName"] == "shiny"
    assert got.headers["webhook-id"] == f"msg_{made['id']}_{verified['id']}"
    assert got.headers["Authorization"] == "Bearer s3cret"
    assert got.headers["X-Team"] == "flags"
    (logged,) = await _deliveries(hooks, made["id"], 1)
    assert logged["state"] == "delivered"
    assert logged["attempts"] == 1
    assert logged["statusCode"] == 200


async def test_an_environment_filter_sends_the_chosen_environments_events_only(
    hooks: Api, receiver: Receiver
) -> None:
    await hooks.json(
        "POST", ADDONS, 201, json={**_webhook(receiver.url), "environments": ["production"]}
    )
    features = "/api/admin/projects/default/features"
    await hooks.json("POST", features, 201, json={"name": "lamp"})
    await hooks.json("POST", f"{features}/lamp/environments/development/on", 200)
    await hooks.json("POST", f"{features}/lamp/environments/production/on", 200)
    await hooks.json("POST", features, 201, json={"name": "last"})
    # Sent in the log's order: once "last" is in, the development event was passed over.
    await receiver.wait_for(lambda got: got and got[-1].json()["featureName"] == "last")
    sent = [(r.json()["type"], r.json()["environment"]) for r in receiver.received]
    assert sent == [
        ("feature-created", None),  # an event of no environment passes, as in Unleash
        ("feature-environment-enabled", "production"),
        ("feature-created", None),
    ]


async def test_a_body_template_is_rendered_as_unleash_renders_it(
    hooks: Api, receiver: Receiver
) -> None:
    template = '{"event": "{{event.type}}", "by": "{{event.createdBy}}", "json": {{{eventJson}}}}'
    await hooks.json(
        "POST",
        ADDONS,
        201,
        json=_webhook(receiver.url, bodyTemplate=template, contentType="text/x"),
    )
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "t"})
    await receiver.wait_for(lambda got: len(got) == 1)
    (got,) = receiver.received
    assert got.headers["Content-Type"] == "text/x"
    sent = got.json()
    assert sent["event"] == "feature-created"
    assert '"featureName": "t"' in sent["json"]


async def test_a_5xx_and_a_429_are_retried_waiting_the_retry_after_it_asks(
    hooks: Api, receiver: Receiver
) -> None:
    receiver.script = [503, (429, {"Retry-After": "2"})]
    made = await hooks.json("POST", ADDONS, 201, json=_webhook(receiver.url))
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "r"})
    (logged,) = await _deliveries(hooks, made["id"], 1)
    assert (logged["state"], logged["attempts"], logged["statusCode"]) == ("delivered", 3, 200)
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    first, limited, last = (r.at for r in receiver.received)
    assert limited - first < 2  # a 503's first backoff: 0.5 s, jittered 0.5–1.5×
    assert last - limited >= 1.95  # the 429's Retry-After: 2, not the backoff


async def test_a_read_timeout_and_a_408_are_retried_with_the_same_webhook_id(
    service: Service, receiver: Receiver
) -> None:
    # The receiver answers the first try only after 1.5 s; the read timeout is 0.3 s.
    receiver.script = [Slow(1.5), 408]
    app = create_app(service, attrs.evolve(CONFIG, integration_timeout=0.3))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        api = Api(client)
        made = await api.json("POST", ADDONS, 201, json=_webhook(receiver.url))
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "t"})
        (logged,) = await _deliveries(api, made["id"], 1)
    assert (logged["state"], logged["attempts"], logged["statusCode"]) == ("delivered", 3, 200)
    timed_out, refused, answered = receiver.received
    assert refused.at - timed_out.at < 1.5  # sent again before the slow answer came
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert answered.json()["featureName"] == "t"


async def test_a_closed_port_is_retried_until_a_receiver_listens_there(
    hooks: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="flagcore_http.integrations")
    held = socket.socket()  # bound, never listening: connections to it are refused
    held.bind(("127.0.0.1", 0))
    port = held.getsockname()[1]
    made = await hooks.json("POST", ADDONS, 201, json=_webhook(f"http://127.0.0.1:{port}/hook"))
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "c"})
    async with asyncio.timeout(30):
        while not any("attempt 1: no answer" in r.getMessage() for r in caplog.records):
            await asyncio.sleep(0.02)
    held.close()
    async with receiving(port=port) as receiver:
        (logged,) = await _deliveries(hooks, made["id"], 1)
        assert (logged["state"], logged["statusCode"]) == ("delivered", 200)
        assert logged["attempts"] >= 2
        assert receiver.received[0].json()["featureName"] == "c"


async def test_a_huge_answer_is_read_a_few_kb_deep_and_the_delivery_logged(
    hooks: Api, receiver: Receiver
) -> None:
    size = 100 * 1024 * 1024
    receiver.script = [Huge(size)]
    made = await hooks.json("POST", ADDONS, 201, json=_webhook(receiver.url))
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "h"})
    (logged,) = await _deliveries(hooks, made["id"], 1)
    assert (logged["state"], logged["attempts"], logged["statusCode"]) == ("delivered", 1, 200)
    await receiver.wait_until(lambda: receiver.huge_written is not None)
    # The sender hung up after its few kB: the receiver could not write the rest (what
    # it wrote sits in the two sockets' buffers, a few MB on loopback at most).
    assert receiver.huge_written is not None
    assert receiver.huge_written < size // 4
    # The next event follows at once.
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "i"})
    await _deliveries(hooks, made["id"], 2)
    assert receiver.received[-1].json()["featureName"] == "i"


async def test_a_4xx_is_not_retried_it_fails_and_can_be_sent_again(
    hooks: Api, receiver: Receiver
) -> None:
    receiver.script = [400]
    made = await hooks.json("POST", ADDONS, 201, json=_webhook(receiver.url))
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "x"})
    (failed,) = await _deliveries(hooks, made["id"], 1)
    assert (failed["state"], failed["attempts"], failed["statusCode"]) == ("failed", 1, 400)
    again = await hooks.json("POST", f"{ADDONS}/{made['id']}/deliveries/{failed['id']}/resend")
    assert (again["state"], again["statusCode"], again["eventId"]) == (
        "delivered",
        200,
        failed["eventId"],
    )
    assert [r.headers["webhook-id"] for r in receiver.received] == [
        receiver.received[0].headers["webhook-id"]
    ] * 2
    newest = (await hooks.json("GET", f"{ADDONS}/{made['id']}/deliveries"))["deliveries"]
    assert [d["state"] for d in newest] == ["delivered", "failed"]


async def test_a_redirect_is_not_followed(hooks: Api, receiver: Receiver) -> None:
    receiver.script = [(302, {"Location": receiver.url + "/elsewhere"})]
    made = await hooks.json("POST", ADDONS, 201, json=_webhook(receiver.url))
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "y"})
    (logged,) = await _deliveries(hooks, made["id"], 1)
    assert (logged["state"], logged["statusCode"]) == ("failed", 302)
    assert [r.path for r in receiver.received] == ["/hook"]


async def test_an_integration_that_keeps_failing_does_not_delay_another(
    hooks: Api, service: Service
) -> None:
    async with receiving() as stuck, receiving() as fine:
        stuck.hang = True
        await hooks.json("POST", ADDONS, 201, json=_webhook(stuck.url))
        made = await hooks.json("POST", ADDONS, 201, json=_webhook(fine.url))
        for name in ("a", "b", "c"):
            await hooks.json(
                "POST", "/api/admin/projects/default/features", 201, json={"name": name}
            )
        await fine.wait_for(lambda got: len(got) == 3)
        assert [r.json()["featureName"] for r in fine.received] == ["a", "b", "c"]
        assert len(stuck.received) == 1  # still waiting on its first answer
        assert len(await _deliveries(hooks, made["id"], 3)) == 3


async def test_a_target_is_checked_again_at_delivery_time(
    service: Service, receiver: Receiver
) -> None:
    # Made in-process (past the route's check) on a server that allows no private address.
    made = service.integrations.create_integration(
        IntegrationSpec("webhook", True, {"url": receiver.url}, ("feature-created",))
    )
    app = create_app(service, attrs.evolve(CONFIG, integration_allow_list=()))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        api = Api(client)
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "z"})
        (logged,) = await _deliveries(api, made.id, 1)
    assert logged["state"] == "failed"
    assert "not a public address" in logged["detail"]
    assert receiver.received == []


def _only(received: list[Received]) -> Any:
    (got,) = received
    return got


@pytest.mark.parametrize(
    ("provider", "parameters"),
    [
        ("slack", {"defaultChannel": "releases"}),
        ("teams", {}),
        ("datadog", {"apiKey": "dd-key", "sourceTypeName": "flagcore"}),
        ("new-relic", {"licenseKey": "nr-key"}),
    ],
)
async def test_each_service_is_sent_its_documented_message_about_the_change(
    hooks: Api, receiver: Receiver, provider: str, parameters: dict[str, str]
) -> None:
    await hooks.json(
        "POST",
        ADDONS,
        201,
        json={
            "provider": provider,
            "enabled": True,
            "parameters": {"url": receiver.url, **parameters},
            "events": ["feature-environment-enabled"],
        },
    )
    await hooks.json("POST", "/api/admin/projects/default/features", 201, json={"name": "lamp"})
    await hooks.json(
        "POST", "/api/admin/projects/default/features/lamp/environments/production/on", 200
    )
    await receiver.wait_for(lambda got: len(got) == 1)
    got = _only(receiver.received)
    sent = got.json()
    link = "http://localhost:4242/ui/flags/lamp"
    if provider == "slack":
        assert sent["channel"] == "#releases"
        assert "<" + link + "|lamp>" in sent["blocks"][0]["text"]["text"]
        assert "production" in sent["text"]
        assert sent["blocks"][1]["elements"][0]["url"] == link
    elif provider == "teams":
        assert sent["@type"] == "MessageCard"
        facts = {f["name"]: f["value"] for f in sent["sections"][0]["facts"]}
        assert facts["Environment"] == "production"
        assert facts["Action"] == "feature-environment-enabled"
        assert sent["potentialAction"][0]["targets"][0]["uri"] == link
    elif provider == "datadog":
        assert got.headers["DD-API-KEY"] == "dd-key"
        assert sent["source_type_name"] == "flagcore"
        assert "environment:production" in sent["tags"]
        assert link in sent["text"]
    else:
        assert got.headers["Api-Key"] == "nr-key"
        assert sent["eventType"] == "UnleashServiceEvent"
        assert (sent["featureName"], sent["environment"]) == ("lamp", "production")
        assert sent["link"] == link


async def test_slack_is_sent_the_daily_reminder_naming_a_projects_stale_flags(
    hooks: Api, receiver: Receiver, service: Service
) -> None:
    await hooks.json(
        "POST",
        ADDONS,
        201,
        json={
            "provider": "slack",
            "enabled": True,
            "parameters": {"url": receiver.url, "defaultChannel": "flags"},
            "events": [REMINDER_EVENT],
        },
    )
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=50)
    with service.store.transaction() as tx:
        for name in ("old-b", "old-a"):
            tx.save_flag(FlagDefinition(name, created_at=old))
    remind = service.feature_types.remind_potentially_stale
    now = dt.datetime.now(dt.UTC)
    assert remind(dt.timedelta(days=1), now) == {}  # the first due time: a day on
    remind(dt.timedelta(days=1), now + dt.timedelta(days=1))
    await receiver.wait_for(lambda got: len(got) == 1)
    sent = _only(receiver.received).json()
    assert sent["text"] == (
        "*system*: 2 flags are potentially stale in project *default*: old-a, old-b"
    )


async def test_past_the_retry_time_a_delivery_is_logged_failed_and_the_next_event_follows(
    service: Service, receiver: Receiver
) -> None:
    receiver.script = [503] * 1000
    app = create_app(service, attrs.evolve(CONFIG, integration_retry_seconds=1))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        api = Api(client)
        made = await api.json("POST", ADDONS, 201, json=_webhook(receiver.url))
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "one"})
        (failed,) = await _deliveries(api, made["id"], 1)
        assert (failed["state"], failed["statusCode"]) == ("failed", 503)
        assert failed["attempts"] >= 2
        receiver.script = []
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "two"})
        delivered, _failed = await _deliveries(api, made["id"], 2)
        assert delivered["state"] == "delivered"
        assert receiver.received[-1].json()["featureName"] == "two"


async def test_the_connection_goes_to_the_checked_address_with_the_urls_host_kept(
    receiver: Receiver,
) -> None:
    port = URL(receiver.url).port
    checked = Target(URL(f"http://rebound.example:{port}/hook"), "127.0.0.1", socket.AF_INET)
    connector = aiohttp.TCPConnector(resolver=PinnedResolver(checked), use_dns_cache=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(checked.url, data=b"{}") as response:
            assert response.status == 200
        with pytest.raises(aiohttp.ClientConnectorError):
            await session.post(f"http://elsewhere.example:{port}/hook")
    assert [r.headers["Host"] for r in receiver.received] == [f"rebound.example:{port}"]


async def test_a_delivery_owed_when_the_server_stopped_is_sent_by_the_next_one(
    service: Service, receiver: Receiver
) -> None:
    receiver.script = [503] * 1000
    async with TestClient(TestServer(create_app(service, CONFIG), host="127.0.0.1")) as client:
        api = Api(client)
        made = await api.json("POST", ADDONS, 201, json=_webhook(receiver.url))
        await api.json("POST", "/api/admin/projects/default/features", 201, json={"name": "owed"})
        await receiver.wait_for(lambda got: len(got) >= 1)
    assert service.integration_outbox.list_integration_deliveries(made["id"]) == []
    receiver.script = []
    async with TestClient(TestServer(create_app(service, CONFIG), host="127.0.0.1")) as client:
        (logged,) = await _deliveries(Api(client), made["id"], 1)
    assert logged["state"] == "delivered"
    assert receiver.received[-1].json()["featureName"] == "owed"
