"""MineDojo's Java simulator as a Gymnasium env, spoken to directly over the Malmo protocol.

``MineDojoEnv(task)`` launches (or connects to) one Minecraft 1.11.2 instance running MineDojo's
MalmoMod, and exposes ``envs.spaces``' observation dict and ``MultiDiscrete`` action space with
rewards and success from ``envs.tasks``. ``make_minedojo_vector(task, num_envs)`` runs N of them in
``ProcessVectorEnv`` workers (one JVM, port and run directory per worker); ``envs.make_vector(...,
backend="minedojo")`` calls it.

What this does differently from MineDojo's own Python side (``minedojo-sim-facts.md`` 3, 7):

* No ``minedojo`` package, no gym 0.21, no Gradle at launch: a prebuilt fat jar (launcher.py).
* Observations: the frame is flipped vertically (OpenGL stores the bottom row first) and kept
  channels-last ``[H, W, 3]``; names become ids (``envs.spaces.ITEMS`` / ``BLOCKS``).
* A broken socket raises ``SimulatorError`` with the instance's log tail instead of returning
  ``done=True`` with the previous observation. In a ``ProcessVectorEnv`` that becomes a worker
  restart and a ``truncated`` episode with ``info["bridge_fault"]``.
* Java's ``damage_source`` is read where Java puts it (nested, with its misspelled
  ``damage_amout`` key), so damage observations are not silently zero.
* Stale info (Java re-sends the previous JSON when a tick produced none) is flagged in
  ``info["stale_info"]`` (world ``total_time`` did not advance).
* Action latency is MineDojo's: drop / craft / equip / place / destroy run 2 extra no-op ticks
  (``extra_ticks``) so their effect is visible in the returned observation; movement, camera, use
  and attack take one tick and, as users report (MineDojo#103), may show their effect up to two
  agent steps later. Reward is computed from the info of the last tick of the agent step.
* Java's ``done`` flag (the mission ended without a quit handler: the server gave up) is reported
  as ``truncated`` with ``info["malmo_done"]``; success is ``terminated``; the task's
  ``max_steps`` truncates.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np

from envs import spaces, tasks
from envs.bridge import launcher, mission
from envs.bridge.malmo import (
    MalmoClient,
    MalmoConnectionError,
    MalmoError,
    MalmoFrame,
    make_token,
)
from envs.checks import check_action
from envs.tasks.spec import FAR, TaskParams, TaskSignals, TaskSpec, task_reward, task_success

# Functional actions after which MineDojo runs 2 extra no-op ticks (drop, craft, equip, place,
# destroy) to absorb Malmo's lag.
EXTRA_TICK_FUNCTIONS = frozenset({2, 4, 5, 6, 7})
RELEASE_ALL = (
    "forward 0",
    "back 0",
    "left 0",
    "right 0",
    "jump 0",
    "sneak 0",
    "sprint 0",
    "use 0",
    "drop 0",
    "attack 0",
    "camera 0 0",
)
EQUIPMENT_SLOTS = (0, 36, 37, 38, 39, 40)  # mainhand, feet, legs, chest, head, offhand
_ARMOUR_SUFFIXES = ("_helmet", "_chestplate", "_leggings", "_boots")
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


class SimulatorError(RuntimeError):
    """The Minecraft instance stopped answering; carries the end of its log when known.

    In a ``ProcessVectorEnv`` worker this is a fault of the simulator, not of the caller: the
    worker is restarted and the episode truncated (``restart_worker``), where other exceptions
    of an env's code are re-raised to the caller."""

    restart_worker = True


@dataclasses.dataclass(frozen=True)
class MineDojoConfig:
    """Everything about one MineDojo env that is not the task."""

    height: int = 160  # rgb height
    width: int = 256  # rgb width
    voxel_radius: int = 1  # voxels cover [-r, r]^3 (MineDojo: 1)
    jar: str | None = None  # MalmoMod-0.37.0-fat.jar (default: $MINECLIP_MALMO_JAR)
    java: str | None = None  # Java 8 executable (default: $JAVA_HOME/bin/java, then PATH)
    run_template: str | None = None  # MineDojo's Malmo/Minecraft/run, copied per instance
    run_root: str | None = None  # where instance run dirs and logs go (default: a temp dir)
    headless: bool | None = None  # xvfb-run (None: when $DISPLAY is unset)
    require_java8: bool = True  # refuse other Java versions (Forge 13.20 needs 8)
    ready_timeout_s: float = 300.0  # launch until the mod reports DORMANT
    malmo_port: int | None = None  # connect to a running instance instead of launching one
    malmo_host: str = "127.0.0.1"
    socket_timeout_s: float = 120.0  # one reply from Java (MineDojo: 240)
    busy_timeout_s: float = 600.0  # MissionInit answered "busy" for this long -> error
    fast_reset: bool = True  # reset by chat commands after the first (MineDojo's default)
    spread_range: int = 200  # fast reset: /spreadplayers range (0 keeps the position)
    extra_ticks: int = 2  # no-op ticks after drop/craft/equip/place/destroy (MineDojo: 2)
    max_steps: int | None = None  # episode limit in agent steps (default: the task's)


# ---------------------------------------------------------------------------------------------
# Decoding (pure functions of Malmo's frames and info JSON)
# ---------------------------------------------------------------------------------------------


def _id(lookup, name: Any) -> int:
    """An id for a Java name, 0 ("air") for names outside our tables (documented limitation)."""
    try:
        return lookup(str(name))
    except KeyError:
        return 0


def decode_frame(pixels: bytes, height: int, width: int) -> np.ndarray:
    """Malmo's raw RGB (bottom row first) -> uint8 ``[H, W, 3]`` top row first."""
    if not pixels:
        return np.zeros((height, width, 3), np.uint8)  # no frame rendered yet (MineDojo: zeros)
    expected = height * width * 3
    if len(pixels) != expected:
        raise MalmoError(
            f"frame has {len(pixels)} bytes, expected {height}x{width}x3 = {expected}: the "
            "instance renders a different size than this env was built for"
        )
    return np.frombuffer(pixels, np.uint8).reshape(height, width, 3)[::-1].copy()


def _slot_table(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The 41 raw slots of Java's inventory list, indexed by their slot number."""
    entries = [
        e for e in info.get("inventory", []) if e.get("inventory", "inventory") == "inventory"
    ]
    table: list[dict[str, Any]] = [{"name": "air"} for _ in range(41)]
    for position, entry in enumerate(entries[:41]):
        table[int(entry.get("index", position))] = entry
    return table


def _slots_obs(slots: list[dict[str, Any]], indices) -> dict[str, np.ndarray]:
    chosen = [slots[i] for i in indices]
    return {
        "name": np.array([_id(spaces.item_id, s.get("name", "air")) for s in chosen], np.int32),
        "variant": np.array([int(s.get("variant", 0)) for s in chosen], np.int32),
        "quantity": np.array([float(s.get("quantity", 0)) for s in chosen], np.float32),
        "max_durability": np.array(
            [float(s.get("max_durability", -1)) for s in chosen], np.float32
        ),
        "cur_durability": np.array(
            [float(s.get("cur_durability", -1)) for s in chosen], np.float32
        ),
    }


def _flag(value: Any) -> np.ndarray:
    return np.asarray(bool(value), dtype=bool)  # 0-d array, as the Box spaces declare


def _f(info: dict[str, Any], key: str, default: float) -> np.ndarray:
    return np.array([float(info.get(key, default))], np.float32)


def _voxels(info: dict[str, Any], radius: int) -> dict[str, np.ndarray]:
    edge = 2 * radius + 1
    shape = (edge, edge, edge)
    flat = info.get("voxels")
    n_keys = len(_VOXEL_KEYS)
    if not flat or len(flat) != edge**3 * n_keys:  # no grid observation in this info
        out = {key: np.zeros(shape, bool) for key in _VOXEL_KEYS}
        out.update(
            block_name=np.zeros(shape, np.int32),
            block_meta=np.zeros(shape, np.int32),
            cos_look_vec_angle=np.zeros(shape, np.float32),
        )
        return out
    out = {}
    for bias, key in enumerate(_VOXEL_KEYS):
        values = flat[bias::n_keys]
        if key == "block_name":
            # Java sends localized lower-case names ("grass block"); ours are registry names.
            array = np.array([_id(spaces.block_id, v) for v in values], np.int32)
        elif key == "block_meta":
            array = np.array(values, np.int32)
        elif key == "cos_look_vec_angle":
            array = np.array(values, np.float32)
        else:
            array = np.array(values, bool)
        out[key] = array.reshape(shape, order="F")  # Java's flat list is x-fastest
    return out


def _masks(
    inventory: dict[str, np.ndarray], equipment: dict[str, np.ndarray], table: bool, furnace: bool
) -> dict[str, np.ndarray]:
    names = inventory["name"]
    occupied = names != 0
    item_names = [spaces.ITEMS[i] for i in names]
    equip = occupied.copy()
    # Equipping the item already in the main hand only makes sense for off-hand/armour items.
    equip[0] = occupied[0] and item_names[0].endswith((*_ARMOUR_SUFFIXES, "shield"))
    place = np.array([n in spaces.PLACEABLE_ITEMS for n in item_names], bool)
    craft = np.zeros(spaces.NUM_CRAFT_SMELT, bool)
    # Ingredients are not checked (no recipe table here): only the station each block needs.
    hand_end = spaces.NUM_HAND_CRAFT
    table_end = hand_end + spaces.NUM_TABLE_CRAFT_ONLY
    inventory_full = bool(occupied.all())
    if not inventory_full:
        craft[:hand_end] = True
        craft[hand_end:table_end] = table
        craft[table_end:] = furnace
    action_type = np.array(
        [True, True, equipment["name"][0] != 0, True, craft.any(), equip.any(), place.any(),
         occupied.any()],
        bool,
    )  # fmt: skip
    return {
        "action_type": action_type,
        "action_arg": np.array([0, 0, 0, 0, 1, 1, 1, 1], bool).reshape(8, 1),
        "equip": equip,
        "place": place,
        "destroy": occupied,
        "craft_smelt": craft,
    }


def decode_observation(
    frame: MalmoFrame, height: int, width: int, voxel_radius: int = 1
) -> dict[str, Any]:
    """One Malmo frame + info JSON -> the ``envs.spaces.observation_space`` dict."""
    info = frame.info
    slots = _slot_table(info)
    inventory = _slots_obs(slots, range(36))
    equipment = _slots_obs(slots, EQUIPMENT_SLOTS)
    yaw = (float(info.get("yaw", 0.0)) + 180.0) % 360.0 - 180.0  # Java's raw yaw is unbounded
    pitch = min(90.0, max(-90.0, float(info.get("pitch", 0.0))))
    damage = info.get("damage_source")
    damage = damage if isinstance(damage, dict) else info  # MineDojo looked at the top level
    table = bool(info.get("nearby_crafting_table", False))
    furnace = bool(info.get("nearby_furnace", False))
    return {
        "rgb": decode_frame(frame.pixels, height, width),
        "inventory": inventory,
        "equipment": equipment,
        "life_stats": {
            "life": _f(info, "life", 20),
            "armor": _f(info, "armor", 0),
            "food": _f(info, "food", 20),
            "saturation": _f(info, "saturation", 5),
            "xp": _f(info, "xp", 0),
            "oxygen": _f(info, "air", 300),
            "is_sleeping": _flag(info.get("is_sleeping", False)),
        },
        "location_stats": {
            "pos": np.array(
                [info.get("xpos", 0.0), info.get("ypos", 0.0), info.get("zpos", 0.0)], np.float32
            ),
            "yaw": np.array([yaw], np.float32),
            "pitch": np.array([pitch], np.float32),
            "biome_id": np.asarray(int(info.get("biome_id", 0)), np.int32),
            "rainfall": _f(info, "biome_rainfall", 0),
            "temperature": _f(info, "biome_temperature", 0),
            "sea_level": _f(info, "sea_level", 63),
            "light_level": _f(info, "light_level", 0),
            "sky_light_level": _f(info, "sky_light_level", 0),
            "sun_brightness": _f(info, "sun_brightness", 0),
            "is_raining": _flag(info.get("is_raining", False)),
            "can_see_sky": _flag(info.get("can_see_sky", False)),
        },
        "voxels": _voxels(info, voxel_radius),
        "nearby_tools": {"table": _flag(table), "furnace": _flag(furnace)},
        "damage_source": {
            # Java spells it "damage_amout"; accept both.
            "damage_amount": _f(damage, "damage_amout", damage.get("damage_amount", 0.0)),
            "damage_distance": _f(damage, "damage_distance", 0),
            "damage_pitch": _f(damage, "damage_pitch", 0),
            "damage_yaw": _f(damage, "damage_yaw", 0),
            "hunger_damage": _f(damage, "hunger_damage", 0),
            "is_explosion": _flag(damage.get("is_explosion", False)),
            "is_fire_damage": _flag(damage.get("is_fire_damage", False)),
            "is_magic_damage": _flag(damage.get("is_magic_damage", False)),
            "is_projectile": _flag(damage.get("is_projectile", False)),
            "is_unblockable": _flag(damage.get("is_unblockable", False)),
        },
        "masks": _masks(inventory, equipment, table, furnace),
    }


def _stat_table(stats: dict[str, Any], group: str) -> dict[str, Any]:
    table = stats.get(group, {})
    if isinstance(table, dict) and isinstance(table.get("minecraft"), dict):
        table = table["minecraft"]
    return table if isinstance(table, dict) else {}


def signals_from_info(info: dict[str, Any]) -> TaskSignals:
    """Reduce Java's info JSON to ``TaskSignals`` (NumPy) for the task reward and success."""
    inventory = np.zeros(spaces.NUM_ITEMS, np.float32)
    for slot in _slot_table(info):
        item = _id(spaces.item_id, slot.get("name", "air"))
        if item:
            inventory[item] += float(slot.get("quantity", 0))
    stats = info.get("stat", {}) if isinstance(info.get("stat"), dict) else {}
    kills = np.zeros(spaces.NUM_ENTITIES, np.float32)
    for name, count in _stat_table(stats, "kill_entity").items():
        try:
            kills[spaces.entity_id(name)] += float(count)  # handles mushroom_cow / pig_zombie
        except KeyError:
            continue  # a mob outside our entity table

    def per_item(group: str) -> np.ndarray:
        out = np.zeros(spaces.NUM_ITEMS, np.float32)
        for name, count in _stat_table(stats, group).items():
            item = _id(spaces.item_id, name)
            if item:
                out[item] += float(count)
        return out

    uses = per_item("use_item")
    # Placing a block counts as using its item in Minecraft's statistics.
    placeable = np.array([n in spaces.PLACEABLE_ITEMS for n in spaces.ITEMS], bool)
    return TaskSignals(
        inventory=inventory,
        kills=kills,
        uses=uses,
        crafts=per_item("craft_item"),
        mines=per_item("mine_block"),
        places=np.where(placeable, uses, 0.0).astype(np.float32),
        ticks_alive=np.int32(stats.get("time_since_death", 0) or 0),
        pos=np.array(
            [info.get("xpos", 0.0), info.get("ypos", 0.0), info.get("zpos", 0.0)], np.float32
        ),
        biome_id=np.int32(info.get("biome_id", 0)),
        # Privileged target distances are not available here: MineDojo computes the paper's
        # manual shaping (navigation by geodesic distance, valid-attack bonus) from its LIDAR
        # rays, which this bridge does not request from Malmo. So on this backend the "manual"
        # reward has no shaping: it is the task's programmatic reward (docs/bridge.md).
        target_distance=np.float32(FAR),
        target_visible=np.bool_(False),
        best_target_distance=np.float32(FAR),
        attack_hit_target=np.bool_(False),
    )


def action_to_commands(action: np.ndarray, inventory_names: np.ndarray) -> tuple[list[str], str]:
    """MineDojo's ``MultiDiscrete`` action -> Malmo commands for one tick.

    ``inventory_names`` are the item ids of the 36 slots in the previous observation (equip,
    place and destroy name their slot's item, as MineDojo does). Returns (commands, reason) where
    reason is non-empty if the functional part was invalid (empty slot) and therefore dropped.
    """
    a = [int(v) for v in np.asarray(action).reshape(-1)]
    if len(a) != 8:
        raise ValueError(f"action must have 8 components, got {len(a)}")
    for value, size, name in zip(a, spaces.ACTION_NVEC, spaces.ACTION_COMPONENTS, strict=True):
        if not 0 <= value < size:
            raise ValueError(f"action component {name}={value} out of range [0, {size})")
    move, strafe, jump_sneak_sprint, pitch_bin, yaw_bin, fn, craft_arg, slot = a
    commands = [
        f"forward {int(move == 1)}",
        f"back {int(move == 2)}",
        f"left {int(strafe == 1)}",
        f"right {int(strafe == 2)}",
        f"jump {int(jump_sneak_sprint == 1)}",
        f"sneak {int(jump_sneak_sprint == 2)}",
        f"sprint {int(jump_sneak_sprint == 3)}",
    ]
    pitch = pitch_bin * spaces.CAMERA_BIN_DEG - 180.0
    yaw = yaw_bin * spaces.CAMERA_BIN_DEG - 180.0
    commands.append(f"camera {pitch:g} {yaw:g}")
    commands += [f"use {int(fn == 1)}", f"drop {int(fn == 2)}", f"attack {int(fn == 3)}"]
    reason = ""
    if fn == 4:
        item = spaces.CRAFT_SMELT_ITEMS[craft_arg]
        if craft_arg < spaces.NUM_HAND_CRAFT:
            commands.append(f"craft {item}")
        elif craft_arg < spaces.NUM_HAND_CRAFT + spaces.NUM_TABLE_CRAFT_ONLY:
            commands.append(f"craftNearby {item}")
        else:
            commands.append(f"smeltNearby {item}")
    elif fn in (5, 6, 7):
        item_id = int(inventory_names[slot])
        if item_id == 0:
            reason = f"{spaces.FUNCTIONAL_ACTIONS[fn]} on empty slot {slot} ignored"
        elif fn == 5:
            commands.append(f"equip {spaces.ITEMS[item_id]}")
        elif fn == 6:
            commands.append(f"place {spaces.ITEMS[item_id]}")
        else:  # destroy: MineDojo empties the slot with a chat command in the same tick
            commands.append(f"chat /replaceitem entity @p {mission.replaceitem_slot(slot)} air")
    return commands, reason


# ---------------------------------------------------------------------------------------------
# The env
# ---------------------------------------------------------------------------------------------


class MineDojoEnv(gym.Env):
    """One MineDojo Minecraft instance as a Gymnasium env (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(
        self,
        task: str | TaskSpec,
        config: MineDojoConfig | None = None,
        render_mode: str | None = None,
        **config_overrides: Any,
    ) -> None:
        self.spec_task = tasks.get(task)
        self.config = dataclasses.replace(config or MineDojoConfig(), **config_overrides)
        cfg = self.config
        self.render_mode = render_mode
        self.observation_space = spaces.observation_space(
            cfg.height, cfg.width, voxel_size=2 * cfg.voxel_radius + 1
        )
        self.action_space = spaces.ACTION_SPACE
        self.max_steps = cfg.max_steps or self.spec_task.max_steps
        self._params = TaskParams.from_spec(self.spec_task)
        self._instance: launcher.MinecraftInstance | None = None
        self._client: MalmoClient | None = None
        self._mission_running = False
        self._last_obs: dict[str, Any] | None = None
        self._initial: TaskSignals | None = None
        self._previous: TaskSignals | None = None
        self._succeeded = False  # the success check passed this episode
        self._last_total_time: Any = None
        self._t = 0
        env_id = os.environ.get("MINECLIP_BRIDGE_ENV_ID", str(os.getpid()))
        root = cfg.run_root or tempfile.mkdtemp(prefix="minedojo-instances-")
        self.run_dir = os.path.join(root, f"instance-{env_id}")

    # ------------------------------------------------------------------ simulator plumbing

    def _log_tail(self) -> str:
        if self._instance is None:
            return "(no instance launched by this env; see the external server's log)"
        return f"last lines of {self._instance.log_path}:\n{self._instance.log_tail()}"

    def _fail(self, err: Exception, during: str) -> SimulatorError:
        """Drop the connection (the next reset starts over) and describe what happened."""
        self._mission_running = False
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._instance is not None:
            try:  # a crashed JVM closes its sockets a moment before it can be reaped
                self._instance.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        log_tail = self._log_tail()
        if self._instance is not None and not self._instance.running:
            code = self._instance.proc.returncode
            self._instance.stop(grace_s=0.0)
            self._instance = None
            state = f"Minecraft exited with code {code}"
        elif self._instance is not None:
            state = "Minecraft is still running but stopped answering"
        else:
            state = "the external Malmo server stopped answering"
        return SimulatorError(f"{during}: {err}; {state}. {log_tail}")

    def _ensure_client(self) -> MalmoClient:
        cfg = self.config
        if cfg.malmo_port is not None:
            port = cfg.malmo_port
        else:
            if self._instance is not None and not self._instance.running:
                self._instance.stop(grace_s=0.0)
                self._instance = None
            if self._instance is None:
                self._instance = launcher.launch(
                    launcher.LaunchConfig(
                        jar=cfg.jar,
                        java=cfg.java,
                        run_template=cfg.run_template,
                        headless=cfg.headless,
                        ready_timeout_s=cfg.ready_timeout_s,
                        require_java8=cfg.require_java8,
                    ),
                    self.run_dir,
                )
            port = self._instance.port
        if self._client is None:
            self._client = MalmoClient(port, cfg.malmo_host, cfg.socket_timeout_s)
        return self._client

    def _tick(self, commands: list[str]) -> MalmoFrame:
        return self._client.step(commands)

    # ------------------------------------------------------------------ Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        spec = self.spec_task
        try:
            client = self._ensure_client()
            if self._mission_running and self.config.fast_reset:
                frame = None
                for command in mission.fast_reset_commands(
                    spec, self.np_random, self.config.spread_range
                ):
                    frame = self._tick([command])
            else:
                client.connect()
                client.quit_mission()
                xml = mission.mission_xml(
                    spec,
                    mission.MissionOptions(
                        height=self.config.height,
                        width=self.config.width,
                        voxel_radius=self.config.voxel_radius,
                        world_seed=None if seed is None else int(seed),
                    ),
                )
                client.start_mission(xml, make_token(), self.config.busy_timeout_s)
                frame = client.peek()
                if frame.done:
                    raise MalmoError("Malmo reported done on the first frame of a new mission")
                self._mission_running = True
                for command in mission.mob_commands(spec, self.np_random):
                    frame = self._tick([command])
        except (MalmoConnectionError, MalmoError, OSError) as err:
            raise self._fail(err, "reset failed") from err
        obs = decode_observation(
            frame, self.config.height, self.config.width, self.config.voxel_radius
        )
        self._last_obs = obs
        self._initial = self._previous = signals_from_info(frame.info)
        self._succeeded = False
        self._last_total_time = frame.info.get("total_time")
        self._t = 0
        return obs, {"success": False}

    def step(self, action: Any):
        if self._last_obs is None or not self._mission_running:
            raise RuntimeError("call reset() before step() (and after a SimulatorError)")
        action = check_action(self.action_space, action, names=spaces.ACTION_COMPONENTS)
        commands, invalid = action_to_commands(action, self._last_obs["inventory"]["name"])
        try:
            frame = self._tick(commands)
            if int(action[5]) in EXTRA_TICK_FUNCTIONS:
                for _ in range(self.config.extra_ticks):
                    frame = self._tick(list(RELEASE_ALL))
        except (MalmoConnectionError, MalmoError, OSError) as err:
            raise self._fail(err, f"step {self._t + 1} failed") from err
        obs = decode_observation(
            frame, self.config.height, self.config.width, self.config.voxel_radius
        )
        current = signals_from_info(frame.info)
        reward = float(task_reward(self._params, self._initial, self._previous, current))
        # Sticky within the episode (Creative tasks go on after their check passes).
        self._succeeded = self._succeeded or bool(
            task_success(self._params, self._initial, current)
        )
        success = self._succeeded
        self._previous = current
        self._last_obs = obs
        self._t += 1
        total_time = frame.info.get("total_time")
        info: dict[str, Any] = {
            "success": success,
            "malmo_done": frame.done,
            "stale_info": total_time is not None and total_time == self._last_total_time,
        }
        self._last_total_time = total_time
        if invalid:
            info["invalid_action"] = invalid
        if frame.done:
            self._mission_running = False  # the next reset must start a new mission
        # Creative tasks have no programmatic success in the paper (MineCLIP judges them): the
        # check is reported in info["success"] for evaluation but never ends the episode.
        terminated = success and self.spec_task.category != "creative"
        truncated = frame.done or (self._t >= self.max_steps and not terminated)
        return obs, reward, terminated, truncated, info

    def render(self):
        if self._last_obs is not None:
            return self._last_obs["rgb"]
        return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._instance is not None:
            if self._instance.running:
                try:
                    exit_client = MalmoClient(self._instance.port, timeout_s=2.0)
                    exit_client.connect()
                    exit_client.exit_server()
                    exit_client.close()
                except (MalmoConnectionError, MalmoError):
                    pass  # stop() below kills it anyway
            self._instance.stop(grace_s=2.0)
            self._instance = None
        self._mission_running = False
        super().close()


def make_env(task: str | TaskSpec, **config_overrides: Any) -> MineDojoEnv:
    """Factory used by bridge workers (``"envs.bridge.minedojo:make_env"``)."""
    return MineDojoEnv(task, **config_overrides)


def make_minedojo_vector(
    task: str | TaskSpec,
    num_envs: int,
    *,
    batch_size: int | None = None,
    timeout_s: float = 120.0,
    max_restarts: int = 3,
    autoreset_mode: Any = gym.vector.AutoresetMode.NEXT_STEP,
    log_dir: str | None = None,
    **config_overrides: Any,
):
    """N MineDojo instances in ``ProcessVectorEnv`` workers (one JVM, port and run dir each).

    ``config_overrides`` are ``MineDojoConfig`` fields (``jar=``, ``java=``, ``height=``, ...).
    Resets may launch Minecraft, so their deadline covers the launch and the MissionInit wait.
    """
    from envs.bridge.vector import ProcessVectorEnv

    fields = {f.name for f in dataclasses.fields(MineDojoConfig)}
    unknown = sorted(set(config_overrides) - fields)
    if unknown:
        raise TypeError(f"unknown MineDojo options {unknown}; valid: {sorted(fields)}")
    spec = tasks.get(task)  # fail here, not in N workers, on an unknown task
    cfg = dataclasses.replace(MineDojoConfig(), **config_overrides)
    if cfg.malmo_port is None:
        # The jar and Java 8 are checked here, once, before any worker spawns or any run
        # directory is created (each worker would otherwise fail the same way, N times).
        launcher.check_runtime(
            launcher.LaunchConfig(jar=cfg.jar, java=cfg.java, require_java8=cfg.require_java8)
        )
    run_root = cfg.run_root or tempfile.mkdtemp(prefix="minedojo-instances-")
    config_overrides["run_root"] = run_root  # instance-<env id> dirs side by side
    reset_timeout_s = cfg.ready_timeout_s + cfg.socket_timeout_s * 2 + 60.0
    return ProcessVectorEnv(
        "envs.bridge.minedojo:make_env",
        num_envs,
        batch_size=batch_size,
        timeout_s=timeout_s,
        reset_timeout_s=reset_timeout_s,
        max_restarts=max_restarts,
        autoreset_mode=autoreset_mode,
        log_dir=log_dir or os.path.join(run_root, "worker-logs"),
        task=spec,
        **config_overrides,
    )
