"""The queries of `flagcore_sql.SqlTransaction`, one module per part of `flagcore.ports`."""
