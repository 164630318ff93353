"""Flag types' expected lifetimes in Unleash's shape, and "potentially stale" flags
(issue 32): older than their type's lifetime, shown on the flag page."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer
from standardwebhooks.webhooks import Webhook

from flagcore.entities import FlagDefinition
from flagcore.service import REMINDER_EVENT, IntegrationSpec, Service
from flagcore_http import ServerConfig, create_app
from flagcore_store_sqlite import SqliteStore
from tests.http.conftest import CLIENT, Api
from tests.http.receiver import receiving

TYPES = "/api/admin/feature-types"


async def test_the_types_carry_unleashs_default_lifetimes(api: Api) -> None:
    answer = await api.json("GET", TYPES)
    assert answer["version"] == 1
    assert {t["id"]: t["lifetimeDays"] for t in answer["types"]} == {
        "release": 40,
        "experiment": 40,
        "operational": 7,
        "kill-switch": None,
        "permission": None,
    }
    release = answer["types"][0]
    assert set(release) == {"id", "name", "description", "lifetimeDays"}


async def test_a_lifetime_is_changed_with_an_event_and_0_means_never(
    api: Api, service: Service
) -> None:
    changed = await api.json("PUT", TYPES + "/release/lifetimes", json={"lifetimeDays": 10})
    assert (changed["id"], changed["lifetimeDays"]) == ("release", 10)
    never = await api.json("PUT", TYPES + "/operational/lifetimes", json={"lifetimeDays": 0})
    assert never["lifetimeDays"] is None
    kinds = {t["id"]: t["lifetimeDays"] for t in (await api.json("GET", TYPES))["types"]}
    assert (kinds["release"], kinds["operational"]) == (10, None)
    event = service.events.list_events(limit=2)[1]
    assert (event.type, event.data, event.pre_data) == (
        "feature-type-updated",
        {"id": "release", "lifetimeDays": 10},
        {"id": "release", "lifetimeDays": 40},
    )


async def test_a_bad_lifetime_or_type_is_refused_and_nothing_changes(api: Api) -> None:
    for body, path in (
        ({"lifetimeDays": -1}, "$.lifetimeDays"),
        ({"lifetimeDays": None}, "$.lifetimeDays"),
        ({}, "$.lifetimeDays"),
    ):
        refused = await api.json("PUT", TYPES + "/release/lifetimes", 400, json=body)
        assert [d["path"] for d in refused["details"]] == [path], refused
    await api.json("PUT", TYPES + "/nope/lifetimes", 404, json={"lifetimeDays": 3})
    await api.json("PUT", TYPES + "/release/lifetimes", 403, json={"lifetimeDays": 3}, token=CLIENT)
    kinds = {t["id"]: t["lifetimeDays"] for t in (await api.json("GET", TYPES))["types"]}
    assert kinds["release"] == 40


def test_a_flag_older_than_its_types_lifetime_is_potentially_stale(service: Service) -> None:
    service.flags.create_flag("default", "checkout")
    service.flags.create_flag("default", "switch", type="kill-switch")
    service.flags.create_flag("default", "marked")
    service.flags.mark_stale("default", "marked", True)
    service.flags.create_flag("default", "gone")
    service.archive.archive_flag("default", "gone")
    now = dt.datetime.now(dt.UTC)
    later = now + dt.timedelta(days=41)
    assert service.feature_types.potentially_stale_flags(now) == []
    stale = [flag.name for flag in service.feature_types.potentially_stale_flags(later)]
    assert stale == ["checkout"]  # a kill switch lives forever; marked stale is stale
    service.feature_types.set_type_lifetime("release", 60)
    assert service.feature_types.potentially_stale_flags(later) == []


def test_each_flag_is_announced_once_when_it_becomes_potentially_stale(
    service: Service,
) -> None:
    service.flags.create_flag("default", "checkout")
    service.flags.create_flag("default", "switch", type="kill-switch")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=41)
    announce = service.feature_types.announce_potentially_stale
    assert announce(later) == ["checkout"]
    assert announce(later) == []  # the next hour's check: already announced
    event = service.events.list_events(limit=1)[0]
    assert (event.type, event.feature_name, event.project) == (
        "feature-potentially-stale-on",
        "checkout",
        "default",
    )
    # Its lifecycle is not changed by the mark.
    stages = service.lifecycle.lifecycle_of("default", "checkout")
    assert [s.stage for s in stages] == ["initial"]
    # Marked stale by a person, then not: announced again when it is so again.
    service.flags.mark_stale("default", "checkout", True)
    assert announce(later) == []
    service.flags.mark_stale("default", "checkout", False)
    assert announce(later) == ["checkout"]


async def test_a_running_server_announces_the_flags_that_outlived_their_type(
    service: Service,
) -> None:
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=50)
    with service.store.transaction() as tx:
        tx.save_flag(FlagDefinition("forgotten", created_at=old))
    app = create_app(service, ServerConfig(stale_check_interval=0.05))
    async with TestClient(TestServer(app, host="127.0.0.1")):
        for _ in range(200):  # the check runs on the store worker, every 0.05 s here
            events = service.events.list_events(limit=5)
            if any(e.type == "feature-potentially-stale-on" for e in events):
                break
            await asyncio.sleep(0.05)
    (announced,) = [e for e in events if e.type == "feature-potentially-stale-on"]
    assert announced.feature_name == "forgotten"


async def test_two_servers_on_one_file_remind_a_webhook_of_stale_flags_once_each_time(
    tmp_path: Path,
) -> None:
    stores = [SqliteStore(tmp_path / "shared.db") for _ in range(2)]
    try:
        services = [Service(store) for store in stores]
        old = dt.datetime.now(dt.UTC) - dt.timedelta(days=50)
        with stores[0].transaction() as tx:
            tx.save_flag(FlagDefinition("forgotten", created_at=old))
        services[0].flags.create_flag("default", "fresh")
        # Both check every 0.05 s; a reminder is due every second here (a day by default).
        config = ServerConfig(
            stale_check_interval=0.05,
            stale_reminder_interval=1.0,
            integration_allow_list=("127.0.0.1",),
        )
        async with (
            receiving() as receiver,
            TestClient(TestServer(create_app(services[0], config), host="127.0.0.1")),
            TestClient(TestServer(create_app(services[1], config), host="127.0.0.1")),
        ):
            hook = services[1].integrations.create_integration(
                IntegrationSpec("webhook", True, {"url": receiver.url}, (REMINDER_EVENT,))
            )
            await receiver.wait_for(lambda got: len(got) >= 2)
        reminders = [
            e
            for e in reversed(services[0].events.list_events(limit=100))
            if e.type == REMINDER_EVENT
        ]
    finally:
        for store in stores:
            store.close()
    first, second, *_later = reminders
    # One node each time: a second node reminding too would write one within 0.05 s.
    assert (second.created_at - first.created_at).total_seconds() >= 0.5
    sent = [Webhook(hook.signing_secret).verify(r.body, r.headers) for r in receiver.received]
    assert [body["id"] for body in sent] == [e.id for e in reminders[: len(sent)]]
    assert (sent[0]["type"], sent[0]["project"], sent[0]["data"]) == (
        REMINDER_EVENT,
        "default",
        {"features": ["forgotten"], "count": 1},
    )


async def test_the_flag_answers_say_whether_a_flag_is_potentially_stale(
    api: Api, service: Service
) -> None:
    service.flags.create_flag("default", "fresh")
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=50)
    with service.store.transaction() as tx:
        tx.save_flag(FlagDefinition("forgotten", created_at=old))
    flags = "/api/admin/projects/default/features"
    listed = {f["name"]: f["potentiallyStale"] for f in (await api.json("GET", flags))["features"]}
    assert listed == {"forgotten": True, "fresh": False}
    assert (await api.json("GET", flags + "/forgotten"))["potentiallyStale"] is True
    await api.json("PUT", TYPES + "/release/lifetimes", json={"lifetimeDays": 0})
    assert (await api.json("GET", flags + "/forgotten"))["potentiallyStale"] is False
