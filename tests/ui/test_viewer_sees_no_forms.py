"""A Viewer sees every page and none of the forms to change what is on it (issue 29):
a form, or a link that only leads to one, is drawn only for a person the service would
let send it (tests/http/test_role_matrix.py), in the project and environment it acts in."""

from __future__ import annotations

import re

from aiohttp import web
from playwright.sync_api import Page, expect

from flagcore_http.ui.views import ALL_ROUTES
from tests.ui.conftest import Server
from tests.ui.test_accessibility import _seed
from tests.ui.test_roles_in_forms import _password_sign_in, _person

FEATURES = "/api/admin/projects/default/features"


def test_a_viewer_sees_environments_and_flags_without_a_form_to_change_them(
    page: Page, server: Server
) -> None:
    server.api("POST", FEATURES, {"name": "parent"})
    server.api("POST", FEATURES, {"name": "child"})
    server.api("PUT", f"{FEATURES}/child/dependencies", [{"feature": "parent"}])
    server.api("POST", f"{FEATURES}/child/environments/development/strategies", {"name": "default"})
    _person(server, "vi@x.io", 3)
    _password_sign_in(page, server, "vi@x.io")

    page.goto(server.url + "/ui/environments")
    expect(page.get_by_role("row", name="production")).to_be_visible()
    expect(page.locator("main form")).to_have_count(0)
    expect(page.get_by_role("link", name="Delete environment production")).to_have_count(0)
    expect(page.get_by_role("button", name="Rename environment")).to_have_count(0)
    page.goto(server.url + "/ui/environments/production/delete")
    expect(page.locator("main form")).to_have_count(0)

    page.goto(server.url + "/ui/flags/child")
    expect(page.locator(".dependencies")).to_contain_text("Needs parent on")
    expect(page.get_by_role("link", name="Edit flag")).to_have_count(0)
    expect(page.get_by_role("button", name="Add dependency")).to_have_count(0)
    expect(page.get_by_role("button", name="Remove dependency on parent")).to_have_count(0)
    expect(page.get_by_role("button", name="Copy strategies")).to_have_count(0)
    page.goto(server.url + "/ui/flags/child/edit")
    expect(page.get_by_text("You may read this flag but not change it")).to_be_visible()
    expect(page.locator("main form")).to_have_count(0)


# Pages whose forms a Viewer may send: the playground only reads, "My tokens" and their
# own page are the person's own, and signing in or setting a password comes before any role.
_FORMS_FOR_EVERYONE = (
    "/ui/playground",
    "/ui/my-tokens",
    "/ui/profile",
    "/ui/sign-in",
    "/ui/set-password",
)
_NOT_PAGES = ("/", "/ui/{unknown:.*}")  # the way in, and the error page for any other


_FORM_LINKS = "main a:is([href$='/new'], [href$='/edit'], [href*='/new?'], [href$='/delete'])"


def _ui_pages() -> list[str]:
    """Every GET route of the UI, as the router has it: a new page is in the journey."""
    return sorted(
        {
            route.path
            for table in ALL_ROUTES
            for route in table
            if isinstance(route, web.RouteDef)
            and route.method == "GET"
            and route.path.startswith("/ui/")
            and route.path not in _NOT_PAGES
            and not route.path.startswith(_FORMS_FOR_EVERYONE)
        }
    )


def _pattern(route: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(route)) + r"(\?.*)?")


def _posting_forms(page: Page) -> list[str]:
    """The actions of the POST forms drawn on the page, sign-out aside."""
    actions: list[str] = page.eval_on_selector_all(
        "form[method=post i]", "forms => forms.map(f => f.getAttribute('action'))"
    )
    return [action for action in actions if action != "/ui/sign-out"]


def test_a_viewer_sees_every_page_and_no_form_on_any_of_them(page: Page, server: Server) -> None:
    visited = _seed(server)
    routes = _ui_pages()
    unseeded = [r for r in routes if not any(_pattern(r).fullmatch(path) for path in visited)]
    assert unseeded == [], "seed data for these pages in tests/ui/test_accessibility.py"
    _person(server, "vi@x.io", 3)
    _password_sign_in(page, server, "vi@x.io")
    drawn: dict[str, list[str]] = {}
    for path in visited:
        if not any(_pattern(r).fullmatch(path) for r in routes):
            continue  # the error page, or one of the pages everybody may use
        response = page.goto(server.url + path)
        # People are the admin's to read, as in Unleash; a missing flag is the error page.
        assert response is not None, path
        assert response.status in (200, 403, 404), path
        # No dead buttons either: no link to a form the person could only be refused at.
        links = page.eval_on_selector_all(_FORM_LINKS, "links => links.map(a => a.href)")
        if forms := _posting_forms(page) + links:
            drawn[path] = forms
    assert drawn == {}, "\n".join(f"{p}: {sorted(set(f))}" for p, f in drawn.items())


def test_an_editor_still_sees_the_forms_of_the_flag_pages(page: Page, server: Server) -> None:
    _seed(server)
    _person(server, "ed@x.io", 2)
    _password_sign_in(page, server, "ed@x.io")
    for path in ("/ui/flags", "/ui/flags/labelled", "/ui/segments", "/ui/archive", "/ui/context"):
        page.goto(server.url + path)
        assert _posting_forms(page) != [], path
    page.goto(server.url + "/ui/flags")
    expect(page.get_by_role("link", name="New flag")).to_be_visible()
    page.goto(server.url + "/ui/flags/labelled")
    expect(page.get_by_role("button", name="Mark completed")).to_be_visible()
    expect(page.get_by_role("link", name="Add a strategy in development")).to_be_visible()
    expect(page.get_by_role("link", name="Edit flag")).to_be_visible()
    expect(page.get_by_role("button", name="Archive")).to_be_visible()


def test_a_member_of_one_project_sees_its_flag_forms_and_not_anothers(
    page: Page, server: Server
) -> None:
    server.api("POST", "/api/admin/projects", {"id": "mine", "name": "Mine"})
    server.api("POST", "/api/admin/projects", {"id": "theirs", "name": "Theirs"})
    server.api("POST", "/api/admin/projects/mine/features", {"name": "my-flag"})
    server.api("POST", "/api/admin/projects/theirs/features", {"name": "their-flag"})
    person = _person(server, "me@x.io", 3)
    member = 5  # Unleash's predefined project role
    server.api("POST", "/api/admin/projects/mine/access", {"roles": [member], "users": [person]})
    _password_sign_in(page, server, "me@x.io")
    page.goto(server.url + "/ui/flags/my-flag")
    assert _posting_forms(page) != []
    expect(page.get_by_role("switch", name="my-flag in development")).to_be_visible()
    page.goto(server.url + "/ui/flags/their-flag")
    assert _posting_forms(page) == []
    expect(page.get_by_role("heading", name="their-flag")).to_be_visible()


def test_a_role_held_in_one_environment_draws_the_switch_there_only(
    page: Page, server: Server
) -> None:
    server.api("POST", FEATURES, {"name": "dev-only"})
    role = {
        "name": "Dev toggler",
        "type": "custom",
        "permissions": [{"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "development"}],
    }
    made = server.api("POST", "/api/admin/roles", role)["id"]
    person = _person(server, "dev@x.io", 3)
    server.api("POST", "/api/admin/projects/default/access", {"roles": [made], "users": [person]})
    _password_sign_in(page, server, "dev@x.io")
    for path in ("/ui/flags", "/ui/flags/dev-only"):
        page.goto(server.url + path)
        expect(page.get_by_role("switch", name="dev-only in development")).to_be_visible()
        expect(page.get_by_role("switch", name="dev-only in production")).to_have_count(0)
    assert _posting_forms(page) == ["/ui/flags/dev-only/environments/development/switch"]
