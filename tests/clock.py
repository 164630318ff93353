"""A clock the test moves by hand, given to a `Service` (``Service(store, clock=...)``)."""

from __future__ import annotations

import datetime as dt

__all__ = ["HandClock"]


class HandClock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)
