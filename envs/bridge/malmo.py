"""A client for the MalmoEnv socket protocol that MineDojo's Minecraft mod (Malmo 0.37.0) serves.

Facts (``reference/minedojo-sim-facts.md`` section 3.2): TCP to the instance's port with
TCP_NODELAY; every message is a 4-byte big-endian length then the payload. Per connection the
client first sends the hello ``<MalmoEnv0.37.0/>``. Then:

=========================================  ===========================================================
client sends                               server replies
=========================================  ===========================================================
``<Quit/>``                                uint32 frame: 1 if the mission is done / not running
``<MissionInit ...>`` + token frame        uint32 frame: 1 started, 0 busy (retry every second)
``<Peek/>``                                frame(obs bytes), frame(info JSON), frame(int8 done)
``<StepClient0>cmds</StepClient0 >``        frame(obs bytes), frame(float64 reward, int8 done, int8
                                           sent), frame(info JSON)
``<StepServer></StepServer>``              nothing (one server tick)
``<Exit>NOW</Exit>``                       uint32 frame 1, then the JVM exits
``<Disconnect/>``                          the server closes the socket
=========================================  ===========================================================

Unlike MineDojo's Python side, a dead socket is never turned into ``done=True`` with a stale
observation: every failure raises ``MalmoConnectionError`` saying what was being waited for.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import struct
import time
import uuid
from collections.abc import Sequence
from typing import Any

MALMO_VERSION = "0.37.0"
HELLO = f"<MalmoEnv{MALMO_VERSION}/>".encode()
_LENGTH = struct.Struct("!I")
_STEP_REPLY = struct.Struct("!dbb")  # reward (unused by MineDojo), done, sent
# Malmo answers a MissionInit with 0 while the previous mission is still winding down.
DEFAULT_BUSY_TIMEOUT_S = 600.0
DEFAULT_SOCKET_TIMEOUT_S = 240.0


class MalmoError(RuntimeError):
    """The Malmo server answered something the protocol does not allow."""


class MalmoConnectionError(ConnectionError):
    """The connection to a Malmo server failed, closed, or timed out."""


@dataclasses.dataclass(frozen=True)
class MalmoFrame:
    """What one ``Peek`` or ``StepClient`` returns."""

    pixels: bytes  # raw RGB, bottom row first (OpenGL order); empty when no frame was rendered
    info: dict[str, Any]  # the info JSON
    done: bool  # Java's mission-ended flag


def make_token(
    experiment_id: str | None = None,
    role: int = 0,
    reset: int = 0,
    agent_count: int = 1,
    synchronous: bool = True,
    seed: int | None = None,
) -> str:
    """The MissionInit token ``"<expId>:<role>:<reset>:<agentCount>:<sync>[:<seed>]"``."""
    experiment_id = experiment_id or str(uuid.uuid4())
    token = f"{experiment_id}:{role}:{reset}:{agent_count}:{'true' if synchronous else 'false'}"
    return token if seed is None else f"{token}:{seed}"


def step_message(commands: Sequence[str], option: int = 0) -> bytes:
    """``<StepClientN>cmd\\ncmd</StepClientN >`` (the space before ``>`` is what Malmo expects)."""
    for command in commands:
        if "\n" in command or "<" in command:
            raise ValueError(f"a Malmo command may not contain a newline or '<': {command!r}")
    return f"<StepClient{option}>{chr(10).join(commands)}</StepClient{option} >".encode()


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def recv_exact(sock: socket.socket, count: int, waiting_for: str) -> bytes:
    chunks = []
    remaining = count
    while remaining:
        try:
            chunk = sock.recv(min(remaining, 1 << 20))
        except TimeoutError as err:
            raise MalmoConnectionError(
                f"no reply from the Malmo server within {sock.gettimeout():g} s while waiting "
                f"for {waiting_for}"
            ) from err
        except OSError as err:
            raise MalmoConnectionError(
                f"connection to the Malmo server failed while waiting for {waiting_for}: {err}"
            ) from err
        if not chunk:
            raise MalmoConnectionError(
                f"the Malmo server closed the connection while we waited for {waiting_for} "
                "(the Minecraft process probably died: see its log)"
            )
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, waiting_for: str) -> bytes:
    (length,) = _LENGTH.unpack(recv_exact(sock, 4, waiting_for))
    return recv_exact(sock, length, waiting_for) if length else b""


class MalmoClient:
    """One connection to one Minecraft instance's MalmoEnv server."""

    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
    ) -> None:
        self.host = host
        self.port = int(port)
        self.timeout_s = float(timeout_s)
        self._sock: socket.socket | None = None

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def connect(self) -> None:
        """Open a fresh connection and say hello (closing any previous one)."""
        self.close()
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as err:
            raise MalmoConnectionError(
                f"cannot connect to the Malmo server at {self.host}:{self.port}: {err}"
            ) from err
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.timeout_s)
        self._sock = sock
        self._send(HELLO, "the hello")

    def close(self) -> None:
        """Disconnect politely if possible; never raises."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            send_frame(sock, b"<Disconnect/>")
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            sock.close()

    def _require(self) -> socket.socket:
        if self._sock is None:
            raise MalmoConnectionError(
                f"not connected to the Malmo server at {self.host}:{self.port}; call connect()"
            )
        return self._sock

    def _send(self, payload: bytes, what: str) -> None:
        try:
            send_frame(self._require(), payload)
        except OSError as err:
            raise MalmoConnectionError(
                f"could not send {what} to the Malmo server at {self.host}:{self.port}: {err}"
            ) from err

    def _recv(self, what: str) -> bytes:
        return recv_frame(self._require(), what)

    def _recv_uint32(self, what: str) -> int:
        reply = self._recv(what)
        if len(reply) != 4:
            raise MalmoError(f"expected a 4-byte reply to {what}, got {len(reply)} bytes")
        return _LENGTH.unpack(reply)[0]

    def quit_mission(self) -> bool:
        """``<Quit/>``: end the running mission; True if none is running afterwards."""
        self._send(b"<Quit/>", "<Quit/>")
        return self._recv_uint32("the reply to <Quit/>") == 1

    def start_mission(
        self,
        mission_xml: str,
        token: str,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        retry_interval_s: float = 1.0,
    ) -> int:
        """Send the MissionInit until Malmo accepts it; returns how many busy replies came first."""
        deadline = time.monotonic() + busy_timeout_s
        busy = 0
        while True:
            self._send(mission_xml.encode(), "the MissionInit XML")
            self._send(token.encode(), "the MissionInit token")
            if self._recv_uint32("the reply to MissionInit") == 1:
                return busy
            busy += 1
            if time.monotonic() + retry_interval_s > deadline:
                raise MalmoConnectionError(
                    f"the Malmo server stayed busy for {busy_timeout_s:g} s ({busy} MissionInit "
                    "attempts); the previous mission never ended"
                )
            time.sleep(retry_interval_s)

    def peek(self) -> MalmoFrame:
        """``<Peek/>``: the first observation of a started mission."""
        self._send(b"<Peek/>", "<Peek/>")
        pixels = self._recv("the frame of <Peek/>")
        info = _parse_info(self._recv("the info JSON of <Peek/>"))
        done_bytes = self._recv("the done flag of <Peek/>")
        if len(done_bytes) != 1:
            raise MalmoError(f"expected a 1-byte done flag after <Peek/>, got {len(done_bytes)}")
        return MalmoFrame(pixels, info, struct.unpack("!b", done_bytes)[0] == 1)

    def step_client(self, commands: Sequence[str]) -> MalmoFrame:
        """``<StepClient0>``: queue ``commands`` and run one client tick."""
        self._send(step_message(commands), "<StepClient0>")
        pixels = self._recv("the frame of <StepClient0>")
        reply = self._recv("the reward/done reply of <StepClient0>")
        if len(reply) != _STEP_REPLY.size:
            raise MalmoError(f"expected a {_STEP_REPLY.size}-byte step reply, got {len(reply)}")
        _, done, _ = _STEP_REPLY.unpack(reply)
        info = _parse_info(self._recv("the info JSON of <StepClient0>"))
        return MalmoFrame(pixels, info, done == 1)

    def step_server(self) -> None:
        """``<StepServer>``: run one server tick (no reply)."""
        self._send(b"<StepServer></StepServer>", "<StepServer>")

    def step(self, commands: Sequence[str]) -> MalmoFrame:
        """One lock-step game tick: client tick with ``commands``, then one server tick."""
        frame = self.step_client(commands)
        self.step_server()
        return frame

    def exit_server(self) -> bool:
        """``<Exit>NOW</Exit>``: ask the JVM to exit; True if it acknowledged."""
        self._send(b"<Exit>NOW</Exit>", "<Exit>")
        return self._recv_uint32("the reply to <Exit>") == 1


def _parse_info(raw: bytes) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        info = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise MalmoError(f"the Malmo info frame is not JSON: {raw[:80]!r}...") from err
    if not isinstance(info, dict):
        raise MalmoError(f"the Malmo info JSON is a {type(info).__name__}, not an object")
    return info
