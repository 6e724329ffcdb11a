"""MineDojo's observation and action spaces.

The name tables (``ITEMS``, ``BLOCKS``, ``ENTITIES``, ``BIOMES``, ``CRAFT_SMELT_ITEMS`` and their
id lookups) live in ``envs.items`` and are re-exported here, so ``spaces.item_id("log")`` works.

The observation dict matches MineDojo's ``minedojo.make`` keys except that ``rgb`` is channels-last
``[H, W, 3]`` (``envs.wrappers.ChannelsFirst`` restores ``(3, H, W)``), names are ids rather than
strings, and ``delta_inv`` is not produced. The action space is MineDojo's
``MultiDiscrete([3, 3, 4, 25, 25, 8, 244, 36])``.

The compact action set (``COMPACT_ACTIONS``) is the paper's 89 discrete actions (appendix G.2):

* ids 0..80: camera turns, ``pitch_bin * 9 + yaw_bin`` with bins -60..+60 degrees in 15 degree
  steps; id 40 is (0, 0), which is also the no-op (the paper merges no-op into the camera block);
* ids 81..86: forward, forward + jump, jump, back, left, right;
* id 87: use; id 88: attack.

Each compact action is exactly one MultiDiscrete vector (a row of ``COMPACT_ACTIONS``).

The "combo" set (``COMBO_ACTIONS``, 22 actions) lets one step move and attack (or use) at once,
as COPL's MineCLIP-reward hunters act (movement x {no-op, use, attack}), which none of the
paper's 89 can:

* ids 0..17: ``move * 3 + fn``, move in (no-op, forward, forward + jump, back, left, right),
  fn in (no-op, attack, use); id 0 is the no-op;
* ids 18..21: turn left, turn right (yaw -15 / +15 degrees), look up, look down (pitch -15 /
  +15 degrees), the paper's bin.

``compact_action_set(name)`` gives either set ("paper" or "combo") with its names and no-op.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np

from envs.items import (  # noqa: F401  (re-exported: envs.spaces is where callers look)
    BIOME_NAMES,
    BIOMES,
    BLOCKS,
    CRAFT_SMELT_ITEMS,
    ENTITIES,
    ENTITY_ALIASES,
    ITEMS,
    NUM_BIOME_IDS,
    NUM_BLOCKS,
    NUM_CRAFT_SMELT,
    NUM_ENTITIES,
    NUM_HAND_CRAFT,
    NUM_ITEMS,
    NUM_SMELT,
    NUM_TABLE_CRAFT_ONLY,
    PLACEABLE_ITEMS,
    biome_id,
    block_id,
    block_name,
    craft_index,
    entity_id,
    entity_name,
    item_id,
    item_name,
)

# ---------------------------------------------------------------------------------------------
# Action space
# ---------------------------------------------------------------------------------------------

ACTION_NVEC = (3, 3, 4, 25, 25, 8, 244, 36)
ACTION_SPACE = gym.spaces.MultiDiscrete(np.array(ACTION_NVEC, dtype=np.int64))
NOOP_ACTION = np.array([0, 0, 0, 12, 12, 0, 0, 0], dtype=np.int64)
CAMERA_BIN_DEG = 15.0  # camera value v turns by v * 15 - 180 degrees; 12 = no turn
CAMERA_NOOP_BIN = 12
NUM_INVENTORY_SLOTS = 36
NUM_EQUIPMENT_SLOTS = 6  # mainhand, feet, legs, chest, head, offhand

# Component names and value meanings, for docs and pretty-printing.
ACTION_COMPONENTS = ("move", "strafe", "jump_sneak_sprint", "pitch", "yaw", "functional",
                     "craft_arg", "slot_arg")  # fmt: skip
FN_NOOP, FN_USE, FN_DROP, FN_ATTACK, FN_CRAFT, FN_EQUIP, FN_PLACE, FN_DESTROY = range(8)
FUNCTIONAL_ACTIONS = ("no_op", "use", "drop", "attack", "craft", "equip", "place", "destroy")


def camera_bin(delta_deg: float) -> int:
    """Camera action value for a turn of ``delta_deg`` degrees (a multiple of 15 in [-180, 180])."""
    v = (delta_deg + 180.0) / CAMERA_BIN_DEG
    if abs(v - round(v)) > 1e-6 or not 0 <= round(v) <= 24:
        raise ValueError(f"camera turn {delta_deg} is not a multiple of 15 degrees in [-180, 180]")
    return int(round(v))


def _compact_table() -> np.ndarray:
    rows = []
    turns = range(-60, 61, 15)  # 9 bins
    for pitch in turns:
        for yaw in turns:
            a = NOOP_ACTION.copy()
            a[3], a[4] = camera_bin(pitch), camera_bin(yaw)
            rows.append(a)
    for move, strafe, jump in ((1, 0, 0), (1, 0, 1), (0, 0, 1), (2, 0, 0), (0, 1, 0), (0, 2, 0)):
        a = NOOP_ACTION.copy()
        a[0], a[1], a[2] = move, strafe, jump
        rows.append(a)
    for fn in (FN_USE, FN_ATTACK):
        a = NOOP_ACTION.copy()
        a[5] = fn
        rows.append(a)
    return np.stack(rows).astype(np.int32)


COMPACT_ACTIONS: np.ndarray = _compact_table()  # int32 [89, 8]
COMPACT_ACTIONS.setflags(write=False)
NUM_COMPACT_ACTIONS = COMPACT_ACTIONS.shape[0]
COMPACT_NOOP = 40  # camera (0, 0)
COMPACT_NAMES: tuple[str, ...] = tuple(
    [f"camera_pitch{p:+d}_yaw{y:+d}" for p in range(-60, 61, 15) for y in range(-60, 61, 15)]
    + ["forward", "forward_jump", "jump", "back", "left", "right", "use", "attack"]
)


_COMBO_MOVES = {  # name: (move, strafe, jump); strafe 1 is left
    "noop": (0, 0, 0), "forward": (1, 0, 0), "forward_jump": (1, 0, 1), "back": (2, 0, 0),
    "left": (0, 1, 0), "right": (0, 2, 0),
}  # fmt: skip
_COMBO_FNS = {"": FN_NOOP, "attack": FN_ATTACK, "use": FN_USE}
_COMBO_TURNS = {  # name: (pitch, yaw) in degrees; positive yaw turns right, positive pitch down
    "turn_left": (0, -15), "turn_right": (0, 15), "look_up": (-15, 0), "look_down": (15, 0),
}  # fmt: skip


def _combo_table() -> tuple[np.ndarray, tuple[str, ...]]:
    rows, names = [], []
    for move_name, (move, strafe, jump) in _COMBO_MOVES.items():
        for fn_name, fn in _COMBO_FNS.items():
            a = NOOP_ACTION.copy()
            a[0], a[1], a[2], a[5] = move, strafe, jump, fn
            rows.append(a)
            if move_name == "noop":
                names.append(fn_name or "noop")
            else:
                names.append(f"{move_name}+{fn_name}" if fn_name else move_name)
    for name, (pitch, yaw) in _COMBO_TURNS.items():
        a = NOOP_ACTION.copy()
        a[3], a[4] = camera_bin(pitch), camera_bin(yaw)
        rows.append(a)
        names.append(name)
    return np.stack(rows).astype(np.int32), tuple(names)


COMBO_ACTIONS, COMBO_NAMES = _combo_table()  # int32 [22, 8]
COMBO_ACTIONS.setflags(write=False)
NUM_COMBO_ACTIONS = COMBO_ACTIONS.shape[0]
COMBO_NOOP = 0


@dataclasses.dataclass(frozen=True, eq=False)
class CompactActionSet:
    """A discrete action set: action id i is the MineDojo MultiDiscrete action ``table[i]``."""

    name: str  # "paper" or "combo"
    table: np.ndarray  # int32 [A, 8], read-only
    names: tuple[str, ...]  # one per action id
    noop: int  # id of the no-op action

    @property
    def num_actions(self) -> int:
        return int(self.table.shape[0])


COMPACT_ACTION_SETS: dict[str, CompactActionSet] = {
    "paper": CompactActionSet("paper", COMPACT_ACTIONS, COMPACT_NAMES, COMPACT_NOOP),
    "combo": CompactActionSet("combo", COMBO_ACTIONS, COMBO_NAMES, COMBO_NOOP),
}


def compact_action_set(name: str) -> CompactActionSet:
    """The discrete action set ``name``: "paper" (the paper's 89) or "combo" (22; a step can
    move and attack or use at once)."""
    if name not in COMPACT_ACTION_SETS:
        raise KeyError(f"unknown compact action set {name!r}; one of {sorted(COMPACT_ACTION_SETS)}")
    return COMPACT_ACTION_SETS[name]


def balanced_compact_logits() -> np.ndarray:
    """Log-probabilities float64 [89] of the "balanced" distribution over the compact actions:
    four groups get a quarter of the probability each, uniform within a group: level camera
    turns (pitch 0, 9 incl. the no-op), turns that change the pitch (72), movement (6) and
    {use, attack}. A uniform choice tilts the view on 72 of 89 steps and so stares at the sky
    or the ground; this one is how a fresh agent acts (agents' --action-prior balanced) and how
    the MineCLIP training clips' agent-like controller acts (envs.voxel.scripted)."""

    def group(name: str) -> int:
        if name.startswith("camera_pitch+0_"):
            return 0
        if name.startswith("camera"):
            return 1
        return 3 if name in ("use", "attack") else 2

    groups = np.array([group(n) for n in COMPACT_NAMES])
    sizes = np.bincount(groups, minlength=4)
    return np.log(1.0 / (4.0 * sizes[groups]))


# ---------------------------------------------------------------------------------------------
# Observation space
# ---------------------------------------------------------------------------------------------

_F32 = np.float32
_INF = np.inf


def _box(low, high, shape, dtype=_F32) -> gym.spaces.Box:
    return gym.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


def _flag(shape=()) -> gym.spaces.Box:
    return gym.spaces.Box(low=0, high=1, shape=shape, dtype=bool)


def _slots_space(n: int) -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {
            "name": _box(0, NUM_ITEMS - 1, (n,), np.int32),  # item ids
            "variant": _box(0, 120, (n,), np.int32),
            "quantity": _box(0.0, 64.0, (n,)),
            "max_durability": _box(-1.0, _INF, (n,)),  # -1: cannot be damaged
            "cur_durability": _box(-1.0, _INF, (n,)),
        }
    )


def observation_space(
    height: int = 160, width: int = 256, *, rgb: bool = True, voxel_size: int = 3
) -> gym.spaces.Dict:
    """MineDojo's ``make()`` observation dict with names as ids and channels-last ``rgb``.

    Args:
      height, width: image size of ``rgb``.
      rgb: include the ``rgb`` key (False for state-only agents with rendering off).
      voxel_size: edge of the cube of ``voxels`` around the player (MineDojo uses 3).
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {height}x{width}")
    v = (voxel_size,) * 3
    spaces: dict[str, gym.Space] = {}
    if rgb:
        spaces["rgb"] = _box(0, 255, (height, width, 3), np.uint8)
    spaces["inventory"] = _slots_space(NUM_INVENTORY_SLOTS)
    spaces["equipment"] = _slots_space(NUM_EQUIPMENT_SLOTS)
    spaces["life_stats"] = gym.spaces.Dict(
        {
            "life": _box(0.0, 20.0, (1,)),
            "armor": _box(0.0, 20.0, (1,)),
            "food": _box(0.0, 20.0, (1,)),
            "saturation": _box(0.0, 20.0, (1,)),
            "xp": _box(0.0, 1395.0, (1,)),
            "oxygen": _box(0.0, 300.0, (1,)),
            "is_sleeping": _flag(),
        }
    )
    spaces["location_stats"] = gym.spaces.Dict(
        {
            "pos": _box(-640000.0, 640000.0, (3,)),
            # MineDojo declares [-180, 180]; we wrap yaw into it and clamp pitch to [-90, 90].
            "yaw": _box(-180.0, 180.0, (1,)),
            "pitch": _box(-180.0, 180.0, (1,)),
            "biome_id": _box(0, NUM_BIOME_IDS - 1, (), np.int32),
            "rainfall": _box(0.0, 1.0, (1,)),
            "temperature": _box(0.0, 1.0, (1,)),
            "sea_level": _box(0.0, 255.0, (1,)),
            "light_level": _box(0.0, 15.0, (1,)),
            "sky_light_level": _box(0.0, 1.0, (1,)),
            "sun_brightness": _box(0.0, 1.0, (1,)),
            "is_raining": _flag(),
            "can_see_sky": _flag(),
        }
    )
    spaces["voxels"] = gym.spaces.Dict(
        {
            "block_name": _box(0, NUM_BLOCKS - 1, v, np.int32),  # ids into BLOCKS
            "block_meta": _box(0, 120, v, np.int32),
            "is_collidable": _flag(v),
            "is_tool_not_required": _flag(v),
            "blocks_movement": _flag(v),
            "is_liquid": _flag(v),
            "is_solid": _flag(v),
            "can_burn": _flag(v),
            "blocks_light": _flag(v),
            "cos_look_vec_angle": _box(-1.0, 1.0, v),
        }
    )
    spaces["nearby_tools"] = gym.spaces.Dict({"table": _flag(), "furnace": _flag()})
    spaces["damage_source"] = gym.spaces.Dict(
        {
            "damage_amount": _box(0.0, 40.0, (1,)),
            "damage_distance": _box(0.0, _INF, (1,)),
            "damage_pitch": _box(-90.0, 90.0, (1,)),
            "damage_yaw": _box(-180.0, 180.0, (1,)),
            "hunger_damage": _box(0.0, 20.0, (1,)),
            "is_explosion": _flag(),
            "is_fire_damage": _flag(),
            "is_magic_damage": _flag(),
            "is_projectile": _flag(),
            "is_unblockable": _flag(),
        }
    )
    spaces["masks"] = gym.spaces.Dict(
        {
            "action_type": _flag((8,)),
            "action_arg": _flag((8, 1)),
            "equip": _flag((NUM_INVENTORY_SLOTS,)),
            "place": _flag((NUM_INVENTORY_SLOTS,)),
            "destroy": _flag((NUM_INVENTORY_SLOTS,)),
            "craft_smelt": _flag((NUM_CRAFT_SMELT,)),
        }
    )
    return gym.spaces.Dict(spaces)
