"""The OpenID Connect settings (docs/http.md): read as typed, refused with a message that
names the variable, and the client secret never in a repr."""

from __future__ import annotations

import pytest

from flagcore.people import RootRole
from flagcore_http.config import ConfigError, ServerConfig

PROVIDER = {
    "FLAGCORE_OIDC_ISSUER": "https://sso.example.io/realms/main",
    "FLAGCORE_OIDC_CLIENT_ID": "flagcore",
    "FLAGCORE_OIDC_CLIENT_SECRET": "s3cret-value-never-shown",
}


def test_a_provider_is_read_with_its_rules() -> None:
    config = ServerConfig.from_env(
        {
            **PROVIDER,
            "FLAGCORE_OIDC_EMAIL_DOMAINS": "Example.io, example.org",
            "FLAGCORE_OIDC_GROUP_CLAIM": "groups",
            "FLAGCORE_OIDC_GROUP_ROLES": "flag-admins=Admin,dev team=editor",
            "FLAGCORE_OIDC_DEFAULT_ROOT_ROLE": "Editor",
            "FLAGCORE_PASSWORD_SIGN_IN": "off",
        }
    )
    assert config.oidc_issuer == "https://sso.example.io/realms/main"
    assert config.oidc_email_domains == ("example.io", "example.org")
    assert config.oidc_group_roles == (
        ("flag-admins", RootRole.ADMIN),
        ("dev team", RootRole.EDITOR),
    )
    assert config.oidc_default_root_role is RootRole.EDITOR
    assert config.password_sign_in is False
    assert "s3cret" not in repr(config)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"FLAGCORE_OIDC_ISSUER": "http://sso.example.io"}, "FLAGCORE_OIDC_ISSUER"),
        ({"FLAGCORE_OIDC_ISSUER": "sso.example.io"}, "FLAGCORE_OIDC_ISSUER"),
        ({"FLAGCORE_OIDC_CLIENT_ID": ""}, "FLAGCORE_OIDC_CLIENT_ID"),
        ({"FLAGCORE_OIDC_CLIENT_SECRET": ""}, "FLAGCORE_OIDC_CLIENT_SECRET"),
        ({"FLAGCORE_OIDC_DEFAULT_ROOT_ROLE": "Owner"}, "Admin, Editor or Viewer"),
        ({"FLAGCORE_OIDC_EMAIL_DOMAINS": "example.io,@bad"}, "not a domain"),
        ({"FLAGCORE_OIDC_GROUP_ROLES": "admins=Admin"}, "FLAGCORE_OIDC_GROUP_CLAIM"),
        (
            {"FLAGCORE_OIDC_GROUP_CLAIM": "groups", "FLAGCORE_OIDC_GROUP_ROLES": "admins"},
            "group=Role",
        ),
        ({"FLAGCORE_OIDC_SCOPES": "email profile"}, "including openid"),
        ({"FLAGCORE_OIDC_PROVIDER_NAME": " "}, "FLAGCORE_OIDC_PROVIDER_NAME"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_naming_it(
    settings: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named) as refused:
        ServerConfig.from_env({**PROVIDER, **settings})
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    "issuer",
    ["http://127.0.0.1:8080/x", "http://127.0.0.1", "http://localhost:9000", "http://[::1]"],
)
def test_an_http_issuer_is_allowed_on_this_machine_only(issuer: str) -> None:
    assert ServerConfig.from_env({**PROVIDER, "FLAGCORE_OIDC_ISSUER": issuer}).oidc_issuer == issuer


@pytest.mark.parametrize(
    "issuer", ["http://127.0.0.1.example.com", "http://localhost@evil.example", "http://[::1"]
)
def test_an_http_issuer_elsewhere_is_refused(issuer: str) -> None:
    with pytest.raises(ConfigError, match="FLAGCORE_OIDC_ISSUER"):
        ServerConfig.from_env({**PROVIDER, "FLAGCORE_OIDC_ISSUER": issuer})
