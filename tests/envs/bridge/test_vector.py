"""ProcessVectorEnv against real spawned workers: equality, async API, faults, cleanup."""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from envs.bridge import ProcessVectorEnv, WorkerFailedError
from tests.envs.bridge.procs import children_of, is_alive, wait_all_dead, wait_exited

COUNTER = "envs.bridge.testing:faulty_env"


@pytest.fixture(scope="module")
def cartpole_next_step():
    env = ProcessVectorEnv("CartPole-v1", 3, timeout_s=30)
    yield env
    env.close()


def _random_actions(seed: int, steps: int, num_envs: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, (steps, num_envs))


def test_equals_in_process_stepping_next_step(cartpole_next_step):
    env = cartpole_next_step
    ref = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * 3, autoreset_mode=AutoresetMode.NEXT_STEP
    )
    obs, _ = env.reset(seed=7)
    ref_obs, _ = ref.reset(seed=7)
    np.testing.assert_array_equal(obs, ref_obs)
    episode_ends = 0
    for actions in _random_actions(0, 120, 3):
        obs, rew, term, trunc, _ = env.step(actions)
        ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(actions)
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(rew, ref_rew)
        np.testing.assert_array_equal(term, ref_term)
        np.testing.assert_array_equal(trunc, ref_trunc)
        episode_ends += int(term.sum())
    assert episode_ends >= 3  # the comparison crossed autoresets
    ref.close()


def test_spaces_metadata_and_gymnasium_wrappers(cartpole_next_step):
    env = cartpole_next_step
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert env.single_observation_space == gym.make("CartPole-v1").observation_space
    assert env.action_space == gym.spaces.MultiDiscrete([2, 2, 2])
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert info == {}
    # Gymnasium's own vector wrapper reads autoreset_mode and episode ends from us.
    wrapped = gym.wrappers.vector.RecordEpisodeStatistics(env)
    wrapped.reset(seed=3)
    finished = []
    for actions in _random_actions(1, 80, 3):
        _, _, term, trunc, info = wrapped.step(actions)
        if "episode" in info:
            finished.extend(info["episode"]["l"][info["_episode"]].tolist())
    assert finished and all(length > 0 for length in finished)
    assert len(set(env.worker_pids)) == 3 and all(is_alive(p) for p in env.worker_pids)


def test_equals_in_process_stepping_same_step():
    env = ProcessVectorEnv(
        "CartPole-v1", 2, autoreset_mode=AutoresetMode.SAME_STEP, max_episode_steps=15
    )
    try:
        ref = gym.vector.SyncVectorEnv(
            [lambda: gym.make("CartPole-v1", max_episode_steps=15)] * 2,
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        np.testing.assert_array_equal(env.reset(seed=3)[0], ref.reset(seed=3)[0])
        truncations = 0
        for actions in _random_actions(2, 60, 2):
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
        assert truncations >= 2  # the explicit time limit fired
        ref.close()
    finally:
        env.close()


def test_time_limit_truncates_next_step_and_resets_on_following_step():
    env = ProcessVectorEnv(COUNTER, 2, max_episode_steps=4)
    try:
        obs, info = env.reset(seed=10)
        np.testing.assert_array_equal(obs[:, 0], [10, 11])  # env i is seeded seed + i
        np.testing.assert_array_equal(info["resets"], [1, 1])
        for t in range(1, 5):
            obs, rew, term, trunc, _ = env.step(np.array([1, 2]))
            np.testing.assert_array_equal(obs[:, 1], [t, t])
            np.testing.assert_array_equal(rew, [2.0, 3.0])
        assert trunc.all() and not term.any()
        obs, rew, term, trunc, info = env.step(np.array([1, 1]))  # NEXT_STEP: the reset step
        np.testing.assert_array_equal(obs[:, 1], [0, 0])
        np.testing.assert_array_equal(rew, [0.0, 0.0])
        np.testing.assert_array_equal(info["resets"], [2, 2])
    finally:
        env.close()


def test_async_api_returns_fastest_first_and_loses_nothing():
    delays = {0: 0.4, 1: 0.0, 2: 0.25, 3: 0.0}
    env = ProcessVectorEnv(COUNTER, 4, batch_size=2, step_delays=delays)
    try:
        env.async_reset(seed=0)
        seen = collections.Counter()
        first = env.recv()
        second = env.recv()
        for batch in (first, second):
            obs, rew, term, trunc, info = batch
            assert obs.shape == (2, 4) and not term.any() and not trunc.any()
            np.testing.assert_array_equal(obs[:, 0], info["env_id"])  # reset seed = 0 + id
            seen.update(info["env_id"].tolist())
        assert seen == collections.Counter({0: 1, 1: 1, 2: 1, 3: 1})
        env.send(np.array([2, 2, 2, 2]), np.arange(4))
        _, _, _, _, info = env.recv()
        assert sorted(info["env_id"].tolist()) == [1, 3]  # the two envs without a delay
        fast = info["env_id"]
        with pytest.raises(RuntimeError, match="still have a command in flight"):
            env.send(np.array([0]), [0])  # env 0 is still stepping
        env.send(np.array([0, 0]), fast)  # fast envs step again while 0 and 2 are still busy
        order = []
        steps = collections.Counter()
        for _ in range(2):
            obs, _, _, _, info = env.recv()
            for row, env_id in zip(obs, info["env_id"], strict=True):
                order.append(int(env_id))
                steps[int(env_id)] = int(row[1])
        assert sorted(order) == [0, 1, 2, 3]
        assert steps == {0: 1, 1: 2, 2: 1, 3: 2}
        with pytest.raises(RuntimeError, match="no env is in flight"):
            env.recv()
    finally:
        env.close()


def test_faults_crash_hang_raise_are_truncated_and_others_kept(tmp_path):
    faults = {1: ("crash", 3), 2: ("hang", 3), 3: ("kill", 3)}
    env = ProcessVectorEnv(
        COUNTER,
        4,
        timeout_s=2.0,
        step_faults=faults,
        once_marker=str(tmp_path / "fired"),
        log_dir=str(tmp_path / "logs"),
    )
    try:
        env.reset(seed=0)
        pids_before = list(env.worker_pids)
        for _ in range(2):
            env.step(np.ones(4, np.int64))
        obs, rew, term, trunc, info = env.step(np.ones(4, np.int64))
        # Env 0 stepped normally; 1-3 lost their episodes and came back truncated and reset.
        np.testing.assert_array_equal(trunc, [False, True, True, True])
        np.testing.assert_array_equal(term, [False, False, False, False])
        np.testing.assert_array_equal(rew, [2.0, 0.0, 0.0, 0.0])
        np.testing.assert_array_equal(obs[:, 1], [3, 0, 0, 0])
        np.testing.assert_array_equal(info["_bridge_fault"], [False, True, True, True])
        assert "exited with code 17" in info["bridge_fault"][1]
        assert "no answer within 2 s while stepping" in info["bridge_fault"][2]
        assert "killed by SIGKILL while stepping" in info["bridge_fault"][3]
        pids_after = env.worker_pids
        assert pids_after[0] == pids_before[0]
        assert all(pids_after[i] != pids_before[i] for i in (1, 2, 3))
        assert wait_all_dead(pids_before[1:], 5.0) == []
        np.testing.assert_array_equal(obs[1:, 3], pids_after[1:])  # obs from the new processes
        assert env.restart_counts == [0, 1, 1, 1]
        # NEXT_STEP after a fault: the next step returns the new episode's start, reward 0.
        obs, rew, term, trunc, info = env.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(obs[:, 1], [4, 0, 0, 0])
        np.testing.assert_array_equal(rew, [2.0, 0.0, 0.0, 0.0])
        assert "bridge_fault" not in info
        obs, *_ = env.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(obs[:, 1], [5, 1, 1, 1])
        log = (tmp_path / "logs" / "worker-2.log").read_text()
        assert "injecting fault 'hang'" in log and "restarting" in log
    finally:
        env.close()


def test_sigkill_from_outside_mid_run_async(tmp_path):
    env = ProcessVectorEnv(
        COUNTER, 3, batch_size=3, step_delays={0: 0.05, 1: 0.3, 2: 0.05}, timeout_s=10
    )
    try:
        env.reset(seed=0)
        victim = env.worker_pids[1]
        env.send(np.zeros(3, np.int64), [0, 1, 2])
        os.kill(victim, signal.SIGKILL)
        obs, rew, term, trunc, info = env.recv()
        assert sorted(info["env_id"].tolist()) == [0, 1, 2]  # nothing lost, nothing twice
        row = {int(e): k for k, e in enumerate(info["env_id"])}
        assert trunc[row[1]] and not trunc[row[0]] and not trunc[row[2]]
        assert "killed by SIGKILL" in info["bridge_fault"][row[1]]
        assert obs[row[0], 1] == 1 and obs[row[2], 1] == 1 and obs[row[1], 1] == 0
        assert env.worker_pids[1] != victim and not is_alive(victim)
    finally:
        env.close()


def test_reset_crash_once_recovers_but_crashing_always_gives_up_with_log(tmp_path):
    env = ProcessVectorEnv(
        COUNTER,
        2,
        reset_faults={1: ("crash", 1)},
        once_marker=str(tmp_path / "once"),
        log_dir=str(tmp_path / "a"),
    )
    try:
        obs, info = env.reset(seed=5)
        np.testing.assert_array_equal(obs[:, 0], [5, 6])  # the retried reset kept its seed
        assert info["_bridge_fault"].tolist() == [False, True]
        assert "exited with code 17 while resetting" in info["bridge_fault"][1]
    finally:
        env.close()

    before = children_of(os.getpid())
    with pytest.raises(WorkerFailedError) as caught:
        bad = ProcessVectorEnv(
            COUNTER, 2, reset_faults={0: ("kill", 1)}, max_restarts=2, log_dir=str(tmp_path / "b")
        )
        try:
            bad.reset()
        finally:
            with pytest.raises(RuntimeError, match="gave up on env 0"):
                bad.step(np.zeros(2, np.int64))  # unusable, and says why
            bad.close()
    err = caught.value
    assert err.env_id == 0 and "failed 3 times in a row" in str(err)
    assert "injecting fault 'kill'" in err.log_tail
    assert children_of(os.getpid()) <= before


def test_bad_factory_is_reported_with_log_not_retried_forever(tmp_path):
    with pytest.raises(WorkerFailedError, match="has no attribute 'nope'") as caught:
        ProcessVectorEnv("envs.bridge.testing:nope", 1, max_restarts=1, log_dir=str(tmp_path))
    assert "AttributeError" in caught.value.log_tail
    with pytest.raises(TypeError, match="factory must be"):
        ProcessVectorEnv(42, 1)


def test_close_leaves_no_processes():
    before = children_of(os.getpid())
    env = ProcessVectorEnv(COUNTER, 3)
    pids = env.worker_pids
    assert set(pids) <= children_of(os.getpid())
    env.close()
    env.close()  # idempotent
    assert not any(is_alive(p) for p in pids)
    assert children_of(os.getpid()) <= before
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(3, np.int64))


# The parent scripts below are SIGKILLed, so they cannot remove their workers' log directory
# (ProcessVectorEnv.close does): it goes in the test's tmp_path, not a leftover in /tmp.
_ORPHAN_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from envs.bridge import ProcessVectorEnv
    env = ProcessVectorEnv("envs.bridge.testing:faulty_env", 2, step_delays={{0: 60.0}},
                           log_dir={log_dir!r})
    env.reset()
    env.send([0, 0], [0, 1])  # env 0 is busy in a long step when the parent dies
    print(" ".join(str(p) for p in env.worker_pids), flush=True)
    time.sleep(120)
    """
)


def test_workers_die_when_parent_is_killed(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _ORPHAN_SCRIPT.format(root=os.path.abspath(root), log_dir=str(tmp_path)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([parent.stdout], [], [], 60.0)  # bounded wait
        assert ready, "the parent script did not start its workers within 60 s"
        line = parent.stdout.readline()
        pids = [int(p) for p in line.split()]
        assert len(pids) == 2 and all(is_alive(p) for p in pids)
    finally:
        parent.kill()
        parent.wait(timeout=10)
        parent.stdout.close()
    assert wait_all_dead(pids, 10.0) == []


_GIL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from envs.bridge import ProcessVectorEnv
    env = ProcessVectorEnv("envs.bridge.testing:faulty_env", 1, step_faults={{0: ("gil", 1)}},
                           timeout_s=120, log_dir={log_dir!r})
    env.reset()
    env.send([0], [0])  # the worker now sits 60 s in a C call holding its GIL
    time.sleep(1.0)
    print(env.worker_pids[0], flush=True)
    time.sleep(120)
    """
)


def test_worker_dies_with_parent_even_inside_a_gil_holding_c_call(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _GIL_SCRIPT.format(root=os.path.abspath(root), log_dir=str(tmp_path)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([parent.stdout], [], [], 60.0)
        assert ready, "the parent script did not start its worker within 60 s"
        pid = int(parent.stdout.readline())
        assert is_alive(pid)
    finally:
        parent.kill()
        parent.wait(timeout=10)
        parent.stdout.close()
    # A Python SIGTERM handler would wait for the 60 s call to return; SIGKILL does not.
    assert wait_all_dead([pid], 5.0) == []


def test_env_exception_is_reraised_in_the_parent_not_a_crash():
    with ProcessVectorEnv(COUNTER, 2, step_faults={1: ("raise", 2)}, timeout_s=30) as env:
        env.reset(seed=0)
        pids = env.worker_pids
        env.step(np.ones(2, np.int64))
        with pytest.raises(RuntimeError, match="injected failure in env 1") as caught:
            env.step(np.ones(2, np.int64))
        assert any("raised by env 1 while stepping" in n for n in caught.value.__notes__)
        assert env.worker_pids == pids and env.restart_counts == [0, 0]  # no restart
        # The failed env restarts its episode on its next step; the other one goes on.
        obs, rew, term, trunc, info = env.step(np.ones(2, np.int64))
        np.testing.assert_array_equal(trunc, [False, True])
        assert "raised RuntimeError: injected failure in env 1" in info["bridge_fault"][1]
        np.testing.assert_array_equal(obs[:, 1], [3, 0])  # env 0's step 2 result was dropped


def test_invalid_actions_and_seeds_are_refused_in_the_parent():
    with ProcessVectorEnv(COUNTER, 2, timeout_s=30) as env:
        env.reset(seed=0)
        pids = env.worker_pids
        with pytest.raises(
            ValueError, match=r"env ids \[0, 1\]: component 0 of env 1 must be in \[0, 2\], got 7"
        ):
            env.step(np.array([0, 7]))
        with pytest.raises(TypeError, match="must be integers.*float"):
            env.step(np.array([0.0, 1.0]))  # floats are refused, not cast
        with pytest.raises(ValueError, match="shape"):
            env.send(np.zeros(3, np.int64))
        with pytest.raises(ValueError, match=r"seed must be in \[0, 4294967295\], got -5"):
            env.reset(seed=-5)
        with pytest.raises(ValueError, match="the last env's seed"):
            env.reset(seed=2**32 - 1)
        with pytest.raises(ValueError, match="each seed"):
            env.reset(seed=[1, -1])
        # Nothing reached the workers: same processes, still usable.
        obs, *_ = env.step(np.array([1, 2]))
        np.testing.assert_array_equal(obs[:, 2], [1, 2])
        assert env.worker_pids == pids and env.restart_counts == [0, 0]


@pytest.mark.parametrize("name", ["timeout_s", "reset_timeout_s", "startup_timeout_s"])
@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_non_positive_timeouts_are_refused(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive number of seconds"):
        ProcessVectorEnv(COUNTER, 1, **{name: value})


def test_worker_killed_while_idle_is_reported_as_idle():
    with ProcessVectorEnv(COUNTER, 2, timeout_s=30) as env:
        env.reset(seed=0)
        victim = env.worker_pids[1]
        os.kill(victim, signal.SIGKILL)
        assert wait_exited(victim, 5.0)  # fully exited (not only a zombie leader) before the step
        obs, rew, term, trunc, info = env.step(np.ones(2, np.int64))
        assert trunc.tolist() == [False, True]
        assert "killed by SIGKILL while idle" in info["bridge_fault"][1]
        assert "while stepping" not in info["bridge_fault"][1]


def test_context_manager_closes_and_removes_its_own_log_dir(tmp_path):
    with ProcessVectorEnv(COUNTER, 1) as env:
        own = env.log_dir
        pid = env.worker_pids[0]
        assert os.path.isdir(own)
    assert env.closed and not os.path.exists(own) and wait_all_dead([pid], 5.0) == []
    kept = tmp_path / "logs"
    with ProcessVectorEnv(COUNTER, 1, log_dir=str(kept)):
        pass
    assert (kept / "worker-0.log").exists()  # a log dir the user named is kept
