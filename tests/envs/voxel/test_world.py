"""The embedded world: spaces, determinism, physics, mining, placing, mobs, day/night."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import spaces
from envs.voxel import physics
from envs.voxel import tables as T
from tests.envs.voxel import helpers as H

X0, Z0 = 16.5, 16.5  # player column in the flat world
FEET = H.GROUND + 1.0  # feet height standing on the flat ground


@pytest.fixture(scope="module")
def flat():
    """(params, state) in the flat world with a few items and no mobs."""
    task = H.spec(
        inventory=[("wooden_pickaxe", 1), ("dirt", 10), ("stone_pickaxe", 1), ("iron_pickaxe", 1)]
    )
    params = H.params_for(task, passive_mobs=0)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    state = H.place_player(H.clear_mobs(state), [X0, FEET, Z0])
    return params, state


def test_reset_observation_matches_space(flat):
    params, _ = flat
    obs, state = H.reset(jax.random.key(3), params, H.STATIC)
    obs = jax.tree.map(np.asarray, obs)
    space = spaces.observation_space(rgb=False)
    assert set(obs) == set(space.spaces)
    for key, sub in space.spaces.items():
        assert sub.contains(obs[key]), key
    assert obs["inventory"]["name"][0] == spaces.item_id("wooden_pickaxe")
    assert obs["inventory"]["quantity"][1] == 10
    assert obs["inventory"]["max_durability"][0] == 59  # wooden tools
    assert obs["voxels"]["block_name"][1, 0, 1] == spaces.block_id("grass")  # under the feet
    assert obs["life_stats"]["life"][0] == 20.0


def test_same_key_same_actions_identical_trajectory(flat):
    params, state = flat
    rng = np.random.default_rng(0)
    actions = rng.integers(0, spaces.ACTION_NVEC, size=(120, 8))
    actions[:, 5] = rng.choice([0, 1, 3, 6], size=120)  # no crafting: keep the inventory sane
    a = H.run(state, params, actions, key=7)
    b = H.run(state, params, actions, key=7)
    np.testing.assert_array_equal(a.pos, b.pos)
    for x, y in zip(jax.tree.leaves(a.state), jax.tree.leaves(b.state)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    c = H.run(state, params, actions, key=8)  # different key, different mob/drop randomness only
    assert np.isfinite(c.pos).all()


def test_falling_lands_on_ground_with_fall_damage(flat):
    params, state = flat
    state = H.place_player(state, [X0, FEET + 5.0, Z0])  # 5 blocks up
    r = H.run(state, params, H.noop(60))
    assert r.pos[-1, 1] == pytest.approx(FEET, abs=2e-3)
    # Gravity: y decreases monotonically until landing, never below the ground.
    assert np.all(np.diff(r.pos[:40, 1]) <= 1e-6)
    assert r.pos[:, 1].min() >= FEET - 2e-3
    # Minecraft fall damage: ceil(distance - 3) = 2 half-hearts.
    assert r.health[30] == pytest.approx(18.0)  # (natural regeneration heals it later)


def test_walk_speed_sprint_and_sneak(flat):
    params, state = flat
    for part, speed in ((0, 4.317), (3, 5.612), (2, 1.31)):
        r = H.run(state, params, H.act(20, move=1, jump=part))
        dz = r.pos[19, 2] - Z0  # yaw 0 walks toward +z
        assert dz == pytest.approx(20 * speed / 20, rel=1e-3), part
        assert r.pos[19, 0] == pytest.approx(X0)


def test_strafe_left_is_east_at_yaw_zero(flat):
    params, state = flat
    r = H.run(state, params, H.act(10, strafe=1))
    assert r.pos[9, 0] > X0 + 1.0  # left of facing south is east (+x)


def test_camera_bins_turn_by_15_degrees(flat):
    params, state = flat
    r = H.run(state, params, H.act(3, yaw=13))
    assert float(r.state.player.yaw) == pytest.approx(45.0)
    r = H.run(state, params, H.act(8, pitch=11))
    assert float(r.state.player.pitch) == -90.0  # clamped looking up


def test_wall_blocks_walking(flat):
    params, state = flat
    wall_z = int(Z0) + 3
    for y in (H.GROUND + 1, H.GROUND + 2):
        state = H.set_block(state, (int(X0), y, wall_z), "stone")
    r = H.run(state, params, H.act(40, move=1))
    assert r.pos[-1, 2] == pytest.approx(wall_z - 0.3 - 1e-3, abs=1e-4)


def test_jump_onto_one_block(flat):
    params, state = flat
    step_z = int(Z0) + 2  # a one-block-high terrace from here on
    state = state.replace(blocks=state.blocks.at[:, H.GROUND + 1, step_z:].set(T.B["stone"]))
    walk = H.run(state, params, H.act(40, move=1))
    assert walk.pos[-1, 1] == pytest.approx(FEET, abs=2e-3)  # cannot climb without jumping
    assert walk.pos[-1, 2] < step_z
    jump = H.run(state, params, H.act(40, move=1, jump=1))
    assert jump.pos[-1, 1] == pytest.approx(FEET + 1.0, abs=2e-3)
    assert jump.pos[-1, 2] > step_z + 0.5


def _with_block_ahead(state, name):
    """A block at eye level right in front of the player (yaw 0 looks +z)."""
    return H.set_block(state, (int(X0), H.GROUND + 2, int(Z0) + 1), name)


def _equip(state, item):
    inv = state.inv
    i = spaces.item_id(item)
    return state.replace(
        inv=inv.replace(
            item=inv.item.at[0].set(i),
            count=inv.count.at[0].set(jnp.where(i > 0, 1, 0)),
            durability=inv.durability.at[0].set(int(T.ITEM_MAX_DURABILITY[i])),
        )
    )


@pytest.mark.parametrize(
    "block,tool,ticks,drop",
    [
        # ticks = ceil(1 / (speed / hardness / 30)) if harvestable else ceil(1 / (1 / hardness / 100))
        ("stone", "wooden_pickaxe", 23, "cobblestone"),
        ("stone", "stone_pickaxe", 12, "cobblestone"),
        ("stone", "air", 150, None),  # by hand: slow and no drop
        ("iron_ore", "stone_pickaxe", 23, "iron_ore"),
        ("iron_ore", "wooden_pickaxe", 150, None),  # tier too low: no drop
        ("diamond_ore", "iron_pickaxe", 15, "diamond"),
        ("dirt", "air", 15, "dirt"),
        ("log", "air", 60, "log"),
    ],
)
def test_mining_time_and_drops_by_tool_tier(flat, block, tool, ticks, drop):
    params, state = flat
    state = _equip(_with_block_ahead(state, block), tool)
    cell = (int(X0), H.GROUND + 2, int(Z0) + 1)
    before = H.run(state, params, H.act(ticks - 1, fn=spaces.FN_ATTACK))
    assert int(before.state.blocks[cell]) == T.B[block]
    after = H.run(state, params, H.act(ticks, fn=spaces.FN_ATTACK))
    assert int(after.state.blocks[cell]) == T.B["air"]
    if drop is not None:
        assert H.count(after.state, drop) - H.count(state, drop) == 1
        assert float(after.state.stats_mines[spaces.item_id(block)]) == 1
    else:
        assert H.count(after.state, "cobblestone") + H.count(after.state, "iron_ore") == 0
    if tool != "air":  # one use and one durability point per block mined
        assert float(after.state.stats_uses[spaces.item_id(tool)]) == 1
        assert int(after.state.inv.durability[0]) == T.ITEM_MAX_DURABILITY[spaces.item_id(tool)] - 1


def test_place_block_against_face(flat):
    params, state = flat
    target = (int(X0), H.GROUND + 2, int(Z0) + 2)
    state = H.set_block(state, target, "stone")
    r = H.run(state, params, H.act(1, fn=spaces.FN_PLACE, slot=1))
    placed = (int(X0), H.GROUND + 2, int(Z0) + 1)
    assert int(r.state.blocks[placed]) == T.B["dirt"]
    assert H.count(r.state, "dirt") == 9
    assert float(r.state.stats_places[spaces.item_id("dirt")]) == 1
    # Placing into the player's own cell is refused.
    r2 = H.run(state, params, H.act(1, pitch=12 + 6, fn=spaces.FN_PLACE, slot=1))
    assert H.count(r2.state, "dirt") == 10


def test_destroy_equip_drop_slot_actions(flat):
    params, state = flat
    r = H.run(state, params, np.concatenate([
        H.act(1, fn=spaces.FN_EQUIP, slot=2),  # stone pickaxe to the main hand
        H.act(1, fn=spaces.FN_DESTROY, slot=3),  # iron pickaxe gone
        H.act(1, fn=spaces.FN_DROP),  # drops the held stone pickaxe
    ]))  # fmt: skip
    items = np.asarray(r.state.inv.item)
    assert items[2] == spaces.item_id("wooden_pickaxe")
    assert items[3] == 0 and items[0] == 0


@pytest.mark.parametrize("key", [0, 1])
def test_struck_animal_panics_about_nearby_spots_then_calms_down(flat, key):
    """Minecraft's EntityAIPanic: random spots within 5 blocks at the panic speed (a cow's is 2x
    its walk) for PANIC_TICKS after the hit, not a straight flight away from the player."""
    params, state = flat
    state = _equip(state, "diamond_sword")
    state = H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 1.6])
    r = H.run(state, params, H.act(1, pitch=12 + 1, fn=spaces.FN_ATTACK), key=key)  # aim down
    mobs = r.state.mobs
    assert float(mobs.health[0]) == pytest.approx(10.0 - 7.0)  # diamond sword: 7
    assert bool(mobs.alive[0])
    assert float(r.state.stats_uses[spaces.item_id("diamond_sword")]) == 1
    xz = r.mob_pos[:, 0, [0, 2]]  # [STEPS, 2]; row 0 is after the hit tick
    moves = np.diff(xz, axis=0)
    speed = np.linalg.norm(moves, axis=-1)
    panic_speed = T.MOB_SPEED[T.M["cow"]] * T.MOB_PANIC_SPEED[T.M["cow"]]
    assert T.MOB_PANIC_SPEED[T.M["cow"]] == 2.0  # EntityCow's EntityAIPanic(this, 2.0D)
    panic = slice(0, T.PANIC_TICKS - 1)
    assert speed[panic].max() == pytest.approx(panic_speed, abs=1e-4)
    # Bounded: never further than the panic's path from where it was struck (a straight flight
    # at 2.5x walk went 12.5 blocks), and it changes direction (new spots) on the way.
    assert np.linalg.norm(xz[: T.PANIC_TICKS] - xz[0], axis=-1).max() <= panic_speed * 100 + 1e-3
    running = speed[panic] > 1e-4
    headings = np.round(np.degrees(np.arctan2(moves[panic, 0], moves[panic, 1])))[running]
    assert len(np.unique(headings)) >= 2
    # The panic ends with its timer: back to wandering at walking speed at most.
    assert int(mobs.flee[0]) == 0
    assert speed[T.PANIC_TICKS + 1 :].max() <= T.MOB_SPEED[T.M["cow"]] + 1e-4


def test_a_combo_action_moves_and_attacks_in_one_step(flat):
    params, state = flat
    state = _equip(state, "diamond_sword")
    state = H.place_player(state, [X0, FEET, Z0], pitch=15.0)  # looking 15 degrees down
    state = H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 1.6])
    combo = spaces.compact_action_set("combo")
    r = H.run(state, params, combo.table[combo.names.index("forward+attack")][None])
    assert float(r.state.mobs.health[0]) == pytest.approx(10.0 - 7.0)
    assert r.pos[0, 2] > Z0 + 0.05  # and walked forward (+z at yaw 0) in the same tick


def test_killing_drops_and_counts(flat):
    params, state = flat
    state = _equip(state, "diamond_sword")
    state = H.place_mob(state, 0, "chicken", [X0, FEET, Z0 + 1.6])  # 4 health: one hit
    r = H.run(state, params, H.act(1, pitch=12 + 2, fn=spaces.FN_ATTACK))
    assert not bool(r.state.mobs.alive[0])
    assert float(r.state.stats_kills[spaces.entity_id("chicken")]) == 1
    assert H.count(r.state, "chicken") == 1  # raw chicken drop


def test_zombie_chases_and_hits_for_three(flat):
    params, state = flat
    state = H.place_mob(state, 0, "zombie", [X0, FEET, Z0 + 6.0])
    r = H.run(state, params, H.noop(120))
    d = float(jnp.linalg.norm(r.state.mobs.pos[0] - r.state.player.pos))
    assert d < 1.7
    drops = -np.diff(r.health)
    first = drops[drops > 0][0]
    assert first == pytest.approx(3.0)  # zombie melee, no armour
    # Armour reduces damage: diamond set (20 points) -> 3 * (1 - 20/25).
    inv = state.inv
    armor = [spaces.item_id(f"diamond_{p}") for p in ("boots", "leggings", "chestplate", "helmet")]
    armored = state.replace(inv=inv.replace(item=inv.item.at[36:40].set(jnp.array(armor)),
                                            count=inv.count.at[36:40].set(1)))  # fmt: skip
    r2 = H.run(armored, params, H.noop(120))
    drops2 = -np.diff(r2.health)
    assert drops2[drops2 > 0][0] == pytest.approx(0.6)


def test_milk_and_shear_and_wool_regrows(flat):
    params, state = flat
    state = _equip(state, "bucket")
    state = H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 1.6])
    r = H.run(state, params, H.act(1, pitch=13, fn=spaces.FN_USE))
    assert H.count(r.state, "milk_bucket") == 1 and H.count(r.state, "bucket") == 0
    state = _equip(H.clear_mobs(state), "shears")
    state = H.place_mob(state, 0, "sheep", [X0, FEET, Z0 + 1.6])
    r = H.run(state, params, H.act(1, pitch=13, fn=spaces.FN_USE))
    assert 1 <= H.count(r.state, "wool") <= 3
    assert int(r.state.mobs.variant[0]) == 1  # sheared
    assert int(r.state.mobs.regrow[0]) == 1200 - H.STEPS


def test_day_night_and_night_spawning():
    task = H.spec(start_at_night=True)
    params = H.params_for(task, passive_mobs=0)
    params = params.replace(allow_mob_spawn=jnp.bool_(True), spawn_interval=jnp.int32(50))
    _, state = H.reset(jax.random.key(1), params, H.STATIC)
    state = H.clear_mobs(state)
    assert float(physics.daylight_level(state.world_time)) < 0.3
    assert float(physics.daylight_level(jnp.int32(6000))) == 1.0
    r = H.run(state, params, H.noop(1))
    assert int(r.state.world_time) == 13000 + H.STEPS
    spawned = np.asarray(r.state.mobs.mob_type)[np.asarray(r.state.mobs.alive)]
    assert len(spawned) >= 2
    assert set(spawned.tolist()) <= set(T.HOSTILE_SPAWN_TYPES.tolist())
    frozen = H.params_for(H.spec(always_night=True), passive_mobs=0)
    _, s2 = H.reset(jax.random.key(1), frozen, H.STATIC)
    assert int(H.run(s2, frozen, H.noop(1)).state.world_time) == 18000


def test_drowning_costs_health():
    params = H.params_for(H.spec(), passive_mobs=0)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    state = H.place_player(H.clear_mobs(state), [X0, FEET, Z0])
    blocks = state.blocks.at[:, H.GROUND + 1 : H.GROUND + 6, :].set(T.B["water"])
    state = state.replace(blocks=blocks, player=state.player.replace(oxygen=jnp.float32(20.0)))
    r = H.run(state, params, H.act(1, pitch=12))
    assert r.health[-1] < 20.0
    assert math.isclose(float(r.state.player.oxygen), 0.0)
