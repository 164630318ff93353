"""The SQLite store and schema exactly as shipped before the shared SQL layer (issue #13).

Frozen copies of ``flagcore_store_sqlite/store.py`` and ``schema.py`` at that point (only
the schema import is redirected here): `tests/store/test_upgrade_from_v006.py` makes and
fills a database with them, then opens it with today's store. Never edit them.
"""
