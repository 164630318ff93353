"""One module per API area; each exposes ``routes``, an aiohttp RouteTableDef."""
