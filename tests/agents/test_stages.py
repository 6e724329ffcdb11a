"""Multi-stage training (paper App. G.3) on the embedded world: every stage's `task_id`s index
one task vocabulary of the run, so the policy's task embedding means the same task in every
stage, the carried SI buffer keeps the earlier stages' trajectories, and the final policy can be
asked for any task it was trained on."""

import dataclasses

import jax
import numpy as np

from agents import adapters, build, checkpoints, ppo

COWS, SHEEP = ("milk a cow", "hunt a cow"), ("shear a sheep", "hunt a sheep")
TINY = ppo.PPOConfig(
    stages=f"{','.join(COWS)};{','.join(SHEEP)}", world_size=16, world_pool=1, render=False,
    num_envs=4, num_steps=8, total_steps=64, num_minibatches=2, update_epochs=1, si_every=1,
    si_max_len=8, si_capacity=16, max_episode_steps=8, progress=False, si_min_return=-1e9,
    final_eval_episodes=0, core_size=8,
)  # fmt: skip


def test_every_stage_indexes_the_runs_task_vocabulary():
    ids = ("milk_cow", "hunt_cow", "shear_sheep", "hunt_sheep")
    assert adapters.task_vocabulary(TINY) == ids
    # a single-stage run's vocabulary is its tasks, in --task's order (as before stages)
    one = dataclasses.replace(TINY, stages="", task="hunt a sheep,milk a cow")
    assert adapters.task_vocabulary(one) == ("hunt_sheep", "milk_cow")
    env = build.build(TINY, SHEEP).env
    assert env.task_names == ids and env.num_tasks == 4
    np.testing.assert_array_equal(env.task_ids, [2, 3, 2, 3])
    np.testing.assert_array_equal(build.build(TINY, COWS).env.task_ids, [0, 1, 0, 1])
    # each env's world is its own task's: the stage-2 envs hunt and shear sheep
    sheep = build.build(dataclasses.replace(TINY, stages="", task=",".join(SHEEP)), SHEEP).env
    for a, b in zip(jax.tree.leaves(env.params), jax.tree.leaves(sheep.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_two_stages_keep_the_first_stages_si_trajectories_and_tasks(tmp_path):
    cfg = dataclasses.replace(TINY, out=str(tmp_path / "run"), final_eval_episodes=2)
    summary = ppo.train(cfg)
    runner = summary["runner"]
    # the final evaluation plays the last stage's tasks, named as --stages wrote them
    assert list(summary["final_eval"]["tasks"]) == list(SHEEP)
    buf = jax.device_get(runner.si_buffer)
    tasks = set(np.asarray(buf.task_id)[np.asarray(buf.valid)].tolist())
    # stage 1's cow episodes (ids 0, 1) were carried through stage 2 beside its sheep (2, 3)
    assert tasks == {0, 1, 2, 3}, tasks
    stored = np.asarray(buf.obs["task_id"])[np.asarray(buf.valid)]
    assert np.all(stored == np.asarray(buf.task_id)[np.asarray(buf.valid)][:, None])
    _, info = checkpoints.load_policy(cfg.out)
    assert info["task_names"] == adapters.task_vocabulary(cfg)
