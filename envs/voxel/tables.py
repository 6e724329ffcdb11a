"""Static rule tables of the embedded world: blocks, items, mobs, recipes.

Everything here is plain NumPy built once at import; the step function closes over the arrays as
constants. Block ids are the world's own small ``uint8`` ids (``BLOCK_NAMES``, 0 = air), which is
also the index order the renderer's assets use. Items are ``envs.spaces`` item ids; mob types are
``envs.spaces`` entity ids (the world simulates the first ``NUM_MOB_TYPES`` entities).

Numbers follow Minecraft 1.11 where it matters for the tasks (block hardness, tool speeds and
tiers, mob health and damage, weapon damage, food values); simplifications are noted inline.
"""

from __future__ import annotations

import numpy as np

from envs import spaces

I = spaces.item_id  # noqa: E741  (short alias used only in the tables below)

# ---------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------

# name, solid, liquid, opaque, hardness (s; inf = unbreakable), tool class, min tier, drop item,
# drop count. Tool classes: 0 any, 1 pickaxe, 2 axe, 3 shovel. Tiers: 0 hand, 1 wood, 2 stone,
# 3 iron, 4 diamond (gold counts as wood tier, as in Minecraft).
_NONE, _PICK, _AXE, _SHOVEL = 0, 1, 2, 3
INF = float("inf")
_BLOCK_ROWS = [
    ("air", 0, 0, 0, 0.0, _NONE, 0, "air", 0),
    ("stone", 1, 0, 1, 1.5, _PICK, 1, "cobblestone", 1),
    ("grass", 1, 0, 1, 0.6, _SHOVEL, 0, "dirt", 1),
    ("dirt", 1, 0, 1, 0.5, _SHOVEL, 0, "dirt", 1),
    ("cobblestone", 1, 0, 1, 2.0, _PICK, 1, "cobblestone", 1),
    ("planks", 1, 0, 1, 2.0, _AXE, 0, "planks", 1),
    ("log", 1, 0, 1, 2.0, _AXE, 0, "log", 1),
    ("leaves", 1, 0, 0, 0.2, _NONE, 0, "air", 0),  # saplings/apples not modelled
    ("sand", 1, 0, 1, 0.5, _SHOVEL, 0, "sand", 1),
    ("gravel", 1, 0, 1, 0.6, _SHOVEL, 0, "gravel", 1),
    ("water", 0, 1, 0, INF, _NONE, 0, "air", 0),
    ("coal_ore", 1, 0, 1, 3.0, _PICK, 1, "coal", 1),
    ("iron_ore", 1, 0, 1, 3.0, _PICK, 2, "iron_ore", 1),
    ("gold_ore", 1, 0, 1, 3.0, _PICK, 3, "gold_ore", 1),
    ("diamond_ore", 1, 0, 1, 3.0, _PICK, 3, "diamond", 1),
    ("bedrock", 1, 0, 1, INF, _NONE, 0, "air", 0),
    ("obsidian", 1, 0, 1, 50.0, _PICK, 4, "obsidian", 1),
    ("portal", 0, 0, 0, INF, _NONE, 0, "air", 0),
    ("crafting_table", 1, 0, 1, 2.5, _AXE, 0, "crafting_table", 1),
    ("furnace", 1, 0, 1, 3.5, _PICK, 1, "furnace", 1),
    ("wool", 1, 0, 1, 0.8, _NONE, 0, "wool", 1),
    ("carpet", 0, 0, 0, 0.1, _NONE, 0, "carpet", 1),  # thin: walkable over, not collidable
    ("tallgrass", 0, 0, 0, 0.0, _NONE, 0, "air", 0),
    ("sandstone", 1, 0, 1, 0.8, _PICK, 1, "sandstone", 1),
    ("torch", 0, 0, 0, 0.0, _NONE, 0, "torch", 1),
    ("cactus", 1, 0, 0, 0.4, _NONE, 0, "cactus", 1),
    ("red_flower", 0, 0, 0, 0.0, _NONE, 0, "red_flower", 1),
    ("yellow_flower", 0, 0, 0, 0.0, _NONE, 0, "yellow_flower", 1),
    ("clay", 1, 0, 1, 0.6, _SHOVEL, 0, "clay_ball", 4),
    ("waterlily", 0, 0, 0, 0.0, _NONE, 0, "waterlily", 1),
    ("glass", 1, 0, 0, 0.3, _NONE, 0, "air", 0),
    ("brick_block", 1, 0, 1, 2.0, _PICK, 1, "brick_block", 1),
]
BLOCK_NAMES: tuple[str, ...] = tuple(r[0] for r in _BLOCK_ROWS)
NUM_BLOCK_TYPES = len(BLOCK_NAMES)
B = {name: i for i, name in enumerate(BLOCK_NAMES)}  # block name -> world block id

BLOCK_SOLID = np.array([r[1] for r in _BLOCK_ROWS], bool)
BLOCK_LIQUID = np.array([r[2] for r in _BLOCK_ROWS], bool)
BLOCK_OPAQUE = np.array([r[3] for r in _BLOCK_ROWS], bool)
BLOCK_HARDNESS = np.array([r[4] for r in _BLOCK_ROWS], np.float32)
BLOCK_TOOL = np.array([r[5] for r in _BLOCK_ROWS], np.int32)
BLOCK_MIN_TIER = np.array([r[6] for r in _BLOCK_ROWS], np.int32)
BLOCK_DROP = np.array([I(r[7]) for r in _BLOCK_ROWS], np.int32)
BLOCK_DROP_COUNT = np.array([r[8] for r in _BLOCK_ROWS], np.int32)
BLOCK_BREAKABLE = np.isfinite(BLOCK_HARDNESS) & ~BLOCK_LIQUID & (np.arange(NUM_BLOCK_TYPES) > 0)
# Blocks a placed block may replace (grass tufts, flowers, water).
BLOCK_REPLACEABLE = np.isin(
    np.arange(NUM_BLOCK_TYPES),
    [B["air"], B["water"], B["tallgrass"], B["red_flower"], B["yellow_flower"]],
)
BLOCK_CAN_BURN = np.isin(
    np.arange(NUM_BLOCK_TYPES),
    [
        B["planks"],
        B["log"],
        B["leaves"],
        B["wool"],
        B["carpet"],
        B["tallgrass"],
        B["crafting_table"],
    ],
)
# World block id -> envs.spaces.BLOCKS id (for the voxels observation).
BLOCK_TO_SPACES = np.array([spaces.block_id(n) for n in BLOCK_NAMES], np.int32)

# ---------------------------------------------------------------------------------------------
# Items (indexed by envs.spaces item id)
# ---------------------------------------------------------------------------------------------

N = spaces.NUM_ITEMS
ITEM_MAX_STACK = np.full(N, 64, np.int32)
ITEM_TOOL_CLASS = np.zeros(N, np.int32)  # 1 pickaxe, 2 axe, 3 shovel, 4 sword, 5 shears, 6 hoe
ITEM_TIER = np.zeros(N, np.int32)
ITEM_SPEED = np.ones(N, np.float32)  # mining speed multiplier with the right tool class
ITEM_DAMAGE = np.ones(N, np.float32)  # melee damage (hand = 1)
ITEM_MAX_DURABILITY = np.full(N, -1, np.int32)  # -1: cannot be damaged
ITEM_FOOD = np.zeros(N, np.float32)  # hunger points restored
ITEM_SATURATION = np.zeros(N, np.float32)
ITEM_ARMOR = np.zeros(N, np.float32)  # armour points
ITEM_ARMOR_SLOT = np.full(N, -1, np.int32)  # 0 feet, 1 legs, 2 chest, 3 head, 4 offhand
ITEM_PLACES = np.zeros(N, np.int32)  # world block id a placeable item becomes (0: none)

_TIERS = {"wooden": (1, 2.0, 59), "stone": (2, 4.0, 131), "iron": (3, 6.0, 250),
          "golden": (1, 12.0, 32), "diamond": (4, 8.0, 1561)}  # fmt: skip
# Minecraft 1.11 attack damage (hearts x2) per material for sword / axe / pickaxe / shovel / hoe.
_DAMAGE = {
    "wooden": (4, 7, 2, 2.5, 1), "stone": (5, 9, 3, 3.5, 1), "iron": (6, 9, 4, 4.5, 1),
    "golden": (4, 7, 2, 2.5, 1), "diamond": (7, 9, 5, 5.5, 1),
}  # fmt: skip
for mat, (tier, speed, dur) in _TIERS.items():
    for k, (kind, cls) in enumerate(
        (("sword", 4), ("axe", 2), ("pickaxe", 1), ("shovel", 3), ("hoe", 6))
    ):
        i = I(f"{mat}_{kind}")
        ITEM_MAX_STACK[i] = 1
        ITEM_TOOL_CLASS[i] = cls
        ITEM_TIER[i] = tier
        ITEM_SPEED[i] = speed if cls in (1, 2, 3) else 1.0
        ITEM_DAMAGE[i] = _DAMAGE[mat][k]
        ITEM_MAX_DURABILITY[i] = dur
i = I("shears")
ITEM_MAX_STACK[i], ITEM_TOOL_CLASS[i], ITEM_MAX_DURABILITY[i] = 1, 5, 238
for name in ("milk_bucket", "water_bucket", "lava_bucket", "shield", "bow"):
    ITEM_MAX_STACK[I(name)] = 1
ITEM_MAX_STACK[I("bucket")] = 16
ITEM_MAX_DURABILITY[I("shield")] = 336
ITEM_ARMOR_SLOT[I("shield")] = 4
_ARMOR = {"leather": (1, 2, 3, 1), "chainmail": (1, 4, 5, 2), "iron": (2, 5, 6, 2),
          "golden": (1, 3, 5, 2), "diamond": (3, 6, 8, 3)}  # fmt: skip
_ARMOR_DUR = {"leather": 5, "chainmail": 15, "iron": 15, "golden": 7, "diamond": 33}
for mat, pts in _ARMOR.items():
    for slot, (piece, mult) in enumerate(
        (("boots", 13), ("leggings", 15), ("chestplate", 16), ("helmet", 11))
    ):
        i = I(f"{mat}_{piece}")
        ITEM_MAX_STACK[i] = 1
        ITEM_ARMOR[i] = pts[slot]
        ITEM_ARMOR_SLOT[i] = slot
        ITEM_MAX_DURABILITY[i] = mult * _ARMOR_DUR[mat]
for name, food, sat in (
    ("beef", 3, 1.8), ("cooked_beef", 8, 12.8), ("porkchop", 3, 1.8), ("cooked_porkchop", 8, 12.8),
    ("mutton", 2, 1.2), ("cooked_mutton", 6, 9.6), ("chicken", 2, 1.2), ("cooked_chicken", 6, 7.2),
    ("apple", 4, 2.4), ("bread", 5, 6.0), ("rotten_flesh", 4, 0.8), ("milk_bucket", 0, 0.0),
):  # fmt: skip
    ITEM_FOOD[I(name)] = food
    ITEM_SATURATION[I(name)] = sat
for bname in BLOCK_NAMES:
    if bname in spaces.PLACEABLE_ITEMS and bname not in ("air", "grass", "tallgrass"):
        ITEM_PLACES[I(bname)] = B[bname]
ITEM_PLACES[I("grass")] = B["grass"]
ITEM_IS_FOOD = ITEM_FOOD > 0

# ---------------------------------------------------------------------------------------------
# Mobs (type id = envs.spaces entity id)
# ---------------------------------------------------------------------------------------------

MOB_NAMES: tuple[str, ...] = spaces.ENTITIES[:9]
NUM_MOB_TYPES = len(MOB_NAMES)
M = {name: i for i, name in enumerate(MOB_NAMES)}
# health, width, height, walk speed (blocks/tick), hostile, neutral (hostile once hit),
# melee damage, ranged damage
_MOB_ROWS = {
    "cow": (10, 0.9, 1.4, 0.05, 0, 0, 0.0, 0.0),
    "sheep": (8, 0.9, 1.3, 0.05, 0, 0, 0.0, 0.0),
    "pig": (10, 0.9, 0.9, 0.05, 0, 0, 0.0, 0.0),
    "chicken": (4, 0.4, 0.7, 0.04, 0, 0, 0.0, 0.0),
    "zombie": (20, 0.6, 1.95, 0.09, 1, 0, 3.0, 0.0),
    "spider": (16, 1.4, 0.9, 0.12, 1, 0, 2.0, 0.0),
    "skeleton": (20, 0.6, 1.99, 0.09, 1, 0, 0.0, 3.0),
    "enderman": (40, 0.6, 2.9, 0.12, 0, 1, 7.0, 0.0),
    "zombie_pigman": (20, 0.6, 1.95, 0.09, 0, 1, 9.0, 0.0),
}
MOB_HEALTH = np.array([_MOB_ROWS[n][0] for n in MOB_NAMES], np.float32)
MOB_WIDTH = np.array([_MOB_ROWS[n][1] for n in MOB_NAMES], np.float32)
MOB_HEIGHT = np.array([_MOB_ROWS[n][2] for n in MOB_NAMES], np.float32)
MOB_SPEED = np.array([_MOB_ROWS[n][3] for n in MOB_NAMES], np.float32)
MOB_HOSTILE = np.array([_MOB_ROWS[n][4] for n in MOB_NAMES], bool)
MOB_NEUTRAL = np.array([_MOB_ROWS[n][5] for n in MOB_NAMES], bool)
MOB_MELEE = np.array([_MOB_ROWS[n][6] for n in MOB_NAMES], np.float32)
MOB_RANGED = np.array([_MOB_ROWS[n][7] for n in MOB_NAMES], np.float32)
MOB_PASSIVE = ~MOB_HOSTILE & ~MOB_NEUTRAL
# Struck passive animals panic (Minecraft 1.11 EntityAIPanic): while revenge-targeted (100 ticks
# after the last hit, EntityLivingBase.onEntityUpdate) they run to random spots within
# PANIC_RANGE blocks horizontally (RandomPositionGenerator.findRandomTarget(creature, 5, 4)),
# a new one on arrival, at their walking speed times the panic speed modifier each animal's
# initEntityAI passes: EntityCow 2.0, EntitySheep / EntityPig 1.25, EntityChicken 1.4. Minecraft's
# ground speed grows faster than linearly with the AI speed; the world scales it linearly.
PANIC_TICKS = 100
PANIC_RANGE = 5
_PANIC_SPEED = {"cow": 2.0, "sheep": 1.25, "pig": 1.25, "chicken": 1.4}
MOB_PANIC_SPEED = np.array([_PANIC_SPEED.get(n, 1.0) for n in MOB_NAMES], np.float32)
# Drops: up to two (item, min, max) per mob; sheep's wool only while unsheared.
_DROPS = {
    "cow": (("beef", 1, 3), ("leather", 0, 2)),
    "sheep": (("mutton", 1, 2), ("wool", 1, 1)),
    "pig": (("porkchop", 1, 3), ("air", 0, 0)),
    "chicken": (("chicken", 1, 1), ("feather", 0, 2)),
    "zombie": (("rotten_flesh", 0, 2), ("air", 0, 0)),
    "spider": (("string", 0, 2), ("spider_eye", 0, 1)),
    "skeleton": (("bone", 0, 2), ("arrow", 0, 2)),
    "enderman": (("ender_pearl", 0, 1), ("air", 0, 0)),
    "zombie_pigman": (("rotten_flesh", 0, 1), ("gold_nugget", 0, 1)),
}
MOB_DROP_ITEM = np.array([[I(d[0]) for d in _DROPS[n]] for n in MOB_NAMES], np.int32)
MOB_DROP_MIN = np.array([[d[1] for d in _DROPS[n]] for n in MOB_NAMES], np.int32)
MOB_DROP_MAX = np.array([[d[2] for d in _DROPS[n]] for n in MOB_NAMES], np.int32)
HOSTILE_SPAWN_TYPES = np.array([M["zombie"], M["spider"], M["skeleton"], M["enderman"]], np.int32)

# ---------------------------------------------------------------------------------------------
# Recipes
# ---------------------------------------------------------------------------------------------

STATION_NONE, STATION_TABLE, STATION_FURNACE = 0, 1, 2
# output, count, ingredients {item: count}, station. Shapes are not modelled: a recipe is its
# ingredient multiset (MineDojo's craft action also names only the output).
_RECIPES = [
    ("planks", 4, {"log": 1}, STATION_NONE),
    ("stick", 4, {"planks": 2}, STATION_NONE),
    ("crafting_table", 1, {"planks": 4}, STATION_NONE),
    ("torch", 4, {"coal": 1, "stick": 1}, STATION_NONE),
    ("carpet", 3, {"wool": 2}, STATION_NONE),
    ("wool", 1, {"string": 4}, STATION_NONE),
    ("shears", 1, {"iron_ingot": 2}, STATION_NONE),
    ("furnace", 1, {"cobblestone": 8}, STATION_TABLE),
    ("bucket", 1, {"iron_ingot": 3}, STATION_TABLE),
    ("bowl", 4, {"planks": 3}, STATION_TABLE),
    ("chest", 1, {"planks": 8}, STATION_TABLE),
    ("bread", 1, {"wheat": 3}, STATION_TABLE),
    ("wooden_slab", 6, {"planks": 3}, STATION_TABLE),
]
for mat, ing in (("wooden", "planks"), ("stone", "cobblestone"), ("iron", "iron_ingot"),
                 ("golden", "gold_ingot"), ("diamond", "diamond")):  # fmt: skip
    _RECIPES += [
        (f"{mat}_pickaxe", 1, {ing: 3, "stick": 2}, STATION_TABLE),
        (f"{mat}_axe", 1, {ing: 3, "stick": 2}, STATION_TABLE),
        (f"{mat}_shovel", 1, {ing: 1, "stick": 2}, STATION_TABLE),
        (f"{mat}_sword", 1, {ing: 2, "stick": 1}, STATION_TABLE),
        (f"{mat}_hoe", 1, {ing: 2, "stick": 2}, STATION_TABLE),
    ]
for mat, ing in (("leather", "leather"), ("iron", "iron_ingot"), ("diamond", "diamond")):
    _RECIPES += [
        (f"{mat}_helmet", 1, {ing: 5}, STATION_TABLE),
        (f"{mat}_chestplate", 1, {ing: 8}, STATION_TABLE),
        (f"{mat}_leggings", 1, {ing: 7}, STATION_TABLE),
        (f"{mat}_boots", 1, {ing: 4}, STATION_TABLE),
    ]
# Smelting needs fuel (one coal, log or planks per item: a simplification of burn times).
_RECIPES += [
    (out, 1, {inp: 1}, STATION_FURNACE)
    for out, inp in (
        ("iron_ingot", "iron_ore"), ("gold_ingot", "gold_ore"), ("stone", "cobblestone"),
        ("glass", "sand"), ("cooked_beef", "beef"), ("cooked_porkchop", "porkchop"),
        ("cooked_mutton", "mutton"), ("cooked_chicken", "chicken"), ("coal", "log"),
        ("brick", "clay_ball"),
    )
]  # fmt: skip
MAX_INGREDIENTS = 2
NUM_RECIPES = len(_RECIPES)
RECIPE_OUT = np.array([I(r[0]) for r in _RECIPES], np.int32)
RECIPE_COUNT = np.array([r[1] for r in _RECIPES], np.int32)
RECIPE_IN = np.zeros((NUM_RECIPES, MAX_INGREDIENTS), np.int32)
RECIPE_IN_N = np.zeros((NUM_RECIPES, MAX_INGREDIENTS), np.int32)
for r, (_, _, ing, _) in enumerate(_RECIPES):
    assert len(ing) <= MAX_INGREDIENTS
    for k, (name, n) in enumerate(ing.items()):
        RECIPE_IN[r, k], RECIPE_IN_N[r, k] = I(name), n
RECIPE_STATION = np.array([r[3] for r in _RECIPES], np.int32)
FUEL_ITEMS = np.array([I("coal"), I("log"), I("planks")], np.int32)
# Craft argument (0..243) -> recipe index, -1 where the world has no recipe (masked out).
CRAFT_ARG_TO_RECIPE = np.full(spaces.NUM_CRAFT_SMELT, -1, np.int32)
for r, row in enumerate(_RECIPES):
    CRAFT_ARG_TO_RECIPE[spaces.craft_index(row[0])] = r
RECIPE_NAMES: tuple[str, ...] = tuple(r[0] for r in _RECIPES)


def recipe(name: str) -> tuple[int, dict[str, int], int]:
    """(count, ingredients, station) of the world's recipe for ``name`` (for docs and tests)."""
    for out, n, ing, st in _RECIPES:
        if out == name:
            return n, dict(ing), st
    raise KeyError(f"the voxel world has no recipe for {name!r}; it has {RECIPE_NAMES}")


# Biomes the world generates, as MineDojo biome names (ids from envs.spaces.BIOMES).
WORLD_BIOMES: tuple[str, ...] = (
    "plains", "forest", "desert", "ocean", "beach", "extreme_hills", "swampland",
)  # fmt: skip
WORLD_BIOME_IDS = np.array([spaces.biome_id(b) for b in WORLD_BIOMES], np.int32)

for _arr in list(globals().values()):
    if isinstance(_arr, np.ndarray):
        _arr.setflags(write=False)
