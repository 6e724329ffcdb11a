"""envs.voxel.scripted's oracle on hand-built worlds: it sidesteps trees instead of jumping onto
their leaves, once in the ocean it heads for the open water, and laying carpet it turns at walls."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import spaces, tasks
from envs.voxel import scripted
from envs.voxel import tables as T
from tests.envs.voxel import helpers as H

OCEAN_Z = 24  # the hand-built ocean: every column with z >= OCEAN_Z


def _ocean_world(player=(22.5, H.GROUND + 1, 10.5), yaw=0.0):
    """The flat world with an ocean strip at z >= OCEAN_Z (biome and distances), the player
    facing +z toward it; the task is the paper's "find an ocean"."""
    params = H.params_for(tasks.get("find an ocean"))
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    state = H.clear_mobs(H.place_player(state, player, yaw=yaw))
    zs = np.arange(H.STATIC.size_z)[None, :].repeat(H.STATIC.size_x, 0)
    ocean = zs >= OCEAN_Z
    state = state.replace(
        ocean_distance=jnp.asarray(np.where(ocean, 0.0, OCEAN_Z - zs).astype(np.float32)),
        biome=jnp.asarray(np.where(ocean, spaces.biome_id("ocean"), state.biome)),
    )
    return state, params, ocean


@pytest.mark.parametrize(
    "blocks, strafe, jump",
    [
        ({}, 0, 0),  # open ground: walk straight on
        ({(22, H.GROUND + 1, 11): "stone"}, 0, 1),  # a one-block step: jump it
        ({(22, H.GROUND + 1, 11): "leaves"}, 2, 0),  # leaves at the feet: sidestep
        ({(22, H.GROUND + 2, 11): "leaves"}, 2, 0),  # low leaves at head height: sidestep
        ({(22, H.GROUND + 1, 11): "log"}, 2, 0),  # a trunk: sidestep
    ],
)
def test_oracle_jumps_steps_and_sidesteps_trees(blocks, strafe, jump):
    state, params, _ = _ocean_world()
    for cell, name in blocks.items():
        state = H.set_block(state, cell, name)
    action = np.asarray(scripted.oracle_action(state, params, scripted.MODE_GOTO))
    assert action[0] == 1  # walks toward the ocean
    assert (action[1], action[2]) == (strafe, jump)


def test_oracle_walks_around_a_tree_to_the_ocean_without_climbing_it():
    state, params, _ = _ocean_world()
    # A tree in the way: a trunk 4 high and a leaf layer from head height up, 5x5 wide.
    for y in range(H.GROUND + 1, H.GROUND + 5):
        state = H.set_block(state, (22, y, 14), "log")
    for x in range(20, 25):
        for z in range(12, 17):
            for y in (H.GROUND + 3, H.GROUND + 4):
                if (x, z) != (22, 14):
                    state = H.set_block(state, (x, y, z), "leaves")
    state = H.set_block(state, (22, H.GROUND + 2, 13), "leaves")  # one hangs at head height
    out = H.run(state, params, oracle_mode=scripted.MODE_GOTO)
    assert out.success
    assert out.pos[:, 1].max() < H.GROUND + 2.5  # never up on the canopy (top at GROUND + 5)


def test_oracle_heads_for_the_ocean_centre_once_in_it():
    state, params, ocean = _ocean_world()
    # On land: the nearest ocean column, straight ahead.
    target = np.asarray(scripted._target_point(state, params))
    np.testing.assert_allclose(target[[0, 2]], [22.5, OCEAN_Z + 0.5])
    # In the ocean: the mean of the ocean columns' centres.
    xs, zs = np.nonzero(ocean)
    state = H.place_player(state, (3.5, H.GROUND + 1, OCEAN_Z + 1.5))
    target = np.asarray(scripted._target_point(state, params))
    np.testing.assert_allclose(target[[0, 2]], [xs.mean() + 0.5, zs.mean() + 0.5], rtol=1e-6)


def test_oracle_stays_afloat_at_the_ocean_centre():
    # Real water 5 deep under the ocean strip; the player starts in it at the ocean's centre,
    # where the oracle stops walking. It must keep swimming up: standing still it would sink to
    # the floor and drown (its oxygen lasts 300 ticks under water).
    state, params, ocean = _ocean_world()
    blocks = np.array(state.blocks)
    floor = H.GROUND - 4
    blocks[:, floor : H.GROUND + 1, OCEAN_Z:] = T.B["water"]
    state = state.replace(blocks=jnp.asarray(blocks))
    xs, zs = np.nonzero(ocean)
    state = H.place_player(state, (xs.mean() + 0.5, H.GROUND - 0.5, zs.mean() + 0.5))
    out = H.run(state, params, oracle_mode=scripted.MODE_GOTO)
    assert not out.done
    assert out.health[-1] == out.health[0]
    # Over the last 200 ticks the feet stay within 1.5 blocks of the surface (y = GROUND + 1),
    # never near the floor, and the head is out often enough that oxygen never runs low.
    assert out.pos[-200:, 1].min() > H.GROUND - 0.5, out.pos[-200:, 1].min()
    assert float(out.state.player.oxygen) > 250.0


@pytest.mark.parametrize("height, yaw_bin, jump", [(0, 12, 0), (1, 12, 1), (2, 18, 1)])
def test_laying_carpet_the_oracle_jumps_a_step_and_turns_at_a_wall(height, yaw_bin, jump):
    params = H.params_for(tasks.get("put carpets on the floor"))
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    state = H.place_player(state, (16.5, H.GROUND + 1, 10.5), yaw=0.0, pitch=90.0)
    for dy in range(height):
        state = H.set_block(state, (16, H.GROUND + 1 + dy, 11), "stone")
    action = np.asarray(scripted.oracle_action(state, params, scripted.MODE_PLACE))
    assert (action[0], action[4], action[5]) == (1, yaw_bin, spaces.FN_USE)
    assert action[2] == jump


def test_laying_carpet_the_oracle_goes_on_placing_in_a_walled_pen():
    # A 2-high stone pen of 7x7 inner cells: walking straight, the player would stop at the
    # wall and jump there to the end; turning at walls it goes on laying carpet.
    params = H.params_for(tasks.get("put carpets on the floor"))
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    state = H.clear_mobs(H.place_player(state, (16.5, H.GROUND + 1, 14.5), yaw=0.0, pitch=90.0))
    for i in range(12, 21):
        for dy in (1, 2):
            for cell in ((i, H.GROUND + dy, 12), (i, H.GROUND + dy, 20), (12, H.GROUND + dy, i),
                         (20, H.GROUND + dy, i)):  # fmt: skip
                state = H.set_block(state, cell, "stone")
    out = H.run(state, params, oracle_mode=scripted.MODE_PLACE)
    placed = float(out.state.stats_places[spaces.item_id("carpet")])
    assert placed >= 12, placed
