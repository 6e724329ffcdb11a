"""experiments.table1.table1: the report against hand-computed numbers, and the whole pipeline (train with
the shipped MineCLIP-mini reward, evaluate, report) in its smoke mode."""

import csv
import dataclasses
import fcntl
import json
import os
from pathlib import Path

import numpy as np
import pytest
import tyro

from envs.tasks.evaluation import wilson_interval
from experiments.table1 import table1

TASK = "hunt a cow"  # the smoke runs' task
TASKS = ("milk a cow", "hunt a cow", "shear a sheep")
SUCCESSES = {  # out of 100 episodes
    "mineclip": (30, 12, 25),
    "manual": (28, 20, 10),
    "sparse": (5, 2, 1),
}


def _write_result(out, successes, episodes=100):
    (out / "eval").mkdir(parents=True)
    low, high = wilson_interval(successes, episodes)
    with open(out / "eval" / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["episodes", "successes", "success_rate", "ci95_low",
                                          "ci95_high"])  # fmt: skip
        w.writeheader()
        w.writerow({"episodes": episodes, "successes": successes,
                    "success_rate": successes / episodes, "ci95_low": low, "ci95_high": high})  # fmt: skip


def test_report_table_t_test_and_goal_check(tmp_path):
    args = table1.Args(tasks=TASKS, runs_dir=str(tmp_path / "runs"), seeds=(0,),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for reward, succ in SUCCESSES.items():
        for task, s in zip(TASKS, succ, strict=True):
            _write_result(table1.run_dir(args, task, reward, 0), s)
    numbers = table1.report(args)

    low, high = wilson_interval(12, 100)
    text = (tmp_path / "t.md").read_text()
    assert f"| hunt a cow | 12.0% [{100 * low:.1f}, {100 * high:.1f}] |" in text
    # paired t over tasks, by hand: d = (0.02, -0.08, 0.15)
    d = np.array([0.02, -0.08, 0.15])
    t = d.mean() / (d.std(ddof=1) / np.sqrt(3))
    assert numbers["t-test mineclip vs manual"]["t"] == pytest.approx(t)
    assert numbers["t-test mineclip vs manual"]["tasks"] == 3
    # MineCLIP >= manual's lower bound: milk (0.30 >= low(28)), shear (0.25 >= low(10)); not hunt
    assert wilson_interval(20, 100)[0] > 0.12
    # above sparse's upper bound on all three: 0.30 > high(5), 0.12 > high(2), 0.25 > high(1)
    assert wilson_interval(2, 100)[1] < 0.12
    assert numbers["goal"] == {"at_or_above_manual_low": 2, "above_sparse_high": 3, "needed": 3}
    assert "on 2 of 3 tasks" in text
    low20 = wilson_interval(20, 100)[0]
    assert f"hunt a cow: {100 * (low20 - 0.12):.1f} points below manual's lower bound" in text
    assert (tmp_path / "c.png").stat().st_size > 0


def test_report_prints_a_cancelling_difference_without_a_minus_sign(tmp_path):
    # 0.09 - 0.08 and 0.12 - 0.13 cancel only up to rounding (-1.4e-17), which "{:.2f}" prints as
    # "-0.00": the report must say t = 0.00 and +0.0 points.
    args = table1.Args(tasks=TASKS, runs_dir=str(tmp_path / "runs"), rewards=["mineclip", "manual"], seeds=(0,),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for reward, succ in {"mineclip": (9, 0, 12), "manual": (8, 0, 13)}.items():
        for task, s in zip(TASKS, succ, strict=True):
            _write_result(table1.run_dir(args, task, reward, 0), s)
    numbers = table1.report(args)
    assert abs(numbers["t-test mineclip vs manual"]["t"]) < 1e-9
    text = (tmp_path / "t.md").read_text()
    assert "t = 0.00, p = 1.000 (mean difference +0.0 points)" in text
    assert "-0.0" not in text


class SmokeRuns:
    """The Table 1 smoke runs of "hunt a cow" (`--smoke`, seed 0) under one directory, each
    trained once per test session by the first test that asks for it (an `agents.ppo`
    subprocess through `table1.main`, as the pipeline trains every run): the tests that need
    a run may sit on different xdist workers, which then train different runs at the same time;
    a worker that needs a run another one is training waits for it (a lock per run, held only
    while that run trains)."""

    def __init__(self, root: Path):
        self.root = root

    def args(self, rewards: tuple[str, ...], tmp_path: Path, **kw) -> table1.Args:
        return table1.Args(
            tasks=(TASK,), rewards=rewards, smoke=True, runs_dir=str(self.root / "runs"), seeds=(0,),
            markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"),
            diagnosis=str(tmp_path / "d.md"), diagnose_episodes=4, **kw,
        )  # fmt: skip

    def run(self, reward: str) -> Path:
        args = table1.resolved(self.args((reward,), self.root, steps=("train",)))
        out = table1.run_dir(args, TASK, reward, 0)
        with open(self.root / f"{reward}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not table1._finished(out, table1.budget(args, TASK)):
                    table1.main(args)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return out


@pytest.fixture
def smoke_runs(tmp_path_factory):
    """`SmokeRuns` under the session's tmp root (shared by the xdist workers: their basetemps
    are its children). The runs, their evaluations and the tests' own processes share the
    session's compilation cache (tests/conftest.py): what a run compiled (its final
    evaluation, which `cross_scores` repeats) the tests load instead of compiling it again."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "table1_smoke"
    root.mkdir(exist_ok=True)
    return SmokeRuns(root)


def test_smoke_pipeline_trains_evaluates_reports_and_rescores_the_mineclip_run(
    tmp_path, smoke_runs
):
    """The whole pipeline at smoke size with the MineCLIP reward: train, evaluate, report; a
    finished run is not trained or evaluated again; `experiments.table1.reward_probe` re-scores the
    run's recorded frames with the reward it trained on."""
    out = smoke_runs.run("mineclip")
    args = smoke_runs.args(("mineclip",), tmp_path, steps=("train", "evaluate", "report"))
    numbers = table1.main(args)
    args = table1.resolved(args)
    assert out == table1.run_dir(args, TASK, "mineclip", 0)
    config = json.loads((out / "config.json").read_text())
    assert config["reward"] == "mineclip" and config["mineclip_ckpt"] == "mini"
    assert json.loads((out / "summary.json").read_text())["env_steps"] == 512
    result = table1.read_result(out)
    assert result["episodes"] == 4
    cell = numbers["table"]["hunt a cow / mineclip"]
    assert (cell["episodes"], cell["successes"]) == (result["episodes"], result["successes"])
    for k in ("rate", "low", "high"):
        assert cell[k] == pytest.approx(result[k], abs=1e-6)
    # a finished run is not trained again, and its evaluation is reused
    mtime = (out / "eval" / "results.csv").stat().st_mtime
    assert table1.train(args) is True
    table1.evaluate(args)
    assert (out / "eval" / "results.csv").stat().st_mtime == mtime

    # experiments.table1.reward_probe re-scores the recorded frames as a whole trajectory; on every step
    # before an episode's end that must be the reward the run's own 16-frame cache paid.
    import mineclip_jax as mcj
    from agents.checkpoints import load_run
    from experiments.table1 import reward_probe

    params = load_run(out)[2].params
    rec = reward_probe.record(out, {"trained": params}, episodes=16, seed=1)["trained"]
    assert rec["rgb"].shape[:2] == (16, rec["reward"].shape[1] + 1)
    direct, p = reward_probe.goal_probability(
        mcj.load_checkpoint("mini"), "hunt a cow", rec["rgb"], negatives=table1.WANDER
    )  # the run's negatives
    paid = rec["live"] & ~rec["done"]
    assert paid.sum() > 100
    np.testing.assert_allclose(direct[:, 1:][paid], rec["reward"][paid], rtol=1e-4, atol=1e-5)
    bins = reward_probe.by_view(p[:, 1:], rec["visible"], rec["distance"], rec["live"])
    assert sum(f for _, f in bins.values()) == pytest.approx(1.0)
    far = rec["live"] & rec["visible"] & (rec["distance"] >= 6)
    if far.any():
        assert bins["in view, >= 6 blocks"][0] == pytest.approx(float(np.mean(p[:, 1:][far])))


def test_smoke_pipeline_diagnoses_and_cross_scores_reproduce_each_runs_final_eval(
    tmp_path, smoke_runs
):
    """The smoke runs of two rewards, `diagnose`, then `cross_scores` (every policy under every
    reward) checked against what each run measured itself at its end: the run's own trained and
    untrained policy under its own reward (summary.json's final_eval, same episodes and keys)
    must be reproduced from the checkpoint, whichever run's parameters are swapped in."""
    smoke_runs.run("manual")  # first: a worker beside this one may be training the other
    runs = {rw: smoke_runs.run(rw) for rw in ("mineclip", "manual")}
    args = smoke_runs.args(tuple(runs), tmp_path, steps=("diagnose",))
    table1.main(args)
    assert "| trained by manual |" in (tmp_path / "d.md").read_text()

    from agents import adapters, checkpoints

    cross = table1.cross_scores(runs, episodes=4, seed=0)  # the runs' final_eval episodes
    for rw, out in runs.items():
        own = json.loads((out / "summary.json").read_text())["final_eval"]["tasks"]["hunt a cow"]
        cfg = checkpoints.load_config(out)
        bonus = adapters.success_bonus(cfg, adapters.task_specs((cfg.task,)))
        assert bonus >= 10
        for name, policy in (("trained", f"trained by {rw}"), ("untrained", "untrained")):
            got = cross[rw][policy]
            assert got["success_rate"] == own[name]["success_rate"]
            assert got["return"] == pytest.approx(own[name]["mean_return"], rel=1e-5, abs=1e-6)
            assert got["return_without_bonus"] == pytest.approx(
                own[name]["mean_return"] - bonus * own[name]["success_rate"], rel=1e-5, abs=1e-6
            )
    # the two rewards pay the same episodes differently (else the swap scored one reward twice)
    assert cross["mineclip"]["untrained"]["return"] != cross["manual"]["untrained"]["return"]


def test_the_rewards_share_one_network_and_mineclip_only_pays():
    """Every reward's run has the same agents.ppo flags but --reward, --out and the MineCLIP
    reward's own (its checkpoint, --no-mineclip-features, the wander negatives); each group
    trains with its recipe; one program trains a (task, reward)'s seeds into seed<s>/."""
    from agents import ppo

    args = table1.Args()
    flags = {
        rw: table1.ppo_flags(args, "hunt a cow", rw, 0) for rw in ("mineclip", "manual", "sparse")
    }
    mc = flags["mineclip"]
    i = mc.index("--mineclip-ckpt")
    assert mc[i : i + 3] == ["--mineclip-ckpt", "mini", "--no-mineclip-features"]
    assert mc[i + 3 : i + 4 + len(table1.WANDER)] == ["--mineclip-negatives", *table1.WANDER]
    assert mc[:i] == [x.replace("manual", "mineclip") for x in flags["manual"]]
    assert flags["manual"] == [x.replace("sparse", "manual") for x in flags["sparse"]]
    parsed = {rw: tyro.cli(ppo.PPOConfig, args=f) for rw, f in flags.items()}
    ppo.validate(parsed["mineclip"], ppo.given_flags(mc))
    assert parsed["mineclip"].mineclip_negatives == table1.WANDER
    assert not parsed["mineclip"].mineclip_features and parsed["manual"].mineclip_ckpt is None
    same = {k for k in dataclasses.asdict(parsed["manual"])
            if getattr(parsed["manual"], k) == getattr(parsed["mineclip"], k)}  # fmt: skip
    differ = set(dataclasses.asdict(parsed["manual"])) - same
    assert differ == {"reward", "out", "mineclip_ckpt", "mineclip_features", "mineclip_negatives"}

    # the recipes: the hunt's for the animals and the neutral mobs, the default job for the
    # hostile mobs, which walk to the agent
    def parsed_run(task):
        return tyro.cli(ppo.PPOConfig, args=table1.ppo_flags(args, task, "manual", 0))

    default = ppo.PPOConfig()
    for task in (*table1.ANIMAL_ZOO, "combat a zombie pigman", "combat an enderman"):
        run = parsed_run(task)
        assert (run.action_repeat, run.max_episode_steps, run.aux_coef, run.total_steps) == (
            4, 500, 1.0, 327_680), task  # fmt: skip
        assert run.privileged_critic and run.critic_time_left, task
    for task in ("combat a spider", "combat a zombie"):
        run = parsed_run(task)
        assert (run.action_repeat, run.max_episode_steps, run.total_steps, run.aux_coef) == (
            default.action_repeat, default.max_episode_steps, default.total_steps,
            default.aux_coef), task  # fmt: skip
        assert not run.privileged_critic, task
    assert "hunt (500-tick episodes, 4 tick(s)" in table1.recipe_line(table1.MOB_COMBAT)
    assert "melee (200-tick episodes" in table1.recipe_line(table1.MOB_COMBAT)
    assert "combat an enderman" not in table1.recipe_line(("combat a zombie",))
    # one program: --seeds 3 into the reward's directory, where run_dir finds each seed
    three = tyro.cli(ppo.PPOConfig, args=table1.ppo_flags(args, "hunt a cow", "manual", 0, 3))
    assert three.seeds == 3 and three.seed == 0
    assert table1.run_dir(args, "hunt a cow", "manual", 2) == Path(three.out) / "seed2"
    with pytest.raises(SystemExit, match="not consecutive"):
        table1.validate(table1.Args(seeds=(0, 2), one_program=True))
    table1.validate(table1.Args(seeds=(0, 2)))
    # the default: one process per seed, each into its own run directory, one after another
    jobs = list(table1._jobs(dataclasses.replace(args, tasks=("hunt a cow",), rewards=("manual",))))
    assert [(seed, k, out) for _, _, seed, k, out in jobs] == [
        (s, 1, table1.run_dir(args, "hunt a cow", "manual", s)) for s in args.seeds
    ]
    with pytest.raises(SystemExit, match="not one of Table 1's tasks"):
        table1.recipe_of("find a cave")
    with pytest.raises(SystemExit, match="not one of Table 1's tasks"):
        table1.validate(table1.Args(tasks=("find a cave",)))
    # --extra as its help line writes it reaches every run's command line
    extra = tyro.cli(table1.Args, args=["--extra=--aux-coef", "0"])
    assert table1.ppo_flags(extra, "hunt a cow", "manual", 0)[-2:] == ["--aux-coef", "0"]


def test_seed_band_is_the_mean_and_range_of_the_seeds_on_one_grid():
    a = (np.array([0.0, 10.0, 20.0]), np.array([0.0, 0.5, 1.0]))
    b = (np.array([0.0, 10.0]), np.array([0.2, 0.2]))
    x, mean, lo, hi = table1.seed_band([a, b], points=3)
    np.testing.assert_allclose(x, [0.0, 5.0, 10.0])  # up to where the shorter ends
    np.testing.assert_allclose(mean, [0.1, (0.25 + 0.2) / 2, 0.35])
    np.testing.assert_allclose(lo, [0.0, 0.2, 0.2])
    np.testing.assert_allclose(hi, [0.2, 0.25, 0.5])
    assert table1.seed_band([(np.zeros(1), np.zeros(1))]) is None


def test_the_default_budget_is_whole_updates_and_a_bad_one_is_refused_before_any_run(tmp_path):
    """The default budget must be what every `agents.ppo` run accepts; a budget that is not a whole
    number of updates is refused up front with both valid neighbours named (not after the first
    run has been launched)."""
    args = table1.Args(runs_dir=str(tmp_path / "runs"))
    table1.validate(args)  # the default budgets
    flags = table1.ppo_flags(args, "hunt a cow", "manual", 0)
    total = int(flags[flags.index("--total-steps") + 1])
    per_update = int(flags[flags.index("--num-envs") + 1]) * int(
        flags[flags.index("--num-steps") + 1]
    )
    assert total % per_update == 0
    bad = table1.Args(runs_dir=str(tmp_path / "runs"), total_steps=500_000)
    with pytest.raises(SystemExit, match="--total-steps 499712 or 500736"):
        table1.main(bad)
    assert not (tmp_path / "runs").exists()


def test_report_with_one_task_says_the_t_test_needs_two(tmp_path):
    args = table1.Args(tasks=("milk a cow",), runs_dir=str(tmp_path / "runs"), seeds=(0,),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for reward, succ in zip(("mineclip", "manual", "sparse"), (9, 8, 14), strict=True):
        _write_result(table1.run_dir(args, "milk a cow", reward, 0), succ)
    numbers = table1.report(args)
    text = (tmp_path / "t.md").read_text()
    assert text.count("not defined for one task") == 2 and "nan" not in text
    assert np.isnan(numbers["t-test mineclip vs manual"]["t"])
    assert "(mean difference +1.0 points)" in text and "(mean difference -5.0 points)" in text
    assert numbers["goal"] == {"at_or_above_manual_low": 1, "above_sparse_high": 0, "needed": 1}


def test_report_states_each_tasks_budget_when_they_differ(tmp_path):
    """Runs trained with different budgets: the report says each task's (from the runs' own
    summary.json), not the --total-steps it was called with."""
    tasks = ("milk a cow", "hunt a cow")
    args = table1.Args(tasks=tasks, runs_dir=str(tmp_path / "runs"), total_steps=512_000, seeds=(0,),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for task, steps in zip(tasks, (256_000, 512_000), strict=True):
        for reward in args.rewards:
            out = table1.run_dir(args, task, reward, 0)
            _write_result(out, 10)
            (out / "summary.json").write_text(json.dumps({"env_steps": steps}))
    table1.report(args)
    text = (tmp_path / "t.md").read_text()
    assert "env steps per run: milk a cow 256,000; hunt a cow 512,000," in text
    for task in tasks:  # one budget for all: said once
        for reward in args.rewards:
            out = table1.run_dir(args, task, reward, 0)
            (out / "summary.json").write_text(json.dumps({"env_steps": 256_000}))
    table1.report(args)
    assert "\n256,000 env steps per run, seeds [0]" in (tmp_path / "t.md").read_text()


def test_report_names_the_episodes_the_evaluations_played(tmp_path):
    """Results of 40-episode evaluations under the default --episodes 100: the report counts
    the episodes that were played, not the ones asked for."""
    args = table1.Args(tasks=("milk a cow",), runs_dir=str(tmp_path / "runs"), seeds=(0, 1),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for reward in ("mineclip", "manual", "sparse"):
        for seed in (0, 1):
            _write_result(table1.run_dir(args, "milk a cow", reward, seed), 10, episodes=40)
    numbers = table1.report(args)
    text = (tmp_path / "t.md").read_text()
    assert "(40 evaluation episodes per seed" in text
    assert "Per seed (success rate of 40 episodes each)" in text
    assert "40 evaluation episodes per policy" in text
    assert "100 evaluation" not in text and "100 episodes" not in text
    assert numbers["table"]["milk a cow / manual"]["episodes"] == 80


def test_report_names_the_mineclip_reward_form_its_runs_trained_with(tmp_path):
    """A lever's runs (`--extra=--mineclip-reward peak`) are labelled by their saved configs, so
    their table cannot pass for the Direct reward's; Direct runs keep the plain label."""
    args = table1.Args(tasks=("milk a cow",), runs_dir=str(tmp_path / "runs"), seeds=(0,),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for reward in ("mineclip", "manual", "sparse"):
        out = table1.run_dir(args, "milk a cow", reward, 0)
        _write_result(out, 10)
        form = {"mineclip_reward": "peak"} if reward == "mineclip" else {}
        (out / "config.json").write_text(json.dumps({"reward": reward, **form}))
    table1.report(args)
    assert (
        "| task | mineclip reward (peak) | manual reward | sparse reward |"
        in (tmp_path / "t.md").read_text()
    )
    mineclip_config = table1.run_dir(args, "milk a cow", "mineclip", 0) / "config.json"
    mineclip_config.write_text(json.dumps({"reward": "mineclip", "mineclip_reward": "direct"}))
    table1.report(args)
    assert "| task | mineclip reward | manual reward |" in (tmp_path / "t.md").read_text()


def test_diagnose_scores_a_task_once_and_again_when_its_runs_change(tmp_path, monkeypatch):
    """`diagnose` keeps each task's scores beside its runs: a second call over the same runs
    reads them back (cross_scores is not called), one over a task whose runs have trained on
    scores it again; the Markdown holds every finished task either way."""
    args = table1.Args(tasks=("milk a cow", "hunt a cow"), runs_dir=str(tmp_path / "runs"),
                       rewards=("mineclip", "manual"), seeds=(0,), total_steps=1024,
                       diagnosis=str(tmp_path / "d.md"), diagnose_episodes=8)  # fmt: skip

    def finish(task, env_steps=1024):
        for rw in args.rewards:
            out = table1.run_dir(args, task, rw, 0)
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.json").write_text(json.dumps({"env_steps": env_steps}))

    calls = []

    def fake_cross_scores(runs, episodes, seed):
        calls.append((tuple(runs), episodes, seed))
        row = {
            "success_rate": 0.5,
            "return": 3.0 + len(calls),
            "return_without_bonus": 1.0 * len(calls),
        }
        return {rw: {"untrained": row, **{f"trained by {r}": row for r in runs}} for rw in runs}

    monkeypatch.setattr(table1, "cross_scores", fake_cross_scores)
    finish("milk a cow")
    finish("hunt a cow", env_steps=512)  # not finished: not diagnosed
    first = table1.diagnose(args)
    assert list(first) == ["milk a cow"] and calls == [(("mineclip", "manual"), 8, 2000)]
    assert table1.diagnose(args) == first and len(calls) == 1  # read back, not scored again
    finish("hunt a cow")
    both = table1.diagnose(args)
    assert len(calls) == 2 and both["milk a cow"] == first["milk a cow"]
    text = (tmp_path / "d.md").read_text()
    assert "## milk a cow" in text and "## hunt a cow" in text
    finish("milk a cow", env_steps=2048)  # trained further: its old scores no longer hold
    table1.diagnose(dataclasses.replace(args, total_steps=2048, tasks=("milk a cow",)))
    assert len(calls) == 3
    table1.diagnose(dataclasses.replace(args, diagnose_episodes=16, tasks=("hunt a cow",)))
    assert calls[-1] == (("mineclip", "manual"), 16, 2000)


def test_a_reward_missing_a_seed_is_marked_and_left_out_of_the_tests_and_goal(tmp_path):
    """Two of three seeds evaluated under manual on one task: its cell says so, and the t-tests
    and the goal check count only the tasks every reward has every seed of."""
    args = table1.Args(tasks=TASKS[:3], runs_dir=str(tmp_path / "runs"),
                       markdown=str(tmp_path / "t.md"), png=str(tmp_path / "c.png"))  # fmt: skip
    for reward, succ in SUCCESSES.items():
        for task, s in zip(TASKS, succ, strict=True):
            for seed in args.seeds:
                if (task, reward, seed) != ("shear a sheep", "manual", 2):
                    _write_result(table1.run_dir(args, task, reward, seed), s)
    numbers = table1.report(args)
    text = (tmp_path / "t.md").read_text()
    low, high = wilson_interval(20, 200)
    assert f"| {100 * 0.1:.1f}% [{100 * low:.1f}, {100 * high:.1f}] (2 of 3 seeds) |" in text
    assert text.count("of 3 seeds)") == 1
    assert numbers["t-test mineclip vs manual"]["tasks"] == 2
    assert numbers["goal"]["needed"] == 2 and "over 2 tasks" in text
