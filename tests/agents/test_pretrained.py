"""Exported and shipped agents (agents.pretrained): a run's policy written as config +
parameters + card + checksums loads through `load_policy` and acts exactly as the run's newest
checkpoint does; a damaged file or a wrong step is refused with a clear error."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from agents import adapters, build, checkpoints, evaluate, final_eval, ppo, pretrained
from tests.agents.test_learner import TINY


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrained")
    cfg = dataclasses.replace(TINY, core_size=8, out=str(root / "run"))
    ppo.train(cfg)
    out = checkpoints.export_policy(
        root / "run", root / "agent", {"tasks": ["cartpole"], "seeds": [0]}
    )
    return root / "run", out


def test_exported_policy_acts_as_the_run_checkpoint(exported):
    run, agent = exported
    assert sorted(p.name for p in agent.iterdir()) == sorted([*pretrained.FILES, "SHA256SUMS"])
    card = pretrained.read_card(agent)
    assert card["seeds"] == [0] and card["update"] == 4 and card["env_steps"] == TINY.total_steps
    from_run, info_run = checkpoints.load_policy(run)
    from_agent, info_agent = checkpoints.load_policy(agent)
    assert info_agent["config"] == info_run["config"] and info_agent["update"] == 4
    obs = {"state": np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)}
    for deterministic in (True, False):
        a = from_run(jax.random.PRNGKey(3), obs, deterministic=deterministic)
        b = from_agent(jax.random.PRNGKey(3), obs, deterministic=deterministic)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(info_run["last_core"], info_agent["last_core"])
    # only the policy travels: the export is far smaller than the run's checkpoint
    assert (agent / pretrained.PARAMS_FILE).stat().st_size < 200_000
    assert evaluate.policy_path(str(agent)) == agent


def test_damaged_export_and_bad_step_are_refused(exported, tmp_path):
    _, agent = exported
    import shutil

    copy = tmp_path / "agent"
    shutil.copytree(agent, copy)
    with pytest.raises(ValueError, match="no step 3"):
        checkpoints.load_policy(copy, step=3)
    raw = bytearray((copy / pretrained.PARAMS_FILE).read_bytes())
    raw[-1] ^= 0xFF
    (copy / pretrained.PARAMS_FILE).write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="params.msgpack"):
        checkpoints.load_policy(copy)
    # a config that does not fit the parameters (checksums rewritten, so only the shapes differ)
    shutil.copy(agent / pretrained.PARAMS_FILE, copy / pretrained.PARAMS_FILE)
    cfg = json.loads((copy / "config.json").read_text())
    cfg["core_size"] = 16
    (copy / "config.json").write_text(json.dumps(cfg))
    from mineclip_jax.checkpoint import write_checksums

    write_checksums(copy, pretrained.FILES)
    with pytest.raises(ValueError, match="does not fit the network"):
        checkpoints.load_policy(copy)


def test_unknown_policy_names_the_shipped_agents():
    with pytest.raises(FileNotFoundError, match="neither 'random', a shipped agent"):
        evaluate.policy_path("no-such-agent")
    for name in pretrained.SHIPPED_POLICIES:  # a name resolves to the package's directory
        assert evaluate.policy_path(name) == pretrained.PRETRAINED_DIR / name


def test_shipped_animal_zoo_agent_loads_by_name_and_beats_the_untrained_policy():
    """The agent shipped in the package: found by name, its checksums verified on load, its card
    naming training worlds other than its evaluation's; on worlds of a third seed it succeeds more
    often than the same network untrained (4 episodes per task, the same worlds and keys)."""
    assert "animal-zoo" in pretrained.SHIPPED_POLICIES
    path = pretrained.shipped_dir("animal-zoo")
    card = pretrained.read_card(path)
    assert card["training_world_seed"] != card["evaluation_world_seed"]
    assert card["tasks"] == ["milk a cow", "hunt a cow", "shear a sheep", "hunt a sheep"]
    cfg, built, params, _ = pretrained.load_exported(path)  # verifies SHA256SUMS first
    tasks = adapters.stage_tasks(cfg.task, cfg.stages)[-1]
    assert sorted(tasks) == sorted(card["tasks"])  # the last stage trains all four
    world = card["evaluation_world_seed"] + 1  # neither training's nor the card's worlds
    unseen = build.build(dataclasses.replace(cfg, seed=world), tasks)
    untrained = built.learner.init(jax.random.PRNGKey(7)).params
    result = final_eval.evaluate_policies(
        unseen, {"untrained": untrained, "trained": params}, episodes=4, seed=3, labels=tasks
    )
    total = {
        name: sum(by[name].successes for by in result["tasks"].values())
        for name in ("untrained", "trained")
    }
    assert len(result["tasks"]) == 4 and total["trained"] >= total["untrained"] + 4, total
