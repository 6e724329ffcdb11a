"""MineDojo's observation and action spaces and the id tables every backend shares.

Names follow MineDojo (Minecraft 1.11.2 registry names with underscores, e.g. ``"milk_bucket"``).
Inside JAX every name is an integer id into one of these tables:

* ``ITEMS``: MineDojo's 392 item names (``mc.ALL_ITEMS``), with ``"air"`` (the empty slot) moved
  to id 0 and the rest in MineDojo's alphabetical order.
* ``BLOCKS``: ``ITEMS`` followed by the blocks that have no item form (water, lava, portal, fire);
  the ``voxels`` observation reports ids in this table.
* ``ENTITIES``: mob names, the nine mobs the embedded world simulates first.
* ``BIOMES``: MineDojo's ``BIOMES_MAP`` (Minecraft 1.11 biome ids).
* ``CRAFT_SMELT_ITEMS``: the 244 craft/smelt arguments of the action space, in MineDojo's order
  (hand-craftable, then table-only, then smeltable; each block alphabetical).

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
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

_HAND_CRAFT = (
    "blaze_powder",
    "book",
    "brick_block",
    "carpet",
    "carrot_on_a_stick",
    "chest_minecart",
    "clay",
    "crafting_table",
    "dye",
    "end_bricks",
    "end_rod",
    "ender_eye",
    "flint_and_steel",
    "furnace_minecart",
    "glowstone",
    "gold_nugget",
    "heavy_weighted_pressure_plate",
    "hopper_minecart",
    "iron_nugget",
    "iron_trapdoor",
    "leather",
    "lever",
    "light_weighted_pressure_plate",
    "lit_pumpkin",
    "magma",
    "magma_cream",
    "melon_seeds",
    "mossy_cobblestone",
    "nether_brick",
    "planks",
    "pumpkin_seeds",
    "purpur_block",
    "purpur_pillar",
    "quartz_block",
    "red_nether_brick",
    "red_sandstone",
    "redstone_torch",
    "sandstone",
    "shears",
    "slime_ball",
    "snow",
    "stick",
    "sticky_piston",
    "stone_button",
    "stone_pressure_plate",
    "stonebrick",
    "sugar",
    "tnt_minecart",
    "torch",
    "trapped_chest",
    "wheat",
    "wooden_button",
    "wooden_pressure_plate",
    "wool",
)
_TABLE_CRAFT_ONLY = (
    "acacia_boat",
    "acacia_door",
    "acacia_fence",
    "acacia_fence_gate",
    "acacia_stairs",
    "activator_rail",
    "anvil",
    "armor_stand",
    "arrow",
    "banner",
    "beacon",
    "bed",
    "beetroot_soup",
    "birch_boat",
    "birch_door",
    "birch_fence",
    "birch_fence_gate",
    "birch_stairs",
    "boat",
    "bone_block",
    "bookshelf",
    "bow",
    "bowl",
    "bread",
    "brewing_stand",
    "brick_stairs",
    "bucket",
    "cake",
    "cauldron",
    "chest",
    "clock",
    "coal_block",
    "cobblestone_wall",
    "comparator",
    "compass",
    "cookie",
    "dark_oak_boat",
    "dark_oak_door",
    "dark_oak_fence",
    "dark_oak_fence_gate",
    "dark_oak_stairs",
    "daylight_detector",
    "detector_rail",
    "diamond_axe",
    "diamond_block",
    "diamond_boots",
    "diamond_chestplate",
    "diamond_helmet",
    "diamond_hoe",
    "diamond_leggings",
    "diamond_pickaxe",
    "diamond_shovel",
    "diamond_sword",
    "dispenser",
    "dropper",
    "emerald_block",
    "enchanting_table",
    "end_crystal",
    "ender_chest",
    "fence",
    "fence_gate",
    "fermented_spider_eye",
    "fire_charge",
    "fishing_rod",
    "flower_pot",
    "furnace",
    "glass_bottle",
    "glass_pane",
    "gold_block",
    "golden_apple",
    "golden_axe",
    "golden_boots",
    "golden_carrot",
    "golden_chestplate",
    "golden_helmet",
    "golden_hoe",
    "golden_leggings",
    "golden_pickaxe",
    "golden_rail",
    "golden_shovel",
    "golden_sword",
    "hay_block",
    "hopper",
    "iron_axe",
    "iron_bars",
    "iron_block",
    "iron_boots",
    "iron_chestplate",
    "iron_door",
    "iron_helmet",
    "iron_hoe",
    "iron_leggings",
    "iron_pickaxe",
    "iron_shovel",
    "iron_sword",
    "item_frame",
    "jukebox",
    "jungle_boat",
    "jungle_door",
    "jungle_fence",
    "jungle_fence_gate",
    "jungle_stairs",
    "ladder",
    "lapis_block",
    "lead",
    "leather_boots",
    "leather_chestplate",
    "leather_helmet",
    "leather_leggings",
    "map",
    "melon_block",
    "minecart",
    "mushroom_stew",
    "nether_brick_fence",
    "nether_brick_stairs",
    "nether_wart_block",
    "noteblock",
    "oak_stairs",
    "observer",
    "painting",
    "paper",
    "piston",
    "prismarine",
    "pumpkin_pie",
    "purple_shulker_box",
    "purpur_slab",
    "purpur_stairs",
    "quartz_stairs",
    "rabbit_stew",
    "rail",
    "red_sandstone_stairs",
    "redstone_block",
    "redstone_lamp",
    "repeater",
    "sandstone_stairs",
    "sea_lantern",
    "shield",
    "sign",
    "slime",
    "snow_layer",
    "speckled_melon",
    "spectral_arrow",
    "spruce_boat",
    "spruce_door",
    "spruce_fence",
    "spruce_fence_gate",
    "spruce_stairs",
    "stained_glass",
    "stained_glass_pane",
    "stained_hardened_clay",
    "stone_axe",
    "stone_brick_stairs",
    "stone_hoe",
    "stone_pickaxe",
    "stone_shovel",
    "stone_slab",
    "stone_slab2",
    "stone_stairs",
    "stone_sword",
    "tnt",
    "trapdoor",
    "tripwire_hook",
    "wooden_axe",
    "wooden_door",
    "wooden_hoe",
    "wooden_pickaxe",
    "wooden_shovel",
    "wooden_slab",
    "wooden_sword",
    "writable_book",
)
_SMELT = (
    "baked_potato",
    "brick",
    "chorus_fruit_popped",
    "coal",
    "cooked_beef",
    "cooked_chicken",
    "cooked_fish",
    "cooked_mutton",
    "cooked_porkchop",
    "cooked_rabbit",
    "diamond",
    "emerald",
    "glass",
    "gold_ingot",
    "hardened_clay",
    "iron_ingot",
    "netherbrick",
    "quartz",
    "redstone",
    "stone",
)
_MINEDOJO_ITEMS = (
    "air",
    "acacia_boat",
    "acacia_door",
    "acacia_fence",
    "acacia_fence_gate",
    "acacia_stairs",
    "activator_rail",
    "anvil",
    "apple",
    "armor_stand",
    "arrow",
    "baked_potato",
    "banner",
    "barrier",
    "beacon",
    "bed",
    "bedrock",
    "beef",
    "beetroot",
    "beetroot_seeds",
    "beetroot_soup",
    "birch_boat",
    "birch_door",
    "birch_fence",
    "birch_fence_gate",
    "birch_stairs",
    "black_shulker_box",
    "blaze_powder",
    "blaze_rod",
    "blue_shulker_box",
    "boat",
    "bone",
    "bone_block",
    "book",
    "bookshelf",
    "bow",
    "bowl",
    "bread",
    "brewing_stand",
    "brick",
    "brick_block",
    "brick_stairs",
    "brown_mushroom",
    "brown_mushroom_block",
    "brown_shulker_box",
    "bucket",
    "cactus",
    "cake",
    "carpet",
    "carrot",
    "carrot_on_a_stick",
    "cauldron",
    "chain_command_block",
    "chainmail_boots",
    "chainmail_chestplate",
    "chainmail_helmet",
    "chainmail_leggings",
    "chest",
    "chest_minecart",
    "chicken",
    "chorus_flower",
    "chorus_fruit",
    "chorus_fruit_popped",
    "chorus_plant",
    "clay",
    "clay_ball",
    "clock",
    "coal",
    "coal_block",
    "coal_ore",
    "cobblestone",
    "cobblestone_wall",
    "command_block",
    "command_block_minecart",
    "comparator",
    "compass",
    "cooked_beef",
    "cooked_chicken",
    "cooked_fish",
    "cooked_mutton",
    "cooked_porkchop",
    "cooked_rabbit",
    "cookie",
    "crafting_table",
    "cyan_shulker_box",
    "dark_oak_boat",
    "dark_oak_door",
    "dark_oak_fence",
    "dark_oak_fence_gate",
    "dark_oak_stairs",
    "daylight_detector",
    "deadbush",
    "detector_rail",
    "diamond",
    "diamond_axe",
    "diamond_block",
    "diamond_boots",
    "diamond_chestplate",
    "diamond_helmet",
    "diamond_hoe",
    "diamond_horse_armor",
    "diamond_leggings",
    "diamond_ore",
    "diamond_pickaxe",
    "diamond_shovel",
    "diamond_sword",
    "dirt",
    "dispenser",
    "double_plant",
    "dragon_breath",
    "dragon_egg",
    "dropper",
    "dye",
    "egg",
    "elytra",
    "emerald",
    "emerald_block",
    "emerald_ore",
    "enchanted_book",
    "enchanting_table",
    "end_bricks",
    "end_crystal",
    "end_portal_frame",
    "end_rod",
    "end_stone",
    "ender_chest",
    "ender_eye",
    "ender_pearl",
    "experience_bottle",
    "farmland",
    "feather",
    "fence",
    "fence_gate",
    "fermented_spider_eye",
    "filled_map",
    "fire_charge",
    "firework_charge",
    "fireworks",
    "fish",
    "fishing_rod",
    "flint",
    "flint_and_steel",
    "flower_pot",
    "furnace",
    "furnace_minecart",
    "ghast_tear",
    "glass",
    "glass_bottle",
    "glass_pane",
    "glowstone",
    "glowstone_dust",
    "gold_block",
    "gold_ingot",
    "gold_nugget",
    "gold_ore",
    "golden_apple",
    "golden_axe",
    "golden_boots",
    "golden_carrot",
    "golden_chestplate",
    "golden_helmet",
    "golden_hoe",
    "golden_horse_armor",
    "golden_leggings",
    "golden_pickaxe",
    "golden_rail",
    "golden_shovel",
    "golden_sword",
    "grass",
    "grass_path",
    "gravel",
    "gray_shulker_box",
    "green_shulker_box",
    "gunpowder",
    "hardened_clay",
    "hay_block",
    "heavy_weighted_pressure_plate",
    "hopper",
    "hopper_minecart",
    "ice",
    "iron_axe",
    "iron_bars",
    "iron_block",
    "iron_boots",
    "iron_chestplate",
    "iron_door",
    "iron_helmet",
    "iron_hoe",
    "iron_horse_armor",
    "iron_ingot",
    "iron_leggings",
    "iron_nugget",
    "iron_ore",
    "iron_pickaxe",
    "iron_shovel",
    "iron_sword",
    "iron_trapdoor",
    "item_frame",
    "jukebox",
    "jungle_boat",
    "jungle_door",
    "jungle_fence",
    "jungle_fence_gate",
    "jungle_stairs",
    "ladder",
    "lapis_block",
    "lapis_ore",
    "lava_bucket",
    "lead",
    "leather",
    "leather_boots",
    "leather_chestplate",
    "leather_helmet",
    "leather_leggings",
    "leaves",
    "leaves2",
    "lever",
    "light_blue_shulker_box",
    "light_weighted_pressure_plate",
    "lime_shulker_box",
    "lingering_potion",
    "lit_pumpkin",
    "log",
    "log2",
    "magenta_shulker_box",
    "magma",
    "magma_cream",
    "map",
    "melon",
    "melon_block",
    "melon_seeds",
    "milk_bucket",
    "minecart",
    "mob_spawner",
    "monster_egg",
    "mossy_cobblestone",
    "mushroom_stew",
    "mutton",
    "mycelium",
    "name_tag",
    "nether_brick",
    "nether_brick_fence",
    "nether_brick_stairs",
    "nether_star",
    "nether_wart",
    "nether_wart_block",
    "netherbrick",
    "netherrack",
    "noteblock",
    "oak_stairs",
    "observer",
    "obsidian",
    "orange_shulker_box",
    "packed_ice",
    "painting",
    "paper",
    "pink_shulker_box",
    "piston",
    "planks",
    "poisonous_potato",
    "porkchop",
    "potato",
    "potion",
    "prismarine",
    "prismarine_crystals",
    "prismarine_shard",
    "pumpkin",
    "pumpkin_pie",
    "pumpkin_seeds",
    "purple_shulker_box",
    "purpur_block",
    "purpur_pillar",
    "purpur_slab",
    "purpur_stairs",
    "quartz",
    "quartz_block",
    "quartz_ore",
    "quartz_stairs",
    "rabbit",
    "rabbit_foot",
    "rabbit_hide",
    "rabbit_stew",
    "rail",
    "record_11",
    "record_13",
    "record_blocks",
    "record_cat",
    "record_chirp",
    "record_far",
    "record_mall",
    "record_mellohi",
    "record_stal",
    "record_strad",
    "record_wait",
    "record_ward",
    "red_flower",
    "red_mushroom",
    "red_mushroom_block",
    "red_nether_brick",
    "red_sandstone",
    "red_sandstone_stairs",
    "red_shulker_box",
    "redstone",
    "redstone_block",
    "redstone_lamp",
    "redstone_ore",
    "redstone_torch",
    "reeds",
    "repeater",
    "repeating_command_block",
    "rotten_flesh",
    "saddle",
    "sand",
    "sandstone",
    "sandstone_stairs",
    "sapling",
    "sea_lantern",
    "shears",
    "shield",
    "shulker_shell",
    "sign",
    "silver_shulker_box",
    "skull",
    "slime",
    "slime_ball",
    "snow",
    "snow_layer",
    "snowball",
    "soul_sand",
    "spawn_egg",
    "speckled_melon",
    "spectral_arrow",
    "spider_eye",
    "splash_potion",
    "sponge",
    "spruce_boat",
    "spruce_door",
    "spruce_fence",
    "spruce_fence_gate",
    "spruce_stairs",
    "stained_glass",
    "stained_glass_pane",
    "stained_hardened_clay",
    "stick",
    "sticky_piston",
    "stone",
    "stone_axe",
    "stone_brick_stairs",
    "stone_button",
    "stone_hoe",
    "stone_pickaxe",
    "stone_pressure_plate",
    "stone_shovel",
    "stone_slab",
    "stone_slab2",
    "stone_stairs",
    "stone_sword",
    "stonebrick",
    "string",
    "structure_block",
    "structure_void",
    "sugar",
    "tallgrass",
    "tipped_arrow",
    "tnt",
    "tnt_minecart",
    "torch",
    "totem_of_undying",
    "trapdoor",
    "trapped_chest",
    "tripwire_hook",
    "vine",
    "water_bucket",
    "waterlily",
    "web",
    "wheat",
    "wheat_seeds",
    "white_shulker_box",
    "wooden_axe",
    "wooden_button",
    "wooden_door",
    "wooden_hoe",
    "wooden_pickaxe",
    "wooden_pressure_plate",
    "wooden_shovel",
    "wooden_slab",
    "wooden_sword",
    "wool",
    "writable_book",
    "written_book",
    "yellow_flower",
    "yellow_shulker_box",
)
_PLACEABLE = (
    "acacia_fence",
    "acacia_fence_gate",
    "acacia_stairs",
    "activator_rail",
    "anvil",
    "banner",
    "barrier",
    "beacon",
    "bedrock",
    "birch_fence",
    "birch_fence_gate",
    "birch_stairs",
    "black_shulker_box",
    "blue_shulker_box",
    "bone_block",
    "bookshelf",
    "brick_block",
    "brick_stairs",
    "brown_mushroom",
    "brown_mushroom_block",
    "brown_shulker_box",
    "cactus",
    "carpet",
    "chain_command_block",
    "chest",
    "chorus_flower",
    "chorus_plant",
    "clay",
    "coal_block",
    "coal_ore",
    "cobblestone",
    "cobblestone_wall",
    "command_block",
    "crafting_table",
    "cyan_shulker_box",
    "dark_oak_fence",
    "dark_oak_fence_gate",
    "dark_oak_stairs",
    "daylight_detector",
    "deadbush",
    "detector_rail",
    "diamond_block",
    "diamond_ore",
    "dirt",
    "dispenser",
    "double_plant",
    "dragon_egg",
    "dropper",
    "emerald_block",
    "emerald_ore",
    "enchanting_table",
    "end_bricks",
    "end_portal_frame",
    "end_rod",
    "end_stone",
    "ender_chest",
    "farmland",
    "fence",
    "fence_gate",
    "furnace",
    "glass",
    "glass_pane",
    "glowstone",
    "gold_block",
    "gold_ore",
    "golden_rail",
    "grass",
    "grass_path",
    "gravel",
    "gray_shulker_box",
    "green_shulker_box",
    "hardened_clay",
    "hay_block",
    "heavy_weighted_pressure_plate",
    "hopper",
    "ice",
    "iron_bars",
    "iron_block",
    "iron_ore",
    "iron_trapdoor",
    "jukebox",
    "jungle_fence",
    "jungle_fence_gate",
    "jungle_stairs",
    "ladder",
    "lapis_block",
    "lapis_ore",
    "leaves",
    "leaves2",
    "lever",
    "light_blue_shulker_box",
    "light_weighted_pressure_plate",
    "lime_shulker_box",
    "lit_pumpkin",
    "log",
    "log2",
    "magenta_shulker_box",
    "magma",
    "melon_block",
    "mob_spawner",
    "monster_egg",
    "mossy_cobblestone",
    "mycelium",
    "nether_brick",
    "nether_brick_fence",
    "nether_brick_stairs",
    "nether_wart_block",
    "netherrack",
    "noteblock",
    "oak_stairs",
    "observer",
    "obsidian",
    "orange_shulker_box",
    "packed_ice",
    "pink_shulker_box",
    "piston",
    "planks",
    "prismarine",
    "pumpkin",
    "purple_shulker_box",
    "purpur_block",
    "purpur_pillar",
    "purpur_slab",
    "purpur_stairs",
    "quartz_block",
    "quartz_ore",
    "quartz_stairs",
    "rail",
    "red_flower",
    "red_mushroom",
    "red_mushroom_block",
    "red_nether_brick",
    "red_sandstone",
    "red_sandstone_stairs",
    "red_shulker_box",
    "redstone_block",
    "redstone_lamp",
    "redstone_ore",
    "redstone_torch",
    "repeating_command_block",
    "sand",
    "sandstone",
    "sandstone_stairs",
    "sapling",
    "sea_lantern",
    "silver_shulker_box",
    "slime",
    "snow",
    "snow_layer",
    "soul_sand",
    "sponge",
    "spruce_fence",
    "spruce_fence_gate",
    "spruce_stairs",
    "stained_glass",
    "stained_glass_pane",
    "stained_hardened_clay",
    "sticky_piston",
    "stone",
    "stone_brick_stairs",
    "stone_button",
    "stone_pressure_plate",
    "stone_slab",
    "stone_slab2",
    "stone_stairs",
    "stonebrick",
    "structure_block",
    "structure_void",
    "tallgrass",
    "tnt",
    "torch",
    "trapdoor",
    "trapped_chest",
    "tripwire_hook",
    "vine",
    "waterlily",
    "web",
    "white_shulker_box",
    "wooden_button",
    "wooden_pressure_plate",
    "wooden_slab",
    "wool",
    "yellow_flower",
    "yellow_shulker_box",
)

# ---------------------------------------------------------------------------------------------
# Item / block tables
# ---------------------------------------------------------------------------------------------

ITEMS: tuple[str, ...] = _MINEDOJO_ITEMS
NUM_ITEMS = len(ITEMS)
_ITEM_IDS = {name: i for i, name in enumerate(ITEMS)}

# Blocks that exist in the world but have no item form in MineDojo's item list.
_NON_ITEM_BLOCKS = ("water", "lava", "portal", "fire")
BLOCKS: tuple[str, ...] = ITEMS + _NON_ITEM_BLOCKS
NUM_BLOCKS = len(BLOCKS)
_BLOCK_IDS = {name: i for i, name in enumerate(BLOCKS)}

# MineDojo's PLACEABLE_ITEM_NAMES (items whose ``block`` flag is set), with underscores.
PLACEABLE_ITEMS: frozenset[str] = frozenset(_PLACEABLE)

CRAFT_SMELT_ITEMS: tuple[str, ...] = _HAND_CRAFT + _TABLE_CRAFT_ONLY + _SMELT
NUM_CRAFT_SMELT = len(CRAFT_SMELT_ITEMS)
# Index ranges of the three blocks: [0, 54) hand craft, [54, 224) needs a table, [224, 244) smelt.
NUM_HAND_CRAFT = len(_HAND_CRAFT)
NUM_TABLE_CRAFT_ONLY = len(_TABLE_CRAFT_ONLY)
NUM_SMELT = len(_SMELT)
_CRAFT_IDS = {name: i for i, name in enumerate(CRAFT_SMELT_ITEMS)}


def _name_at(names: tuple[str, ...], index: int, what: str) -> str:
    """``names[index]``, with an error naming the table when the id is out of range."""
    index = int(index)
    if not 0 <= index < len(names):
        raise IndexError(f"{what} id {index} out of range [0, {len(names)})")
    return names[index]


def _normalise(name: str) -> str:
    name = name.strip().lower()
    if name.startswith("minecraft:"):
        name = name[len("minecraft:") :]
    return name.replace(" ", "_")


def item_id(name: str) -> int:
    """Item id of a MineDojo item name (``"milk_bucket"``; spaces and ``minecraft:`` accepted)."""
    key = _normalise(name)
    if key == "none":
        return 0
    try:
        return _ITEM_IDS[key]
    except KeyError:
        raise KeyError(
            f"unknown item {name!r}: not one of MineDojo's {NUM_ITEMS} item names "
            "(see envs.spaces.ITEMS; e.g. 'milk_bucket', 'log', 'diamond_sword')"
        ) from None


def item_name(index: int) -> str:
    """Item name of an item id (0 -> ``"air"``)."""
    return _name_at(ITEMS, index, "item")


def block_id(name: str) -> int:
    """Block id (``voxels`` observation) of a block name; items and water/lava/portal/fire."""
    key = _normalise(name)
    try:
        return _BLOCK_IDS[key]
    except KeyError:
        raise KeyError(
            f"unknown block {name!r}: not in envs.spaces.BLOCKS (MineDojo item names plus "
            f"{', '.join(_NON_ITEM_BLOCKS)})"
        ) from None


def block_name(index: int) -> str:
    """Block name of a block id."""
    return _name_at(BLOCKS, index, "block")


def craft_index(name: str) -> int:
    """Index of an item in the 244 craft/smelt arguments (action component 6)."""
    key = _normalise(name)
    try:
        return _CRAFT_IDS[key]
    except KeyError:
        raise KeyError(
            f"{name!r} is not a MineDojo craft/smelt target (see envs.spaces.CRAFT_SMELT_ITEMS)"
        ) from None


# ---------------------------------------------------------------------------------------------
# Entities
# ---------------------------------------------------------------------------------------------

# The nine mobs the embedded world simulates come first, so their entity id is also the voxel
# world's mob type; the rest are every other mob named by MineDojo's task specs, then the
# remaining Minecraft 1.11 mobs, so any catalogue task can be expressed.
ENTITIES: tuple[str, ...] = (
    "cow", "sheep", "pig", "chicken", "zombie", "spider", "skeleton", "enderman", "zombie_pigman",
    "creeper", "witch", "shulker", "endermite", "blaze", "ghast", "wither_skeleton", "horse",
    "donkey", "slime", "husk", "bat", "wolf", "llama", "mooshroom", "rabbit", "squid", "guardian",
    "cave_spider", "silverfish", "magma_cube", "stray", "elder_guardian", "zombie_villager",
    "mule", "skeleton_horse", "zombie_horse", "ocelot", "polar_bear", "villager", "iron_golem",
    "snowman", "evoker", "vex", "vindicator", "ender_dragon", "wither",
)  # fmt: skip
NUM_ENTITIES = len(ENTITIES)
_ENTITY_IDS = {name: i for i, name in enumerate(ENTITIES)}
# Minecraft 1.11's own stat keys for two mobs MineDojo's specs name differently.
ENTITY_ALIASES = {"mushroom_cow": "mooshroom", "pig_zombie": "zombie_pigman"}


def entity_id(name: str) -> int:
    """Entity id of a mob name (``"cow"``; MC stat aliases like ``"pig_zombie"`` accepted)."""
    key = _normalise(name)
    key = ENTITY_ALIASES.get(key, key)
    try:
        return _ENTITY_IDS[key]
    except KeyError:
        raise KeyError(
            f"unknown entity {name!r}: not one of envs.spaces.ENTITIES (e.g. 'cow', 'zombie')"
        ) from None


def entity_name(index: int) -> str:
    """Mob name of an entity id."""
    return _name_at(ENTITIES, index, "entity")


# ---------------------------------------------------------------------------------------------
# Biomes (MineDojo's BIOMES_MAP: Minecraft 1.11 ids)
# ---------------------------------------------------------------------------------------------

BIOMES: dict[str, int] = {
    "ice_plains": 12, "ice_plains_spikes": 140, "cold_taiga": 30, "cold_taiga_m": 158,
    "frozen_river": 11, "cold_beach": 26, "extreme_hills": 3, "extreme_hills_m": 131,
    "extreme_hills_plus": 34, "extreme_hills_plus_m": 162, "taiga": 5, "taiga_m": 133,
    "mega_taiga": 32, "mega_spruce_taiga": 160, "stone_beach": 25, "plains": 1,
    "sunflower_plains": 129, "forest": 4, "flower_forest": 132, "birch_forest": 27,
    "birch_forest_m": 155, "roofed_forest": 29, "roofed_forest_m": 157, "swampland": 6,
    "swampland_m": 134, "jungle": 21, "jungle_m": 149, "jungle_edge": 23, "jungle_edge_m": 151,
    "river": 7, "beach": 16, "mushroom_island": 14, "mushroom_island_shore": 15, "desert": 2,
    "desert_m": 130, "savanna": 35, "savanna_m": 163, "mesa": 37, "mesa_bryce": 165,
    "mesa_plateau_f": 38, "mesa_plateau_f_m": 166, "savanna_plateau": 36, "mesa_plateau": 39,
    "savanna_plateau_m": 164, "mesa_plateau_m": 167, "ocean": 0, "deep_ocean": 24,
    "ice_mountains": 13, "desert_hills": 17, "forest_hills": 18, "taiga_hills": 19,
    "jungle_hills": 22, "birch_forest_hills": 28, "cold_taiga_hills": 31, "mega_taiga_hills": 33,
    "tall_birch_hills": 156, "mega_spruce_taiga_hills": 161, "plains_m": 128, "frozen_ocean": 10,
    "extreme_hills_edge": 20, "the_end": 9, "nether": 8, "the_void": 127,
}  # fmt: skip
NUM_BIOME_IDS = 168  # biome ids are in [0, 167]
BIOME_NAMES: dict[int, str] = {v: k for k, v in BIOMES.items()}


def biome_id(name: str) -> int:
    """Minecraft 1.11 biome id of a MineDojo biome name (``"plains"`` -> 1)."""
    key = _normalise(name)
    try:
        return BIOMES[key]
    except KeyError:
        raise KeyError(
            f"unknown biome {name!r}: not one of MineDojo's {len(BIOMES)} biome names "
            "(see envs.spaces.BIOMES)"
        ) from None


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
