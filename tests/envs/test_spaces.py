"""Spaces and id tables match MineDojo's facts (minedojo-sim-facts.md §1-2, mc.py)."""

import numpy as np
import pytest

from envs import spaces


def test_item_table_air_first_and_minedojo_size():
    assert spaces.ITEMS[0] == "air"
    assert spaces.NUM_ITEMS == 392  # len(mc.ALL_ITEMS)
    assert len(set(spaces.ITEMS)) == spaces.NUM_ITEMS
    # Apart from air, MineDojo's alphabetical order.
    assert list(spaces.ITEMS[1:]) == sorted(spaces.ITEMS[1:])
    assert spaces.item_id("air") == 0
    assert spaces.item_name(spaces.item_id("milk_bucket")) == "milk_bucket"
    assert spaces.item_id("milk bucket") == spaces.item_id("minecraft:milk_bucket")


def test_blocks_extend_items():
    assert spaces.BLOCKS[: spaces.NUM_ITEMS] == spaces.ITEMS
    for name in ("water", "lava", "portal", "fire"):
        assert spaces.block_name(spaces.block_id(name)) == name
    assert spaces.block_id("stone") == spaces.item_id("stone")


def test_craft_smelt_items_minedojo_order():
    c = spaces.CRAFT_SMELT_ITEMS
    assert len(c) == 244 and len(set(c)) == 244
    assert (spaces.NUM_HAND_CRAFT, spaces.NUM_TABLE_CRAFT_ONLY, spaces.NUM_SMELT) == (54, 170, 20)
    hand = c[:54]
    table = c[54:224]
    smelt = c[224:]
    assert hand[0] == "blaze_powder" and hand[-1] == "wool"
    assert smelt[0] == "baked_potato" and smelt[-1] == "stone"
    for block in (hand, table, smelt):
        assert list(block) == sorted(block)
    # Exclusions listed in the facts.
    for name in ("coal", "diamond", "iron_ingot", "stone"):
        assert name not in hand
    for name in ("iron_nugget", "dye", "gold_nugget"):
        assert name not in smelt
    assert "crafting_table" in hand and "wooden_pickaxe" in table and "iron_ingot" in smelt
    assert set(c) <= set(spaces.ITEMS)
    assert spaces.craft_index("wooden_pickaxe") == c.index("wooden_pickaxe")


def test_entities_and_biomes():
    assert spaces.ENTITIES[:9] == (
        "cow", "sheep", "pig", "chicken", "zombie", "spider", "skeleton", "enderman", "zombie_pigman",
    )  # fmt: skip
    assert spaces.entity_id("pig_zombie") == spaces.entity_id("zombie_pigman")
    assert spaces.entity_id("mushroom_cow") == spaces.entity_id("mooshroom")
    assert len(spaces.BIOMES) == 63
    assert spaces.biome_id("plains") == 1 and spaces.biome_id("ocean") == 0
    assert spaces.biome_id("extreme_hills") == 3 and spaces.biome_id("swampland") == 6
    assert max(spaces.BIOMES.values()) == 167


@pytest.mark.parametrize(
    "fn,arg", [(spaces.item_id, "unobtainium"), (spaces.entity_id, "dragonfly"),
               (spaces.biome_id, "moon"), (spaces.block_id, "void_stone"),
               (spaces.craft_index, "bedrock")],
)  # fmt: skip
def test_unknown_names_raise_clear_errors(fn, arg):
    with pytest.raises(KeyError, match=arg):
        fn(arg)


def test_action_space_and_noop():
    assert tuple(spaces.ACTION_SPACE.nvec) == (3, 3, 4, 25, 25, 8, 244, 36)
    np.testing.assert_array_equal(spaces.NOOP_ACTION, [0, 0, 0, 12, 12, 0, 0, 0])
    assert spaces.ACTION_SPACE.contains(spaces.NOOP_ACTION)
    assert (
        spaces.camera_bin(0) == 12 and spaces.camera_bin(-180) == 0 and spaces.camera_bin(180) == 24
    )
    with pytest.raises(ValueError, match="multiple of 15"):
        spaces.camera_bin(7)


def test_compact_actions_paper_factorisation():
    t = spaces.COMPACT_ACTIONS
    assert t.shape == (89, 8) and spaces.NUM_COMPACT_ACTIONS == 89
    assert len(spaces.COMPACT_NAMES) == 89
    assert len({tuple(r) for r in t}) == 89  # all distinct
    np.testing.assert_array_equal(t[spaces.COMPACT_NOOP], spaces.NOOP_ACTION)
    for row in t:
        assert spaces.ACTION_SPACE.contains(row.astype(np.int64))
    # Camera block: 9 x 9 turns of -60..60 degrees, pitch-major.
    pitch = t[:81, 3] * 15 - 180
    yaw = t[:81, 4] * 15 - 180
    np.testing.assert_array_equal(pitch, np.repeat(np.arange(-60, 61, 15), 9))
    np.testing.assert_array_equal(yaw, np.tile(np.arange(-60, 61, 15), 9))
    assert (t[:81, [0, 1, 2, 5]] == 0).all()
    # Movement: forward, forward+jump, jump, back, left, right; then use, attack.
    np.testing.assert_array_equal(
        t[81:87, :3], [[1, 0, 0], [1, 0, 1], [0, 0, 1], [2, 0, 0], [0, 1, 0], [0, 2, 0]]
    )
    assert t[87, 5] == spaces.FN_USE and t[88, 5] == spaces.FN_ATTACK


def test_observation_space_keys_and_shapes():
    space = spaces.observation_space(160, 256)
    assert set(space.spaces) == {
        "rgb", "inventory", "equipment", "life_stats", "location_stats", "voxels",
        "nearby_tools", "damage_source", "masks",
    }  # fmt: skip
    assert space["rgb"].shape == (160, 256, 3) and space["rgb"].dtype == np.uint8
    assert space["inventory"]["name"].shape == (36,)
    assert space["equipment"]["quantity"].shape == (6,)
    assert space["voxels"]["block_name"].shape == (3, 3, 3)
    assert space["masks"]["craft_smelt"].shape == (244,)
    assert space["masks"]["action_arg"].shape == (8, 1)
    assert sorted(space["life_stats"].spaces) == sorted(
        ["life", "armor", "food", "saturation", "xp", "oxygen", "is_sleeping"]
    )
    assert "rgb" not in spaces.observation_space(rgb=False).spaces
    sample = space.sample()
    assert space.contains(sample)
    with pytest.raises(ValueError, match="positive"):
        spaces.observation_space(0, 10)


def test_combo_actions_decode_to_the_intended_multidiscrete_actions():
    combo = spaces.compact_action_set("combo")
    assert combo.num_actions == 22 and len(set(combo.names)) == 22
    assert combo.names[combo.noop] == "noop"
    np.testing.assert_array_equal(combo.table[combo.noop], spaces.NOOP_ACTION)
    # Written out independently of the table's construction: (move, strafe, jump, pitch, yaw, fn).
    moves = {"noop": (0, 0, 0), "forward": (1, 0, 0), "forward_jump": (1, 0, 1),
             "back": (2, 0, 0), "left": (0, 1, 0), "right": (0, 2, 0)}  # fmt: skip
    fns = {"": 0, "attack": 3, "use": 1}  # MineDojo's functional ids: 1 use, 3 attack
    expected = {}
    for m, (move, strafe, jump) in moves.items():
        for f, fn in fns.items():
            name = (f or "noop") if m == "noop" else (f"{m}+{f}" if f else m)
            expected[name] = (move, strafe, jump, 12, 12, fn)
    # Camera value v turns by 15 * v - 180 degrees: 11 is -15, 13 is +15; positive yaw turns
    # right, positive pitch looks down.
    expected |= {"turn_left": (0, 0, 0, 12, 11, 0), "turn_right": (0, 0, 0, 12, 13, 0),
                 "look_up": (0, 0, 0, 11, 12, 0), "look_down": (0, 0, 0, 13, 12, 0)}  # fmt: skip
    assert set(expected) == set(combo.names)
    for i, name in enumerate(combo.names):
        row = combo.table[i]
        assert tuple(row[:6]) == expected[name], name
        assert tuple(row[6:]) == (0, 0)  # no craft or slot argument
        assert spaces.ACTION_SPACE.contains(row.astype(np.int64))
    assert len({tuple(r) for r in combo.table}) == 22  # no two ids act the same
    # A step can move and attack at once, which no paper action does.
    both = [(r[0] or r[1]) and r[5] == spaces.FN_ATTACK for r in combo.table]
    assert sum(both) == 5
    assert not any((r[0] or r[1]) and r[5] for r in spaces.COMPACT_ACTIONS)


def test_compact_action_sets_by_name():
    paper = spaces.compact_action_set("paper")
    assert paper.table is spaces.COMPACT_ACTIONS and paper.noop == spaces.COMPACT_NOOP
    assert paper.num_actions == 89 and paper.names == spaces.COMPACT_NAMES
    assert not spaces.compact_action_set("combo").table.flags.writeable
    with pytest.raises(KeyError, match="combo"):
        spaces.compact_action_set("copl")
