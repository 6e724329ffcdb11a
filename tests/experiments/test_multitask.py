"""experiments.table1.multitask at smoke size: the paper's two Animal-Zoo stages trained by the
MineCLIP-mini reward, each of the four tasks evaluated on unseen worlds, the report, and the
export that `load_policy` reads back (card, checksums, the run's task vocabulary)."""

import json

import pytest

from agents import checkpoints, pretrained
from experiments.table1 import multitask, table1


def test_the_command_is_table1s_recipe_in_two_stages():
    args = multitask.Args()
    cmd = multitask.ppo_command(args)
    stages = cmd[cmd.index("--stages") + 1]
    assert stages == "milk a cow,hunt a cow;milk a cow,hunt a cow,shear a sheep,hunt a sheep"
    assert multitask._tasks(args) == table1.ANIMAL_ZOO  # each task once
    assert cmd[cmd.index("--total-steps") + 1] == str(3 * table1.RECIPES["hunt"].total_steps)
    assert multitask._tasks(multitask.Args(group="mob_combat")) == table1.MOB_COMBAT
    # Mob-Combat's agent trains every task with the recipe its neutral mobs need (the hunt's)
    mob = multitask.ppo_command(multitask.Args(group="mob_combat"))
    assert mob[mob.index("--action-repeat") + 1] == "4" and "--privileged-critic" in mob
    assert mob[mob.index("--total-steps") + 1] == str(3 * table1.RECIPES["hunt"].total_steps)
    assert cmd[cmd.index("--reward") + 1] == "mineclip" and "--no-mineclip-features" in cmd
    single = table1.ppo_flags(table1.Args(), "hunt a cow", "mineclip", 0)
    recipe = set(single) - {"hunt a cow", str(table1.RECIPES["hunt"].total_steps),
                            str(table1.run_dir(table1.Args(), "hunt a cow", "mineclip", 0))}  # fmt: skip
    assert recipe <= set(cmd)  # every flag of the single-task runs
    ev = multitask.evaluate_command(args)
    assert ev[ev.index("--env-options") + 1] == f"seed={table1.EVAL_WORLD_SEED}"


def test_smoke_trains_two_stages_evaluates_each_task_and_ships(tmp_path):
    args = multitask.Args(smoke=True, runs_dir=str(tmp_path / "runs"), ship=True, reward="sparse",
                          ship_dir=str(tmp_path / "agent"), markdown=str(tmp_path / "m.md"))  # fmt: skip
    res = multitask.main(args)
    tasks = list(table1.ANIMAL_ZOO)
    assert sorted(res) == sorted(tasks) and all(r["episodes"] == 4 for r in res.values())
    summary = json.loads((multitask.run_dir(args) / "summary.json").read_text())
    assert summary["stage"] == 1 and not summary.get("stopped")
    text = (tmp_path / "m.md").read_text()
    assert all(f"| {t} |" in text for t in tasks) and "Goal (at least 30% on each task)" in text
    card = pretrained.read_card(tmp_path / "agent")
    assert card["evaluation"] == json.loads(json.dumps(res)) and card["tasks"] == tasks
    assert card["training_seed"] == 0 and card["evaluation_world_seed"] == table1.EVAL_WORLD_SEED
    assert card["rebuild"].startswith("python -m experiments.table1.multitask --group animal_zoo")
    _, info = checkpoints.load_policy(tmp_path / "agent")
    assert info["task_names"] == ("milk_cow", "hunt_cow", "shear_sheep", "hunt_sheep")
    # a second call trains and evaluates nothing more
    assert multitask.train(args) is True
    mtime = (multitask.run_dir(args) / "eval" / "results.csv").stat().st_mtime
    multitask.evaluate(args)
    assert (multitask.run_dir(args) / "eval" / "results.csv").stat().st_mtime == mtime


def test_ship_refuses_an_unevaluated_run(tmp_path):
    args = multitask.Args(smoke=True, runs_dir=str(tmp_path / "none"), ship_dir=str(tmp_path / "a"))
    with pytest.raises(SystemExit, match="evaluate"):
        multitask.ship(args)
