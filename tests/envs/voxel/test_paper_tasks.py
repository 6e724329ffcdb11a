"""Each of the paper's 12 tasks is solved by the scripted policy in a fixed-seed world."""

import jax
import numpy as np
import pytest

from envs import spaces
from envs.tasks import paper
from envs.voxel import scripted
from envs.voxel import tables as T
from tests.envs.voxel import helpers as H

# Expected sparse return of a successful episode: +1 per kill / milk bucket, +1 per wool unit
# (shearing gives 1-3), 0 for the creative tasks.
EXPECTED_RETURN = {
    "milk_cow": (1.0, 1.0), "hunt_cow": (1.0, 1.0), "shear_sheep": (1.0, 3.0),
    "hunt_sheep": (1.0, 1.0), "combat_spider": (1.0, 1.0), "combat_zombie": (1.0, 1.0),
    "combat_zombie_pigman": (1.0, 1.0), "combat_enderman": (1.0, 1.0),
    "find_nether_portal": (0.0, 0.0), "find_ocean": (0.0, 0.0), "dig_hole": (0.0, 0.0),
    "lay_carpet": (0.0, 0.0),
}  # fmt: skip


def test_paper_task_table():
    assert len(paper.PAPER_TASKS) == 12
    assert set(paper.ANIMAL_ZOO + paper.MOB_COMBAT + paper.CREATIVE) == set(paper.PAPER_TASKS)
    assert paper.get("hunt a cow").id == "hunt_cow"
    assert paper.get("put carpets on the floor").id == "lay_carpet"
    with pytest.raises(KeyError, match="paper"):
        paper.get("build a castle")


@pytest.mark.parametrize("task_id", list(paper.PAPER_TASKS))
def test_scripted_policy_solves_task(task_id):
    spec = paper.PAPER_TASKS[task_id]
    params = H.params_for(spec, flat=False, passive_mobs=2)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    r = H.run(state, params, oracle_mode=scripted.mode_for(spec), key=0)
    assert r.success
    # Creative tasks have no programmatic success in the paper: the world reports its check in
    # info["success"] (for evaluation) but the episode goes on; the others end on success.
    assert r.done == (spec.category != "creative")
    lo, hi = EXPECTED_RETURN[task_id]
    assert lo <= r.ret <= hi
    if spec.category == "combat" and task_id.startswith("hunt"):
        # Manual dense reward: the valid-attack bonus fired at least once.
        assert np.max(r.dense) >= spec.attack_bonus


@pytest.mark.parametrize("task_id", ["milk_cow", "shear_sheep"])
def test_milk_and_shear_manual_reward_is_navigation_only(task_id):
    """Paper G.1: their manual shaping is navigation only; hitting the animal pays nothing."""
    from envs.tasks.spec import FAR, TaskParams, TaskSignals, dense_reward

    params = TaskParams.from_spec(paper.PAPER_TASKS[task_id])
    before = TaskSignals.zeros().replace(best_target_distance=np.float32(5.0))
    hit = before.replace(
        target_distance=np.float32(5.0), target_visible=np.bool_(True),
        attack_hit_target=np.bool_(True),
    )  # fmt: skip
    assert float(dense_reward(params, before, hit)) == 0.0
    closer = hit.replace(target_distance=np.float32(3.0), attack_hit_target=np.bool_(False))
    assert float(dense_reward(params, before, closer)) == pytest.approx(0.1 * 2.0)
    # the hunts keep their valid-attack bonus
    hunt = TaskParams.from_spec(
        paper.PAPER_TASKS[task_id.replace("milk", "hunt").replace("shear", "hunt")]
    )
    assert float(dense_reward(hunt, before, hit)) == pytest.approx(1.0)
    assert FAR > 5.0


def test_creative_success_is_reported_sticky_and_never_terminates():
    from envs.voxel.gym_env import _step

    params = H.params_for(paper.get("find a nether portal"), passive_mobs=0)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    portal = np.asarray(state.portal_center)
    state = H.place_player(state, portal - np.array([0.0, 1.0, 0.0]))  # at the portal
    noop = H.noop(1)[0]
    _, state, _, term, trunc, info = _step(jax.random.key(1), state, noop, params, H.STATIC)
    assert bool(info["success"]) and not bool(term) and not bool(trunc)
    state = H.place_player(state, (20.5, H.GROUND + 1.0, 20.5))  # far away again
    _, state, _, term, _, info = _step(jax.random.key(2), state, noop, params, H.STATIC)
    assert float(info["signals"].target_distance) > 10.0
    assert bool(info["success"]) and not bool(term)  # it passed this episode; nothing ended


# Blocks of the Creative worlds' ocean, beach, portal and house (the house sits on a stone
# platform, but stone is everywhere underground).
_CREATIVE_BLOCKS = ("water", "sand", "obsidian", "portal", "planks", "cobblestone")


@pytest.mark.parametrize("task_id", paper.ANIMAL_ZOO + paper.MOB_COMBAT)
def test_zoo_and_combat_worlds_are_plains_without_the_creative_structures(task_id):
    # Given the shared mixed pool, the plains tasks run on plains worlds derived from it (one
    # derived pool for all of them); the Creative tasks keep the mixed pool itself.
    params = H.params_for(paper.PAPER_TASKS[task_id], flat=False)
    pool = params.pool
    assert pool.blocks.shape == H.pool().blocks.shape
    assert (np.asarray(pool.biome) == spaces.biome_id("plains")).all()
    present = set(np.unique(np.asarray(pool.blocks)).tolist())
    for name in _CREATIVE_BLOCKS:
        assert T.B[name] not in present, name
    assert T.B["grass"] in present and T.B["log"] in present  # plains have a few trees
    assert (np.asarray(pool.house_floor) < 0).all()  # no house for spawns to avoid
    again = H.params_for(paper.get("hunt a cow"), flat=False).pool
    assert again.blocks is pool.blocks
    creative = H.params_for(paper.get("find an ocean"), flat=False).pool
    assert creative.blocks is H.pool().blocks


@pytest.mark.parametrize("task_id,reach", [("hunt_cow", 7.0), ("hunt_sheep", 7.0),
                                           ("milk_cow", 10.0), ("shear_sheep", 10.0)])  # fmt: skip
def test_zoo_animals_spawn_within_minedojo_ranges(task_id, reach):
    spec = paper.PAPER_TASKS[task_id]
    lo, hi = spec.initial_mob_spawn_range_low, spec.initial_mob_spawn_range_high
    assert (lo[0], lo[2], hi[0], hi[2]) == (-reach, -reach, reach, reach)
    assert spec.specified_biome == "plains"
    params = H.params_for(spec, flat=False)
    offsets = []
    for k in range(16):
        _, state = H.reset(jax.random.key(k), params, H.STATIC)
        assert int(state.mobs.mob_type[0]) == spaces.entity_id(spec.initial_mobs[0])
        offsets.append(np.asarray(state.mobs.pos[:3] - state.player.pos)[:, [0, 2]])
    offsets = np.abs(np.stack(offsets))  # [16, animals, (x, z)]
    assert offsets.max() <= reach + 1e-4  # every animal, distractors too
    assert offsets.max() > reach - 3.0  # and the range is used, not a smaller one
