"""flagcore's store on PostgreSQL (psycopg 3), for several nodes over one database.

Install with the ``postgres`` extra (the ``server`` extra includes it).
"""

from flagcore_store_postgres.store import PostgresSettings, PostgresStore, is_postgres_url

__all__ = ["PostgresSettings", "PostgresStore", "is_postgres_url"]
