"""The 74 templates that generate MineDojo's programmatic catalogue, and the values they range over.

A template is a task whose id, prompt and spec strings may hold ``{variable}`` placeholders. The
catalogue (``envs.tasks.catalogue``) fills every placeholder from ``VARIABLES`` with the cartesian
product of their values. The facts (names, numbers, which template uses which variable) are
MineDojo's; the layout is ours: repeated kits (a combat loadout, a tier of tools) are built by
functions instead of being spelled out per template.

Two MineDojo data defects are fixed here and listed in ``docs/tasks.md``:

* the leather tech-tree prompts use ``{target_armor}`` (MineDojo's use ``{target_tools_armor}``,
  which made six of them say "leather leggings");
* the kill-statistic names of two mobs (``KILL_STAT_NAMES``): Minecraft 1.11 summons ``mooshroom``
  and ``zombie_pigman`` but counts their kills as ``mushroom_cow`` and ``pig_zombie``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

TemplateCategory = Literal["harvest", "combat", "techtree", "survival", "playthrough"]

# Inventory slots by name, as MineDojo's InventoryItem resolves them (slot indices 0-40).
SLOT_INDEX: Mapping[str, int] = {
    "mainhand": 0,
    "offhand": 40,
    "head": 39,
    "chest": 38,
    "legs": 37,
    "feet": 36,
}

# Minecraft 1.11 statistics name two mobs differently from their summon ids; MineDojo looked kills
# up under the summon id, a key its statistics never have.
KILL_STAT_NAMES: Mapping[str, str] = {
    "mooshroom": "mushroom_cow",
    "zombie_pigman": "pig_zombie",
}

MC_TICKS_PER_DAY = 24_000
# Playthrough's limit in MineDojo: a beginner's 8 hours at four actions per second.
PLAYTHROUGH_MAX_STEPS = 8 * 3600 * 4


@dataclasses.dataclass(frozen=True)
class SlotItem:
    """One initial-inventory entry; ``name`` may hold placeholders."""

    slot: int | str  # a name from SLOT_INDEX or an index 0-40
    name: str
    quantity: int = 1


@dataclasses.dataclass(frozen=True)
class Template:
    """One MineDojo task template. ``None`` means the field is left to the task class' default."""

    id: str
    category: TemplateCategory
    prompt: str
    target: str | None = None  # item (harvest) or mob (combat) name
    quantity: int | str = 1  # an int or a "{quantity}" placeholder
    mob: str | None = None  # summoned at reset
    mob_spawn_radius: int | None = None  # summon offset in [-r, r] on x and z, y = +1
    inventory: tuple[SlotItem, ...] = ()
    biome: str | None = None
    allow_mob_spawn: bool | None = None
    start_at_night: bool | None = None
    always_night: bool | None = None
    tech_item: str | None = None
    target_days: int | None = None


# ---- the variable lists (MineDojo's `_ALL_VARS`; order matters: it sets expansion order) ----

_ARMOR_PIECES = ("boots", "chestplate", "helmet", "leggings")
_TOOLS = ("sword", "pickaxe", "axe", "hoe", "shovel")

VARIABLES: Mapping[str, tuple[str | int, ...]] = {
    # combat
    "combat_biomes": ("forest", "plains", "extreme_hills"),
    "regular_biomes_mob": ("cow", "pig", "sheep", "chicken"),
    "regular_biomes_night_mob": ("zombie", "spider", "skeleton", "creeper", "witch", "enderman"),
    "end_mob": ("shulker", "endermite", "enderman"),
    "nether_mob": ("blaze", "ghast", "wither_skeleton", "zombie_pigman"),
    "plains_mob": ("horse", "donkey"),
    "weapon_material": ("wooden", "iron", "diamond"),
    "armor_material": ("leather", "iron", "diamond"),
    # harvest
    "quantity": (1, 8),
    "cow_biomes": ("plains", "extreme_hills", "forest"),
    "sheep_biomes": ("plains", "extreme_hills", "forest"),
    "ore_type": ("iron_ore", "gold_ore", "diamond", "redstone", "coal", "cobblestone"),
    "pickaxe_material": ("wooden", "stone", "iron", "golden", "diamond"),
    "natural_items": (
        *("nether_star", "blaze_rod", "ghast_tear", "nether_wart", "netherrack", "soul_sand"),
        *("chorus_flower", "chorus_fruit", "chorus_plant", "elytra", "end_stone", "ender_pearl"),
        *("apple", "beef", "beetroot", "beetroot_seeds", "bone", "brown_mushroom", "cactus"),
        *("carrot", "chicken", "dirt", "egg", "feather", "fish", "grass", "leaves", "log"),
        *("monster_egg", "mutton", "porkchop", "potato", "prismarine_shard", "pumpkin"),
        *("rabbit", "red_mushroom", "reeds", "sapling", "skull", "snowball", "spawn_egg"),
        *("sponge", "string", "totem_of_undying", "vine", "web", "wheat_seeds", "wheat"),
    ),
    "craft_items": (
        *("book", "carrot_on_a_stick", "clay", "crafting_table", "dye", "end_bricks", "end_rod"),
        *("ender_eye", "flint_and_steel", "glowstone", "gold_nugget", "iron_nugget"),
        *("iron_trapdoor", "lever", "nether_brick", "planks", "pumpkin_seeds"),
        *("red_nether_brick", "sandstone", "shears", "slime_ball", "stick", "stone_button"),
        *("stonebrick", "sugar", "torch", "trapped_chest", "wooden_button", "wool"),
        "stone_pressure_plate",
    ),
    "crafting_table_items": (
        *("anvil", "arrow", "banner", "beacon", "bed", "beetroot_soup", "boat", "bookshelf"),
        *("bowl", "bread", "bucket", "cake", "cauldron", "chest", "cookie", "end_crystal"),
        *("ender_chest", "fence", "fence_gate", "fire_charge", "fishing_rod", "flower_pot"),
        *("furnace", "glass_bottle", "glass_pane", "golden_apple", "hopper", "iron_bars"),
        *("ladder", "lead", "map", "minecart", "mushroom_stew", "painting", "paper"),
        *("pumpkin_pie", "rabbit_stew", "rail", "sea_lantern", "shield", "sign"),
        *("speckled_melon", "stone_slab", "trapdoor", "tripwire_hook", "wooden_door"),
        "writable_book",
    ),
    "furnace_items": (
        *("baked_potato", "brick", "cooked_beef", "cooked_chicken", "cooked_fish"),
        *("cooked_mutton", "cooked_porkchop", "cooked_rabbit", "glass", "gold_ingot"),
        *("iron_ingot", "quartz", "stone", "emerald", "netherbrick"),
    ),
    # "core" items: most need trees, hence the wooded biomes
    "biome_subset": ("plains", "jungle", "taiga", "forest", "swampland"),
    "natural_core": ("apple", "beef", "bone", "chicken", "log", "reeds", "web", "wheat"),
    "hand_craft_core": (
        *("flint_and_steel", "crafting_table", "planks", "shears", "stick", "sugar", "torch"),
    ),
    "crafting_table_core": ("arrow", "chest", "shield", "fishing_rod", "bucket", "furnace"),
    "furnace_core": ("cooked_beef", "glass", "gold_ingot", "iron_ingot", "brick", "stone"),
    # tech tree
    "from_barehand_tools": ("wooden", "stone"),
    "from_barehand_tools_armor": ("iron", "golden", "diamond"),
    "from_wood_tools": ("stone",),
    "from_wood_tools_armor": ("iron", "golden", "diamond"),
    "from_stone_tools_armor": ("iron", "golden", "diamond"),
    "from_iron_tools_armor": ("golden", "diamond"),
    "from_gold_tools_armor": ("diamond",),
    "target_tools": _TOOLS,
    "target_armor": _ARMOR_PIECES,
    "target_tools_armor": (*_TOOLS, *_ARMOR_PIECES),
    "redstone_list": (
        *("redstone_block", "clock", "compass", "dispenser", "dropper", "observer", "piston"),
        *("redstone_lamp", "redstone_torch", "repeater", "detector_rail", "comparator"),
        "activator_rail",
    ),
}


# ---- combat: 21 templates ----

_LOADOUT_SUFFIX = (
    "with a {weapon_material} sword, shield, and a full suite of {armor_material} armors"
)


def _loadout() -> tuple[SlotItem, ...]:
    """Sword in hand, shield in the off hand, a full suit of armour."""
    return (
        SlotItem("mainhand", "{weapon_material}_sword"),
        SlotItem("feet", "{armor_material}_boots"),
        SlotItem("legs", "{armor_material}_leggings"),
        SlotItem("chest", "{armor_material}_chestplate"),
        SlotItem("head", "{armor_material}_helmet"),
        SlotItem("offhand", "shield"),
    )


def _fight(
    id_stem: str,
    prompt_stem: str,
    mob: str,
    biome: str | None,
    *,
    armed: bool,
    night: bool | None,
    radius: int = 7,
    extra: tuple[SlotItem, ...] = (),
) -> Template:
    """A combat template: one ``mob`` summoned near the agent, natural spawning off.

    ``night=None`` keeps the combat class default (start at dusk, time passes); ``True`` starts at
    midnight and freezes time; ``False`` starts at day.
    """
    suffix = "_{armor_material}_armors_{weapon_material}_sword_shield" if armed else "_barehand"
    return Template(
        id=f"combat_{id_stem}{suffix}",
        category="combat",
        prompt=f"{prompt_stem} {_LOADOUT_SUFFIX}" if armed else prompt_stem,
        target=mob,
        quantity=1,
        mob=mob,
        mob_spawn_radius=radius,
        inventory=(_loadout() if armed else ()) + extra,
        biome=biome,
        allow_mob_spawn=False,
        start_at_night=night,
        always_night=True if night else None,
    )


_LANTERNS = SlotItem(1, "sea_lantern", 4)  # light for the ocean floor

COMBAT_TEMPLATES: tuple[Template, ...] = (
    # armed: a sword, a shield and armour
    _fight(
        "{end_mob}_end",
        "combat a {end_mob} in the end",
        "{end_mob}",
        "the_end",
        armed=True,
        night=None,
    ),
    _fight(
        "{nether_mob}_nether",
        "combat a {nether_mob} in nether",
        "{nether_mob}",
        "nether",
        armed=True,
        night=None,
    ),
    _fight(
        "slime_swamp",
        "combat a slime in night swampland",
        "slime",
        "swampland",
        armed=True,
        night=True,
    ),
    _fight(
        "husk_desert", "combat a husk in night desert", "husk", "desert", armed=True, night=True
    ),
    _fight(
        "bat_{combat_biomes}",
        "hunt a bat in night {combat_biomes}",
        "bat",
        "{combat_biomes}",
        armed=True,
        night=True,
    ),
    _fight(
        "{regular_biomes_night_mob}_{combat_biomes}",
        "combat a {regular_biomes_night_mob} in night {combat_biomes}",
        "{regular_biomes_night_mob}",
        "{combat_biomes}",
        armed=True,
        night=True,
    ),
    _fight(
        "{regular_biomes_mob}_{combat_biomes}",
        "hunt a {regular_biomes_mob} in {combat_biomes}",
        "{regular_biomes_mob}",
        "{combat_biomes}",
        armed=True,
        night=False,
    ),
    _fight(
        "{plains_mob}_plains",
        "hunt a {plains_mob} in plains",
        "{plains_mob}",
        "plains",
        armed=True,
        night=False,
    ),
    _fight(
        "guardian_ocean",
        "combat a guardian in ocean",
        "guardian",
        "ocean",
        armed=True,
        night=False,
        radius=5,
        extra=(_LANTERNS,),
    ),
    _fight(
        "squid_ocean",
        "hunt a squid in ocean",
        "squid",
        "ocean",
        armed=True,
        night=False,
        radius=5,
        extra=(_LANTERNS,),
    ),
    _fight("rabbit_desert", "hunt a rabbit in desert", "rabbit", "desert", armed=True, night=False),
    _fight(
        "mooshroom_mushroom_island",
        "hunt a mooshroom in mushroom_island",
        "mooshroom",
        "mushroom_island",
        armed=True,
        night=False,
    ),
    _fight(
        "llama_extreme_hills",
        "combat a llama in extreme hills",
        "llama",
        "extreme_hills",
        armed=True,
        night=False,
    ),
    _fight("wolf_taiga", "combat a wolf in taiga", "wolf", "taiga", armed=True, night=False),
    # bare-handed
    _fight(
        "bat_{combat_biomes}",
        "hunt a bat in night {combat_biomes}",
        "bat",
        "{combat_biomes}",
        armed=False,
        night=True,
    ),
    _fight(
        "{regular_biomes_mob}_{combat_biomes}",
        "hunt a {regular_biomes_mob} in {combat_biomes}",
        "{regular_biomes_mob}",
        "{combat_biomes}",
        armed=False,
        night=False,
    ),
    _fight(
        "{plains_mob}_plains",
        "hunt a {plains_mob} in plains",
        "{plains_mob}",
        "plains",
        armed=False,
        night=False,
    ),
    # the only bare-handed task with an inventory: lanterns held in the main hand
    _fight(
        "squid_ocean",
        "hunt a squid in ocean",
        "squid",
        "ocean",
        armed=False,
        night=False,
        radius=5,
        extra=(SlotItem("mainhand", "sea_lantern", 4),),
    ),
    _fight(
        "rabbit_desert", "hunt a rabbit in desert", "rabbit", "desert", armed=False, night=False
    ),
    _fight(
        "mooshroom_mushroom_island",
        "hunt a mooshroom in mushroom_island",
        "mooshroom",
        "mushroom_island",
        armed=False,
        night=False,
    ),
    _fight(
        "llama_extreme_hills",
        "combat a llama in extreme hills",
        "llama",
        "extreme_hills",
        armed=False,
        night=False,
    ),
)


# ---- harvest: 31 templates ----


def _harvest(
    id_: str,
    prompt: str,
    target: str,
    *,
    quantity: int | str = 1,
    mob: str | None = None,
    hand: str | None = None,
    slot1: SlotItem | None = None,
    biome: str | None = None,
) -> Template:
    """A harvest template. ``hand`` is the main-hand item, ``slot1`` the item in hotbar slot 1; a
    mob, when given, is summoned within 10 blocks."""
    inventory = ((SlotItem("mainhand", hand),) if hand else ()) + ((slot1,) if slot1 else ())
    return Template(
        id=id_,
        category="harvest",
        prompt=prompt,
        target=target,
        quantity=quantity,
        mob=mob,
        mob_spawn_radius=10 if mob else None,
        inventory=inventory,
        biome=biome,
    )


def _shear(
    suffix: str, prompt_suffix: str, *, shears: bool, sheep: bool, biome: str | None = None
) -> Template:
    return _harvest(
        f"harvest_wool{suffix}",
        f"shear a sheep{prompt_suffix}",
        "wool",
        mob="sheep" if sheep else None,
        hand="shears" if shears else None,
        biome=biome,
    )


def _milk(
    suffix: str, prompt: str, *, bucket: bool, cow: bool, biome: str | None = None
) -> Template:
    return _harvest(
        f"harvest_milk{suffix}",
        prompt,
        "milk_bucket",
        mob="cow" if cow else None,
        hand="bucket" if bucket else None,
        biome=biome,
    )


_Q = "{quantity}"
_WATER_BUCKET = SlotItem(1, "water_bucket")
_CRAFT = "find material and craft to obtain {quantity}"
_SMELT = "find material and smelt to obtain {quantity}"


def _core(var: str, verb: str, *, station: str | None = None, coal: int = 0) -> Template:
    """A core-item template in a wooded biome, optionally with a crafting station (and fuel)."""
    id_ = f"harvest_{{quantity}}_{{{var}}}_{{biome_subset}}"
    prompt = f"{verb} {{{var}}} in {{biome_subset}}"
    if station == "crafting_table":
        id_, prompt = id_ + "_with_crafting_table", prompt + " given a crafting table"
    elif station == "furnace":
        id_, prompt = id_ + "_with_furnace_and_fuel", prompt + " given a furnace and fuels"
    return _harvest(
        id_,
        prompt,
        f"{{{var}}}",
        quantity=_Q,
        hand=station,
        slot1=SlotItem(1, "coal", coal) if coal else None,
        biome="{biome_subset}",
    )


HARVEST_TEMPLATES: tuple[Template, ...] = (
    _shear("", "", shears=False, sheep=False),
    _shear("_with_sheep", " with a sheep nearby", shears=False, sheep=True),
    _shear("_with_shears", " with shears", shears=True, sheep=False),
    _shear("_with_shears_and_sheep", " with shears and a sheep nearby", shears=True, sheep=True),
    _shear(
        "_{sheep_biomes}", " in {sheep_biomes}", shears=False, sheep=False, biome="{sheep_biomes}"
    ),
    _shear(
        "_{sheep_biomes}_with_shears",
        " in {sheep_biomes} with shears",
        shears=True,
        sheep=False,
        biome="{sheep_biomes}",
    ),
    _harvest(
        "harvest_log_with_diamond_axe",
        "chop trees to obtain log with diamond axe",
        "log",
        hand="diamond_axe",
    ),
    _milk("", "obtain milk from a cow", bucket=False, cow=False),
    _milk("_with_cow", "obtain milk from a cow with a cow nearby", bucket=False, cow=True),
    _milk(
        "_with_empty_bucket", "obtain milk from a cow with an empty bucket", bucket=True, cow=False
    ),
    _milk(
        "_with_empty_bucket_and_cow",
        "obtain milk from a cow with an empty bucket and a cow nearby",
        bucket=True,
        cow=True,
    ),
    _milk(
        "_{cow_biomes}",
        "obtain milk from a cow in {cow_biomes}",
        bucket=False,
        cow=False,
        biome="{cow_biomes}",
    ),
    # MineDojo's prompt says "a cows"; kept, since prompts are part of the benchmark
    _milk(
        "_{cow_biomes}_with_an_empty_bucket",
        "obtain milk from a cows in {cow_biomes} with an empty bucket",
        bucket=True,
        cow=False,
        biome="{cow_biomes}",
    ),
    _harvest("harvest_{quantity}_obsidian", "obtain {quantity} obsidian", "obsidian", quantity=_Q),
    _harvest(
        "harvest_{quantity}_obsidian_with_diamond_pickaxe",
        "obtain {quantity} obsidian given a diamond pickaxe",
        "obsidian",
        quantity=_Q,
        hand="diamond_pickaxe",
    ),
    _harvest(
        "harvest_{quantity}_obsidian_with_water_bucket",
        "obtain {quantity} obsidian given a water bucket",
        "obsidian",
        quantity=_Q,
        hand="water_bucket",
    ),
    _harvest(
        "harvest_{quantity}_obsidian_with_diamond_pickaxe_and_water_bucket",
        "obtain {quantity} obsidian given a diamond pickaxe and a water bucket",
        "obsidian",
        quantity=_Q,
        hand="diamond_pickaxe",
        slot1=_WATER_BUCKET,
    ),
    _harvest(
        "harvest_{quantity}_{ore_type}", "obtain {quantity} {ore_type}", "{ore_type}", quantity=_Q
    ),
    _harvest(
        "harvest_{quantity}_{ore_type}_with_{pickaxe_material}_pickaxe",
        "obtain {quantity} {ore_type} with {pickaxe_material} pickaxe",
        "{ore_type}",
        quantity=_Q,
        hand="{pickaxe_material}_pickaxe",
    ),
    _harvest(
        "harvest_{quantity}_{natural_items}",
        "obtain {quantity} {natural_items}",
        "{natural_items}",
        quantity=_Q,
    ),
    _harvest(
        "harvest_{quantity}_{craft_items}",
        f"{_CRAFT} {{craft_items}}",
        "{craft_items}",
        quantity=_Q,
    ),
    _harvest(
        "harvest_{quantity}_{crafting_table_items}",
        f"{_CRAFT} {{crafting_table_items}}",
        "{crafting_table_items}",
        quantity=_Q,
    ),
    _harvest(
        "harvest_{quantity}_{crafting_table_items}_with_crafting_table",
        f"{_CRAFT} {{crafting_table_items}} given a crafting table",
        "{crafting_table_items}",
        quantity=_Q,
        hand="crafting_table",
    ),
    _harvest(
        "harvest_{quantity}_{furnace_items}",
        f"{_SMELT} {{furnace_items}}",
        "{furnace_items}",
        quantity=_Q,
    ),
    _harvest(
        "harvest_{quantity}_{furnace_items}_with_furnace_and_fuel",
        f"{_SMELT} {{furnace_items}} given a furnace and fuels",
        "{furnace_items}",
        quantity=_Q,
        hand="furnace",
        slot1=SlotItem(1, "coal", 20),
    ),
    _core("natural_core", "obtain {quantity}"),
    _core("hand_craft_core", _CRAFT),
    _core("crafting_table_core", _CRAFT),
    _core("crafting_table_core", _CRAFT, station="crafting_table"),
    _core("furnace_core", _SMELT),
    # note 50 coal here against 20 for the catalogue-wide furnace items: MineDojo's numbers
    _core("furnace_core", _SMELT, station="furnace", coal=50),
)


# ---- tech tree: 19 templates ----

# Starting tiers: the id word, the prompt's material word, the tool material the agent holds.
_TIER_MATERIAL = {
    "wood": "wooden",
    "stone": "stone",
    "iron": "iron",
    "gold": "golden",
    "diamond": "diamond",
}


def _tool_kit(material: str) -> tuple[SlotItem, ...]:
    """Pickaxe in the main hand, then axe, hoe, sword and shovel in hotbar slots 1-4."""
    order = ("pickaxe", "axe", "hoe", "sword", "shovel")
    return tuple(
        SlotItem("mainhand" if i == 0 else i, f"{material}_{tool}") for i, tool in enumerate(order)
    )


def _unlock(tier: str, goal: str, tech_item: str, noun: str) -> Template:
    """Unlock ``tech_item`` starting bare-handed (``tier="barehand"``) or with a tier of tools."""
    if tier == "barehand":
        prompt, kit = f"find material and craft a {noun}", ()
    else:
        prompt, kit = (
            f"starting from {tier} tools, craft and use a {noun}",
            _tool_kit(_TIER_MATERIAL[tier]),
        )
    return Template(
        id=f"techtree_from_{tier}_to_{goal}",
        category="techtree",
        prompt=prompt,
        tech_item=tech_item,
        inventory=kit,
    )


def _tier_templates(
    tier: str, *, tools: bool, leather: bool, armor: bool, bow: bool, tnt: bool
) -> list[Template]:
    out = []
    if tools:  # plain tools only (wooden/stone tiers)
        var = f"from_{tier}_tools"
        out.append(
            _unlock(
                tier,
                f"{{{var}}}_{{target_tools}}",
                f"{{{var}}}_{{target_tools}}",
                f"{{{var}}} {{target_tools}}",
            )
        )
    if leather:  # fixed: MineDojo's prompt used {target_tools_armor} here
        out.append(
            _unlock(
                tier, "leather_{target_armor}", "leather_{target_armor}", "leather {target_armor}"
            )
        )
    if armor:
        var = f"from_{tier}_tools_armor"
        out.append(
            _unlock(
                tier,
                f"{{{var}}}_{{target_tools_armor}}",
                f"{{{var}}}_{{target_tools_armor}}",
                f"{{{var}}} {{target_tools_armor}}",
            )
        )
    if bow:
        out.append(_unlock(tier, "archery", "bow", "bow"))
    if tnt:
        out.append(_unlock(tier, "explosives", "tnt", "tnt"))
    out.append(_unlock(tier, "redstone_{redstone_list}", "{redstone_list}", "{redstone_list}"))
    return out


TECHTREE_TEMPLATES: tuple[Template, ...] = (
    *_tier_templates("barehand", tools=True, leather=True, armor=True, bow=True, tnt=True),
    *_tier_templates("wood", tools=True, leather=True, armor=True, bow=True, tnt=False),
    *_tier_templates("stone", tools=False, leather=False, armor=True, bow=False, tnt=True),
    *_tier_templates("iron", tools=False, leather=False, armor=True, bow=False, tnt=False),
    *_tier_templates("gold", tools=False, leather=False, armor=True, bow=False, tnt=False),
    *_tier_templates("diamond", tools=False, leather=False, armor=False, bow=False, tnt=False),
)


# ---- survival: 2 templates; playthrough: 1 ----

SURVIVAL_TEMPLATES: tuple[Template, ...] = (
    Template(
        id="survival", category="survival", prompt="survive as long as possible", target_days=100
    ),
    Template(
        id="survival_sword_food",
        category="survival",
        prompt="survive as long as possible given a sword and some food",
        target_days=100,
        inventory=(SlotItem("mainhand", "iron_sword"), SlotItem(1, "cooked_beef", 8)),
    ),
)

PLAYTHROUGH_TEMPLATE = Template(
    id="playthrough",
    category="playthrough",
    prompt="Defeat the Ender Dragon and obtain the trophy dragon egg.",
    target="dragon_egg",
    quantity=1,
)

TEMPLATES: tuple[Template, ...] = (
    *COMBAT_TEMPLATES,
    *HARVEST_TEMPLATES,
    PLAYTHROUGH_TEMPLATE,
    *TECHTREE_TEMPLATES,
    *SURVIVAL_TEMPLATES,
)
