"""Length-prefixed messages over a Unix stream socket, with one read per wake-up.

``multiprocessing.connection.Connection`` reads a frame with two ``read`` calls (header, then
payload). On the per-step hot path of ``ProcessVectorEnv`` (a one-byte command one way, a
one-byte result the other) that is a third of the syscalls; this channel reads whatever is
available into a buffer with one ``recvmsg`` and also collects file descriptors passed as
SCM_RIGHTS ancillary data (how the shared buffer reaches a worker).

Standard library only: the worker bootstrap loads it by file path (see ``worker.py``).
"""

from __future__ import annotations

import array
import math
import os
import select
import socket
import struct

_HEADER = struct.Struct("!I")
_READ_SIZE = 1 << 16
_MAX_FDS = 4


class Channel:
    """One end of a socketpair, speaking 4-byte big-endian length + payload frames."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(True)
        self.sock = sock
        self._buffer = bytearray()
        self._fds: list[int] = []
        self._ancillary_size = socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
        self._poller = select.poll()
        self._poller.register(sock.fileno(), select.POLLIN)

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, payload: bytes) -> None:
        self.sock.sendall(_HEADER.pack(len(payload)) + payload)

    def send_with_fds(self, payload: bytes, fds: list[int]) -> None:
        """Send a frame with ``fds`` attached (the receiver gets them from ``take_fds``)."""
        data = _HEADER.pack(len(payload)) + payload
        sent = self.sock.sendmsg(
            [data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        )
        if sent < len(data):
            self.sock.sendall(data[sent:])

    def wait_readable(self, timeout_s: float) -> bool:
        """Block until data (or EOF) can be read, at most ``timeout_s``; False on timeout."""
        return bool(self._poller.poll(max(0, math.ceil(timeout_s * 1000))))

    def has_frame(self) -> bool:
        """True if a whole frame is already buffered (``recv`` will not block)."""
        buf = self._buffer
        return len(buf) >= 4 and len(buf) >= 4 + _HEADER.unpack_from(buf)[0]

    def fill(self, block: bool = True) -> bool:
        """One read of whatever is available; EOFError when the peer has gone.

        With ``block=False`` returns False at once when nothing is there (no poll needed first).
        """
        try:
            data, ancillary, _, _ = self.sock.recvmsg(
                _READ_SIZE, self._ancillary_size, 0 if block else socket.MSG_DONTWAIT
            )
        except BlockingIOError:
            return False
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(raw[: len(raw) - len(raw) % fds.itemsize])
                self._fds.extend(fds)
        if not data:
            raise EOFError("the other end of the channel closed")
        self._buffer += data
        return True

    def recv(self) -> bytes:
        """The next frame (blocking until it is complete)."""
        while not self.has_frame():
            self.fill()
        (length,) = _HEADER.unpack_from(self._buffer)
        frame = bytes(self._buffer[4 : 4 + length])
        del self._buffer[: 4 + length]
        return frame

    def take_fds(self) -> list[int]:
        fds, self._fds = self._fds, []
        return fds

    def close(self) -> None:
        for fd in self.take_fds():
            try:
                os.close(fd)
            except OSError:
                pass
        self.sock.close()
