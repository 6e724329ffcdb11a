"""benchmarks.seeds_program_speed times Table 1's own job: its command lines are Table 1's flags
for the task, with K seeds or one, the asked-for updates and no final evaluation."""

from pathlib import Path

import tyro

from agents import ppo
from benchmarks import seeds_program_speed as bench
from experiments.table1 import table1


def test_both_sides_run_table1s_job_with_their_seeds_and_updates(tmp_path):
    args = bench.Args(task="combat a zombie pigman", reward="mineclip", seeds=3, updates=5)
    one, single = (bench.job(args, k, tmp_path / str(k))[3:] for k in (3, 1))
    assert bench.job(args, 3, tmp_path)[1:3] == ["-m", "agents.ppo"]
    cfg_one, cfg_single = (tyro.cli(ppo.PPOConfig, args=f) for f in (one, single))
    assert (cfg_one.seeds, cfg_single.seeds) == (3, 1)
    recipe = table1.recipe_of("combat a zombie pigman")
    for cfg in (cfg_one, cfg_single):
        assert cfg.total_steps == 5 * 16 * 64 and cfg.final_eval_episodes == 0
        assert cfg.checkpoint_every > 5  # no checkpoint inside the timed updates
        assert cfg.action_repeat == recipe.action_repeat and cfg.privileged_critic
        assert cfg.mineclip_ckpt == "mini" and cfg.mineclip_negatives == table1.WANDER
    assert Path(cfg_one.out) == tmp_path / "3"
    # apart from the seeds, the out dir and the budget, both are Table 1's command line
    full = table1.ppo_flags(table1.Args(), "combat a zombie pigman", "mineclip", 0)
    drop = {"--total-steps", "--final-eval-episodes", "--checkpoint-every", "--out"}

    def keep(flags):
        return [x for i, x in enumerate(flags)
                if x not in drop and (i == 0 or flags[i - 1] not in drop)]  # fmt: skip

    assert keep(single) == keep(full)
