"""A fake MineDojo/Malmo server on loopback, for testing the bridge without Java Minecraft.

It speaks the same framing and message sequence as MalmoMod 0.37.0's ``MalmoEnvServer``
(``malmo.py`` has the table) and answers with frames and info JSON in the recorded format:
raw RGB bottom row first (OpenGL order), the info keys of ``minedojo-sim-facts.md`` section 1.4
(41 inventory slot dicts, nested ``stat`` tree, ``damage_source`` with Java's misspelled
``damage_amout``, the flat interleaved Fortran-order ``voxels`` list). A little world model makes
commands observable: camera and movement change the pose, ``craft``/``equip``/``place`` and
``/replaceitem``/``/give`` change the inventory and stats, ``attack`` can count a kill.

Two ways to run it:

* in-process: ``FakeMalmoServer(...).start()`` serves on a background thread (``.port``);
* as a stand-in for the ``java`` executable (``python fake_server.py -Dfoo ... -jar x.jar``):
  it reads ``config/malmomodCLIENT.cfg`` in its working directory like the mod does, prints the
  mod's readiness log lines, serves until ``<Exit>``, and answers ``-version`` like a JDK 8. This
  is how the launcher and the vector env are tested end to end with real processes. Fault
  injection comes from environment variables (``FAKE_MALMO_*``, see ``_options_from_environ``
  and ``java_main``).

Standard library and NumPy only, so it runs as a plain script.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import numpy as np

VERSION = "0.37.0"
_NS = "{http://ProjectMalmo.microsoft.com}"
_VOXEL_KEYS = (
    "block_name",
    "block_meta",
    "is_collidable",
    "is_tool_not_required",
    "blocks_movement",
    "is_liquid",
    "is_solid",
    "can_burn",
    "blocks_light",
    "cos_look_vec_angle",
)
READY_LINE = "CLIENT enter state: DORMANT"
PORT_LINE = "***** Start MalmoEnvServer on port {port}"


@dataclasses.dataclass
class FakeWorld:
    """The state the fake server reports; tests may mutate it from ``script`` callbacks."""

    pos: list[float] = dataclasses.field(default_factory=lambda: [0.5, 64.0, 0.5])
    yaw: float = 0.0
    pitch: float = 0.0
    tick: int = 0
    life: float = 20.0
    # 41 raw slots (0-35 inventory, 36-39 feet/legs/chest/head, 40 offhand): [name, qty, variant]
    slots: list[list[Any]] = dataclasses.field(
        default_factory=lambda: [["air", 0, 0] for _ in range(41)]
    )
    stats: dict[str, Any] = dataclasses.field(
        default_factory=lambda: {
            "kill_entity": {},
            "use_item": {"minecraft": {}},
            "craft_item": {"minecraft": {}},
            "mine_block": {"minecraft": {}},
            "time_since_death": 0,
        }
    )
    biome_id: int = 1
    biome_name: str = "plains"
    nearby_crafting_table: bool = False
    nearby_furnace: bool = False

    def add_item(self, name: str, quantity: int = 1) -> None:
        for slot in self.slots[:36]:
            if slot[0] == name and slot[1] + quantity <= 64:
                slot[1] += quantity
                return
        for slot in self.slots[:36]:
            if slot[0] == "air":
                slot[:] = [name, quantity, 0]
                return

    def count_stat(self, group: str, name: str, amount: int = 1) -> None:
        table = self.stats[group]
        if "minecraft" in table:
            table = table["minecraft"]
        table[name] = table.get(name, 0) + amount


@dataclasses.dataclass
class FakeOptions:
    """Behaviour knobs, including fault injection."""

    busy_replies: int = 0  # answer MissionInit with 0 (busy) this many times first
    die_at_step: int | None = None  # vanish (close everything) on this StepClient (1-based)
    done_at_step: int | None = None  # report Java's done flag from this StepClient on
    effect_lag_ticks: int = 0  # inventory effects of commands show up this many ticks later
    kill_on_attack: str | None = None  # an attack counts a kill of this entity
    exit_process_on_exit: bool = False  # java mode: the process exits on <Exit>/death


class FakeMalmoServer:
    """Serves the MalmoEnv protocol on 127.0.0.1 from a background thread."""

    def __init__(
        self,
        height: int = 160,
        width: int = 256,
        port: int = 0,
        options: FakeOptions | None = None,
        script: dict[int, Callable[[FakeWorld], None]] | None = None,
    ) -> None:
        self.height, self.width = height, width
        self.options = options or FakeOptions()
        self.script = dict(script or {})  # StepClient number -> world mutation
        self.world = FakeWorld()
        # What the client did, for tests to check.
        self.hellos: list[bytes] = []
        self.missions: list[tuple[str, str]] = []
        self.commands: list[list[str]] = []
        self.quits = 0
        self.peeks = 0
        self.server_ticks = 0
        self.exited = threading.Event()
        self.errors: list[str] = []  # tracebacks of messages the server could not handle
        self._pending: list[tuple[int, Callable[[], None]]] = []
        self._busy_left = self.options.busy_replies
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", port))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._connections: list[socket.socket] = []
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeMalmoServer:
        self._thread = threading.Thread(target=self._accept_loop, name="fake-malmo", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop every connection (what a crashed JVM looks like)."""
        self._stop.set()
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self._listener.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def __enter__(self) -> FakeMalmoServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _die(self) -> None:
        if self.options.exit_process_on_exit:
            os._exit(3)  # java mode: the JVM crashes
        self.stop()

    # ------------------------------------------------------------------ protocol

    def _serve(self, conn: socket.socket) -> None:
        try:
            hello = _recv_frame(conn)
            if not hello.startswith(b"<MalmoEnv") or VERSION.encode() not in hello:
                return  # the real server drops clients with a wrong hello
            self.hellos.append(hello)
            while not self._stop.is_set():
                message = _recv_frame(conn)
                with self._lock:
                    if not self._handle(conn, message):
                        return
        except (ConnectionError, OSError, EOFError):
            return
        except Exception:  # a bug or a malformed message: drop the client like Java would
            self.errors.append(traceback.format_exc())
            print(self.errors[-1], file=sys.stderr, flush=True)
        finally:
            conn.close()

    def _handle(self, conn: socket.socket, message: bytes) -> bool:
        if message == b"<Quit/>":
            self.quits += 1
            _send_frame(conn, struct.pack("!I", 1))
        elif message.startswith(b"<MissionInit"):
            token = _recv_frame(conn).decode()
            if self._busy_left > 0:
                self._busy_left -= 1
                _send_frame(conn, struct.pack("!I", 0))
            else:
                self.missions.append((message.decode(), token))
                self._start_mission(message)
                _send_frame(conn, struct.pack("!I", 1))
        elif message == b"<Peek/>":
            self.peeks += 1
            _send_frame(conn, self._pixels())
            _send_frame(conn, json.dumps(self._info()).encode())
            _send_frame(conn, struct.pack("!b", 0))
        elif message.startswith(b"<StepClient"):
            body = re.match(rb"<StepClient(\d)>(.*)</StepClient\1 >$", message, re.S)
            if body is None:
                raise ValueError(f"malformed step message {message[:60]!r}")
            commands = [c for c in body.group(2).decode().split("\n") if c]
            self.commands.append(commands)
            step = len(self.commands)
            if self.options.die_at_step is not None and step >= self.options.die_at_step:
                self._die()
                return False
            self._client_tick(commands, step)
            done = self.options.done_at_step is not None and step >= self.options.done_at_step
            _send_frame(conn, self._pixels())
            _send_frame(conn, struct.pack("!dbb", 0.0, int(done), 1))
            _send_frame(conn, json.dumps(self._info()).encode())
        elif message.startswith(b"<StepServer"):
            self.server_ticks += 1
        elif message == b"<Exit>NOW</Exit>":
            _send_frame(conn, struct.pack("!I", 1))
            self.exited.set()
            if self.options.exit_process_on_exit:
                conn.close()
                os._exit(0)
            return False
        elif message == b"<Disconnect/>":
            return False
        else:
            raise ValueError(f"unknown message {message[:60]!r}")
        return True

    # ------------------------------------------------------------------ world

    def _start_mission(self, mission_xml: bytes) -> None:
        """Reset the world and give the MissionInit's starting inventory."""
        self.world = FakeWorld()
        self._pending.clear()
        root = ET.fromstring(mission_xml)  # bytes: the document declares its encoding
        for obj in root.iter(f"{_NS}InventoryObject"):
            slot = int(obj.get("slot"))
            self.world.slots[slot] = [
                obj.get("type"),
                int(obj.get("quantity", "1")),
                int(obj.get("metadata", "0")),
            ]
        video = root.find(f".//{_NS}VideoProducer")
        if video is not None:
            self.width = int(video.findtext(f"{_NS}Width"))
            self.height = int(video.findtext(f"{_NS}Height"))
        biome = root.find(f".//{_NS}BiomeGenerator")
        if biome is not None:
            self.world.biome_id = int(biome.get("biome"))

    def _later(self, effect: Callable[[], None]) -> None:
        self._pending.append((self.world.tick + self.options.effect_lag_ticks, effect))

    def _client_tick(self, commands: list[str], step: int) -> None:
        w = self.world
        for command in commands:
            verb, _, arg = command.partition(" ")
            if verb == "camera":
                dp, dy = (float(v) for v in arg.split())
                w.pitch = max(-90.0, min(90.0, w.pitch + dp))
                w.yaw += dy
            elif verb == "forward" and arg == "1":
                w.pos[2] += 0.2
            elif verb == "back" and arg == "1":
                w.pos[2] -= 0.2
            elif verb == "attack" and arg == "1" and self.options.kill_on_attack:
                name = self.options.kill_on_attack
                self._later(lambda name=name: w.count_stat("kill_entity", name))
            elif verb in ("craft", "craftNearby", "smeltNearby"):
                self._later(lambda item=arg: (w.add_item(item), w.count_stat("craft_item", item)))
            elif verb == "equip":
                self._later(lambda item=arg: self._equip(item))
            elif verb == "place":
                self._later(lambda item=arg: self._place(item))
            elif verb == "chat":
                self._chat(arg)
        due = [e for e in self._pending if e[0] <= w.tick]
        self._pending = [e for e in self._pending if e[0] > w.tick]
        for _, effect in due:
            effect()
        if step in self.script:
            self.script[step](w)
        w.tick += 1
        w.stats["time_since_death"] += 1

    def _equip(self, item: str) -> None:
        slots = self.world.slots
        for i, slot in enumerate(slots[:36]):
            if slot[0] == item:
                slots[0], slots[i] = slots[i], slots[0]
                return

    def _place(self, item: str) -> None:
        for slot in self.world.slots[:36]:
            if slot[0] == item and slot[1] > 0:
                slot[1] -= 1
                if slot[1] == 0:
                    slot[:] = ["air", 0, 0]
                self.world.count_stat("use_item", item)
                return

    def _chat(self, text: str) -> None:
        parts = text.split()
        if parts[:1] == ["/replaceitem"] and len(parts) >= 5 and parts[4] == "air":
            slot_name = parts[3]
            index = None
            if slot_name.startswith("slot.hotbar."):
                index = int(slot_name.rsplit(".", 1)[1])
            elif slot_name.startswith("slot.inventory."):
                index = 9 + int(slot_name.rsplit(".", 1)[1])
            if index is not None:
                self.world.slots[index] = ["air", 0, 0]
        elif parts[:1] == ["/give"] and len(parts) >= 3:
            self.world.add_item(
                parts[2].removeprefix("minecraft:"), int(parts[3]) if len(parts) > 3 else 1
            )

    def image(self) -> np.ndarray:
        """The frame as a viewer sees it (top row first): row r has red = r % 256."""
        img = np.zeros((self.height, self.width, 3), np.uint8)
        img[:, :, 0] = (np.arange(self.height) % 256)[:, None]
        img[:, :, 1] = self.world.tick % 256
        img[:, :, 2] = int(self.world.yaw) % 256
        return img

    def _pixels(self) -> bytes:
        # Malmo reads the OpenGL framebuffer, which stores the bottom row first.
        return self.image()[::-1].tobytes()

    def _info(self) -> dict[str, Any]:
        w = self.world
        inventory = [
            {
                "name": name,
                "variant": variant,
                "quantity": quantity,
                "max_durability": 250 if name.endswith(("_sword", "_pickaxe")) else -1,
                "cur_durability": 250 if name.endswith(("_sword", "_pickaxe")) else -1,
                "index": i,
                "inventory": "inventory",
            }
            for i, (name, quantity, variant) in enumerate(w.slots)
        ]
        voxels: list[Any] = []
        # Fortran order over (x, y, z) in [-1, 1]^3: x varies fastest. Ground at y = -1, one
        # stone block at x = +1 on the ground layer so the order is observable.
        for z in (-1, 0, 1):
            for y in (-1, 0, 1):
                for x in (-1, 0, 1):
                    if y == -1:
                        name = "stone" if (x, z) == (1, -1) else "dirt"
                        solid = True
                    else:
                        name, solid = "air", False
                    voxels += [name, 0, solid, True, solid, False, solid, False, solid, 0.5]
        return {
            "life": w.life,
            "armor": 0,
            "food": 20,
            "saturation": 5.0,
            "xp": 0,
            "score": 0,
            "is_alive": True,
            "air": 300,
            "name": "MineDojoAgent0",
            "is_sleeping": False,
            "xpos": w.pos[0],
            "ypos": w.pos[1],
            "zpos": w.pos[2],
            "pitch": w.pitch,
            "yaw": w.yaw,
            "biome_name": w.biome_name,
            "biome_id": w.biome_id,
            "biome_temperature": 0.8,
            "biome_rainfall": 0.4,
            "sea_level": 63,
            "light_level": 15,
            "is_raining": False,
            "can_see_sky": True,
            "sun_brightness": 1.0,
            "sky_light_level": 1.0,
            "world_time": 6000 + w.tick,
            "total_time": w.tick,
            "distance_travelled_cm": 0,
            "stat": json.loads(json.dumps(w.stats)),
            "achievement": {},
            "inventory": inventory,
            "inventories_available": [{"name": "inventory", "size": 41}],
            "current_item_index": 0,
            "nearby_crafting_table": w.nearby_crafting_table,
            "nearby_furnace": w.nearby_furnace,
            "is_dead": False,
            "living_death_event_fired": False,
            "damage_source": {
                "damage_amout": 0.0,  # sic: Java's spelling
                "damage_distance": 0.0,
                "damage_pitch": 0.0,
                "damage_yaw": 0.0,
                "hunger_damage": 0.0,
                "is_explosion": False,
                "is_fire_damage": False,
                "is_magic_damage": False,
                "is_projectile": False,
                "is_unblockable": False,
            },
            "voxels": voxels,
        }


def _send_frame(conn: socket.socket, payload: bytes) -> None:
    conn.sendall(struct.pack("!I", len(payload)) + payload)


def _recv_exact(conn: socket.socket, count: int) -> bytes:
    buf = bytearray()
    while len(buf) < count:
        chunk = conn.recv(count - len(buf))
        if not chunk:
            raise EOFError("client closed the connection")
        buf += chunk
    return bytes(buf)


def _recv_frame(conn: socket.socket) -> bytes:
    (length,) = struct.unpack("!I", _recv_exact(conn, 4))
    return _recv_exact(conn, length)


# ---------------------------------------------------------------------------------------------
# java stand-in
# ---------------------------------------------------------------------------------------------


def _options_from_environ() -> FakeOptions:
    def opt_int(name: str) -> int | None:
        value = os.environ.get(name)
        return int(value) if value else None

    die_at_step = opt_int("FAKE_MALMO_DIE_AT_STEP")
    # Only the instance of one bridge env dies (FAKE_MALMO_DIE_ENV_ID), and with a marker file
    # only once, so its replacement runs clean.
    only_env = os.environ.get("FAKE_MALMO_DIE_ENV_ID")
    if only_env is not None and os.environ.get("MINECLIP_BRIDGE_ENV_ID") != only_env:
        die_at_step = None
    marker = os.environ.get("FAKE_MALMO_DIE_MARKER")
    if die_at_step is not None and marker:
        if os.path.exists(marker):
            die_at_step = None
        else:
            with open(marker, "w") as f:
                f.write(str(os.getpid()))
    return FakeOptions(
        busy_replies=opt_int("FAKE_MALMO_BUSY_REPLIES") or 0,
        die_at_step=die_at_step,
        done_at_step=opt_int("FAKE_MALMO_DONE_AT_STEP"),
        effect_lag_ticks=opt_int("FAKE_MALMO_EFFECT_LAG") or 0,
        kill_on_attack=os.environ.get("FAKE_MALMO_KILL_ON_ATTACK") or None,
        exit_process_on_exit=True,
    )


def java_main(argv: list[str]) -> int:
    """Behave like ``java ... -jar MalmoMod-fat.jar`` started in a Malmo run directory."""
    if "-version" in argv:
        print('openjdk version "1.8.0_402"', file=sys.stderr)
        print("OpenJDK Runtime Environment (fake for tests)", file=sys.stderr)
        return 0
    if os.environ.get("FAKE_MALMO_FAIL_START"):
        print("Exception in thread main: fake failure to start Minecraft", flush=True)
        return 1
    if os.environ.get("FAKE_MALMO_NEVER_READY"):
        print("Loading Minecraft... (and never getting there)", flush=True)
        time.sleep(3600)
        return 1
    with open(os.path.join("config", "malmomodCLIENT.cfg")) as f:
        match = re.search(r"I:portOverride=(\d+)", f.read())
    port = int(match.group(1)) if match else 0
    server = FakeMalmoServer(port=port, options=_options_from_environ()).start()
    print(f"[fake-java] pid {os.getpid()} argv: {' '.join(argv)}", flush=True)
    print(PORT_LINE.format(port=server.port), flush=True)
    print(READY_LINE, flush=True)
    server.exited.wait()
    return 0


if __name__ == "__main__":
    sys.exit(java_main(sys.argv[1:]))
