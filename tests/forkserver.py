"""`python -m flagcore_http serve …` (or any ``python -m <module> …``) for the tests, forked
from a process that has already imported flagcore instead of started from nothing.

A fresh interpreter spends about 0.6 s of CPU importing the server before it listens
(aiohttp, attrs classes, the answer tables), and the suite starts hundreds of servers; on
two cores that import was a fifth of the suite's time. Here one process per test worker
imports the server's modules once, then forks a child per start. The child is a real
process of its own: it gets the test's argv, environment, working directory and stdout /
stderr, runs the module as ``python -m`` would (`runpy`, ``__main__``), shuts down as an
interpreter does (threads joined, ``atexit``, buffers flushed) and its exit status comes
back to the test. `popen` answers with an object that behaves as the `subprocess.Popen`
the tests used before (pid, stdout, send_signal, wait, communicate, returncode).

``FLAGCORE_TEST_FORKSERVER=0`` starts every such process as a fresh interpreter instead
(what the code did before; the first-start tests in ``tests/http/test_first_run.py`` and
the SDK tests always do), to check that nothing depends on what the fork server imported.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

__all__ = ["popen"]

# What every server or edge start imports anyway: imported once, before any fork.
PRELOAD = (
    "flagcore_cli.main",
    "flagcore_http.app",
    "flagcore_edge.app",
    "flagcore_store_sqlite",
    "flagcore_store_postgres",
    "uvloop",
)
_HEADER = struct.Struct("!I")


# --- the fork server's side ---------------------------------------------------------


class _Start:
    """What a child runs, received from the test: argv, environment, folder, its fds."""

    def __init__(self, request: dict[str, Any], fds: list[int]) -> None:
        self.module: str = request["module"]
        self.args: list[str] = request["args"]
        self.env: dict[str, str] = request["env"]
        self.cwd: str = request["cwd"]
        self.fds = fds


def _receive(conn: socket.socket) -> _Start:
    head, fds, _flags, _address = socket.recv_fds(conn, _HEADER.size, 3)
    while len(head) < _HEADER.size:
        head += conn.recv(_HEADER.size - len(head))
    (size,) = _HEADER.unpack(head)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the test went away mid-request")
        body += chunk
    return _Start(json.loads(body), list(fds))


def _serve(path: str) -> _Start:
    """Accept starts and fork a child for each; returns only in a child. Exits when the
    test process that started it is gone."""
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    while True:
        if selector.select(timeout=0.02):
            conn, _address = listener.accept()
            start = _receive(conn)
            pid = os.fork()
            if pid == 0:
                selector.close()
                listener.close()
                conn.close()
                for other in children.values():
                    other.close()
                return start
            for fd in start.fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            children[pid] = conn
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            told = children.pop(pid, None)
            if told is not None:
                with contextlib.suppress(OSError):
                    told.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                told.close()
        if os.getppid() != parent:
            sys.exit(0)


def _become(start: _Start) -> None:
    """In the child: take the test's fds, environment and folder, then run the module."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(start.fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(start.cwd)
    os.environ.clear()
    os.environ.update(start.env)
    unbuffered = bool(start.env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), line_buffering=True, write_through=unbuffered
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), line_buffering=True, write_through=True
    )
    sys.argv = [start.module, *start.args]
    runpy.run_module(start.module, run_name="__main__", alter_sys=True)


def main() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    # A fork copies only the thread that forks: nothing imported may have started one.
    assert threading.active_count() == 1, threading.enumerate()
    _become(_serve(sys.argv[1]))


# --- the test's side ----------------------------------------------------------------


class _ForkServer:
    """One per test process, started at its first use, stopped when the process ends."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="flagcore-fork-")
        self.path = str(Path(self.folder) / "socket")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.forkserver", self.path],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline() != "ready\n":  # it could not import the server
            self.stop()
            raise AssertionError("the fork server did not start (see its error above)")
        atexit.register(self.stop)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        with contextlib.suppress(OSError):
            Path(self.path).unlink()
            Path(self.folder).rmdir()


_server: _ForkServer | None = None
_lock = threading.Lock()


def _fork_server() -> _ForkServer:
    global _server
    with _lock:
        if _server is None or _server.process.poll() is not None:
            _server = _ForkServer()
        return _server


def _fd_for(target: Any, default: int, keep: list[int]) -> tuple[int, int | None]:
    """The fd the child gets for ``target`` (a Popen-style stdout/stderr argument) and,
    for a pipe, the end the test reads."""
    if target is subprocess.PIPE:
        read, write = os.pipe()
        keep.append(write)
        return write, read
    if target is subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        keep.append(fd)
        return fd, None
    if target is None:
        return default, None
    if isinstance(target, int):
        return target, None
    return target.fileno(), None


class Forked:
    """A child of the fork server, seen as a `subprocess.Popen` is."""

    def __init__(self, args: list[str], pid: int, conn: socket.socket) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdout: IO[str] | None = None
        self.stderr: IO[str] | None = None
        self._conn = conn
        self._told = b""

    def poll(self) -> int | None:
        if self.returncode is None:
            self._conn.setblocking(False)
            try:
                self._read_status()
            except BlockingIOError:
                self._conn.setblocking(True)
        return self.returncode

    def _read_status(self) -> None:
        while not self._told.endswith(b"\n"):
            chunk = self._conn.recv(64)
            if not chunk:
                raise ConnectionError("the fork server went away")
            self._told += chunk
        self.returncode = int(self._told)
        self._conn.close()

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._conn.settimeout(timeout)
            try:
                self._read_status()
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        assert self.returncode is not None
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Servers print a few lines, far less than a pipe holds: wait, then read."""
        self.wait(timeout)
        told = []
        for stream in (self.stdout, self.stderr):
            if stream is None:
                told.append(None)
            elif stream.closed:  # a second call, as Popen allows: nothing more to read
                told.append("")
            else:
                told.append(stream.read())
                stream.close()
        return told[0], told[1]

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


def popen(
    args: list[str],
    *,
    stdout: Any = None,
    stderr: Any = None,
    text: bool = True,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> Forked | subprocess.Popen[str]:
    """``subprocess.Popen(args, …)`` for ``[sys.executable, "-m", module, …]``, forked from
    the fork server (or a fresh interpreter with ``FLAGCORE_TEST_FORKSERVER=0``)."""
    forkable = len(args) >= 3 and args[0] == sys.executable and args[1] == "-m" and text
    if not forkable or os.environ.get("FLAGCORE_TEST_FORKSERVER") == "0":
        return subprocess.Popen(args, stdout=stdout, stderr=stderr, text=text, env=env, cwd=cwd)
    server = _fork_server()
    sent: list[int] = []
    stdin = os.open(os.devnull, os.O_RDONLY)
    sent.append(stdin)
    out_fd, out_read = _fd_for(stdout, 1, sent)
    err_fd, err_read = _fd_for(stderr, 2, sent)
    request = {
        "module": args[2],
        "args": [str(arg) for arg in args[3:]],
        "env": dict(os.environ if env is None else env),
        "cwd": str(cwd or os.getcwd()),
    }
    body = json.dumps(request).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.path)
    try:
        socket.send_fds(conn, [_HEADER.pack(len(body))], [stdin, out_fd, err_fd])
        conn.sendall(body)
    finally:
        for fd in sent:
            os.close(fd)
    told = b""
    deadline = time.monotonic() + 30
    while not told.endswith(b"\n"):
        conn.settimeout(max(deadline - time.monotonic(), 0.01))
        chunk = conn.recv(64)
        if not chunk:
            raise ConnectionError("the fork server went away")
        told += chunk
    conn.settimeout(None)
    pid, rest = told.split(b"\n", 1)  # a child that ended at once: its status follows
    forked = Forked([str(arg) for arg in args], int(pid), conn)
    forked._told = rest
    if out_read is not None:
        forked.stdout = open(out_read, encoding="utf-8")  # noqa: SIM115 (closed by its owner)
    if err_read is not None:
        forked.stderr = open(err_read, encoding="utf-8")  # noqa: SIM115
    return forked


if __name__ == "__main__":
    main()
