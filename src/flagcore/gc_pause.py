"""Pausing the cyclic garbage collector around bulk allocation.

Reading or compiling thousands of flags allocates hundreds of thousands of small objects,
none of them garbage; each allocation burst triggers full collections that rescan them
all (80% of compile time at 10,000 flags). Reference counting still frees everything.

A pause pays only around bulk work (measured in docs/engine.md, "Garbage collection"):
`Engine.compile_all`, a client snapshot of a whole environment, writing a client payload.
Around one flag compiled on first use it saves nothing (the collections it defers run
right after) and was measured slower, so it is not used there. The collector is one per
process: while one thread pauses it, no thread's cyclic garbage is collected, which is
why every user of a pause (`Engine`, `Service`, the server) can turn it off
(``pause_gc=False``, ``FLAGCORE_GC_PAUSE=off``).

After a bulk build, the first collection would still scan everything built, and the
collection after it again, before the objects settle in the oldest generation, where
long-lived objects belong: 0.2-0.3 s for a 20,000-flag engine. ``promote=True`` moves
them there at once (`gc.freeze` then `gc.unfreeze`, two list splices). Whatever else was
young in the process moves with them, so a reference cycle the application dropped just
before is freed at the next full collection rather than the next young one. Never done
while the application keeps objects frozen itself (a pre-forking server, say), as
unfreezing would thaw them too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused(*, promote: bool = False, enabled: bool = True) -> Iterator[None]:
    """Pause the collector for the block (``enabled=False``: leave it alone); see above."""
    if not enabled:
        yield
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if promote and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
