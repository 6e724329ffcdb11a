"""The programmatic catalogue: counts, ids and prompts, spec fields, defect fixes."""

import collections

import pytest

from envs.tasks import catalogue, templates
from envs.tasks.catalogue import expand, expanded_tasks, programmatic_spec
from envs.tasks.spec import InventoryItem
from envs.tasks.templates import TEMPLATES

# One (id, prompt) per template, written out by hand from MineDojo's programmatic_tasks.yaml.
SAMPLES = [
    ("combat_shulker_end_diamond_armors_iron_sword_shield",
     "combat a shulker in the end with a iron sword, shield, and a full suite of diamond armors"),
    ("combat_zombie_pigman_nether_diamond_armors_iron_sword_shield",
     "combat a zombie pigman in nether with a iron sword, shield, and a full suite of diamond armors"),
    ("combat_slime_swamp_leather_armors_diamond_sword_shield",
     "combat a slime in night swampland with a diamond sword, shield, and a full suite of leather armors"),
    ("combat_husk_desert_iron_armors_diamond_sword_shield",
     "combat a husk in night desert with a diamond sword, shield, and a full suite of iron armors"),
    ("combat_bat_extreme_hills_leather_armors_iron_sword_shield",
     "hunt a bat in night extreme hills with a iron sword, shield, and a full suite of leather armors"),
    ("combat_witch_plains_iron_armors_iron_sword_shield",
     "combat a witch in night plains with a iron sword, shield, and a full suite of iron armors"),
    ("combat_sheep_extreme_hills_diamond_armors_diamond_sword_shield",
     "hunt a sheep in extreme hills with a diamond sword, shield, and a full suite of diamond armors"),
    ("combat_horse_plains_leather_armors_diamond_sword_shield",
     "hunt a horse in plains with a diamond sword, shield, and a full suite of leather armors"),
    ("combat_guardian_ocean_leather_armors_wooden_sword_shield",
     "combat a guardian in ocean with a wooden sword, shield, and a full suite of leather armors"),
    ("combat_squid_ocean_diamond_armors_iron_sword_shield",
     "hunt a squid in ocean with a iron sword, shield, and a full suite of diamond armors"),
    ("combat_rabbit_desert_iron_armors_iron_sword_shield",
     "hunt a rabbit in desert with a iron sword, shield, and a full suite of iron armors"),
    ("combat_mooshroom_mushroom_island_diamond_armors_diamond_sword_shield",
     "hunt a mooshroom in mushroom island with a diamond sword, shield, and a full suite of diamond armors"),
    ("combat_llama_extreme_hills_iron_armors_wooden_sword_shield",
     "combat a llama in extreme hills with a wooden sword, shield, and a full suite of iron armors"),
    ("combat_wolf_taiga_iron_armors_wooden_sword_shield",
     "combat a wolf in taiga with a wooden sword, shield, and a full suite of iron armors"),
    ("combat_bat_extreme_hills_barehand", "hunt a bat in night extreme hills"),
    ("combat_sheep_plains_barehand", "hunt a sheep in plains"),
    ("combat_donkey_plains_barehand", "hunt a donkey in plains"),
    ("combat_squid_ocean_barehand", "hunt a squid in ocean"),
    ("combat_rabbit_desert_barehand", "hunt a rabbit in desert"),
    # a template without variables keeps its prompt verbatim, underscore included
    ("combat_mooshroom_mushroom_island_barehand", "hunt a mooshroom in mushroom_island"),
    ("combat_llama_extreme_hills_barehand", "combat a llama in extreme hills"),
    ("harvest_wool", "shear a sheep"),
    ("harvest_wool_with_sheep", "shear a sheep with a sheep nearby"),
    ("harvest_wool_with_shears", "shear a sheep with shears"),
    ("harvest_wool_with_shears_and_sheep", "shear a sheep with shears and a sheep nearby"),
    ("harvest_wool_forest", "shear a sheep in forest"),
    ("harvest_wool_plains_with_shears", "shear a sheep in plains with shears"),
    ("harvest_log_with_diamond_axe", "chop trees to obtain log with diamond axe"),
    ("harvest_milk", "obtain milk from a cow"),
    ("harvest_milk_with_cow", "obtain milk from a cow with a cow nearby"),
    ("harvest_milk_with_empty_bucket", "obtain milk from a cow with an empty bucket"),
    ("harvest_milk_with_empty_bucket_and_cow", "obtain milk from a cow with an empty bucket and a cow nearby"),
    ("harvest_milk_forest", "obtain milk from a cow in forest"),
    ("harvest_milk_extreme_hills_with_an_empty_bucket",
     "obtain milk from a cows in extreme hills with an empty bucket"),
    ("harvest_8_obsidian", "obtain 8 obsidian"),
    ("harvest_8_obsidian_with_diamond_pickaxe", "obtain 8 obsidian given a diamond pickaxe"),
    ("harvest_1_obsidian_with_water_bucket", "obtain obsidian given a water bucket"),
    ("harvest_8_obsidian_with_diamond_pickaxe_and_water_bucket",
     "obtain 8 obsidian given a diamond pickaxe and a water bucket"),
    ("harvest_1_gold_ore", "obtain gold ore"),
    ("harvest_1_iron_ore_with_iron_pickaxe", "obtain iron ore with iron pickaxe"),
    ("harvest_1_brown_mushroom", "obtain brown mushroom"),
    ("harvest_8_carrot_on_a_stick", "find material and craft to obtain 8 carrot on a stick"),
    ("harvest_1_iron_bars", "find material and craft to obtain iron bars"),
    ("harvest_1_painting_with_crafting_table", "find material and craft to obtain painting given a crafting table"),
    ("harvest_8_cooked_porkchop", "find material and smelt to obtain 8 cooked porkchop"),
    ("harvest_1_emerald_with_furnace_and_fuel", "find material and smelt to obtain emerald given a furnace and fuels"),
    ("harvest_1_wheat_forest", "obtain wheat in forest"),
    ("harvest_8_shears_forest", "find material and craft to obtain 8 shears in forest"),
    ("harvest_8_arrow_taiga", "find material and craft to obtain 8 arrow in taiga"),
    ("harvest_8_bucket_forest_with_crafting_table",
     "find material and craft to obtain 8 bucket in forest given a crafting table"),
    ("harvest_1_brick_swampland", "find material and smelt to obtain brick in swampland"),
    ("harvest_8_glass_jungle_with_furnace_and_fuel",
     "find material and smelt to obtain 8 glass in jungle given a furnace and fuels"),
    ("playthrough", "Defeat the Ender Dragon and obtain the trophy dragon egg."),
    ("techtree_from_barehand_to_stone_hoe", "find material and craft a stone hoe"),
    ("techtree_from_barehand_to_leather_leggings", "find material and craft a leather leggings"),
    ("techtree_from_barehand_to_diamond_sword", "find material and craft a diamond sword"),
    ("techtree_from_barehand_to_archery", "find material and craft a bow"),
    ("techtree_from_barehand_to_explosives", "find material and craft a tnt"),
    ("techtree_from_barehand_to_redstone_detector_rail", "find material and craft a detector rail"),
    ("techtree_from_wood_to_stone_sword", "starting from wood tools, craft and use a stone sword"),
    # fixed defect: MineDojo says "leather leggings" here
    ("techtree_from_wood_to_leather_helmet", "starting from wood tools, craft and use a leather helmet"),
    ("techtree_from_wood_to_diamond_pickaxe", "starting from wood tools, craft and use a diamond pickaxe"),
    ("techtree_from_wood_to_archery", "starting from wood tools, craft and use a bow"),
    ("techtree_from_wood_to_redstone_comparator", "starting from wood tools, craft and use a comparator"),
    ("techtree_from_stone_to_golden_pickaxe", "starting from stone tools, craft and use a golden pickaxe"),
    ("techtree_from_stone_to_explosives", "starting from stone tools, craft and use a tnt"),
    ("techtree_from_stone_to_redstone_comparator", "starting from stone tools, craft and use a comparator"),
    ("techtree_from_iron_to_golden_chestplate", "starting from iron tools, craft and use a golden chestplate"),
    ("techtree_from_iron_to_redstone_detector_rail", "starting from iron tools, craft and use a detector rail"),
    ("techtree_from_gold_to_diamond_shovel", "starting from gold tools, craft and use a diamond shovel"),
    ("techtree_from_gold_to_redstone_dropper", "starting from gold tools, craft and use a dropper"),
    ("techtree_from_diamond_to_redstone_clock", "starting from diamond tools, craft and use a clock"),
    ("survival", "survive as long as possible"),
    ("survival_sword_food", "survive as long as possible given a sword and some food"),
]  # fmt: skip


def test_counts_per_category():
    counts = collections.Counter(task.category for task in expanded_tasks().values())
    assert counts == {
        "harvest": 895,
        "combat": 471,
        "techtree": 213,
        "survival": 2,
        "playthrough": 1,
    }
    assert dict(catalogue.CATEGORY_COUNTS) == {
        "harvest": 895,
        "combat": 471,
        "techtree": 213,
        "survival": 2,
    }
    assert len(expanded_tasks()) == catalogue.NUM_PROGRAMMATIC + 1 == 1582


def test_template_counts_per_category():
    counts = collections.Counter(t.category for t in TEMPLATES)
    assert counts == {"harvest": 31, "combat": 21, "techtree": 19, "survival": 2, "playthrough": 1}
    assert len({t.id for t in TEMPLATES}) == len(TEMPLATES) == 74


def test_sample_ids_and_prompts_cover_every_template():
    tasks = expanded_tasks()
    for task_id, prompt in SAMPLES:
        assert task_id in tasks, task_id
        assert tasks[task_id].prompt == prompt, task_id
    sample_ids = {task_id for task_id, _ in SAMPLES}
    uncovered = [t.id for t in TEMPLATES if not sample_ids & {task.id for task in expand(t)}]
    assert uncovered == []


def test_expansion_formats_quantity_and_prompt():
    tasks = expanded_tasks()
    assert tasks["harvest_1_diamond"].quantity == 1
    assert tasks["harvest_8_diamond"].quantity == 8
    assert tasks["harvest_1_diamond"].prompt == "obtain diamond"  # " 1" dropped
    assert (
        tasks["harvest_8_iron_ore_with_stone_pickaxe"].prompt
        == "obtain 8 iron ore with stone pickaxe"
    )


def test_unknown_variable_is_reported():
    bad = templates.Template(id="harvest_{nope}", category="harvest", prompt="x")
    with pytest.raises(KeyError, match="nope"):
        list(expand(bad))


def test_harvest_spec_fields():
    spec = programmatic_spec("harvest_milk_with_empty_bucket_and_cow")
    assert spec.category == "harvest"
    assert spec.target_names == ("milk_bucket",) and spec.target_quantities == (1,)
    assert spec.reward_weights == (1.0,)
    assert spec.initial_mobs == ("cow",)
    assert spec.initial_mob_spawn_range_low == (-10, 1, -10)
    assert spec.initial_mob_spawn_range_high == (10, 1, 10)
    assert spec.initial_inventory == (InventoryItem("mainhand", "bucket"),)
    assert spec.specified_biome is None and not spec.start_at_night and spec.allow_mob_spawn
    assert spec.success.kind == "inventory" and spec.success.names == ("milk_bucket",)

    spec = programmatic_spec("harvest_8_glass_jungle_with_furnace_and_fuel")
    assert spec.target_names == ("glass",) and spec.target_quantities == (8,)
    assert spec.specified_biome == "jungle"
    assert spec.initial_inventory == (
        InventoryItem("mainhand", "furnace"),
        InventoryItem(1, "coal", 50),
    )
    assert (
        programmatic_spec("harvest_8_glass_with_furnace_and_fuel").initial_inventory[1].quantity
        == 20
    )


def test_combat_spec_fields():
    spec = programmatic_spec("combat_zombie_plains_diamond_armors_diamond_sword_shield")
    assert spec.target_names == ("zombie",) and spec.target_quantities == (1,)
    assert spec.initial_mobs == ("zombie",)
    assert spec.initial_mob_spawn_range_low == (-7, 1, -7)
    assert spec.specified_biome == "plains"
    assert spec.start_at_night and spec.always_night and not spec.allow_mob_spawn
    assert [(i.slot, i.name) for i in spec.initial_inventory] == [
        ("mainhand", "diamond_sword"),
        ("feet", "diamond_boots"),
        ("legs", "diamond_leggings"),
        ("chest", "diamond_chestplate"),
        ("head", "diamond_helmet"),
        ("offhand", "shield"),
    ]
    assert spec.success.kind == "kill"

    day = programmatic_spec("combat_cow_forest_barehand")
    assert not day.start_at_night and not day.always_night and day.initial_inventory == ()
    # end/nether templates leave the night flag to the combat class default: start at dusk
    end = programmatic_spec("combat_enderman_end_leather_armors_wooden_sword_shield")
    assert end.specified_biome == "the_end" and end.start_at_night and not end.always_night

    ocean = programmatic_spec("combat_guardian_ocean_iron_armors_iron_sword_shield")
    assert ocean.initial_mob_spawn_range_high == (5, 1, 5)
    assert ocean.initial_inventory[-1] == InventoryItem(1, "sea_lantern", 4)
    squid = programmatic_spec("combat_squid_ocean_barehand")
    assert squid.initial_inventory == (InventoryItem("mainhand", "sea_lantern", 4),)


def test_techtree_and_survival_spec_fields():
    spec = programmatic_spec("techtree_from_stone_to_iron_shovel")
    assert spec.tech_item == "iron_shovel" and spec.target_names == ("iron_shovel",)
    assert spec.initial_inventory == (
        InventoryItem("mainhand", "stone_pickaxe"),
        InventoryItem(1, "stone_axe"),
        InventoryItem(2, "stone_hoe"),
        InventoryItem(3, "stone_sword"),
        InventoryItem(4, "stone_shovel"),
    )
    assert spec.success.kind == "use_all" and spec.success.names == ("iron_shovel",)
    assert (
        programmatic_spec("techtree_from_gold_to_redstone_dropper").initial_inventory[0].name
        == "golden_pickaxe"
    )
    assert programmatic_spec("techtree_from_barehand_to_archery").tech_item == "bow"
    assert programmatic_spec("techtree_from_barehand_to_archery").initial_inventory == ()

    survival = programmatic_spec("survival_sword_food")
    assert survival.target_days == 100 and survival.success.kind == "survive"
    assert survival.initial_inventory == (
        InventoryItem("mainhand", "iron_sword"),
        InventoryItem(1, "cooked_beef", 8),
    )
    assert survival.max_steps >= 100 * 24_000  # the limit leaves room to succeed


def test_playthrough_spec_checks_the_dragon_egg():
    spec = programmatic_spec("playthrough")
    assert spec.category == "playthrough"
    assert spec.success.kind == "inventory" and spec.success.names == ("dragon_egg",)
    assert spec.max_steps == 115_200


def test_defect_fix_leather_prompts():
    for tier, stem in (
        ("barehand", "find material and craft a"),
        ("wood", "starting from wood tools, craft and use a"),
    ):
        for piece in ("boots", "chestplate", "helmet", "leggings"):
            spec = programmatic_spec(f"techtree_from_{tier}_to_leather_{piece}")
            assert spec.prompt == f"{stem} leather {piece}"
            assert spec.tech_item == f"leather_{piece}"


def test_defect_fix_kill_statistic_names():
    assert catalogue.kill_stat_name("mooshroom") == "mushroom_cow"
    assert catalogue.kill_stat_name("zombie_pigman") == "pig_zombie"
    assert catalogue.kill_stat_name("zombie") == "zombie"
    combat = [t for t in expanded_tasks().values() if t.category == "combat"]
    affected = [t.id for t in combat if t.target in templates.KILL_STAT_NAMES]
    assert len(affected) == 19  # 10 mooshroom + 9 zombie pigman tasks
