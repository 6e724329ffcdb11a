"""ProcessVectorEnv with several envs per worker process (``envs_per_worker`` > 1), and copy=False.

Same guarantees as one env per worker: results equal to in-process stepping, faults delivered as
truncations with the reason (for every env of the failed worker), nothing lost or duplicated, no
process left behind.
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from envs.bridge import ProcessVectorEnv, WorkerFailedError
from tests.envs.bridge.procs import children_of, is_alive, wait_all_dead

COUNTER = "envs.bridge.testing:faulty_env"


def _random_actions(seed: int, steps: int, num_envs: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, (steps, num_envs))


def test_equals_in_process_stepping_uneven_workers_next_step():
    # 5 envs, 2 per worker: workers host [0, 1], [2, 3], [4].
    env = ProcessVectorEnv("CartPole-v1", 5, envs_per_worker=2)
    ref = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * 5, autoreset_mode=AutoresetMode.NEXT_STEP
    )
    try:
        assert env.num_workers == 3 and env.envs_per_worker == 2
        pids = env.worker_pids
        assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4] != pids[0]
        obs, _ = env.reset(seed=11)
        np.testing.assert_array_equal(obs, ref.reset(seed=11)[0])
        episode_ends = 0
        for actions in _random_actions(3, 120, 5):
            obs, rew, term, trunc, info = env.step(actions)
            ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(actions)
            np.testing.assert_array_equal(obs, ref_obs)
            np.testing.assert_array_equal(rew, ref_rew)
            np.testing.assert_array_equal(term, ref_term)
            np.testing.assert_array_equal(trunc, ref_trunc)
            assert info == {}
            episode_ends += int(term.sum())
        assert episode_ends >= 5  # the comparison crossed autoresets
    finally:
        env.close()
        ref.close()


def test_equals_in_process_stepping_same_step_and_async_subsets():
    env = ProcessVectorEnv(
        "CartPole-v1",
        4,
        autoreset_mode=AutoresetMode.SAME_STEP,
        max_episode_steps=15,
        envs_per_worker=3,
        batch_size=2,
    )
    ref = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=15)] * 4,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    try:
        np.testing.assert_array_equal(env.reset(seed=3)[0], ref.reset(seed=3)[0])
        truncations = 0
        for actions in _random_actions(4, 40, 4):
            obs, rew, term, trunc, info = env.step(actions)
            ref_obs, ref_rew, ref_term, ref_trunc, ref_info = ref.step(actions)
            np.testing.assert_array_equal(obs, ref_obs)
            np.testing.assert_array_equal(rew, ref_rew)
            np.testing.assert_array_equal(term, ref_term)
            np.testing.assert_array_equal(trunc, ref_trunc)
            truncations += int(trunc.sum())
            done = term | trunc
            if done.any():
                np.testing.assert_array_equal(info["_final_obs"], done)
                for i in np.flatnonzero(done):
                    np.testing.assert_array_equal(info["final_obs"][i], ref_info["final_obs"][i])
        assert truncations >= 4
        # Async: step envs of one worker in separate commands (queued on that worker) and check
        # every row against the reference stepped with the same actions.
        actions = np.array([1, 0, 1, 1])
        ref_obs, ref_rew, *_ = ref.step(actions)
        env.send(actions[[2]], [2])
        env.send(actions[[0, 3]], [0, 3])  # 0 queues behind 2 on worker 0; 3 is on worker 1
        env.send(actions[[1]], [1])
        seen = []
        for _ in range(2):
            obs, rew, _, _, info = env.recv()
            for row, i in enumerate(info["env_id"]):
                np.testing.assert_array_equal(obs[row], ref_obs[i])
                assert rew[row] == ref_rew[i]
                seen.append(int(i))
        assert sorted(seen) == [0, 1, 2, 3]
    finally:
        env.close()
        ref.close()


def test_copy_false_returns_views_valid_until_next_step():
    env = ProcessVectorEnv(COUNTER, 4, envs_per_worker=2, copy=False)
    copied = ProcessVectorEnv(COUNTER, 2, envs_per_worker=2)
    try:
        obs, _ = env.reset(seed=0)
        assert not obs.flags.owndata
        first, *_ = env.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(first[:, 1], [1, 1, 1, 1])
        env.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(first[:, 1], [2, 2, 2, 2])  # the same buffer, overwritten
        copied.reset(seed=0)
        own, *_ = copied.step(np.ones(2, np.int64))
        assert own.flags.owndata
        copied.step(np.ones(2, np.int64))
        np.testing.assert_array_equal(own[:, 1], [1, 1])
    finally:
        env.close()
        copied.close()


def test_worker_faults_truncate_all_its_envs_others_kept(tmp_path):
    # Workers host [0, 1] (clean), [2, 3] (env 3 crashes), [4, 5] (env 4 hangs), [6, 7] (env 7
    # raises), all at their 3rd step.
    faults = {3: ("crash", 3), 4: ("hang", 3), 7: ("kill", 3)}
    env = ProcessVectorEnv(
        COUNTER,
        8,
        envs_per_worker=2,
        timeout_s=1.0,
        step_faults=faults,
        once_marker=str(tmp_path / "fired"),
        log_dir=str(tmp_path / "logs"),
    )
    try:
        env.reset(seed=0)
        before = list(env.worker_pids)
        for _ in range(2):
            env.step(np.ones(8, np.int64))
        obs, rew, term, trunc, info = env.step(np.ones(8, np.int64))
        hit = np.array([False, False, True, True, True, True, True, True])
        np.testing.assert_array_equal(trunc, hit)
        assert not term.any()
        np.testing.assert_array_equal(rew, np.where(hit, 0.0, 2.0))
        np.testing.assert_array_equal(obs[:, 1], np.where(hit, 0, 3))
        np.testing.assert_array_equal(info["_bridge_fault"], hit)
        for i in (2, 3):
            assert "exited with code 17 while stepping" in info["bridge_fault"][i]
            assert "(envs 2-3)" in info["bridge_fault"][i]
        for i in (4, 5):
            assert "no answer within 2 s while stepping" in info["bridge_fault"][i]  # 2 envs x 1 s
        for i in (6, 7):
            assert "killed by SIGKILL while stepping" in info["bridge_fault"][i]
        after = env.worker_pids
        assert after[:2] == before[:2]
        assert all(after[i] != before[i] for i in range(2, 8))
        assert after[2] == after[3] and after[4] == after[5] and after[6] == after[7]
        np.testing.assert_array_equal(obs[2:, 3], after[2:])  # obs from the new processes
        assert wait_all_dead(set(before[2:]), 5.0) == []
        assert env.restart_counts == [0, 0, 1, 1, 1, 1, 1, 1]
        # NEXT_STEP after a fault: the next step returns the new episode's start, reward 0.
        obs, rew, _, trunc, info = env.step(np.ones(8, np.int64))
        np.testing.assert_array_equal(obs[:, 1], np.where(hit, 0, 4))
        np.testing.assert_array_equal(rew, np.where(hit, 0.0, 2.0))
        assert not trunc.any() and "bridge_fault" not in info
        obs, *_ = env.step(np.ones(8, np.int64))
        np.testing.assert_array_equal(obs[:, 1], np.where(hit, 1, 5))
        log = (tmp_path / "logs" / "worker-2.log").read_text()
        assert "injecting fault 'hang'" in log and "restarting" in log
    finally:
        env.close()


def test_idle_and_buffered_envs_of_a_crashed_worker_are_truncated_on_their_next_step(tmp_path):
    env = ProcessVectorEnv(
        COUNTER,
        4,
        envs_per_worker=2,
        batch_size=1,
        step_faults={1: ("crash", 1)},
        once_marker=str(tmp_path / "once"),
    )
    try:
        env.async_reset(seed=0)
        for _ in range(4):
            env.recv()
        old = env.worker_pids[0]
        env.send(np.array([2]), [1])  # env 1 crashes its worker; env 0 (same worker) is idle
        obs, rew, term, trunc, info = env.recv()
        assert info["env_id"].tolist() == [1] and trunc[0] and rew[0] == 0.0
        assert "exited with code 17 while stepping" in info["bridge_fault"][0]
        new = env.worker_pids[0]
        assert new != old and obs[0, 3] == new
        # Env 0's episode died with the worker: its next step says so.
        env.send(np.array([2]), [0])
        obs, rew, term, trunc, info = env.recv()
        assert info["env_id"].tolist() == [0] and trunc[0] and not term[0] and rew[0] == 0.0
        assert "exited with code 17" in info["bridge_fault"][0]
        assert obs[0, 1] == 0 and obs[0, 3] == new
        env.send(np.array([2]), [0])  # NEXT_STEP: the reset step, already delivered
        obs, rew, _, trunc, info = env.recv()
        assert obs[0, 1] == 0 and rew[0] == 0.0 and not trunc[0] and "bridge_fault" not in info
        env.send(np.array([2]), [0])
        obs, rew, *_ = env.recv()
        assert obs[0, 1] == 1 and rew[0] == 3.0

        # A result already buffered (not received) when its worker is killed is delivered as
        # it was; the episode then ends truncated at the env's next step.
        env.send(np.array([1, 1]), [2, 3])
        obs, _, _, trunc, info = env.recv()
        first = int(info["env_id"][0])
        victim = env.worker_pids[2]
        os.kill(victim, signal.SIGKILL)
        assert wait_all_dead([victim], 5.0) == []
        obs, rew, _, trunc, info = env.recv()
        second = int(info["env_id"][0])
        assert {first, second} == {2, 3} and not trunc[0] and "bridge_fault" not in info
        assert obs[0, 1] == 1 and rew[0] == 2.0
        env.send(np.array([1, 1]), [2, 3])
        got = {}
        for _ in range(2):
            obs, rew, _, trunc, info = env.recv()
            got[int(info["env_id"][0])] = (obs[0], rew[0], trunc[0], info["bridge_fault"][0])
        assert sorted(got) == [2, 3]
        for row, reward, truncated, reason in got.values():
            assert truncated and reward == 0.0 and row[1] == 0
            assert "killed by SIGKILL" in reason
        assert env.restart_counts == [1, 1, 1, 1]
    finally:
        env.close()


def test_sigkill_from_outside_mid_step_async():
    env = ProcessVectorEnv(
        COUNTER, 4, envs_per_worker=2, step_delays={2: 0.3, 0: 0.05}, timeout_s=10
    )
    try:
        env.reset(seed=0)
        victim = env.worker_pids[2]
        env.send(np.zeros(4, np.int64))
        os.kill(victim, signal.SIGKILL)
        obs, rew, term, trunc, info = env.recv()
        assert sorted(info["env_id"].tolist()) == [0, 1, 2, 3]  # nothing lost, nothing twice
        row = {int(e): k for k, e in enumerate(info["env_id"])}
        assert [bool(trunc[row[i]]) for i in range(4)] == [False, False, True, True]
        for i in (2, 3):
            assert "killed by SIGKILL" in info["bridge_fault"][row[i]]
            assert obs[row[i], 1] == 0
        assert obs[row[0], 1] == 1 and obs[row[1], 1] == 1
        assert not is_alive(victim)
    finally:
        env.close()


def test_reset_fault_keeps_seeds_and_does_not_skip_the_next_step(tmp_path):
    env = ProcessVectorEnv(
        COUNTER,
        4,
        envs_per_worker=2,
        reset_faults={1: ("crash", 1)},
        once_marker=str(tmp_path / "once"),
    )
    try:
        obs, info = env.reset(seed=5)
        np.testing.assert_array_equal(obs[:, 0], [5, 6, 7, 8])  # retried resets kept their seeds
        assert info["_bridge_fault"].tolist() == [True, True, False, False]
        assert "exited with code 17 while resetting" in info["bridge_fault"][0]
        obs, rew, _, trunc, _ = env.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(obs[:, 1], [1, 1, 1, 1])
        np.testing.assert_array_equal(rew, [2.0] * 4)
        assert not trunc.any()
    finally:
        env.close()


def test_worker_failing_always_gives_up_and_close_leaves_no_processes(tmp_path):
    before = children_of(os.getpid())
    with pytest.raises(WorkerFailedError) as caught:
        bad = ProcessVectorEnv(
            COUNTER,
            4,
            envs_per_worker=2,
            reset_faults={3: ("kill", 1)},
            max_restarts=1,
            log_dir=str(tmp_path),
        )
        try:
            bad.reset()
        finally:
            bad.close()
    err = caught.value
    assert err.env_ids == [2, 3] and "failed 2 times in a row" in str(err)
    assert "injecting fault 'kill'" in err.log_tail
    assert children_of(os.getpid()) <= before

    env = ProcessVectorEnv(COUNTER, 5, envs_per_worker=3)
    pids = set(env.worker_pids)
    assert len(pids) == 2 and pids <= children_of(os.getpid())
    env.reset(seed=0)
    env.step(np.zeros(5, np.int64))
    env.close()
    assert not any(is_alive(p) for p in pids)
    assert children_of(os.getpid()) <= before


def test_envs_per_worker_is_validated():
    with pytest.raises(ValueError, match="envs_per_worker"):
        ProcessVectorEnv(COUNTER, 2, envs_per_worker=0)


def test_wrong_action_batch_is_refused_with_the_env_ids():
    env = ProcessVectorEnv(COUNTER, 3, envs_per_worker=2)
    try:
        env.reset(seed=0)
        with pytest.raises(ValueError, match=r"env ids \[0, 1, 2\] must have shape \(3,\)"):
            env.step(np.zeros(2, np.int64))
        with pytest.raises(ValueError, match=r"env ids \[1, 2\]"):
            env.send(np.zeros(3, np.int64), [1, 2])
        obs, *_ = env.step(np.zeros(3, np.int64))  # still usable
        np.testing.assert_array_equal(obs[:, 1], [1, 1, 1])
    finally:
        env.close()


def test_hang_with_a_command_queued_behind_it_then_reset_with_commands_in_flight(tmp_path):
    env = ProcessVectorEnv(
        COUNTER,
        4,
        envs_per_worker=2,
        batch_size=1,
        timeout_s=2.0,
        step_faults={0: ("hang", 1)},
        once_marker=str(tmp_path / "once"),
    )
    try:
        env.async_reset(seed=0)
        for _ in range(4):
            env.recv()
        env.send(np.array([1]), [0])  # hangs its worker...
        env.send(np.array([1]), [1])  # ...with this command queued behind it
        env.send(np.array([1]), [2])  # the other worker is fine
        got = {}
        for _ in range(3):
            obs, rew, term, trunc, info = env.recv()
            i = int(info["env_id"][0])
            got[i] = (int(obs[0, 1]), bool(trunc[0]), info.get("bridge_fault", [None])[0])
        assert got[2] == (1, False, None)
        for i in (0, 1):
            step, truncated, reason = got[i]
            assert step == 0 and truncated
            assert "no answer within 2 s while stepping (worker pid" in reason
        # reset() waits out commands in flight, drops undelivered results, resets everything.
        env.send(np.array([1, 1]), [0, 1])
        env.send(np.array([1]), [3])
        obs, info = env.reset(seed=10)
        np.testing.assert_array_equal(obs[:, 0], [10, 11, 12, 13])
        np.testing.assert_array_equal(obs[:, 1], [0, 0, 0, 0])
        assert "bridge_fault" not in info
        env.send(np.ones(4, np.int64))
        steps = {}
        for _ in range(4):
            obs, *_, info = env.recv()
            steps[int(info["env_id"][0])] = int(obs[0, 1])
        assert steps == {0: 1, 1: 1, 2: 1, 3: 1}
    finally:
        env.close()
