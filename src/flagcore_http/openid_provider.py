"""The OpenID provider a person signs in with: discovery, the authorization request
(code flow with PKCE, state and nonce) and the ID token's verification.

authlib builds the requests (PKCE's S256 challenge, the authorization and token request
parameters); joserfc, authlib's JOSE successor, verifies the ID token: its signature with
a key of the provider's JWKS (asymmetric algorithms only: never ``none``, never a secret
shared with the client), then ``iss``, ``aud`` (and ``azp`` when there are several
audiences), ``exp``, ``iat`` and the ``nonce`` this browser's flow was started with.

The provider's metadata and keys are fetched on first use and kept an hour; a token
signed with a key not yet known fetches the keys once more (the provider rotated them).
Answers are read up to `MAX_PROVIDER_BODY_BYTES`; each call waits at most
`PROVIDER_TIMEOUT_SECONDS`. The client secret is sent only to the token endpoint and is
never logged; nothing of a token, code or claim is logged either.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.parse
from typing import Any

import aiohttp
import attrs
from aiohttp import web
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from flagcore.service import ProviderIdentity, ProviderRules
from flagcore_http.bodies import read_up_to
from flagcore_http.config import ServerConfig

__all__ = [
    "AFTER_LOGOUT_PATH",
    "CALLBACK_PATH",
    "FLOW_SECONDS",
    "MAX_PROVIDER_BODY_BYTES",
    "OPENID_PROVIDER",
    "PROVIDER_TIMEOUT_SECONDS",
    "OpenIdProvider",
    "PendingSignIn",
    "ProviderRefused",
]

CALLBACK_PATH = "/ui/sign-in/oidc/callback"
AFTER_LOGOUT_PATH = "/ui/sign-in"
FLOW_SECONDS = 600
"""How long a person has at the provider before the sign-in must start again."""
PROVIDER_TIMEOUT_SECONDS = 10.0
MAX_PROVIDER_BODY_BYTES = 1_000_000
METADATA_SECONDS = 3600.0
CLOCK_LEEWAY_SECONDS = 60
_SIGNING_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


def _form_encoded(text: str) -> str:
    return urllib.parse.quote_plus(text, safe="")


def _optional_url(meta: dict[str, Any], key: str) -> str | None:
    """An endpoint the discovery document may name: an http(s) URL, else none."""
    value = meta.get(key)
    if isinstance(value, str) and value.startswith(("https://", "http://")):
        return value
    return None


class ProviderRefused(Exception):
    """The sign-in cannot go on; ``message`` says why, in words the person can act on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@attrs.frozen(repr=False)
class PendingSignIn:
    """What the browser's flow cookie carries between leaving for the provider and coming
    back: the state to compare, the nonce the ID token must carry, PKCE's verifier, where
    to go after, and when it stops being accepted."""

    state: str
    nonce: str
    verifier: str
    next: str
    expires_at: int

    def to_text(self) -> str:
        return json.dumps(attrs.asdict(self), separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> PendingSignIn | None:
        try:
            fields = json.loads(text)
            pending = cls(**fields)
        except (ValueError, TypeError):
            return None
        if not all(isinstance(v, str) for v in attrs.astuple(pending)[:4]):
            return None
        if not isinstance(pending.expires_at, int) or pending.expires_at <= time.time():
            return None
        return pending


@attrs.frozen
class _Discovered:
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: tuple[str, ...]
    post_secret: bool  # the token endpoint takes client_secret_post only
    fetched_at: float
    userinfo_endpoint: str | None = None
    end_session_endpoint: str | None = None


class OpenIdProvider:
    """One configured provider; one per application, its HTTP client closed with it."""

    def __init__(self, config: ServerConfig) -> None:
        assert config.oidc_issuer, "checked by ServerConfig.from_env"
        assert config.oidc_client_id, "checked by ServerConfig.from_env"
        assert config.oidc_client_secret, "checked by ServerConfig.from_env"
        self.issuer = config.oidc_issuer
        self.name = config.oidc_provider_name
        self.rules = ProviderRules(
            default_role=config.oidc_default_root_role,
            email_domains=config.oidc_email_domains,
            group_roles=config.oidc_group_roles,
            sync_groups=config.oidc_group_claim is not None,
        )
        self._client_id = config.oidc_client_id
        self._client_secret = config.oidc_client_secret
        self._scopes = config.oidc_scopes
        self._group_claim = config.oidc_group_claim
        self._redirect_base = config.oidc_redirect_base_url
        self._local_issuer = self.issuer.startswith("http://")
        self._discovered: _Discovered | None = None
        self._keys: KeySet | None = None
        self._lock = asyncio.Lock()
        self._http: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"OpenIdProvider(issuer={self.issuer!r})"

    def redirect_uri(self, origin: str) -> str:
        return (self._redirect_base or origin).rstrip("/") + CALLBACK_PATH

    async def start(self, redirect_uri: str, next_page: str) -> tuple[str, PendingSignIn]:
        """The provider's authorization URL to send the browser to, and what to keep."""
        discovered = await self._discovery()
        pending = PendingSignIn(
            state=generate_token(43),
            nonce=generate_token(43),
            verifier=generate_token(64),
            next=next_page,
            expires_at=int(time.time() + FLOW_SECONDS),
        )
        url = prepare_grant_uri(
            discovered.authorization_endpoint,
            self._client_id,
            "code",
            redirect_uri=redirect_uri,
            scope=self._scopes,
            state=pending.state,
            nonce=pending.nonce,
            code_challenge=create_s256_code_challenge(pending.verifier),
            code_challenge_method="S256",
        )
        return url, pending

    async def finish(
        self, code: str, pending: PendingSignIn, redirect_uri: str
    ) -> ProviderIdentity:
        """Trade the code for tokens and verify the ID token: who signed in."""
        discovered = await self._discovery()
        body = prepare_token_request(
            "authorization_code",
            code=code,
            redirect_uri=redirect_uri,
            code_verifier=pending.verifier,
        )
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        if discovered.post_secret:
            body += "&" + urllib.parse.urlencode(
                {"client_id": self._client_id, "client_secret": self._client_secret}
            )
        else:  # client_secret_basic: each part form-encoded first (RFC 6749, 2.3.1)
            pair = f"{_form_encoded(self._client_id)}:{_form_encoded(self._client_secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        status, answer = await self._call("POST", discovered.token_endpoint, body, headers)
        if status != 200 or not isinstance(answer.get("id_token"), str):
            reason = answer.get("error") if isinstance(answer.get("error"), str) else status
            raise ProviderRefused(
                f"The provider did not accept this sign-in ({str(reason)[:80]}); try again."
            )
        claims = await self._verified_claims(answer["id_token"], pending.nonce, discovered)
        access_token = answer.get("access_token")
        if self._wants_userinfo(claims) and isinstance(access_token, str):
            claims = await self._with_userinfo(claims, access_token, discovered)
        return attrs.evolve(self._identity(claims), id_token=answer["id_token"])

    def after_logout_uri(self, origin: str) -> str:
        """Where the provider sends the browser back after signing out there: this
        server's sign-in page (to register at the provider as a post-logout redirect URI)."""
        return (self._redirect_base or origin).rstrip("/") + AFTER_LOGOUT_PATH

    async def logout_url(self, id_token: str, after: str) -> str | None:
        """Where to send the browser to sign out at the provider too (OpenID Connect
        RP-Initiated Logout 1.0): its ``end_session_endpoint`` with the session's ID token
        as ``id_token_hint``, this client's id, and ``after`` (this server's sign-in page,
        registered at the provider as a post-logout redirect URI) to come back to. None
        when the provider offers no such endpoint or cannot be reached: the person is
        signed out here either way."""
        try:
            discovered = await self._discovery()
        except ProviderRefused:
            return None
        endpoint = discovered.end_session_endpoint
        # The ID token rides in the address: never over plain HTTP to anything but a
        # provider on this machine (the only http:// issuers allowed).
        if endpoint is None or (endpoint.startswith("http://") and not self._local_issuer):
            return None
        query = urllib.parse.urlencode(
            {
                "id_token_hint": id_token,
                "client_id": self._client_id,
                "post_logout_redirect_uri": after,
            }
        )
        separator = "&" if "?" in endpoint else "?"
        return endpoint + separator + query

    def _wants_userinfo(self, claims: dict[str, Any]) -> bool:
        """Providers that follow the letter of OpenID Connect Core 5.4 (Okta, npm's
        oidc-provider) put the scopes' claims in the userinfo answer, not the ID token,
        when an access token is issued too."""
        return "email" not in claims or (
            self._group_claim is not None and self._group_claim not in claims
        )

    async def _with_userinfo(
        self, claims: dict[str, Any], access_token: str, discovered: _Discovered
    ) -> dict[str, Any]:
        if discovered.userinfo_endpoint is None:
            return claims
        headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
        status, info = await self._call("GET", discovered.userinfo_endpoint, None, headers)
        # Core 5.3.2: the userinfo answer is about the ID token's subject, or it is not used.
        if status != 200 or info.get("sub") != claims["sub"]:
            raise ProviderRefused("The provider's account details could not be read; try again.")
        return {**info, **claims}  # what the verified ID token says wins

    async def _verified_claims(
        self, id_token: str, nonce: str, discovered: _Discovered
    ) -> dict[str, Any]:
        for refresh in (False, True):
            keys = await self._key_set(discovered, refresh=refresh)
            try:
                token = jwt.decode(id_token, keys, algorithms=list(discovered.algorithms))
                break
            except (JoseError, ValueError, KeyError, TypeError):  # malformed or unknown key
                if refresh:
                    raise ProviderRefused(
                        "The provider's answer was not signed with its keys; try again."
                    ) from None
        claims = token.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=CLOCK_LEEWAY_SECONDS,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self._client_id},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(claims)
        except JoseError as error:
            claim = getattr(error, "claim", None) or error.error
            raise ProviderRefused(
                f"The provider's ID token did not pass its checks ({claim}); try again."
            ) from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self._client_id:
            raise ProviderRefused("The provider's ID token was issued to another client.")
        return claims

    def _identity(self, claims: dict[str, Any]) -> ProviderIdentity:
        email = claims.get("email")
        name = claims.get("name") or claims.get("preferred_username")
        groups: tuple[str, ...] = ()
        if self._group_claim:
            raw = claims.get(self._group_claim)
            if isinstance(raw, str):
                groups = (raw,)
            elif isinstance(raw, list):
                groups = tuple(g for g in raw if isinstance(g, str))
        return ProviderIdentity(
            issuer=self.issuer,
            subject=str(claims["sub"]),
            email=email if isinstance(email, str) else None,
            email_verified=claims.get("email_verified") is True,
            name=name if isinstance(name, str) else None,
            groups=groups,
        )

    async def _discovery(self) -> _Discovered:
        async with self._lock:
            known = self._discovered
            if known is not None and time.monotonic() - known.fetched_at < METADATA_SECONDS:
                return known
            url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            status, meta = await self._call("GET", url)
            needed = ("authorization_endpoint", "token_endpoint", "jwks_uri")
            if status != 200 or not all(isinstance(meta.get(k), str) for k in needed):
                raise ProviderRefused("The sign-in provider cannot be reached; try again later.")
            if meta.get("issuer") != self.issuer:  # OpenID Connect Discovery 1.0, 4.3
                raise ProviderRefused("The sign-in provider names another issuer; ask an admin.")
            offered = meta.get("id_token_signing_alg_values_supported") or ["RS256"]
            methods = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
            self._discovered = _Discovered(
                meta["authorization_endpoint"],
                meta["token_endpoint"],
                meta["jwks_uri"],
                tuple(a for a in _SIGNING_ALGORITHMS if a in offered),
                "client_secret_basic" not in methods and "client_secret_post" in methods,
                time.monotonic(),
                _optional_url(meta, "userinfo_endpoint"),
                _optional_url(meta, "end_session_endpoint"),
            )
            self._keys = None
            return self._discovered

    async def _key_set(self, discovered: _Discovered, *, refresh: bool) -> KeySet:
        if self._keys is None or refresh:
            _status, answer = await self._call("GET", discovered.jwks_uri)
            try:
                self._keys = KeySet.import_key_set(answer)  # type: ignore[arg-type]
            except (JoseError, ValueError, KeyError, TypeError):
                raise ProviderRefused(
                    "The sign-in provider's keys cannot be read; try again later."
                ) from None
        return self._keys

    async def _call(
        self, method: str, url: str, body: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        if self._http is None:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=PROVIDER_TIMEOUT_SECONDS)
            )
        try:
            async with self._http.request(
                method, url, data=body, headers=headers, allow_redirects=False
            ) as response:
                raw = await read_up_to(response.content, MAX_PROVIDER_BODY_BYTES)
                status = response.status
        except (aiohttp.ClientError, TimeoutError):
            raise ProviderRefused(
                "The sign-in provider cannot be reached; try again later."
            ) from None
        if len(raw) > MAX_PROVIDER_BODY_BYTES:
            raise ProviderRefused("The sign-in provider answered too much; ask an admin.")
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {}
        return status, answer if isinstance(answer, dict) else {}

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()


# Set by the UI's setup when an issuer is configured.
OPENID_PROVIDER = web.AppKey("openid_provider", OpenIdProvider)
