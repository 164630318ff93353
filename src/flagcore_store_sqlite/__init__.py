"""flagcore's durable embedded store on SQLite (sqlite-utils).

Install with the ``sqlite`` extra. The store arrives with the service-and-stores issue;
this package face exists so the distribution's layout is settled from the start.
"""

__all__: list[str] = []
