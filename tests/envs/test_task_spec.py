"""Task format: reward/success semantics vs hand-computed MineDojo values, NumPy and JAX."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import spaces
from envs.tasks import spec as S


def _signals(**changes):
    base = S.TaskSignals.zeros()
    return dataclasses.replace(base, **{k: np.asarray(v) for k, v in changes.items()})


def _inv(**counts):
    v = np.zeros(spaces.NUM_ITEMS, np.float32)
    for k, c in counts.items():
        v[spaces.item_id(k)] = c
    return v


def _kills(**counts):
    v = np.zeros(spaces.NUM_ENTITIES, np.float32)
    for k, c in counts.items():
        v[spaces.entity_id(k)] = c
    return v


MILK = S.TaskSpec(
    id="harvest_milk",
    category="harvest",
    prompt="milk a cow",
    target_names=("milk_bucket",),
    target_quantities=(1,),
    initial_inventory=(S.InventoryItem(0, "bucket"),),
    success=S.SuccessCriterion("inventory", ("milk_bucket",), (1,)),
)
TWO_TARGETS = S.TaskSpec(
    id="harvest_two",
    category="harvest",
    prompt="get wool or beef",
    target_names=("wool", "beef"),
    target_quantities=(2, 1),
    reward_weights=(1.0, 5.0),
    success=S.SuccessCriterion("inventory", ("wool", "beef"), (2, 1)),
)
COMBAT = S.TaskSpec(
    id="combat_zombie",
    category="combat",
    prompt="combat a zombie",
    target_names=("zombie",),
    target_quantities=(1,),
    success=S.SuccessCriterion("kill", ("zombie",)),
)
TECH = S.TaskSpec(
    id="techtree_stone_pickaxe",
    category="techtree",
    prompt="craft and use a stone pickaxe",
    target_names=("stone_pickaxe",),
    tech_item="stone_pickaxe",
    success=S.SuccessCriterion("use_all", ("stone_pickaxe",)),
)
SURVIVE = S.TaskSpec(
    id="survival",
    category="survival",
    prompt="survive",
    target_days=2,
    success=S.SuccessCriterion("survive", days=2),
)


def _np_and_jax(fn, *args):
    """Evaluate fn on NumPy, on JAX eagerly and under jit; all must agree."""
    out_np = fn(*args)
    jargs = jax.tree.map(jnp.asarray, args)
    out_j = fn(*jargs)
    out_jit = jax.jit(fn)(*jargs)
    assert isinstance(out_np, np.ndarray | np.generic)
    np.testing.assert_allclose(np.asarray(out_j), out_np)
    np.testing.assert_allclose(np.asarray(out_jit), out_np)
    return out_np


def test_harvest_reward_rise_and_fall_and_success():
    p = S.TaskParams.from_spec(TWO_TARGETS)
    init = _signals(inventory=_inv(wool=1))
    prev = _signals(inventory=_inv(wool=1))
    cur = _signals(inventory=_inv(wool=2, beef=1))
    assert _np_and_jax(S.task_reward, p, init, prev, cur) == pytest.approx(1.0 + 5.0)
    # A fall is penalised by the same weight.
    assert _np_and_jax(S.task_reward, p, init, cur, prev) == pytest.approx(-6.0)
    # Success is relative to reset and any target suffices: beef rose by 1 (needs 1).
    assert bool(_np_and_jax(S.task_success, p, init, cur))
    only_wool = _signals(inventory=_inv(wool=2))
    assert not bool(S.task_success(p, init, only_wool))  # wool rose by 1 of 2
    assert bool(S.task_success(p, init, _signals(inventory=_inv(wool=3))))


def test_combat_kill_reward_and_success():
    p = S.TaskParams.from_spec(COMBAT)
    init = _signals(kills=_kills(zombie=2))
    cur = _signals(kills=_kills(zombie=3, spider=4))
    assert _np_and_jax(S.task_reward, p, init, init, cur) == pytest.approx(1.0)
    assert bool(_np_and_jax(S.task_success, p, init, cur))
    assert not bool(S.task_success(p, init, init))


def test_techtree_obtain_and_use():
    p = S.TaskParams.from_spec(TECH)
    z = _signals()
    got = _signals(inventory=_inv(stone_pickaxe=1))
    used = _signals(inventory=_inv(stone_pickaxe=1), uses=_inv(stone_pickaxe=3))
    assert S.task_reward(p, z, z, got) == pytest.approx(1.0)
    assert _np_and_jax(S.task_reward, p, z, got, used) == pytest.approx(30.0)
    assert not bool(S.task_success(p, z, got))
    assert bool(_np_and_jax(S.task_success, p, z, used))


def test_survival_days_and_bonus():
    p = S.TaskParams.from_spec(SURVIVE)
    z = _signals()
    day = S.TICKS_PER_DAY
    prev = _signals(ticks_alive=np.int32(day - 1))
    cur = _signals(ticks_alive=np.int32(day))
    assert _np_and_jax(S.task_reward, p, z, prev, cur) == pytest.approx(1.0)
    end_prev = _signals(ticks_alive=np.int32(2 * day - 1))
    end = _signals(ticks_alive=np.int32(2 * day))
    assert S.task_reward(p, z, end_prev, end) == pytest.approx(101.0)
    assert bool(S.task_success(p, z, end)) and not bool(S.task_success(p, z, end_prev))


def test_creative_kinds():
    def params(kind, **kw):
        spec = S.TaskSpec(
            id="c", category="creative", prompt="p", success=S.SuccessCriterion(kind, **kw)
        )
        return S.TaskParams.from_spec(spec)

    z = _signals(pos=np.array([0.0, 40.0, 0.0], np.float32))
    reach = params("reach", names=("portal",), distance=2.0)
    assert bool(_np_and_jax(S.task_success, reach, z, _signals(target_distance=np.float32(1.5))))
    assert not bool(S.task_success(reach, z, _signals(target_distance=np.float32(2.5))))
    ocean = params("biome", names=("ocean", "deep_ocean"))
    assert bool(_np_and_jax(S.task_success, ocean, z, _signals(biome_id=np.int32(24))))
    assert not bool(S.task_success(ocean, z, _signals(biome_id=np.int32(1))))
    dig = params("depth", depth=3.0)
    deep = _signals(pos=np.array([5.0, 37.0, 1.0], np.float32))
    shallow = _signals(pos=np.array([5.0, 38.0, 1.0], np.float32))
    assert bool(_np_and_jax(S.task_success, dig, z, deep))
    assert not bool(S.task_success(dig, z, shallow))
    carpet = params("place", names=("carpet",), quantities=(3,))
    assert bool(S.task_success(carpet, z, _signals(places=_inv(carpet=3))))
    assert not bool(S.task_success(carpet, z, _signals(places=_inv(carpet=2))))
    never = params("never")
    assert not bool(S.task_success(never, z, deep))
    # Creative reward is 0 whatever happens.
    assert S.task_reward(carpet, z, z, _signals(inventory=_inv(dirt=5))) == 0.0


def test_dense_reward_nav_and_attack():
    p = S.TaskParams.from_spec(MILK)
    prev = _signals(best_target_distance=np.float32(10.0), target_distance=np.float32(10.0))
    closer = _signals(target_distance=np.float32(7.0), target_visible=np.bool_(True))
    assert _np_and_jax(S.dense_reward, p, prev, closer) == pytest.approx(0.1 * 3.0)
    unseen = _signals(target_distance=np.float32(7.0), target_visible=np.bool_(False))
    assert S.dense_reward(p, prev, unseen) == 0.0
    farther = _signals(target_distance=np.float32(12.0), target_visible=np.bool_(True))
    assert S.dense_reward(p, prev, farther) == 0.0
    hit = _signals(
        target_distance=np.float32(10.0),
        target_visible=np.bool_(True),
        attack_hit_target=np.bool_(True),
    )
    assert _np_and_jax(S.dense_reward, p, prev, hit) == pytest.approx(1.0)
    # First sighting (no best yet) gives no navigation reward.
    assert S.dense_reward(p, _signals(), closer) == 0.0


def test_update_best_distance_loop_reference():
    rng = np.random.default_rng(0)
    dist = rng.uniform(1, 20, 50).astype(np.float32)
    vis = rng.random(50) < 0.7
    att = rng.random(50) < 0.1
    best, ref = np.float32(S.FAR), S.FAR
    for d, v, a in zip(dist, vis, att):
        best = S.update_best_distance(best, d, v, a)
        if a:
            ref = d if v else S.FAR
        elif v:
            ref = min(ref, d)
        assert float(best) == pytest.approx(ref)
    jbest = jax.jit(S.update_best_distance)(jnp.float32(5.0), jnp.float32(3.0), True, False)
    assert float(jbest) == 3.0


def test_batched_params_vmap_and_numpy_batch():
    params = S.stack_params([S.TaskParams.from_spec(s) for s in (MILK, COMBAT, TECH)])
    n = 3
    init = S.TaskSignals.zeros((n,))
    cur = dataclasses.replace(
        init,
        inventory=np.stack([_inv(milk_bucket=1), _inv(), _inv(stone_pickaxe=1)]),
        kills=np.stack([_kills(), _kills(zombie=1), _kills()]),
        uses=np.stack([_inv(), _inv(), _inv(stone_pickaxe=1)]),
    )
    r_np = S.task_reward(params, init, init, cur)
    s_np = S.task_success(params, init, cur)
    np.testing.assert_allclose(r_np, [1.0, 1.0, 11.0])
    np.testing.assert_array_equal(s_np, [True, True, True])
    jp, ji, jc = jax.tree.map(jnp.asarray, (params, init, cur))
    r_v = jax.jit(jax.vmap(S.task_reward))(jp, ji, ji, jc)
    s_v = jax.jit(jax.vmap(S.task_success))(jp, ji, jc)
    np.testing.assert_allclose(np.asarray(r_v), r_np)
    np.testing.assert_array_equal(np.asarray(s_v), s_np)


def test_spec_validation_errors():
    with pytest.raises(KeyError, match="unobtainium"):
        S.TaskSpec(id="x", category="harvest", prompt="p", target_names=("unobtainium",))
    with pytest.raises(ValueError, match="category"):
        S.TaskSpec(id="x", category="farming", prompt="p")
    with pytest.raises(ValueError, match="align"):
        S.TaskSpec(
            id="x", category="harvest", prompt="p", target_names=("log",), target_quantities=(1, 2)
        )
    with pytest.raises(ValueError, match="depth"):
        S.SuccessCriterion("depth")
    with pytest.raises(ValueError, match="slot"):
        S.InventoryItem("pocket", "stick")
    with pytest.raises(ValueError, match="quantity"):
        S.InventoryItem(0, "stick", quantity=65)
    assert S.InventoryItem("offhand", "shield").slot_index == 40
    assert S.default_success(COMBAT) == COMBAT.success
    assert hash(MILK) == hash(dataclasses.replace(MILK))
