"""The actor / learner device split (agents.devices): the rollout over several devices and the
update on one give the run that one device gives, on both drivers; a split run resumes exactly;
bad device flags are refused; `python -m agents.ppo` takes every CPU core by default.

What is bitwise and what is not, and why. The split changes where things run, not what is
computed: the world steps, observations, rewards, sampled actions, episode counters and the SI
buffer come out bitwise equal (the per-env work is the same on any device, and a threefry key
gives the same bits however the array is split). The parameters and optimizer states agree to
float rounding only (`_leaves_equal(exact=False)`: 2e-5 relative, 2e-6 absolute; the measured
difference after 4 updates is 3e-8): XLA's CPU matmul picks its kernel by shape, so the policy's
forward pass on a shard of 4 or 2 envs rounds the logits / values differently in the last bit
from the same pass on all 8, and the update inherits that through `logp` and `value`. (With one
actor device, the split run equals the one-program run bitwise: the update itself, moved to
another device and program, changes nothing.)"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import gymnasium as gym
import jax
import numpy as np
import pytest
from jax.sharding import Mesh

from agents import build, devices, networks, ppo
from envs.voxel.parallel import available_cores
from tests.agents.test_learner import TINY, _leaves_equal, host_driver
from tests.multiprocess import REPO

SPLIT = dict(actor_devices=2, learner_devices=1)


def _devices_of(x) -> set[int]:
    return {d.id for d in x.sharding.device_set}


def test_split_anakin_run_equals_one_device_run(tmp_path):
    one = ppo.train(dataclasses.replace(TINY, num_devices=1, out=str(tmp_path / "one")))
    cfg = dataclasses.replace(TINY, **SPLIT, out=str(tmp_path / "split"))
    L = build.build(cfg).learner
    assert L.split and L.actor_mesh.devices.size == 2 and L.mesh.devices.size == 1
    split = ppo.train(cfg)
    r = split["runner"]
    # where things live: the envs over both actor devices, the learner state on the learner's
    actor_ids = {d.id for d in L.actor_mesh.devices.flat}
    assert (
        _devices_of(r.obs["state"]) == actor_ids and not r.obs["state"].sharding.is_fully_replicated
    )
    assert _devices_of(jax.tree.leaves(r.params)[0]) == {L.mesh.devices.flat[0].id}
    assert _devices_of(jax.tree.leaves(r.opt_state)[0]) == {L.mesh.devices.flat[0].id}
    assert int(r.update_step) == int(one["runner"].update_step) == 4  # SI ran twice (si_every=2)
    a, b = jax.device_get((one["runner"], r))
    _leaves_equal((a.key, a.actor, a.si_buffer), (b.key, b.actor, b.si_buffer), exact=True)
    _leaves_equal((a.params, a.opt_state, a.si_opt_state),
                  (b.params, b.opt_state, b.si_opt_state), exact=False)  # fmt: skip
    assert int(np.sum(np.asarray(b.si_buffer.valid))) > 0  # the SI phase had data
    moved = jax.device_get(L.init_sharded(jax.random.PRNGKey(0)).params)  # seed 0's fresh ones
    assert any(
        not np.allclose(x, y) for x, y in zip(jax.tree.leaves(moved), jax.tree.leaves(b.params))
    )


@pytest.mark.default_codegen
def test_one_actor_device_elsewhere_equals_the_one_program_run_bitwise(tmp_path):
    one = ppo.train(dataclasses.replace(TINY, num_devices=1, final_eval_episodes=0,
                                        out=str(tmp_path / "one")))  # fmt: skip
    # actors on device 0, the learner on device 3: two programs, two devices, same numbers
    cfg = dataclasses.replace(TINY, actor_devices=1, learner_devices=1, final_eval_episodes=0,
                              out=str(tmp_path / "split"))  # fmt: skip
    assert build.build(cfg).learner.split
    split = ppo.train(cfg)
    _leaves_equal(*jax.device_get((one["runner"], split["runner"])), exact=True)


@pytest.mark.default_codegen
def test_split_with_seeds_equals_the_one_device_seeds_run(tmp_path):
    base = dataclasses.replace(TINY, seeds=2, total_steps=8 * 16 * 2)
    one = ppo.train(dataclasses.replace(base, num_devices=1, out=str(tmp_path / "one")))
    split = ppo.train(dataclasses.replace(base, **SPLIT, out=str(tmp_path / "split")))
    _leaves_equal(*jax.device_get((one["runner"].params, split["runner"].params)), exact=False)
    _leaves_equal(*jax.device_get((one["runner"].actor, split["runner"].actor)), exact=True)


def test_killed_split_run_resumes_exactly(tmp_path):
    cfg = dataclasses.replace(TINY, **SPLIT, checkpoint_every=1)
    full = ppo.train(dataclasses.replace(cfg, out=str(tmp_path / "full")))
    part = dataclasses.replace(cfg, out=str(tmp_path / "part"))
    assert int(ppo.train(part, stop_after_updates=1)["runner"].update_step) == 1
    resumed = ppo.train(dataclasses.replace(part, resume=True))["runner"]
    L = build.build(part).learner
    # restored onto the right meshes, then trained on
    assert _devices_of(resumed.obs["state"]) == {d.id for d in L.actor_mesh.devices.flat}
    assert _devices_of(jax.tree.leaves(resumed.params)[0]) == {L.mesh.devices.flat[0].id}
    a, b = jax.device_get((full["runner"], resumed))
    assert int(b.update_step) == 4
    for x, y in ((a.learner, b.learner), (a.actor, b.actor)):
        _leaves_equal(x, y, exact=True)


def _host_run(mesh_kw: dict, updates: int = 2):
    cfg = dataclasses.replace(TINY, num_envs=4, num_steps=16, si_every=1, num_minibatches=2)
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    try:
        driver = host_driver(
            cfg, env, networks.MLPActorCritic((2,)), action_dims=(2,),
            policy_obs=lambda o: {"state": o}, to_env_action=lambda a: a[:, 0],
            success_fn=lambda info, n: np.zeros(n, bool), **mesh_kw,
        )  # fmt: skip
        runner = driver.init(jax.random.PRNGKey(0))
        for _ in range(updates):
            runner, metrics = driver.iteration(runner)
        return driver, runner, metrics
    finally:
        env.close()


def test_split_host_driver_equals_one_device():
    cpus = jax.devices()
    mesh = lambda devs: Mesh(np.array(devs), ("data",))  # noqa: E731
    d1, one, m1 = _host_run(dict(mesh=mesh(cpus[:1])))
    d2, split, m2 = _host_run(dict(mesh=mesh(cpus[3:4]), actor_mesh=mesh(cpus[:2])))
    assert not d1.learner.split and d2.learner.split
    # inference on both actor devices, the update on the learner's
    assert _devices_of(split.obs["state"]) == {0, 1}
    assert _devices_of(jax.tree.leaves(split.params)[0]) == {3}
    assert "si_loss" in m2 and int(split.update_step) == 2
    a, b = jax.device_get((one, split))
    _leaves_equal((a.actor, a.si_buffer, a.key), (b.actor, b.si_buffer, b.key), exact=True)
    _leaves_equal((a.params, a.opt_state), (b.params, b.opt_state), exact=False)
    np.testing.assert_allclose(m1["pg_loss"], m2["pg_loss"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(actor_devices=5), r"--actor-devices 5 but this process has 4 local device\(s\); pass at most 4"),
        (dict(learner_devices=9), r"--learner-devices 9 but this process has 4"),
        (dict(num_envs=6, num_minibatches=2, actor_devices=4, total_steps=6 * 16 * 4),
         r"--num-envs 6 does not split over --actor-devices 4 .* multiple of 4 \(e\.g\. 8\) or --actor-devices one of \[1, 2, 3\]"),
        (dict(num_envs=6, num_minibatches=2, learner_devices=4, total_steps=6 * 16 * 4),
         r"--num-envs 6 does not split over --learner-devices 4"),
        (dict(actor_devices=0), r"--actor-devices must be >= 1"),
        (dict(actor_devices=2, num_devices=2), r"give either it or --actor-devices"),
        (dict(learner_devices=1, distributed=True), r"--learner-devices under --distributed"),
    ],
)  # fmt: skip
def test_bad_device_flags_name_the_flag_and_the_fix(changes, match, tmp_path):
    cfg = dataclasses.replace(TINY, **{"out": str(tmp_path / "run"), **changes})
    with pytest.raises(ppo.ConfigError, match=match):
        ppo.validate(cfg)


def test_default_layout_follows_the_platform():
    # conftest: 4 CPU devices. Default: the actors take every device dividing --num-envs
    assert devices.counts(TINY) == (4, 1, False)
    assert devices.counts(dataclasses.replace(TINY, num_envs=6)) == (3, 1, False)
    assert devices.counts(dataclasses.replace(TINY, num_devices=2)) == (2, 2, True)
    actor, learner = devices.meshes(dataclasses.replace(TINY, actor_devices=2, learner_devices=2))
    assert [d.id for d in actor.devices.flat] == [0, 1]  # disjoint when they fit (Cleanba)
    assert [d.id for d in learner.devices.flat] == [2, 3]


_MAIN = """
import sys
from agents.ppo import main
main(sys.argv[1:])
import os
import jax
print("cores", len(os.sched_getaffinity(0)))
print("local devices", jax.local_device_count())
"""


def _cli(argv, tmp_path):
    """`python -m agents.ppo` on a tiny CartPole run with `argv` added, as a user starts it."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    argv = ["--task", "cartpole", "--num-envs", "4", "--num-steps", "8", "--total-steps", "32",
            "--num-minibatches", "2", "--si-every", "0", "--final-eval-episodes", "0",
            "--no-progress", "--out", str(tmp_path / "run"), *argv]  # fmt: skip
    return subprocess.run([sys.executable, "-c", _MAIN, *argv], capture_output=True, text=True,
                          timeout=300, env=env, cwd=REPO)  # fmt: skip


@pytest.mark.parametrize("flag", [None, "--no-all-cores"])
def test_cli_takes_every_cpu_core_by_default(flag, tmp_path):
    out = _cli([flag] if flag else [], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    # every core this process may run on: os.cpu_count() unless an affinity mask pins fewer
    cores = available_cores()
    assert cores == len(os.sched_getaffinity(0)) and cores <= os.cpu_count()
    assert out.stdout.splitlines()[-1] == f"local devices {1 if flag else cores}"
    assert out.stdout.splitlines()[-2] == f"cores {cores}"
    assert "already started" not in out.stderr


def test_cpu_cores_runs_the_process_on_that_many_cores(tmp_path):
    out = _cli(["--cpu-cores", "1"], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    # the mask is set before JAX starts, so the cores exposed as devices follow it
    assert out.stdout.splitlines()[-2:] == ["cores 1", "local devices 1"]
    cores = available_cores()
    bad = _cli(["--cpu-cores", str(cores + 1)], tmp_path)
    assert bad.returncode == 2
    assert f"--cpu-cores {cores + 1}: cannot run on {cores + 1} CPU core(s)" in bad.stderr
    assert f"pass a number from 1 to {cores}" in bad.stderr


def test_restricting_cores_after_jax_started_is_refused():
    from envs.voxel import parallel

    jax.devices()  # this test process's JAX has started
    with pytest.raises(RuntimeError, match="before JAX executes anything.*taskset -c"):
        parallel.restrict_cores(1)
    with pytest.raises(ValueError, match="pass a number from 1 to"):
        parallel.restrict_cores(0)
