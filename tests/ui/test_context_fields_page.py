"""The Context fields page, and the constraint editor offering a field's legal values."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.ui.conftest import Server

FLAGS = "/api/admin/projects/default/features"
STRATEGIES = "/ui/flags/paid/environments/development/strategies"


def test_a_field_is_created_edited_and_its_deletion_refused_while_a_constraint_uses_it(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/context")
    expect(page.get_by_role("link", name="remoteAddress")).to_be_visible()
    # Built-ins can be edited, never deleted: no button offers it.
    expect(page.get_by_role("button", name="Delete context field userId")).to_have_count(0)
    page.get_by_role("link", name="New context field").click()
    page.get_by_label("Name (as SDKs send it").fill("plan")
    page.get_by_label("Description", exact=True).fill("billing plan")
    page.get_by_label("Offer for stickiness").check()
    page.locator("[name=legalValues-0-value]").fill("free")
    page.get_by_role("button", name="Add a legal value row").click()
    page.locator("[name=legalValues-1-value]").fill("pro")
    page.locator("[name=legalValues-1-description]").fill("paying")
    page.get_by_role("button", name="Save context field").click()
    expect(page.get_by_text("Context field “plan” saved.")).to_be_visible()
    stored = server.api("GET", "/api/admin/context/plan")
    assert stored["legalValues"] == [
        {"value": "free", "description": None},
        {"value": "pro", "description": "paying"},
    ]
    assert stored["stickiness"] is True

    page.get_by_role("link", name="plan").click()
    page.get_by_label("Description", exact=True).fill("tier")
    page.get_by_role("button", name="Save context field").click()
    expect(page.get_by_text("Context field “plan” saved.")).to_be_visible()
    assert server.api("GET", "/api/admin/context/plan")["description"] == "tier"

    server.api("POST", FLAGS, {"name": "paid"})
    server.api(
        "POST",
        f"{FLAGS}/paid/environments/development/strategies",
        {
            "name": "default",
            "constraints": [{"contextName": "plan", "operator": "IN", "values": ["pro"]}],
        },
    )
    page.get_by_role("button", name="Delete context field plan").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Not deleted")
    expect(alert).to_contain_text('flag "paid" in environment "development"')
    shot(page, "context-fields")
    assert server.api("GET", "/api/admin/context/plan")["name"] == "plan"


def test_a_refused_field_comes_back_as_typed(signed_in: Page, server: Server) -> None:
    page = signed_in
    page.goto(server.url + "/ui/context/new")
    page.get_by_label("Name (as SDKs send it").fill("plan")
    page.get_by_label("Description", exact=True).fill("typed")
    page.locator("[name=legalValues-0-value]").fill("v" * 101)
    page.locator("[name=legalValues-0-description]").fill("too long a value")
    page.get_by_role("button", name="Save context field").click()
    expect(page.get_by_role("alert")).to_contain_text("Not saved")
    value = page.locator("[name=legalValues-0-value]")
    expect(value).to_have_value("v" * 101)
    expect(value).to_have_attribute("aria-invalid", "true")
    expect(page.locator("[name=legalValues-0-description]")).to_have_value("too long a value")
    expect(page.get_by_label("Description", exact=True)).to_have_value("typed")
    assert "plan" not in [f["name"] for f in server.api("GET", "/api/admin/context")]


def test_the_constraint_editor_offers_legal_values_and_variants_the_stickiness_choices(
    signed_in: Page, server: Server, shot: Callable[[Page, str], None]
) -> None:
    server.api(
        "POST",
        "/api/admin/context",
        {"name": "plan", "legalValues": [{"value": "free"}, {"value": "pro"}, {"value": "gold"}]},
    )
    server.api("POST", FLAGS, {"name": "paid"})
    page = signed_in
    page.goto(server.url + f"{STRATEGIES}/new")
    # Stickiness suggests Unleash's keywords and the fields offered for stickiness.
    suggested = page.locator("#stickiness-choices option")
    expect(suggested).to_have_count(3)
    assert [o.get_attribute("value") for o in suggested.all()] == ["default", "random", "sessionId"]
    expect(page.get_by_label("Parameter stickiness")).to_have_attribute(
        "list", "stickiness-choices"
    )
    page.get_by_label("Parameter rollout").fill("100")
    row = page.locator(".row.constraint").first
    row.get_by_label("Context field").fill("plan")
    page.get_by_role("button", name="Add a constraint row").click()
    row = page.locator(".row.constraint").first
    values = row.get_by_label("Values (legal values of plan)")
    expect(values).to_be_visible()
    values.select_option(["pro", "gold"])
    values.scroll_into_view_if_needed()
    shot(page, "constraint-legal-values")
    other = page.locator(".row.constraint").nth(1)
    other.get_by_label("Context field").fill("country")
    other.get_by_label("Values").fill("NO\nSE")  # no legal values: free text
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_text("Strategy saved")).to_be_visible()
    (strategy,) = server.api("GET", f"{FLAGS}/paid/environments/development/strategies")
    by_field = {c["contextName"]: c["values"] for c in strategy["constraints"]}
    assert by_field == {"plan": ["pro", "gold"], "country": ["NO", "SE"]}

    # A stored value the field no longer allows stays listed and chosen: saving keeps it.
    server.api("PUT", "/api/admin/context/plan", {"legalValues": [{"value": "free"}]})
    page.goto(server.url + f"{STRATEGIES}/{strategy['id']}")
    values = page.locator(".row.constraint").first.get_by_label("Values (legal values of plan)")
    expect(values.locator("option:checked")).to_have_count(2)
    page.get_by_role("button", name="Save strategy").click()
    expect(page.get_by_text("Strategy saved")).to_be_visible()
    (again,) = server.api("GET", f"{FLAGS}/paid/environments/development/strategies")
    assert {c["contextName"]: c["values"] for c in again["constraints"]}["plan"] == ["pro", "gold"]

    # The flag's variants form suggests the same stickiness choices, the registry's
    # fields offered for stickiness among them, and a chosen one is saved.
    server.api("POST", "/api/admin/context", {"name": "tenant", "stickiness": True})
    page.goto(server.url + "/ui/flags/paid/environments/development/variants")
    suggested = page.locator("#stickiness-choices option")
    expect(suggested).to_have_count(4)
    choices = [o.get_attribute("value") for o in suggested.all()]
    assert choices == ["default", "random", "sessionId", "tenant"]
    stickiness = page.get_by_label("Variant stickiness").first
    expect(stickiness).to_have_attribute("list", "stickiness-choices")
    page.get_by_label("Variant name").first.fill("blue")
    stickiness.fill("tenant")
    page.get_by_role("button", name="Save variants").click()
    expect(page.get_by_role("status")).to_contain_text("saved")
    variants = server.api("GET", f"{FLAGS}/paid")["environments"][0]["variants"]
    assert [(v["name"], v["stickiness"]) for v in variants] == [("blue", "tenant")]
