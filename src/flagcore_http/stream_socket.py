"""What an SSE stream holds unsent for its client, bounded, and a client that stopped
reading noticed even when everything written still fits in the buffers.

A stream's writes normally finish at once: the kernel takes the bytes into the socket's
send buffer, which Linux grows to megabytes per socket. A client that never reads then
costs the server that buffer for as long as the stream stays open, and no write ever
waits, so a write timeout alone never fires. Three bounds together (docs/security.md):

- the socket's send buffer is fixed (``SO_SNDBUF``), so the kernel holds at most about
  twice that per stream;
- messages are written in slices of `SLICE_BYTES`, each waiting for the transport to
  drain below its mark (one slice), so the process holds at most two slices beyond the
  kernel's share;
- `DrainWatch` reads how many bytes are still unsent (the transport's buffer plus the
  kernel's queue, ``SIOCOUTQ`` on Linux) and declares the stream stalled when some are
  waiting and none has been acknowledged for the drain timeout.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import socket
import termios
from asyncio import BaseTransport, WriteTransport
from typing import Any

__all__ = ["SLICE_BYTES", "DrainWatch", "limit_send_buffer"]

# Each write hands the transport at most this much before waiting for it to drain.
SLICE_BYTES = 16 * 1024
# Bytes unsent in the kernel, Linux only (``SIOCOUTQ`` is ``TIOCOUTQ``); elsewhere only the
# transport's own buffer is seen and the fixed send buffer is the bound.
_OUTQ = getattr(termios, "TIOCOUTQ", None)


def _socket_of(transport: BaseTransport | None) -> Any:
    return None if transport is None else transport.get_extra_info("socket")


def limit_send_buffer(transport: BaseTransport | None, size: int) -> None:
    """Fix the socket's kernel send buffer at ``size`` bytes (0: leave the system's), and
    have the transport pause its writer past one slice (asyncio's own mark is 64 KiB,
    and aiohttp waits for a drain only every 64 KiB written: together about 100 KiB held
    in the process for a client that does not read, measured)."""
    sock = _socket_of(transport)
    if size and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
    if isinstance(transport, WriteTransport):
        transport.set_write_buffer_limits(high=SLICE_BYTES)


def _kernel_unsent(sock: Any) -> int:
    if _OUTQ is None or sock is None:
        return 0
    try:
        buffer = array.array("i", [0])
        fcntl.ioctl(sock.fileno(), _OUTQ, buffer)
    except (OSError, ValueError):  # closed meanwhile, or not a real socket
        return 0
    return int(buffer[0])


class DrainWatch:
    """Whether a stream's client still takes what is written to it.

    `wrote` counts the bytes handed to the transport; `stalled` compares what was handed
    over with what is still unsent: acknowledged bytes are their difference (the chunked
    framing aiohttp adds makes it an underestimate by a few bytes a message, which only
    ever delays progress, never invents it).
    """

    def __init__(self, transport: BaseTransport | None, timeout: float, now: float) -> None:
        self._transport = transport
        self._socket = _socket_of(transport)
        self._timeout = timeout
        self._written = 0
        self._acknowledged = 0
        self._progress_at = now

    def wrote(self, count: int) -> None:
        self._written += count

    def unsent(self) -> int:
        """Bytes written and not yet acknowledged by the client: the transport's buffer
        and the kernel's send queue."""
        transport = self._transport
        held = transport.get_write_buffer_size() if isinstance(transport, WriteTransport) else 0
        return held + _kernel_unsent(self._socket)

    def stalled(self, now: float) -> bool:
        """True once bytes have waited unacknowledged for the timeout, none of them
        taken by the client in that time."""
        unsent = self.unsent()
        acknowledged = self._written - unsent
        if unsent == 0 or acknowledged > self._acknowledged:
            self._acknowledged = max(acknowledged, self._acknowledged)
            self._progress_at = now
            return False
        return now - self._progress_at >= self._timeout
