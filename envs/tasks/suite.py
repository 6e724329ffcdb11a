"""MineDojo's 64-task starter suite: 32 programmatic and 32 creative tasks, half "standard" (mostly
short-horizon) and half "difficult".

The ids are MineDojo's choice (its ``tasks_suite.yaml``, which no MineDojo code reads); the comments
give the Creative prompts so the list reads without the Creative file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

SuiteKind = Literal["programmatic", "creative"]
Difficulty = Literal["standard", "difficult"]

_ARMED_DIAMOND = "diamond_armors_diamond_sword_shield"

SUITE: Mapping[SuiteKind, Mapping[Difficulty, tuple[str, ...]]] = {
    "programmatic": {
        "standard": (
            "harvest_milk_with_empty_bucket_and_cow",
            "harvest_wool_with_shears_and_sheep",
            "harvest_1_coal",
            "harvest_1_chicken",
            "harvest_1_reeds",
            "harvest_1_log",
            "harvest_1_crafting_table",
            "harvest_1_wheat_seeds",
            "survival_sword_food",
            f"combat_cow_plains_{_ARMED_DIAMOND}",
            f"combat_sheep_plains_{_ARMED_DIAMOND}",
            f"combat_spider_plains_{_ARMED_DIAMOND}",
            f"combat_zombie_plains_{_ARMED_DIAMOND}",
            "techtree_from_barehand_to_wooden_sword",
            "techtree_from_stone_to_iron_shovel",
            "techtree_from_gold_to_diamond_chestplate",
        ),
        "difficult": (
            "harvest_1_bookshelf",
            "harvest_1_diamond",
            "harvest_1_redstone",
            "harvest_1_glass_bottle",
            "harvest_1_bed",
            "harvest_1_netherrack",
            "harvest_1_elytra",
            "harvest_1_slime_ball",
            "survival",
            f"combat_zombie_pigman_nether_{_ARMED_DIAMOND}",
            f"combat_enderman_end_{_ARMED_DIAMOND}",
            f"combat_wither_skeleton_nether_{_ARMED_DIAMOND}",
            f"combat_blaze_nether_{_ARMED_DIAMOND}",
            "techtree_from_barehand_to_golden_pickaxe",
            "techtree_from_barehand_to_diamond_sword",
            "techtree_from_wood_to_diamond_boots",
        ),
    },
    "creative": {
        "standard": tuple(
            f"creative:{i}"
            for i in (
                2,  # explore the world to find ocean
                12,  # ... to find nether
                13,  # ... to find village
                92,  # build a swimming pool
                101,  # build a bridge over a lake
                172,  # race by riding pig
                183,  # tame a wolf
                287,  # make a waterfall out of lava
                332,  # plant a tree in a pot
                398,  # climb a waterfall by using blocks to climb up
                403,  # light up a temple
                427,  # sail a boat across the water
                451,  # build a small fence around the tree
                1555,  # launch fireworks at night
                1558,  # dig a hole in the ground
                1559,  # put carpets on the floor
            )
        ),
        "difficult": tuple(
            f"creative:{i}"
            for i in (
                154,  # build a minecart and travel in the minecart
                212,  # trap a creeper in a wooden cage
                253,  # a garden with a pond and a waterfall
                283,  # lead a flock of chickens into a Nether portal
                292,  # a roller coaster through an entire city
                294,  # turn a natural cave into your home
                295,  # a fully functioning farm of any crops
                322,  # an arena for a skeleton and zombie fight
                337,  # a house out of different materials
                341,  # a mall with stores and a food court
                355,  # a water elevator
                365,  # a diamond castle in the mountains
                366,  # a cow farm near a swamp
                372,  # a wooden temple under a river
                440,  # a modern aquarium with glass rooms
                461,  # a Christmas tree
            )
        ),
    },
}


def starter_suite(
    kind: SuiteKind | None = None, difficulty: Difficulty | None = None
) -> tuple[str, ...]:
    """Suite ids, optionally only one kind and/or one difficulty (programmatic first, standard first)."""
    if kind is not None and kind not in SUITE:
        raise ValueError(f"unknown suite kind {kind!r}; use one of {tuple(SUITE)}")
    if difficulty is not None and difficulty not in ("standard", "difficult"):
        raise ValueError(f"unknown difficulty {difficulty!r}; use 'standard' or 'difficult'")
    return tuple(
        task_id
        for k, by_difficulty in SUITE.items()
        if kind in (None, k)
        for d, ids in by_difficulty.items()
        if difficulty in (None, d)
        for task_id in ids
    )


STARTER_SUITE: tuple[str, ...] = starter_suite()
