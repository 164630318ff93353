"""The playground page: type a context, see every flag's answer, open a flag's explanation."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.ui.conftest import Server

FLAGS = "/api/admin/projects/default/features"
DEV = FLAGS + "/{name}/environments/development"


def _two_flags(server: Server) -> None:
    """``checkout``: staff (users 7 and 8) in the Nordics get variant ``blue``;
    ``banner``: a 100% rollout for whoever has ``checkout``."""
    segment = server.api(
        "POST",
        "/api/admin/segments",
        {
            "name": "nordics",
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO", "SE"]}],
        },
    )
    server.api("POST", FLAGS, {"name": "checkout"})
    server.api(
        "POST",
        DEV.format(name="checkout") + "/strategies",
        {
            "name": "userWithId",
            "title": "staff",
            "parameters": {"userIds": "7,8"},
            "segments": [segment["id"]],
            "variants": [
                {
                    "name": "blue",
                    "weight": 1000,
                    "weightType": "variable",
                    "stickiness": "default",
                    "payload": {"type": "string", "value": "b"},
                }
            ],
        },
    )
    server.api("POST", DEV.format(name="checkout") + "/on")
    server.api("POST", FLAGS, {"name": "banner"})
    server.api(
        "POST",
        DEV.format(name="banner") + "/strategies",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100", "stickiness": "default", "groupId": "banner"},
        },
    )
    server.api("POST", DEV.format(name="banner") + "/on")
    server.api("PUT", FLAGS + "/banner/dependencies", [{"feature": "checkout"}])


def _row(page: Page, flag: str) -> Locator:
    return page.locator("table.playground tbody tr").filter(
        has=page.get_by_role("rowheader", name=flag, exact=True)
    )


def _evaluate(page: Page, user: str, country: str) -> None:
    page.get_by_label("userId").fill(user)
    page.get_by_label("Property name").first.fill("country")
    page.get_by_label("Property value").first.fill(country)
    page.get_by_role("button", name="Evaluate").click()
    page.get_by_role("heading", name="Answers in development").wait_for()


def test_a_context_shows_every_flags_answer_and_the_explanation_of_the_decision(
    signed_in: Page, server: Server, shot: object
) -> None:
    _two_flags(server)
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Playground").click()
    expect(page.get_by_role("heading", name="Playground")).to_be_visible()
    page.get_by_label("Environment").select_option("development")
    _evaluate(page, "7", "NO")

    checkout = _row(page, "checkout")
    expect(checkout.locator("td").nth(0)).to_have_text("default")
    expect(checkout.locator("td").nth(1)).to_have_text("yes")
    expect(checkout.locator("td").nth(2)).to_contain_text("blue")
    expect(checkout.locator("td").nth(2)).to_contain_text("string: b")
    expect(_row(page, "banner").locator("td").nth(1)).to_have_text("yes")
    # The same answers as Unleash's playground API gives (it also wants an appName).
    context = {"appName": "ui", "userId": "7", "properties": {"country": "NO"}}
    api = server.api(
        "POST", "/api/admin/playground", {"environment": "development", "context": context}
    )
    answers = {f["name"]: (f["isEnabled"], f["variant"]["name"]) for f in api["features"]}
    assert answers == {"checkout": (True, "blue"), "banner": (True, "disabled")}
    expect(_row(page, "banner").locator("td").nth(2)).to_have_text("disabled")

    # The explanation opens from the keyboard, and says which rule decided and why.
    summary = checkout.get_by_text("Explain checkout")
    summary.focus()
    page.keyboard.press("Enter")
    tree = checkout.locator(".tree")
    expect(tree).to_be_visible()
    expect(tree).to_contain_text('1. "userWithId" ("staff") → matches ← decides')
    expect(tree).to_contain_text('segment 1 "nordics" → yes')
    expect(tree).to_contain_text('"country" IN ["NO", "SE"]: the context has "NO" → yes')
    expect(tree).to_contain_text('variants of strategy 1: "blue", payload')
    expect(tree).to_contain_text('("default" "7" → bucket')
    if callable(shot):
        page.locator("table.playground").evaluate("table => table.scrollIntoView()")
        shot(page, "playground")

    # The form keeps what was typed; another user gets the other answer.
    expect(page.get_by_label("Property value").first).to_have_value("NO")
    _evaluate(page, "9", "NO")
    checkout = _row(page, "checkout")
    expect(checkout.locator("td").nth(1)).to_have_text("no")
    expect(checkout.locator("td").nth(2)).to_contain_text("disabled")
    checkout.get_by_text("Explain checkout").click()
    tree = checkout.locator(".tree")
    expect(tree).to_contain_text('1. "userWithId" ("staff") → does not match')
    expect(tree).to_contain_text('"userWithId" ("staff") rule → no')
    expect(tree).to_contain_text('variant: "disabled" (the flag is off)')
    # banner needs checkout: its rollout would let user 9 in, its dependency does not.
    banner = _row(page, "banner")
    expect(banner.locator("td").nth(1)).to_have_text("no")
    banner.get_by_text("Explain banner").click()
    tree = banner.locator(".tree")
    expect(tree).to_contain_text("dependencies: not satisfied")
    expect(tree).to_contain_text('"checkout" must be enabled: it is disabled → no')
    expect(tree).to_contain_text('rollout 100% by "default", group "banner": "9" hashes to bucket')


def test_the_project_filter_shows_only_that_projects_flags(signed_in: Page, server: Server) -> None:
    server.api("POST", "/api/admin/projects", {"id": "shop", "name": "Shop"})
    server.api("POST", "/api/admin/projects/shop/features", {"name": "cart"})
    server.api("POST", FLAGS, {"name": "banner"})
    page = signed_in
    page.goto(server.url + "/ui/playground")
    page.get_by_label("Project").select_option("shop")
    page.get_by_role("button", name="Evaluate").click()
    expect(_row(page, "cart").locator("td").nth(0)).to_have_text("shop")
    expect(_row(page, "cart").locator("td").nth(1)).to_have_text("no")
    expect(_row(page, "banner")).to_have_count(0)


def test_bad_context_shows_the_form_again_with_the_message_next_to_the_field(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/playground")
    page.get_by_label("currentTime").fill("next tuesday")
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_role("alert")).to_contain_text("currentTime must be a date and time")
    expect(page.get_by_label("currentTime")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#currentTime-error-1")).to_have_text(
        "currentTime must be a date and time (RFC 3339)"
    )
    expect(page.get_by_label("currentTime")).to_have_value("next tuesday")

    page.get_by_label("currentTime").fill("")
    page.get_by_label("sessionId").fill("s" * 2_001)
    page.get_by_role("button", name="Evaluate").click()
    expect(page.locator("#sessionId-error-1")).to_have_text("must be at most 2000 characters")
    expect(page.get_by_label("sessionId")).to_have_attribute("aria-invalid", "true")

    # A property value too long is named at its row; a value without a name too.
    page.get_by_label("sessionId").fill("")
    page.get_by_role("button", name="Add a property row").click()
    names, values = page.get_by_label("Property name"), page.get_by_label("Property value")
    names.nth(0).fill("plan")
    values.nth(0).fill("p" * 2_001)
    values.nth(1).fill("orphan")
    page.get_by_role("button", name="Evaluate").click()
    expect(page.locator("#properties-1-error-1")).to_have_text("a property needs a name")
    expect(page.get_by_label("Property name").nth(1)).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Property name").nth(1).fill("country")
    page.get_by_role("button", name="Evaluate").click()
    expect(page.locator("#properties-0-error-1")).to_have_text("must be at most 2000 characters")
    expect(page.get_by_label("Property value").nth(0)).to_have_attribute("aria-invalid", "true")
    expect(page.locator("table.playground")).to_have_count(0)

    page.get_by_label("Property value").nth(0).fill("pro")
    page.get_by_label("Property name").nth(1).fill("plan")
    page.get_by_role("button", name="Evaluate").click()
    expect(page.locator("#properties-1-error-1")).to_have_text("'plan' is already property 1")


def test_unknown_environment_and_too_many_properties_are_refused_at_the_field(
    signed_in: Page, server: Server
) -> None:
    page = signed_in
    page.goto(server.url + "/ui/playground")
    # What a hand-made form could send: an environment the select does not offer.
    page.locator("#environment").evaluate(
        "select => { select.options[0].value = 'nowhere'; select.selectedIndex = 0; }"
    )
    page.get_by_role("button", name="Evaluate").click()
    expect(page.locator("#environment-error-1")).to_have_text('there is no environment "nowhere"')
    expect(page.get_by_label("Environment")).to_have_attribute("aria-invalid", "true")

    # 101 property rows, added the way a person would (the form grows one row a click)
    # would take long; the form's own fields are posted instead.
    page.goto(server.url + "/ui/playground")
    page.locator("form.playground-form").evaluate(
        """form => {
          for (let i = 1; i <= 101; i++) {
            for (const [part, value] of [['name', 'p' + i], ['value', 'v']]) {
              const input = document.createElement('input');
              input.type = 'hidden';
              input.name = `properties-${i}-${part}`;
              input.value = value;
              form.appendChild(input);
            }
          }
        }"""
    )
    page.get_by_role("button", name="Evaluate").click()
    expect(page.locator("#properties-error-1")).to_have_text("at most 100 properties (101 typed)")
    expect(page.get_by_label("Property name")).to_have_count(102)
