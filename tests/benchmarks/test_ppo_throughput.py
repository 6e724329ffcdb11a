"""benchmarks/ppo_throughput.py --seeds in a tiny mode (the JAX CartPole part needs no envpool)."""

from benchmarks import ppo_throughput as bench


def test_seed_timing_compares_identical_runs():
    # Two seeds, 4 envs x 8 steps, 2 rounds of 1 update: the stacked program's seed i must have
    # trained exactly the single-seed run i that it is timed against.
    args = bench.Args(num_envs=4, num_steps=8, total_steps=96, seeds=2, round_updates=1)
    res = bench.run_seeds(args)
    assert res["rounds"] == 2
    assert res["max_param_gap_seed_vs_single"] <= 1e-5
