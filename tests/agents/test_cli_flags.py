"""What `python -m agents.ppo` says about its flags before it trains: flags that would do nothing
and flags `--preset paper` would override are refused by name; a taken default --out is left
alone; the end of a run says where it went and how to evaluate it."""

import dataclasses
import json

import pytest

from agents import ppo
from agents.adapters import ConfigError

CFG = ppo.PPOConfig(task="cartpole", num_envs=8, num_steps=16, total_steps=128)


@pytest.mark.parametrize(
    ("changes", "given", "named"),
    [
        ({"mineclip_reward": "delta"}, {"mineclip_reward"}, "--mineclip-reward"),
        ({"smooth_coef": 0.0, "smooth_window": 8}, {"smooth_window"}, "--smooth-window"),
        ({"si_every": 0, "si_lr": 1e-3, "si_batch": 2}, {"si_every", "si_lr", "si_batch"},
         "--si-batch --si-lr"),
    ],
)  # fmt: skip
def test_a_flag_whose_feature_is_off_is_refused(changes, given, named):
    cfg = dataclasses.replace(CFG, **changes)
    with pytest.raises(ConfigError, match=named):
        ppo.validate(cfg, frozenset(given))
    ppo.validate(cfg)  # a Python caller's config (no flags given) is not second-guessed


def test_the_same_flags_with_their_feature_on_pass():
    cfg = dataclasses.replace(CFG, smooth_coef=0.01, smooth_window=8, si_lr=1e-3)
    ppo.validate(cfg, frozenset({"smooth_coef", "smooth_window", "si_lr"}))


def test_paper_preset_refuses_an_explicit_flag_it_would_override():
    cfg = dataclasses.replace(CFG, task="hunt a cow", preset="paper", agent_size="small")
    with pytest.raises(ConfigError, match="--agent-size small"):
        ppo.apply_preset(cfg, frozenset({"preset", "agent_size"}))
    same = dataclasses.replace(cfg, agent_size="paper")  # what the preset sets: no conflict
    assert ppo.apply_preset(same, frozenset({"preset", "agent_size"})).agent_size == "paper"


def test_a_taken_default_out_gets_a_fresh_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = ppo.PPOConfig()
    assert ppo.default_out(cfg, frozenset()) == cfg  # runs/ppo is free
    (tmp_path / "runs" / "ppo").mkdir(parents=True)
    (tmp_path / "runs" / "ppo" / "config.json").write_text("{}")
    fresh = ppo.default_out(cfg, frozenset())
    assert fresh.out.startswith("runs/ppo-")
    assert "--resume --out runs/ppo" in capsys.readouterr().out
    assert ppo.default_out(cfg, frozenset({"out"})) == cfg  # an explicit --out is the user's
    assert ppo.default_out(dataclasses.replace(cfg, resume=True), frozenset()).out == "runs/ppo"


def test_the_end_says_where_the_run_went_and_how_to_evaluate_it():
    text = ppo.what_next(dataclasses.replace(CFG, task="milk a cow,hunt a cow", out="runs/x"))
    assert "run saved in runs/x" in text
    assert ("python -m agents.evaluate --policy runs/x --tasks "
            f"{json.dumps('milk a cow')} {json.dumps('hunt a cow')}") in text  # fmt: skip
    assert "agents.evaluate" not in ppo.what_next(CFG)  # cartpole: nothing to evaluate there


def test_the_end_of_a_resumed_run_names_the_saved_runs_tasks(tmp_path, monkeypatch, capsys):
    """`--resume --out DIR` alone: the evaluate command names the saved run's task, not the
    command line's default one."""
    saved = dataclasses.replace(CFG, task="hunt a cow", out=str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(dataclasses.asdict(saved)))
    monkeypatch.setattr(ppo, "train", lambda cfg, given=None: {"env_steps": 128})
    ppo.main(["--out", str(tmp_path), "--resume"])
    out = capsys.readouterr().out
    assert f"--tasks {json.dumps('hunt a cow')} " in out, out
    assert ppo.PPOConfig().task not in out
    assert out.count("every other flag is the saved run's") == 0  # train (mocked here) says it once
