"""Fixtures every service test module may ask for by name."""

from tests.service.store_factories import every_store

__all__ = ["every_store"]
