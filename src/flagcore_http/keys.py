"""Typed application keys: what handlers find on the app."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from flagcore.entities import ApiToken
from flagcore.people import PersonalToken, User
from flagcore.principals import Principal
from flagcore.service import Service
from flagcore_http.client_cache import ClientCache
from flagcore_http.config import ServerConfig

__all__ = [
    "CACHE",
    "CONFIG",
    "PERSONAL_TOKEN",
    "PRINCIPAL",
    "REVISION",
    "SERVICE",
    "TOKEN",
    "USER",
    "WORKER",
]

SERVICE = web.AppKey("service", Service)
CONFIG = web.AppKey("config", ServerConfig)
# The store is synchronous: every call to the service runs on this one worker thread.
WORKER = web.AppKey("worker", ThreadPoolExecutor)
CACHE = web.AppKey("client_cache", ClientCache)

# Per request: the authenticated token, and the store revision read while authenticating.
TOKEN = web.RequestKey("token", ApiToken)
# Per request: the person signed in with a session cookie (instead of a token).
USER = web.RequestKey("user", User)
# Per request: the personal access token (or service account token) the USER acts through.
PERSONAL_TOKEN = web.RequestKey("personal_token", PersonalToken)
# Per request: the signed-in user with their project roles, once read from the store.
PRINCIPAL = web.RequestKey("principal", Principal)
REVISION = web.RequestKey("revision", int)
