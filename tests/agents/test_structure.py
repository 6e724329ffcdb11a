"""The seams of agents/: one-way imports, the shared episode bookkeeping, the SI hand-over between
stages, the paper preset, the Creative success bonus and the no-op at episode starts."""

import ast
import dataclasses
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import adapters, build, config, devices, episodes, networks, ppo
from agents import learner as lrn
from agents import self_imitation as si
from agents import train as loop
from mineclip_jax.distributed import DistributedConfig
from tests.agents.test_learner import TINY, host_driver

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    """Absolute module names a file imports (`from agents import x` counts as `agents.x`)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_nothing_below_the_cli_imports_it():
    """Only tests and benchmarks import agents.ppo; the loop, learner and networks import down."""
    packages = ("agents", "envs", "mineclip_jax", "data")
    files = [f for p in packages for f in (ROOT / p).rglob("*.py") if f.name != "ppo.py"]
    assert len(files) > 20
    offenders = [str(f.relative_to(ROOT)) for f in files if "agents.ppo" in _imports(f)]
    assert offenders == []
    above = {  # module -> the agents modules it must not import (they sit above it)
        "learner": {"train", "build", "adapters", "checkpoints", "sebulba", "ppo"},
        "sebulba": {"train", "build", "adapters", "checkpoints", "ppo"},
        "build": {"train", "checkpoints", "ppo"},
        "adapters": {"train", "build", "checkpoints", "ppo"},
        "networks": {"learner", "train", "build", "ppo"},
        "losses": {"learner", "train", "build", "ppo"},
    }
    for name, banned in above.items():
        imported = _imports(ROOT / "agents" / f"{name}.py")
        assert not {f"agents.{b}" for b in banned} & imported, name
    # the config's sections sit below everything that reads them: of agents, only the errors
    ours = {m for m in _imports(ROOT / "agents" / "config.py") if m.startswith("agents")}
    assert ours == {"agents.errors", "agents.errors.ConfigError"}, ours


def test_the_cli_module_holds_only_the_config_its_validation_and_main():
    """agents/ppo.py is the CLI: one config class, the functions that check and resolve flags,
    and `main`; no arrays (JAX, Flax, optax, NumPy live below it, in what it calls)."""
    path = ROOT / "agents" / "ppo.py"
    tree = ast.parse(path.read_text())
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes == ["PPOConfig"]
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"validate", "main", "train"} <= functions
    roots = {m.split(".")[0] for m in _imports(path)}
    assert not roots & {"jax", "flax", "optax", "numpy", "chex"}, roots


def test_the_config_is_its_sections():
    """Every PPOConfig field belongs to exactly one section, the traced hyper-parameters are the
    hyper-parameter section's fields, and the learner and the host driver take sections."""
    sections = [*ppo.SECTIONS, devices.DeviceConfig, DistributedConfig]
    owners = {}
    for cls in sections:
        assert issubclass(ppo.PPOConfig, cls), cls
        for name in config.field_names(cls):
            owners.setdefault(name, []).append(cls.__name__)
    assert {f.name for f in dataclasses.fields(ppo.PPOConfig)} == set(owners)
    assert [n for n, c in owners.items() if len(c) > 1] == []
    assert config.field_names(config.HyperConfig) == {f.name for f in dataclasses.fields(lrn.HyperParams)}  # fmt: skip
    cfg = dataclasses.replace(TINY, num_envs=4, ent_coef=0.3, task="hunt a cow", out="elsewhere")
    assert config.section(cfg, config.HyperConfig) == config.HyperConfig(ent_coef=0.3, smooth_coef=0.1)  # fmt: skip
    assert config.section(cfg, config.EnvConfig).task == "hunt a cow"
    with pytest.raises(TypeError, match="LearnerConfig.from_config"):
        lrn.Learner(cfg, None, networks.MLPActorCritic((2,)), action_dims=(2,))
    # what --resume may change: the run's budget, logging and a relaunch's address
    assert {"total_steps", "log_every", "time_limit_min", "coordinator"} <= set(config.resumable_fields(ppo.PPOConfig))  # fmt: skip
    assert not {"num_envs", "lr", "seed", "task", "num_processes"} & set(config.resumable_fields(ppo.PPOConfig))  # fmt: skip


def test_build_key_ignores_the_run_and_hyper_parameter_values():
    """Two configs share one build (one compiled learner) unless a static field differs; a
    hyper-parameter counts only as far as the compiled learner holds it: whether its term is on."""
    key = build.static_key(TINY)
    same = {"out": "x", "log_every": 3, "time_limit_min": 5.0, "seeds": 2, "lr": 1e-3,
            "gamma": 0.9, "smooth_coef": 0.5, "si_min_return": 1.0}  # fmt: skip
    for name, v in same.items():
        assert build.static_key(dataclasses.replace(TINY, **{name: v})) == key, name
    other = {"num_envs": 16, "seed": 1, "core_size": 8, "smooth_coef": 0.0, "vf_clip": 0.2,
             "aux_coef": 0.1, "unroll": True, "world_size": 16,
             "stages": "cartpole;cartpole"}  # fmt: skip
    for name, v in other.items():
        assert build.static_key(dataclasses.replace(TINY, **{name: v})) != key, name


def test_episode_statistics_against_a_hand_computed_sequence():
    # 2 envs, 3 steps; env 1 ends at t=0 (return 2, length 1) and t=2 (4 + 6, length 2); env 0
    # ends at t=1 (1 + 3, length 2) and is still running at t=2 (its success there not counted)
    reward = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    done = np.array([[0, 1], [1, 0], [0, 1]], bool)
    success = np.array([[0, 1], [0, 0], [1, 0]], bool)
    task_id = np.array([0, 1], np.int32)
    want = {"episodes": [1, 2], "return_sum": [4, 12], "length_sum": [2, 3], "success_sum": [0, 1]}

    def run(xp):
        ret, length = xp.zeros(2, xp.float32), xp.zeros(2, xp.int32)
        fins = []
        for t in range(3):
            ret, length, fin = episodes.step_episodes(
                ret, length, xp.asarray(reward[t], xp.float32), xp.asarray(done[t])
            )
            fins.append(fin)
        stack = {k: xp.stack([f[k] for f in fins]) for k in fins[0]}
        totals = episodes.per_task_totals(
            stack["done"], stack["return"], stack["length"], xp.asarray(success),
            xp.asarray(task_id), 2,
        )  # fmt: skip
        return totals, ret, length

    for xp in (np, jnp):
        totals, ret, length = run(xp)
        for k, v in want.items():
            np.testing.assert_allclose(np.asarray(totals[k]), v, err_msg=f"{xp.__name__} {k}")
        np.testing.assert_allclose(np.asarray(ret), [5.0, 0.0])
        np.testing.assert_array_equal(np.asarray(length), [1, 0])
    # a NEXT_STEP reset step (valid False) adds neither reward nor length
    r, n, fin = episodes.step_episodes(
        np.array([2.0]), np.array([3]), np.array([7.0]), np.array([False]), np.array([False])
    )
    assert r[0] == 2.0 and n[0] == 3 and not fin["done"][0]


def test_si_hand_over_remaps_task_ids_to_the_next_stage():
    obs = {"task_id": jnp.zeros((), jnp.int32), "state": jnp.zeros(2)}
    buf = si.init_buffer(4, 3, obs, 1)
    # slots: task "a" (0), task "b" (1), task "b" (1), empty
    buf = buf.replace(
        task_id=jnp.array([0, 1, 1, 0]), valid=jnp.array([True, True, True, False]),
        obs={**buf.obs, "task_id": jnp.array([[0] * 3, [1] * 3, [1] * 3, [0] * 3])},
    )  # fmt: skip
    out = loop.remap_si_tasks(jax.device_get(buf), ("a", "b"), ("c", "b"))
    # "b" is task 1 in the next stage too; "a" is not trained there: its trajectory leaves
    np.testing.assert_array_equal(out.valid, [False, True, True, False])
    np.testing.assert_array_equal(out.task_id[1:3], [1, 1])
    out = loop.remap_si_tasks(jax.device_get(buf), ("a", "b"), ("b", "a"))
    np.testing.assert_array_equal(out.task_id[:3], [1, 0, 0])
    np.testing.assert_array_equal(out.obs["task_id"][:3], [[1] * 3, [0] * 3, [0] * 3])
    np.testing.assert_array_equal(out.valid, [True, True, True, False])


def test_paper_preset_sets_the_recipe():
    cfg = ppo.apply_preset(dataclasses.replace(ppo.PPOConfig(), preset="paper"))
    from envs import tasks

    longest = tasks.get("hunt a cow").max_steps
    assert (cfg.smooth_coef, cfg.action_prior, cfg.agent_size) == (0.01, "uniform", "paper")
    assert cfg.max_episode_steps is None and cfg.si_max_len == longest
    assert ppo.apply_preset(ppo.PPOConfig()) == ppo.PPOConfig()  # no preset: untouched


def test_no_success_bonus_on_creative_tasks():
    from envs import tasks

    cfg = dataclasses.replace(ppo.PPOConfig(), success_bonus=10.0)
    creative = tasks.get("find_ocean")
    assert creative.category == "creative"
    assert adapters.success_bonus(cfg, [creative]) == 0.0
    assert adapters.success_bonus(cfg, [tasks.get("hunt a cow")]) == 10.0
    with pytest.raises(adapters.ConfigError, match="separate --stages"):
        adapters.success_bonus(cfg, [creative, tasks.get("hunt a cow")])
    reward = adapters.host_reward_fn(dataclasses.replace(cfg, reward="sparse", num_envs=2),
                                     ("find_ocean",))  # fmt: skip
    np.testing.assert_array_equal(reward(np.zeros(2), {"success": np.array([True, False])}), 0.0)


def test_host_driver_starts_episodes_with_the_noop_action():
    cfg = dataclasses.replace(TINY, num_envs=2, num_steps=48, num_minibatches=1)
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    driver = host_driver(
        cfg, env, networks.MLPActorCritic((3,)), action_dims=(3,),
        policy_obs=lambda o: {"state": o}, to_env_action=lambda a: np.minimum(a[:, 0], 1),
        noop_action=(2,), mesh=lrn.make_mesh(1),
    )  # fmt: skip
    runner = driver.init(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(runner.prev_action), [[2], [2]])
    runner, traj, _ = driver.rollout(runner)
    done, mask = np.asarray(traj.done), np.asarray(traj.mask)
    prev, act = np.asarray(traj.prev_action)[..., 0], np.asarray(traj.action)[..., 0]
    starts = np.zeros_like(done)
    starts[1:] = done[:-1] | (mask[:-1] == 0)
    assert starts.any() and (prev[starts] == 2).all()
    np.testing.assert_array_equal(prev[1:][~starts[1:]], act[:-1][~starts[1:]])


def test_device_rollout_starts_episodes_with_the_noop_action():
    from agents.build import build
    from envs import spaces

    cfg = dataclasses.replace(ppo.PPOConfig(), world_size=16, world_pool=1, render=False,
                              num_envs=2, num_steps=6, num_minibatches=1, max_episode_steps=3,
                              num_devices=1)  # fmt: skip
    L = build(cfg).learner
    runner = jax.jit(L.init)(jax.random.PRNGKey(0))
    _, traj, _ = jax.jit(L.rollout)(runner, L.consts)
    done, prev = np.asarray(traj.done), np.asarray(traj.prev_action)[..., 0]
    act = np.asarray(traj.action)[..., 0]
    assert done[2].all()  # 3-step episodes
    noop = spaces.compact_action_set("combo").noop  # the default action set's no-op
    assert cfg.action_space == "combo" and int(L.noop_action[0]) == noop
    np.testing.assert_array_equal(prev[0], noop)
    np.testing.assert_array_equal(prev[3], noop)
    np.testing.assert_array_equal(prev[1:3], act[0:2])
