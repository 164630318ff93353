"""`WalIndexWatch`: whether any connection, in any process, committed to a WAL database.

A server run with several worker processes (``flagcore serve --workers N``) asks the store
for its revision on every SDK request, and a write made through one worker must show on
the very next request to another. Reading ``max(id)`` from the event table on each
request would cost a statement per request; instead this reads the header of SQLite's
WAL index (the ``-shm`` file every connection to a WAL database maps into memory).

SQLite rewrites that 48-byte header at each commit, before the committing connection
releases its write lock (``iChange`` and ``mxFrame`` move; a WAL restart changes its
salts), so once a writer has seen its commit return, every process that maps the file
sees a different header. Comparing 48 bytes of shared memory is a few hundred
nanoseconds; the store reads the revision from the table only when they changed. A torn
read (a header compared while a commit rewrites it) can only look changed, which costs
one extra read, never a stale answer.

The header layout is SQLite's documented WAL-index format (https://sqlite.org/walformat.html,
"2.1. The WAL-Index Header"), stable since WAL appeared in 3.7.0. When the file cannot be
mapped (no ``-shm``: not WAL, an in-memory database, a VFS that keeps the index in heap
memory), `WalIndexWatch.open` returns None and the store falls back to a rate-limited read.

One trap shapes this module: POSIX record locks belong to a process and a file, not to a
descriptor, so closing *any* descriptor of the ``-shm`` file drops every lock this process
holds on it, SQLite's included. Without its shared lock on the index, another process that
opens the database believes it is the first and truncates the index (a read of the mapping
then dies with SIGBUS), and a checkpoint may reset the WAL under a reader. So a descriptor
opened here is closed only when the last store of this process that watches the file has
closed its own connections (a reference count per file), and a file already watched is never
opened a second time.
"""

from __future__ import annotations

import mmap
import os
import threading

__all__ = ["WalIndexWatch"]

# The first copy of the WAL-index header; SQLite writes it after the second, so once a
# commit is complete this copy holds it.
HEADER_BYTES = 48

_Key = tuple[int, int]  # (device, inode) of a -shm file


class _Shared:
    """One mapping of one -shm file, shared by the stores of this process that watch it."""

    def __init__(self, descriptors: list[int], view: mmap.mmap) -> None:
        self.descriptors = descriptors
        self.view = view
        self.users = 0


_registry_lock = threading.Lock()
_registry: dict[_Key, _Shared] = {}


class WalIndexWatch:
    """A read-only view of the WAL-index header of one database file."""

    def __init__(self, key: _Key, shared: _Shared) -> None:
        self._key = key
        self._shared: _Shared | None = shared
        self._view = shared.view

    @classmethod
    def open(cls, database: str) -> WalIndexWatch | None:
        """The watch of ``database``'s ``-shm`` file, or None when there is none to map.

        Call it once the store's own connection has read the database in WAL mode: that
        read creates the index, and the connection's shared lock keeps the file from being
        truncated or removed for as long as the store is open.
        """
        path = database + "-shm"
        with _registry_lock:
            try:
                status = os.stat(path)  # by name: opening a descriptor here could not be undone
            except OSError:
                return None
            key = (status.st_dev, status.st_ino)
            shared = _registry.get(key)
            if shared is None:
                shared = _map(path)
                if shared is None:
                    return None
                key = _key_of(shared.descriptors[0])
                if key in _registry:  # replaced between stat and open: keep both descriptors
                    _registry[key].descriptors.extend(shared.descriptors)
                    shared.view.close()
                    shared = _registry[key]
                else:
                    _registry[key] = shared
            shared.users += 1
            return cls(key, shared)

    def header(self) -> bytes:
        """The header as it is now: it differs from an earlier one once anyone committed."""
        return self._view[:HEADER_BYTES]

    def close(self) -> None:
        """Let go of the mapping; call it after the store's connections are closed."""
        with _registry_lock:
            shared, self._shared = self._shared, None
            if shared is None:
                return
            shared.users -= 1
            if shared.users > 0:
                return
            del _registry[self._key]
            shared.view.close()
            for descriptor in shared.descriptors:
                os.close(descriptor)


def _map(path: str) -> _Shared | None:
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        if os.fstat(descriptor).st_size < HEADER_BYTES:
            view = None
        else:
            view = mmap.mmap(descriptor, HEADER_BYTES, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        view = None
    if view is None:
        # Kept open, never closed: closing it would drop SQLite's locks (see above). One
        # descriptor, once, for a file SQLite could not give an index to map.
        _unmappable.append(descriptor)
        return None
    return _Shared([descriptor], view)


def _key_of(descriptor: int) -> _Key:
    status = os.fstat(descriptor)
    return (status.st_dev, status.st_ino)


# Descriptors of -shm files that could not be mapped; see `_map`.
_unmappable: list[int] = []
