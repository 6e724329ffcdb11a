"""A batch of worlds split over devices (envs.voxel.parallel) gives the same trajectories as one
device. The test process has 4 CPU devices (tests/conftest.py)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import spaces
from envs.tasks import paper
from envs.voxel import env as E
from envs.voxel import parallel
from tests.envs.voxel import helpers as H

STATIC = dataclasses.replace(H.STATIC, render=True, height=24, width=32)
N = 4


def _rollout_both(steps=3):
    """The same random rollout stepped by the plain vmapped call and by `sharded_step`."""
    assert len(jax.devices()) >= N, "tests/conftest.py should give 4 CPU devices"
    params = E.make_params(paper.get("hunt a cow"), STATIC, seed=0)
    keys = jax.random.split(jax.random.key(0), N)
    _, states = jax.jit(jax.vmap(E.reset, in_axes=(0, None, None)), static_argnums=2)(
        keys, params, STATIC
    )
    mesh = parallel.env_mesh(N)
    assert mesh.devices.size == N
    sharded = parallel.sharded_step(mesh, STATIC)
    plain = jax.jit(E.step_autoreset_batch, static_argnames="static")
    s_plain = states
    # a copy: the sharded step donates its states, and device_put may alias device 0's shard
    s_shard = jax.device_put(jax.tree.map(jnp.copy, states), parallel.env_sharding(mesh))
    outs = []
    for t in range(steps):
        k = jax.random.fold_in(jax.random.key(1), t)
        ka, ks = jax.random.split(k)
        actions = jax.random.randint(ka, (N, 8), 0, jnp.asarray(spaces.ACTION_NVEC))
        actions = actions.at[:, 5].set(3)  # attack every step: mobs get hit, info changes
        step_keys = jax.random.split(ks, N)
        a = plain(step_keys, s_plain, actions, params, STATIC)
        b = sharded(step_keys, s_shard, actions, params)
        s_plain, s_shard = a[1], b[1]
        assert b[0]["rgb"].sharding.spec == parallel.env_sharding(mesh).spec
        assert len(b[0]["rgb"].sharding.device_set) == N
        # to NumPy now: the next sharded step donates (deletes) this step's states
        outs.append(jax.tree.map(np.asarray, (a, b)))
    return outs


def test_sharded_step_matches_one_device():
    outs = _rollout_both()
    for a, b in outs:
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            assert x.shape == y.shape and x.dtype == y.dtype
            if np.issubdtype(x.dtype, np.floating):
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(x, y)
    rgb = outs[-1][1][0]["rgb"]
    assert rgb.shape == (N, 24, 32, 3) and rgb.std() > 0  # real frames, not zeros


def test_vector_env_shards_over_devices_with_the_same_results():
    small = dict(
        size_x=STATIC.size_x, size_y=STATIC.size_y, size_z=STATIC.size_z,
        sea_level=STATIC.sea_level, num_trees=STATIC.num_trees, render=True, height=24,
        width=32, world_pool_size=STATIC.world_pool_size, max_mobs=STATIC.max_mobs,
        max_initial_mobs=STATIC.max_initial_mobs, max_steps=3,
    )  # fmt: skip
    spread = envs.make_vector("hunt a cow", N, **small)
    single = envs.make_vector("hunt a cow", N, devices=1, **small)
    assert spread.mesh.devices.size == N and single.mesh.devices.size == 1
    rng = np.random.default_rng(0)
    o1, _ = spread.reset(seed=3)
    o2, _ = single.reset(seed=3)
    np.testing.assert_array_equal(o1["rgb"], o2["rgb"])
    truncated = []
    for _ in range(4):  # crosses the 3-step time limit: same-step autoreset on both
        act = rng.integers(0, spaces.ACTION_NVEC, (N, 8))
        r1 = spread.step(act)
        r2 = single.step(act)
        np.testing.assert_array_equal(r1[0]["rgb"], r2[0]["rgb"])
        for x, y in zip(r1[1:4], r2[1:4], strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-6)
        assert set(r1[4]) == set(r2[4])
        truncated.append(r1[3].all())
    assert truncated == [False, False, True, False]


def test_env_mesh_uses_the_devices_that_divide_the_batch():
    assert parallel.env_mesh(8).devices.size == 4
    assert parallel.env_mesh(6).devices.size == 3
    assert parallel.env_mesh(7).devices.size == 1
    assert parallel.env_mesh(8, jax.devices()[:2]).devices.size == 2
    with pytest.raises(ValueError, match="num_envs"):
        parallel.env_mesh(0)


def test_bad_inputs_name_the_fix():
    sharded = parallel.sharded_step(parallel.env_mesh(4), STATIC)
    keys = jax.random.split(jax.random.key(0), 6)
    with pytest.raises(ValueError, match="multiple of 4"):
        sharded(keys, None, jnp.zeros((6, 8), jnp.int32), None)
    with pytest.raises(RuntimeError, match="before JAX executes anything"):
        parallel.use_cpu_cores(2)  # this process has run JAX already
    with pytest.raises(ValueError, match="devices must be >= 1"):
        envs.make_vector("hunt a cow", 2, devices=0)
