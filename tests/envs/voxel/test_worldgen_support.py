"""World generation content, can_run, the per-env auto-reset, MP4 writing and play's key map."""

import dataclasses

import jax
import numpy as np
import pytest

from envs import spaces
from envs.tasks import paper
from envs.tasks.spec import InventoryItem, SuccessCriterion, TaskSpec
from envs.voxel import env as E
from envs.voxel import tables as T
from envs.voxel.play import keys_to_action
from envs.voxel.state import VoxelStaticConfig
from envs.voxel.support import can_run
from envs.voxel.worldgen import generate_world
from tests.envs.voxel import helpers as H


@pytest.fixture(scope="module")
def world():
    return generate_world(3, VoxelStaticConfig())


def test_world_has_biomes_terrain_ores_and_structures(world):
    blocks, biome = world["blocks"], world["biome"]
    assert blocks.shape == (64, 32, 64) and blocks.dtype == np.uint8
    assert (blocks[:, 0, :] == T.B["bedrock"]).all()
    names = {T.BLOCK_NAMES[i] for i in np.unique(blocks)}
    for needed in ("stone", "dirt", "grass", "sand", "water", "log", "leaves", "coal_ore",
                   "iron_ore", "obsidian", "portal", "planks", "cobblestone"):  # fmt: skip
        assert needed in names, needed
    assert spaces.biome_id("ocean") in biome  # an ocean is always within reach
    assert len(np.unique(biome)) >= 4
    # Ores by depth: diamonds only near the bottom, coal higher up too.
    ys = np.nonzero(blocks == T.B["diamond_ore"])[1]
    assert ys.size == 0 or ys.max() <= 5
    # Water never floats above sea level, and oceans are flooded to it.
    assert np.nonzero(blocks == T.B["water"])[1].max() <= 12
    # The portal interior is 2 x 3 portal blocks inside an obsidian frame.
    assert (blocks == T.B["portal"]).sum() == 6 and (blocks == T.B["obsidian"]).sum() == 14
    cx, cy, cz = world["portal_center"]
    assert blocks[int(cx), int(cy), int(cz)] == T.B["portal"]
    # House: plank floor box.
    x0, z0, x1, z1 = world["house_floor"]
    fy = world["house_floor_y"]
    assert (blocks[x0 : x1 + 1, fy, z0 : z1 + 1] == T.B["planks"]).all()
    assert (blocks[x0 : x1 + 1, fy + 1, z0 : z1 + 1] == T.B["air"]).all()
    # Ocean distance is zero exactly on ocean columns.
    ocean = biome == spaces.biome_id("ocean")
    np.testing.assert_array_equal(world["ocean_distance"] == 0, ocean)


def test_single_biome_world_has_that_biome_and_no_creative_structures():
    from envs.voxel import worldgen

    static = dataclasses.replace(H.STATIC, num_trees=48)
    w = generate_world(3, static, "forest")
    assert (w["biome"] == spaces.biome_id("forest")).all()
    names = {T.BLOCK_NAMES[i] for i in np.unique(w["blocks"])}
    assert {"grass", "log", "leaves"} <= names
    assert not names & {"water", "sand", "obsidian", "portal", "planks", "cobblestone"}
    assert (w["house_floor"] == worldgen.NO_STRUCTURE).all()
    assert (w["portal_center"] == worldgen.NO_STRUCTURE).all()
    with pytest.raises(ValueError, match="single-biome"):
        generate_world(3, static, "ocean")
    assert worldgen.pool_biome(worldgen.generate_pool(0, 2, static, "desert")) == spaces.biome_id(
        "desert"
    )
    assert worldgen.pool_biome(H.pool()) is None  # the mixed worlds


def test_world_generation_is_deterministic(world):
    again = generate_world(3, VoxelStaticConfig())
    for k in world:
        np.testing.assert_array_equal(np.asarray(world[k]), np.asarray(again[k]))
    other = generate_world(4, VoxelStaticConfig())
    assert not np.array_equal(other["blocks"], world["blocks"])


def test_can_run():
    for spec in paper.PAPER_TASKS.values():
        assert can_run(spec) == (True, ""), spec.id
    ghast = TaskSpec(id="c", category="combat", prompt="p", target_names=("ghast",),
                     initial_mobs=("ghast",), success=SuccessCriterion("kill", ("ghast",)))  # fmt: skip
    ok, why = can_run(ghast)
    assert not ok and "ghast" in why
    elytra = TaskSpec(id="h", category="harvest", prompt="p", target_names=("elytra",),
                      success=SuccessCriterion("inventory", ("elytra",)))  # fmt: skip
    assert not can_run(elytra)[0]
    iron = TaskSpec(id="t", category="techtree", prompt="p", target_names=("iron_pickaxe",),
                    success=SuccessCriterion("use_all", ("iron_pickaxe",)))  # fmt: skip
    assert can_run(iron)[0]  # crafted from smelted ore with the world's recipes
    given = dataclasses.replace(elytra, initial_inventory=(InventoryItem(0, "elytra"),))
    assert can_run(given)[0]
    with pytest.raises(ValueError, match="ghast"):
        E.make_params(ghast, H.STATIC, pool=H.pool())


def test_play_key_map():
    a = keys_to_action({"forward": True, "left": True, "sprint": True}, (1, -2), spaces.FN_ATTACK)
    np.testing.assert_array_equal(a, [1, 1, 3, 13, 10, 3, 0, 0])
    assert spaces.ACTION_SPACE.contains(a.astype(np.int64))
    b = keys_to_action({}, (30, -30), spaces.FN_NOOP)
    assert b[3] == 24 and b[4] == 0  # clipped to +-180 degrees


def test_scene_for_the_renderer():
    params = H.params_for(H.spec(mobs=("cow",)), passive_mobs=0)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    sc = E.scene(state)
    np.testing.assert_allclose(np.asarray(sc.eye_pos), np.asarray(state.player.pos) + [0, 1.62, 0])
    assert sc.blocks.shape == (H.STATIC.size_x, H.STATIC.size_y, H.STATIC.size_z)
    assert sc.mob_pos.shape == (H.STATIC.max_mobs, 3)
    assert int(sc.mob_type[0]) == spaces.entity_id("cow") and bool(sc.mob_alive[0])
    assert 0.0 <= float(sc.daylight) <= 1.0
