"""Log records formatted and written on a thread of their own, in batches.

The event loop that answers SDK polls must not format a line nor wait on a ``write`` to
stderr (a pipe to a slow log collector blocks it). `BatchWriter` is a logging handler
whose ``handle`` only appends the record to a deque (thread-safe, no lock taken); its
thread wakes when a record finds the queue empty (or is a warning or worse, or every
`BATCH_SECONDS`), formats what has gathered by then, and writes it in chunks of whole lines
of at most `CHUNK_CHARS` characters: the records that come while a batch is written make
the next batch, so a quiet server's lines appear at once and a busy one's in few writes, so
lines of several worker processes sharing one pipe never tear into each other (a pipe
write of up to 4 KiB is atomic). Records are formatted off the loop, so the formatter
(escaping and redaction, `flagcore_http.logs`) costs the answers nothing but CPU.

The queue is bounded (`MAX_PENDING` records): a log reader that stops reading (a stalled
collector on the other end of the pipe) blocks the writer's thread, never the answers, and
past the bound records are dropped and counted; the next write says how many.

A worker process forked from a parent with a writer gets a fresh thread and an empty
queue (the parent's queued records are the parent's to write); the parent writes what it
holds before it forks. ``flush`` writes everything queued, in the calling thread.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import weakref
from typing import TextIO

__all__ = ["BATCH_SECONDS", "CHUNK_CHARS", "MAX_PENDING", "BatchWriter"]

BATCH_SECONDS = 0.1
CHUNK_CHARS = 4000  # under PIPE_BUF (4096 bytes) for ASCII lines
MAX_PENDING = 100_000  # records queued at most (tens of MB), a few seconds at any rate


class BatchWriter(logging.Handler):
    """Queues records; a thread formats and writes them to ``stream`` in batches."""

    def __init__(
        self, stream: TextIO, formatter: logging.Formatter, *, max_pending: int = MAX_PENDING
    ) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.stream = stream
        self.max_pending = max_pending
        self.dropped = 0
        self._pending: collections.deque[logging.LogRecord] = collections.deque()
        self._writing = threading.Lock()  # one writer at a time: lines keep their order
        self._wake = threading.Event()
        self._closed = False
        self._thread = self._start_thread()
        reference = weakref.ref(self)

        def before_fork() -> None:  # the lock is held across the fork: no write half done
            writer = reference()
            if writer is not None:
                writer._writing.acquire()
                writer._write_pending()

        def in_parent() -> None:
            writer = reference()
            if writer is not None:
                writer._writing.release()

        def in_child() -> None:
            writer = reference()
            if writer is not None:
                writer._restart_after_fork()

        os.register_at_fork(before=before_fork, after_in_parent=in_parent, after_in_child=in_child)

    def _start_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name="flagcore-log-writer", daemon=True)
        thread.start()
        return thread

    def _restart_after_fork(self) -> None:
        self._pending = collections.deque()
        self._writing = threading.Lock()
        self._wake = threading.Event()
        if not self._closed:
            self._thread = self._start_thread()

    def handle(self, record: logging.LogRecord) -> bool:
        """Queue ``record`` if the filters pass it: no lock, no formatting, no I/O here."""
        if not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        pending = self._pending
        if len(pending) >= self.max_pending:
            self.dropped += 1
            return
        pending.append(record)
        if len(pending) == 1 or record.levelno >= logging.WARNING:
            self._wake.set()  # the first of a batch: what comes while it is written waits

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(BATCH_SECONDS)
            self._wake.clear()
            try:
                self.flush()
            except Exception:  # the writer must outlive any one bad batch
                self.handleError(logging.makeLogRecord({"msg": "log writer"}))

    def flush(self) -> None:
        """Format and write every queued record (blocks until they are written)."""
        with self._writing:
            self._write_pending()

    def _write_pending(self) -> None:
        pending = self._pending
        chunk: list[str] = []
        size = 0
        while pending:
            record = pending.popleft()
            try:
                line = self.format(record) + "\n"
            except Exception:  # a record that cannot be formatted; the others go on
                self.handleError(record)
                continue
            if chunk and size + len(line) > CHUNK_CHARS:
                self._write("".join(chunk))
                chunk, size = [], 0
            chunk.append(line)
            size += len(line)
        if self.dropped:  # said after the records kept before them
            dropped, self.dropped = self.dropped, 0
            chunk.append(self.format(_dropped_record(dropped, self.max_pending)) + "\n")
        if chunk:
            self._write("".join(chunk))

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: nowhere left to say so
            pass

    def close(self) -> None:
        """Stop the thread after it has written everything queued."""
        self._closed = True
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.flush()
        super().close()


def _dropped_record(count: int, bound: int) -> logging.LogRecord:
    return logging.LogRecord(
        "flagcore_http",
        logging.WARNING,
        "",
        0,
        "%d log records dropped: more than %d were waiting to be written (is the log's "
        "reader keeping up?)",
        (count, bound),
        None,
    )
