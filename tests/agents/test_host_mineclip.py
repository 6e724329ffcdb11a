"""MineCLIP on the host-stepped driver (agents.sebulba.HostDriver with `host_mineclip_hooks`):
frozen frame features for the policy and the Direct reward, checked against an independent
computation with `MineCLIPHandle` on a fake env whose 160x256 frames the test controls, across
episode resets (Gymnasium NEXT_STEP autoreset) and rollout boundaries; then the CLI end to end."""

import dataclasses
import json

import gymnasium as gym
import jax
import numpy as np
import pytest

import mineclip_jax as mcj
from agents import checkpoints, mineclip_hooks, networks, ppo
from agents import learner as lrn
from mineclip_jax.reward import DEFAULT_NEGATIVE_PROMPTS
from tests.agents.test_learner import host_driver

GOAL = "shear a sheep"  # the tiny random MineCLIP of seed 2 rates it above chance (Direct > 0)
EPISODE_LENGTHS = (18, 5)  # env 0: the 16-frame window wraps; env 1: several resets
H, W = 160, 256


def _frame(env: int, episode: int, j: int) -> np.ndarray:
    rng = np.random.default_rng([env, episode, j])
    return rng.integers(0, 256, (H, W, 3), dtype=np.uint8)


class FrameEnv(gym.Env):
    """Episode e of env i shows frames _frame(i, e, 0..L) and terminates on frame L."""

    def __init__(self, index: int):
        self.index, self.length = index, EPISODE_LENGTHS[index]
        self.observation_space = gym.spaces.Dict(
            {"rgb": gym.spaces.Box(0, 255, (H, W, 3), np.uint8)}
        )
        self.action_space = gym.spaces.Discrete(3)
        self.episode, self.t = -1, 0

    def _obs(self):
        return {"rgb": _frame(self.index, self.episode, self.t)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, self.t == self.length, False, {}


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("mc") / "mc"
    mcj.save_checkpoint(mcj.create(mcj.MineCLIPConfig.tiny(), jax.random.PRNGKey(2)), path)
    return path


def _expected(mc, num_steps):
    """Per env, the stream of frames the driver sees and, per transition, (mask, done, reward):
    Direct over the last 16 frames of the episode (its reset frame repeated in front), none on
    a done step or on the ignored NEXT_STEP reset step."""
    negatives = [p for p in DEFAULT_NEGATIVE_PROMPTS if p != GOAL]
    text = mc.encode_text([GOAL, *negatives])
    out = []
    for i, length in enumerate(EPISODE_LENGTHS):
        stream, (e, j) = [(0, 0)], (0, 0)
        rows = []
        for _ in range(num_steps):
            if j == length:  # ignored step: the env resets
                (e, j), row = (e + 1, 0), (0.0, False, 0.0)
            else:
                j += 1
                if j == length:
                    row = (1.0, True, 0.0)
                else:
                    ids = [max(k, 0) for k in range(j - 15, j + 1)]
                    feats = mc.encode_frames(np.stack([_frame(i, e, k) for k in ids]))
                    logits = np.asarray(mc.logits(mc.aggregate(feats[None]), text))[0]
                    p = np.exp(logits - logits.max())
                    row = (1.0, False, max(p[0] / p.sum() - 1.0 / len(p), 0.0))
            stream.append((e, j))
            rows.append(row)
        out.append((stream, rows))
    return out


def test_host_driver_mineclip_features_and_direct_reward_match_an_independent_computation(
    tiny_ckpt,
):
    cfg = dataclasses.replace(
        ppo.PPOConfig(), num_envs=2, num_steps=12, num_minibatches=1, update_epochs=1,
        si_every=1, si_steps=1, si_batch=1, si_capacity=2, si_max_len=8, success_bonus=0.0,
        reward="mineclip", mineclip_ckpt=str(tiny_ckpt),
    )  # fmt: skip
    hooks, consts, mc = mineclip_hooks.host_mineclip_hooks(cfg, (GOAL,))
    encoded = []  # rows encoded per inference call: each frame exactly once

    def featurize(c, obs):
        jax.debug.callback(lambda x: encoded.append(x.shape[0]), obs["rgb"][:, 0, 0, 0])
        return hooks.featurize(c, obs)

    env = gym.vector.SyncVectorEnv([lambda i=i: FrameEnv(i) for i in range(2)])
    net = networks.MineAgent(action_dims=(3,), fusion_dim=32, actor_hidden=16, actor_depth=1,
                             critic_hidden=16, critic_depth=1)  # fmt: skip
    driver = host_driver(
        cfg, env, net, action_dims=(3,), policy_obs=lambda o: {"rgb": o["rgb"]},
        to_env_action=lambda a: a[:, 0], task_conditioned=True, mesh=lrn.make_mesh(2),
        hooks=hooks.replace(featurize=featurize), consts=consts,
    )  # fmt: skip
    runner = driver.init(jax.random.PRNGKey(0))
    trajs = []
    for _ in range(2):  # the reward of a rollout's last step and the next rollout's first input
        runner, traj, stats = driver.rollout(runner)
        trajs.append(traj)
    traj = jax.tree.map(lambda *x: np.concatenate(x), *trajs)
    runner, _ = driver.learner.update(runner, trajs[-1])
    runner, _ = driver.learner.si_phase(runner)
    assert int(runner.update_step) == 1 and int(runner.env_steps) == 48
    jax.effects_barrier()
    assert sum(encoded) == 2 * (1 + 24)  # the reset frames + one frame per step, no more

    expected = _expected(mc, 24)
    assert set(traj.obs) == {"rgb_feat", "prompt"}  # what the policy and the SI buffer store
    assert set(runner.si_buffer.obs) == {"rgb_feat", "prompt"}
    for i, (stream, rows) in enumerate(expected):
        mask, done, reward = map(np.asarray, zip(*rows))
        np.testing.assert_array_equal(traj.mask[:, i], mask)
        np.testing.assert_array_equal(traj.done[:, i], done)
        np.testing.assert_allclose(traj.reward[:, i], reward, rtol=1e-4, atol=1e-6)
        frames = np.stack([_frame(i, e, j) for e, j in stream[:-1]])
        np.testing.assert_allclose(traj.obs["rgb_feat"][:, i], mc.encode_frames(frames),
                                   rtol=1e-4, atol=1e-5)  # fmt: skip
        last = mc.encode_frames(_frame(i, *stream[-1])[None])[0]
        np.testing.assert_allclose(runner.obs["rgb_feat"][i], last, rtol=1e-4, atol=1e-5)
    r = np.asarray(traj.reward)
    assert (r > 0).sum() > 5 and (r[traj.mask == 0] == 0).all() and (r[traj.done] == 0).all()
    # env 1's third episode starts at the rollout boundary (the reset frame is observed by the
    # featurize-only call that ends the first rollout)
    assert np.asarray(traj.done)[:, 1].sum() == 4 and traj.mask[11, 1] == 0


SMALL = [
    "--num-steps", "4", "--total-steps", "8", "--num-minibatches", "1", "--update-epochs", "1",
    "--si-every", "1", "--si-max-len", "4", "--si-capacity", "2", "--si-batch", "1",
    "--si-steps", "1", "--video-every", "-1", "--no-progress",
]  # fmt: skip


def _rows(out):
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


def test_process_backend_cli_runs_with_mineclip_reward(tmp_path, tiny_ckpt):
    out = tmp_path / "run"
    ppo.main([
        *SMALL, "--backend", "process", "--reward", "mineclip", "--mineclip-ckpt", str(tiny_ckpt),
        "--task", GOAL, "--world-size", "16", "--world-pool", "1", "--num-envs", "2",
        "--num-devices", "2", "--bridge-envs-per-worker", "2", "--max-episode-steps", "3",
        "--out", str(out),
    ])  # fmt: skip
    rows = _rows(out)
    assert [r["env_steps"] for r in rows] == [8]
    assert rows[0]["episodes"] == 2 and np.isfinite(rows[0]["pg_loss"]) and "si_loss" in rows[0]
    assert rows[0]["reward_mean"] > 0  # the MineCLIP term (no success in 3 ticks)
    assert (out / "checkpoints" / "1").exists()
    # the run loads as a policy over raw frames (features computed inside), as on-device runs do
    _, info = checkpoints.load_policy(out)
    assert info["update"] == 1 and info["task_names"] == ("shear_sheep",)


def test_minedojo_backend_cli_with_mineclip_gets_160x256_frames(tmp_path, tiny_ckpt):
    """The MineDojo path (bridge worker, Malmo protocol) with MineCLIP, against a fake server
    that only serves 160x256 frames: --image-size is overridden as on the jax backend."""
    from envs.bridge.fake_server import FakeMalmoServer

    out = tmp_path / "md"
    with FakeMalmoServer(height=160, width=256) as server:
        ppo.main([
            *SMALL, "--backend", "minedojo", "--minedojo-port", str(server.port),
            "--task", "harvest_milk_with_empty_bucket_and_cow", "--num-envs", "1",
            "--num-devices", "1", "--image-size", "16", "24", "--reward", "mineclip",
            "--mineclip-ckpt", str(tiny_ckpt), "--out", str(out),
        ])  # fmt: skip
        assert not server.errors
    rows = _rows(out)
    assert [r["env_steps"] for r in rows] == [4, 8] and all(np.isfinite(r["pg_loss"]) for r in rows)
