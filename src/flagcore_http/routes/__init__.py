"""One module per API area; each exposes ``routes``, an aiohttp RouteTableDef, found and
served by `flagcore_http.route_modules` (no list to edit)."""
