"""Every form of the UI gives back what was typed after a refusal (issue 23 §1).

One journey per form: fill every field, make one invalid, save; every other field comes
back as typed (unsaved rows included) and the bad one is marked and described; fix it,
save, and what is stored is what was typed, field by field. One server for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.ui.conftest import ADMIN, Server, sign_in, start_server, stop_server

FLAGS = "/api/admin/projects/default/features"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(Path(tmp_path_factory.mktemp("forms")))
    try:
        yield running
    finally:
        stop_server(running)


def _strategy(server: Server, flag: str, environment: str = "development") -> Any:
    details = server.api("GET", f"{FLAGS}/{flag}")
    (strategy,) = {e["name"]: e for e in details["environments"]}[environment]["strategies"]
    return strategy


def _project(server: Server, project: str) -> Any:
    (found,) = [
        p for p in server.api("GET", "/api/admin/projects")["projects"] if p["id"] == project
    ]
    return found


def _payload(row: Locator) -> Locator:
    # By name: a label wrapping a textarea takes the text typed into its accessible name.
    return row.locator("textarea[name$='-payload_value']")


def _described(page: Page, field: Locator, text: str) -> None:
    """The field is marked invalid and its description is the message shown beside it."""
    expect(field).to_have_attribute("aria-invalid", "true")
    described_by = field.get_attribute("aria-describedby")
    assert described_by, "an invalid field names its message"
    expect(page.locator(f"#{described_by.split()[0]}")).to_contain_text(text)


def test_a_refused_new_strategy_comes_back_as_typed_and_is_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "typed-rollout"})
    segment = server.api("POST", "/api/admin/segments", {"name": "typed-beta", "constraints": []})
    page = signed_in
    page.goto(server.url + "/ui/flags/typed-rollout/environments/development/strategies/new")
    page.get_by_label("Title (optional)").fill("Ten percent")
    page.get_by_label("Parameter rollout").fill("")  # required: left blank on purpose
    page.get_by_label("Parameter stickiness").fill("userId")
    page.get_by_label("Parameter groupId").fill("checkout")
    first = page.locator(".row.constraint").nth(0)
    first.get_by_label("Context field").fill("appVersion")
    first.get_by_label("Operator").select_option("SEMVER_GT")
    first.get_by_label("Values").fill("1.0.0\n2.0.0")  # two values for SEMVER_GT
    first.get_by_label("Inverted (NOT)").check()
    first.get_by_label("Case-insensitive").check()
    page.get_by_label("typed-beta").check()
    blue = page.locator(".row.variant").nth(0)
    blue.get_by_label("Variant name").fill("blue")
    blue.get_by_label("Weight %").fill("30")
    blue.get_by_label("Variant stickiness").fill("userId")
    blue.get_by_label("Payload type").select_option("json")
    _payload(blue).fill('{"shade": 1}')
    blue.get_by_label("Overrides").fill("userId: u1, u2")
    page.get_by_label("Disabled (kept, but not used)").check()
    page.get_by_role("button", name="Add a constraint row").click()  # redrawn, unsaved
    second = page.locator(".row.constraint").nth(1)
    second.get_by_label("Context field").fill("country")
    second.get_by_label("Values").fill("NO\nSE")
    page.get_by_role("button", name="Add a variant row").click()
    green = page.locator(".row.variant").nth(1)
    green.get_by_label("Variant name").fill("green")
    _payload(green).fill("G")
    page.get_by_role("button", name="Save strategy").click()

    expect(page.get_by_role("alert")).to_contain_text("required: rollout")
    _described(page, page.get_by_label("Parameter rollout"), "required")
    _described(page, first.get_by_label("Values"), "one value only")
    expect(page.get_by_label("Parameter rollout")).to_have_value("")
    expect(page.get_by_label("Title (optional)")).to_have_value("Ten percent")
    expect(page.get_by_label("Parameter stickiness")).to_have_value("userId")
    expect(page.get_by_label("Parameter groupId")).to_have_value("checkout")
    expect(first.get_by_label("Context field")).to_have_value("appVersion")
    expect(first.get_by_label("Operator")).to_have_value("SEMVER_GT")
    expect(first.get_by_label("Values")).to_have_value("1.0.0\n2.0.0")
    expect(first.get_by_label("Inverted (NOT)")).to_be_checked()
    expect(first.get_by_label("Case-insensitive")).to_be_checked()
    expect(second.get_by_label("Context field")).to_have_value("country")
    expect(second.get_by_label("Operator")).to_have_value("IN")
    expect(second.get_by_label("Values")).to_have_value("NO\nSE")
    expect(second.get_by_label("Inverted (NOT)")).not_to_be_checked()
    expect(page.get_by_label("typed-beta")).to_be_checked()
    expect(blue.get_by_label("Variant name")).to_have_value("blue")
    expect(blue.get_by_label("Weight %")).to_have_value("30")
    expect(blue.get_by_label("Variant stickiness")).to_have_value("userId")
    expect(blue.get_by_label("Payload type")).to_have_value("json")
    expect(_payload(blue)).to_have_value('{"shade": 1}')
    expect(blue.get_by_label("Overrides")).to_have_value("userId: u1, u2")
    expect(green.get_by_label("Variant name")).to_have_value("green")
    expect(_payload(green)).to_have_value("G")
    expect(page.get_by_label("Disabled (kept, but not used)")).to_be_checked()
    details = server.api("GET", f"{FLAGS}/typed-rollout")
    assert all(e["strategies"] == [] for e in details["environments"])

    page.get_by_label("Parameter rollout").fill("10")
    first.get_by_label("Values").fill("1.0.0")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_role("status")).to_contain_text("Strategy saved in development")
    stored = _strategy(server, "typed-rollout")
    assert stored["title"] == "Ten percent"
    assert stored["parameters"] == {"rollout": "10", "stickiness": "userId", "groupId": "checkout"}
    assert stored["constraints"] == [
        {
            "contextName": "appVersion",
            "operator": "SEMVER_GT",
            "value": "1.0.0",
            "values": [],
            "inverted": True,
            "caseInsensitive": True,
        },
        {
            "contextName": "country",
            "operator": "IN",
            "values": ["NO", "SE"],
            "value": None,
            "inverted": False,
            "caseInsensitive": False,
        },
    ]
    assert stored["segments"] == [segment["id"]]
    assert stored["disabled"] is True
    by_name = {v["name"]: v for v in stored["variants"]}
    assert (by_name["blue"]["weight"], by_name["blue"]["weightType"]) == (300, "fix")
    assert by_name["blue"]["stickiness"] == "userId"
    assert by_name["blue"]["payload"] == {"type": "json", "value": '{"shade": 1}'}
    assert by_name["blue"].get(
        "overrides", [{"contextName": "userId", "values": ["u1", "u2"]}]
    ) == [{"contextName": "userId", "values": ["u1", "u2"]}]
    assert (by_name["green"]["weight"], by_name["green"]["weightType"]) == (700, "variable")
    assert by_name["green"]["payload"] == {"type": "string", "value": "G"}


def test_editing_a_ten_percent_rollout_with_a_bad_weight_keeps_rollout_segment_and_title(
    signed_in: Page, server: Server
) -> None:
    """The issue's journey: the fixed form no longer saves rollout 100 and no segment."""
    server.api("POST", FLAGS, {"name": "ten-percent"})
    segment = server.api("POST", "/api/admin/segments", {"name": "ten-beta", "constraints": []})
    created = server.api(
        "POST",
        FLAGS + "/ten-percent/environments/development/strategies",
        {
            "name": "flexibleRollout",
            "title": "careful",
            "parameters": {"rollout": "10", "stickiness": "sessionId", "groupId": "g-ten"},
            "segments": [segment["id"]],
        },
    )
    page = signed_in
    page.goto(
        server.url + f"/ui/flags/ten-percent/environments/development/strategies/{created['id']}"
    )
    variant = page.locator(".row.variant").first
    variant.get_by_label("Variant name").fill("big")
    variant.get_by_label("Weight %").fill("150")
    page.get_by_role("button", name="Save strategy").click()

    _described(page, variant.get_by_label("Weight %"), "a percentage from 0 to 100")
    expect(page.get_by_label("Parameter rollout")).to_have_value("10")
    expect(page.get_by_label("Parameter stickiness")).to_have_value("sessionId")
    expect(page.get_by_label("Parameter groupId")).to_have_value("g-ten")
    expect(page.get_by_label("Title (optional)")).to_have_value("careful")
    expect(page.get_by_label("ten-beta")).to_be_checked()
    expect(variant.get_by_label("Weight %")).to_have_value("150")

    variant.get_by_label("Weight %").fill("")
    page.get_by_label("Parameter rollout").fill("")
    page.get_by_role("button", name="Save strategy").click()
    _described(page, page.get_by_label("Parameter rollout"), "required")
    assert _strategy(server, "ten-percent")["parameters"]["rollout"] == "10"

    page.get_by_label("Parameter rollout").fill("10")
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_role("status")).to_contain_text("Strategy saved")
    stored = _strategy(server, "ten-percent")
    assert stored["parameters"] == {"rollout": "10", "stickiness": "sessionId", "groupId": "g-ten"}
    assert stored["segments"] == [segment["id"]]
    assert stored["title"] == "careful"
    assert [(v["name"], v["weight"]) for v in stored["variants"]] == [("big", 1000)]


def test_refused_flag_variants_come_back_as_typed_and_are_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "typed-variants"})
    page = signed_in
    page.goto(server.url + "/ui/flags/typed-variants/environments/production/variants")
    first = page.locator(".row.variant").nth(0)
    first.get_by_label("Variant name").fill("red")
    first.get_by_label("Weight %").fill("25.5")
    first.get_by_label("Variant stickiness").fill("userId")
    first.get_by_label("Payload type").select_option("json")
    _payload(first).fill('{"bad": ')
    first.get_by_label("Overrides").fill("userId: alice, bob\ncountry: NO")
    page.get_by_role("button", name="Add a variant row").click()
    second = page.locator(".row.variant").nth(1)
    second.get_by_label("Variant name").fill("plain")
    second.get_by_label("Payload type").select_option("number")
    _payload(second).fill("42")
    page.get_by_role("button", name="Save variants").click()

    _described(page, _payload(first), "not valid JSON")
    expect(first.get_by_label("Variant name")).to_have_value("red")
    expect(first.get_by_label("Weight %")).to_have_value("25.5")
    expect(first.get_by_label("Variant stickiness")).to_have_value("userId")
    expect(first.get_by_label("Payload type")).to_have_value("json")
    expect(_payload(first)).to_have_value('{"bad": ')
    expect(first.get_by_label("Overrides")).to_have_value("userId: alice, bob\ncountry: NO")
    expect(second.get_by_label("Variant name")).to_have_value("plain")
    expect(second.get_by_label("Weight %")).to_have_value("")
    expect(second.get_by_label("Payload type")).to_have_value("number")
    expect(_payload(second)).to_have_value("42")
    path = f"{FLAGS}/typed-variants/environments/production/variants"
    assert server.api("GET", path)["variants"] == []

    _payload(first).fill('{"bad": false}')
    page.get_by_role("button", name="Save variants").click()
    expect(page.get_by_role("status")).to_contain_text("Variants saved in production")
    stored = {v["name"]: v for v in server.api("GET", path)["variants"]}
    assert (stored["red"]["weight"], stored["red"]["weightType"]) == (255, "fix")
    assert stored["red"]["stickiness"] == "userId"
    assert stored["red"]["payload"] == {"type": "json", "value": '{"bad": false}'}
    assert stored["red"]["overrides"] == [
        {"contextName": "userId", "values": ["alice", "bob"]},
        {"contextName": "country", "values": ["NO"]},
    ]
    assert (stored["plain"]["weight"], stored["plain"]["weightType"]) == (745, "variable")
    assert stored["plain"]["payload"] == {"type": "number", "value": "42"}
    assert stored["plain"]["overrides"] == []


def test_a_refused_new_flag_comes_back_as_typed_and_is_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "shop", "name": "Shop"})
    page = signed_in
    page.goto(server.url + "/ui/flags/new")
    page.get_by_label("Project", exact=True).select_option("shop")
    page.get_by_label("Name", exact=True).fill("typed-checkout")
    page.get_by_label("Type", exact=True).select_option("experiment")
    page.get_by_label("Description").fill("A new checkout\nsecond line")
    page.get_by_label("Tags").fill("simple:beta, nosuchtype:x")
    page.get_by_role("button", name="Create flag").click()

    _described(page, page.get_by_label("Tags"), "")
    expect(page.get_by_label("Project", exact=True)).to_have_value("shop")
    expect(page.get_by_label("Name", exact=True)).to_have_value("typed-checkout")
    expect(page.get_by_label("Type", exact=True)).to_have_value("experiment")
    expect(page.get_by_label("Description")).to_have_value("A new checkout\nsecond line")
    expect(page.get_by_label("Tags")).to_have_value("simple:beta, nosuchtype:x")
    assert server.api_status("GET", "/api/admin/projects/shop/features/typed-checkout") == 404

    page.get_by_label("Tags").fill("simple:beta, simple:checkout")
    page.get_by_role("button", name="Create flag").click()
    expect(page.get_by_role("status")).to_contain_text("Flag “typed-checkout” created.")
    stored = server.api("GET", "/api/admin/projects/shop/features/typed-checkout")
    assert (stored["project"], stored["type"]) == ("shop", "experiment")
    assert stored["description"] == "A new checkout\nsecond line"
    tags = server.api("GET", "/api/admin/features/typed-checkout/tags")["tags"]
    assert sorted((t["type"], t["value"]) for t in tags) == [
        ("simple", "beta"),
        ("simple", "checkout"),
    ]


def test_a_refused_segment_comes_back_as_typed_and_is_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "seg-project", "name": "Seg"})
    page = signed_in
    page.goto(server.url + "/ui/segments/new")
    page.get_by_label("Segment name").fill("typed-nordics")
    page.get_by_label("Description").fill("Nordic shoppers")
    page.get_by_label("Project (empty").select_option("seg-project")
    first = page.locator(".row.constraint").nth(0)
    first.get_by_label("Context field").fill("country")
    first.get_by_label("Operator").select_option("NOT_IN")
    first.get_by_label("Values").fill("DK\nFI")
    first.get_by_label("Case-insensitive").check()
    page.get_by_role("button", name="Add a constraint row").click()
    second = page.locator(".row.constraint").nth(1)
    second.get_by_label("Context field").fill("appVersion")
    second.get_by_label("Operator").select_option("SEMVER_GTE")
    second.get_by_label("Values").fill("2.0.0\n3.0.0")
    second.get_by_label("Inverted (NOT)").check()
    page.get_by_role("button", name="Save segment").click()

    _described(page, second.get_by_label("Values"), "one value only")
    expect(page.get_by_label("Segment name")).to_have_value("typed-nordics")
    expect(page.get_by_label("Description")).to_have_value("Nordic shoppers")
    expect(page.get_by_label("Project (empty")).to_have_value("seg-project")
    expect(first.get_by_label("Context field")).to_have_value("country")
    expect(first.get_by_label("Operator")).to_have_value("NOT_IN")
    expect(first.get_by_label("Values")).to_have_value("DK\nFI")
    expect(first.get_by_label("Case-insensitive")).to_be_checked()
    expect(first.get_by_label("Inverted (NOT)")).not_to_be_checked()
    expect(second.get_by_label("Context field")).to_have_value("appVersion")
    expect(second.get_by_label("Operator")).to_have_value("SEMVER_GTE")
    expect(second.get_by_label("Inverted (NOT)")).to_be_checked()
    names = [s["name"] for s in server.api("GET", "/api/admin/segments")["segments"]]
    assert "typed-nordics" not in names

    second.get_by_label("Values").fill("2.0.0")
    page.get_by_role("button", name="Save segment").click()
    expect(page.get_by_role("status")).to_contain_text("Segment “typed-nordics” saved.")
    (stored,) = [
        s
        for s in server.api("GET", "/api/admin/segments")["segments"]
        if s["name"] == "typed-nordics"
    ]
    assert (stored["description"], stored["project"]) == ("Nordic shoppers", "seg-project")
    assert [
        (c["contextName"], c["operator"], c.get("values"), c.get("value"), c["inverted"])
        for c in stored["constraints"]
    ] == [
        ("country", "NOT_IN", ["DK", "FI"], None, False),
        ("appVersion", "SEMVER_GTE", [], "2.0.0", True),
    ]
    assert [c["caseInsensitive"] for c in stored["constraints"]] == [True, False]


def test_a_refused_project_comes_back_as_typed_and_is_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/projects")
    page.get_by_label("Project id").fill("web shop")  # not URL-friendly
    page.get_by_label("Project name").fill("Web shop")
    page.get_by_label("Description").fill("Everything sold online")
    page.get_by_role("button", name="Create project").click()

    _described(page, page.get_by_label("Project id"), "URL-friendly")
    expect(page.get_by_label("Project id")).to_have_value("web shop")
    expect(page.get_by_label("Project name")).to_have_value("Web shop")
    expect(page.get_by_label("Description")).to_have_value("Everything sold online")

    page.get_by_label("Project id").fill("web-shop")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("status")).to_contain_text("Project “web-shop” created.")
    stored = _project(server, "web-shop")
    assert (stored["name"], stored["description"]) == ("Web shop", "Everything sold online")

    page.get_by_label("New name for web-shop").fill("   ")
    page.get_by_role("row", name="web-shop").get_by_role("button", name="Rename").click()
    expect(page.get_by_label("New name for web-shop")).to_have_value("   ")
    expect(page.get_by_label("New name for web-shop")).to_have_attribute("aria-invalid", "true")
    assert _project(server, "web-shop")["name"] == "Web shop"


def test_a_refused_token_comes_back_as_typed_and_is_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "tok-project", "name": "Tok"})
    page = signed_in
    page.goto(server.url + "/ui/tokens")
    page.get_by_label("Token name").fill("   ")  # a token needs a name
    page.get_by_label("Token type").select_option("client")
    page.get_by_label("Projects (client and frontend tokens)").select_option("tok-project")
    page.get_by_label("Environment (client and frontend tokens)").select_option("production")
    page.get_by_role("button", name="Create token").click()

    _described(page, page.get_by_label("Token name"), "must not be empty")
    expect(page.get_by_label("Token name")).to_have_value("   ")
    expect(page.get_by_label("Token type")).to_have_value("client")
    expect(page.get_by_label("Projects (client and frontend tokens)")).to_have_values(
        ["tok-project"]
    )
    expect(page.get_by_label("Environment (client and frontend tokens)")).to_have_value(
        "production"
    )

    page.get_by_label("Token name").fill("typed-ci")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_label("Secret")).to_have_value(
        __import__("re").compile(r"^tok-project:production\.")
    )
    (stored,) = [
        t
        for t in server.api("GET", "/api/admin/api-tokens")["tokens"]
        if t["tokenName"] == "typed-ci"
    ]
    assert (stored["type"], stored["environment"]) == ("client", "production")
    assert stored["projects"] == ["tok-project"]


def test_a_refused_signal_endpoint_and_its_token_come_back_as_typed(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/signals")
    page.get_by_label("Endpoint name").fill("pager duty")  # not URL-friendly
    page.get_by_label("Description").fill("Incidents from the pager")
    page.get_by_role("button", name="Create endpoint").click()

    _described(page, page.get_by_label("Endpoint name"), "URL-friendly")
    expect(page.get_by_label("Endpoint name")).to_have_value("pager duty")
    expect(page.get_by_label("Description")).to_have_value("Incidents from the pager")

    page.get_by_label("Endpoint name").fill("pager-duty")
    page.get_by_role("button", name="Create endpoint").click()
    expect(page.get_by_role("status")).to_contain_text("Signal endpoint “pager-duty” created.")
    (stored,) = [
        e
        for e in server.api("GET", "/api/admin/signal-endpoints")["signalEndpoints"]
        if e["name"] == "pager-duty"
    ]
    assert stored["description"] == "Incidents from the pager"

    page.get_by_label("Token name").fill(" ")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_label("Token name")).to_have_value(" ")
    _described(page, page.get_by_label("Token name"), "")


def test_a_refused_action_set_comes_back_as_typed_and_is_stored_as_typed_once_fixed(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "act-one"})
    server.api("POST", FLAGS, {"name": "act-two"})
    endpoint = server.api("POST", "/api/admin/signal-endpoints", {"name": "act-hook"})
    page = signed_in
    page.goto(server.url + "/ui/actions/new?project=default")
    page.get_by_label("Action set name").fill("typed-actions")
    page.get_by_label("Description").fill("Switch off on alarms")
    page.get_by_label("Signal endpoint it listens to").select_option(str(endpoint["id"]))
    page.get_by_label("Enabled").uncheck()
    filters = page.locator(".row.constraint").nth(0)
    filters.get_by_label("Context field").fill("severity")
    filters.get_by_label("Operator").select_option("NUM_GT")
    filters.get_by_label("Values").fill("3\n4")  # NUM_GT compares with one value
    page.locator("#actions-0-kind").select_option("TOGGLE_FEATURE_OFF")
    page.locator("#actions-0-flag").select_option("act-one")
    page.locator("#actions-0-environment").select_option("production")
    page.get_by_role("button", name="Add an action row").click()
    page.locator("#actions-1-kind").select_option("TOGGLE_FEATURE_ON")
    page.locator("#actions-1-flag").select_option("act-two")
    page.locator("#actions-1-environment").select_option("development")
    page.get_by_role("button", name="Save action set").click()

    _described(page, filters.get_by_label("Values"), "one value only")
    expect(page.get_by_label("Action set name")).to_have_value("typed-actions")
    expect(page.get_by_label("Description")).to_have_value("Switch off on alarms")
    expect(page.get_by_label("Signal endpoint it listens to")).to_have_value(str(endpoint["id"]))
    expect(page.get_by_label("Enabled")).not_to_be_checked()
    expect(filters.get_by_label("Context field")).to_have_value("severity")
    expect(filters.get_by_label("Operator")).to_have_value("NUM_GT")
    expect(filters.get_by_label("Values")).to_have_value("3\n4")
    for index, (kind, flag, environment) in enumerate(
        [
            ("TOGGLE_FEATURE_OFF", "act-one", "production"),
            ("TOGGLE_FEATURE_ON", "act-two", "development"),
        ]
    ):
        expect(page.locator(f"#actions-{index}-kind")).to_have_value(kind)
        expect(page.locator(f"#actions-{index}-flag")).to_have_value(flag)
        expect(page.locator(f"#actions-{index}-environment")).to_have_value(environment)
    assert server.api("GET", "/api/admin/projects/default/actions")["actions"] == []

    filters.get_by_label("Values").fill("3")
    page.get_by_role("button", name="Save action set").click()
    expect(page.get_by_role("status")).to_contain_text("Action set “typed-actions” saved.")
    (stored,) = server.api("GET", "/api/admin/projects/default/actions")["actions"]
    assert (stored["name"], stored["description"], stored["enabled"]) == (
        "typed-actions",
        "Switch off on alarms",
        False,
    )
    assert stored["match"]["sourceId"] == endpoint["id"]
    severity = stored["match"]["payload"]["severity"]
    assert (severity["operator"], severity["value"], severity["inverted"]) == ("NUM_GT", "3", False)
    assert [
        (a["action"], a["executionParams"]["featureName"], a["executionParams"]["environment"])
        for a in stored["actions"]
    ] == [
        ("TOGGLE_FEATURE_OFF", "act-one", "production"),
        ("TOGGLE_FEATURE_ON", "act-two", "development"),
    ]


def test_a_refused_playground_context_comes_back_as_typed_and_is_evaluated_as_typed(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/playground")
    page.get_by_label("Environment").select_option("production")
    page.locator("#project").select_option("default")
    page.get_by_label("userId").fill("u-1")
    page.get_by_label("sessionId").fill("s-1")
    page.get_by_label("remoteAddress").fill("10.0.0.1")
    page.get_by_label("appName").fill("web")
    page.get_by_label("currentTime").fill("tomorrow")  # not RFC 3339
    page.get_by_label("Property name").fill("plan")
    page.get_by_label("Property value").fill("pro")
    page.get_by_role("button", name="Add a property row").click()
    page.get_by_label("Property name").nth(1).fill("region")
    page.get_by_label("Property value").nth(1).fill("eu north")
    page.get_by_role("button", name="Evaluate").click()

    _described(page, page.get_by_label("currentTime"), "")
    expect(page.get_by_label("Environment")).to_have_value("production")
    expect(page.locator("#project")).to_have_value("default")
    for field, value in [
        ("userId", "u-1"),
        ("sessionId", "s-1"),
        ("remoteAddress", "10.0.0.1"),
        ("appName", "web"),
        ("currentTime", "tomorrow"),
    ]:
        expect(page.get_by_label(field, exact=True)).to_have_value(value)
    expect(page.get_by_label("Property name").nth(0)).to_have_value("plan")
    expect(page.get_by_label("Property value").nth(0)).to_have_value("pro")
    expect(page.get_by_label("Property name").nth(1)).to_have_value("region")
    expect(page.get_by_label("Property value").nth(1)).to_have_value("eu north")

    page.get_by_label("currentTime").fill("2026-11-23T12:00:00Z")
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_role("heading", name="Answers in production")).to_be_visible()
    asked = json.loads(page.locator(".count code").inner_text())
    assert asked == {
        "userId": "u-1",
        "sessionId": "s-1",
        "remoteAddress": "10.0.0.1",
        "appName": "web",
        "currentTime": "2026-11-23T12:00:00Z",
        "properties": {"plan": "pro", "region": "eu north"},
    }


def test_revoking_the_token_in_use_asks_first_and_a_refused_revocation_is_shown(
    page: Page, server: Server
) -> None:
    made = server.api("POST", "/api/admin/api-tokens", {"tokenName": "person", "type": "admin"})
    spare = server.api("POST", "/api/admin/api-tokens", {"tokenName": "spare", "type": "admin"})
    sign_in(page, server, made["secret"])
    page.goto(server.url + "/ui/tokens")

    server.api("DELETE", f"/api/admin/api-tokens/{spare['secret']}")
    page.get_by_role("button", name="Revoke token spare").click()  # gone since the page was drawn
    expect(page.get_by_role("alert")).to_contain_text("Not revoked: there is no such token")

    page.get_by_role("button", name="Revoke token person").click()
    expect(
        page.get_by_role("heading", name="Revoke the token you are signed in with?")
    ).to_be_visible()
    page.get_by_role("link", name="Keep it").click()
    names = [t["tokenName"] for t in server.api("GET", "/api/admin/api-tokens")["tokens"]]
    assert "person" in names

    page.get_by_role("button", name="Revoke token person").click()
    page.get_by_role("button", name="Revoke “person” and sign out").click()
    expect(page.get_by_label("Admin API token")).to_be_visible()
    names = [t["tokenName"] for t in server.api("GET", "/api/admin/api-tokens")["tokens"]]
    assert "person" not in names
    assert server.api_status("GET", "/api/admin/api-tokens", token=ADMIN) == 200


def test_a_confirmation_in_the_address_bar_is_shown_only_when_signed_for_this_session(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/flags?done=flag-created&what=<b>forged</b>&sig=00")
    expect(page.get_by_role("heading", name="Flags", exact=True)).to_be_visible()
    expect(page.get_by_role("status")).to_have_count(0)
    expect(page.locator("b", has_text="forged")).to_have_count(0)


def test_archive_revive_and_delete_for_good_each_confirm_what_happened(
    signed_in: Page, server: Server
) -> None:
    server.api("POST", FLAGS, {"name": "said-so"})
    page = signed_in
    page.goto(server.url + "/ui/flags/said-so")
    page.get_by_role("button", name="Archive this flag").click()
    expect(page.get_by_role("status")).to_have_text(
        "Flag “said-so” archived: SDKs no longer get it."
    )
    page.get_by_role("button", name="Revive said-so").click()
    expect(page.get_by_role("status")).to_have_text(
        "Flag “said-so” revived, off in every environment."
    )
    page.get_by_role("button", name="Archive this flag").click()
    page.get_by_role("link", name="Delete for good: said-so").click()
    page.get_by_label("Type the flag's name to confirm").fill("said-s")
    page.get_by_role("button", name="Delete for good").click()
    expect(page.get_by_label("Type the flag's name to confirm")).to_have_value("said-s")
    _described(page, page.get_by_label("Type the flag's name to confirm"), "Type the flag")
    page.get_by_label("Type the flag's name to confirm").fill("said-so")
    page.get_by_role("button", name="Delete for good").click()
    expect(page.get_by_role("status")).to_have_text("Flag “said-so” deleted for good.")
    archived = server.api("GET", "/api/admin/archive/features")["features"]
    assert "said-so" not in [f["name"] for f in archived]
