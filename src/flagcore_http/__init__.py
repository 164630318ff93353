"""flagcore's HTTP server (aiohttp): Unleash's API over a flagcore service.

Install with the ``http`` extra. The server arrives with the HTTP-server issue; this
package face exists so the distribution's layout is settled from the start.
"""

__all__: list[str] = []
