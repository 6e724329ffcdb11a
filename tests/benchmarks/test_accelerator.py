"""benchmarks.accelerator --tiny: the accelerator script runs end to end on the CPU, so that it
cannot rot before a GPU is lent (the figures themselves are not asserted: never time in tests)."""

import json

from benchmarks import accelerator


def test_tiny_run_measures_every_planned_row_and_writes_the_table(tmp_path):
    cfg = accelerator.Config(tiny=True, out=tmp_path / "acc.json")
    result = accelerator.run(cfg)
    tiny = accelerator.Config(
        tiny=True, sizes=("16x24",), batches=(4,), cpu_batch=4, steps=2, repeats=1,
        mineclip_batch=2, cpu_mineclip_batch=2, ppo_envs=4, cpu_ppo_envs=4,
    )  # fmt: skip
    planned = [name for name, *_ in accelerator._rows_plan(tiny)]
    assert [r["measurement"] for r in result["rows"]] == planned
    assert planned[-1].startswith("PPO + SI") and len(planned) == 5
    for row in result["rows"]:
        assert "skipped" not in row, row
        assert row["cpu"]["value"] > 0 and row["cpu"]["compile_s"] > 0
    assert json.loads(cfg.out.read_text()) == json.loads(json.dumps(result))
    table = accelerator.markdown(result).splitlines()
    assert sum(line.startswith("| ") for line in table) == 1 + len(planned)  # header + rows


def test_world_rollout_counts_every_env_step():
    import jax

    # the --tiny run's no-render row (its program comes from the session's compilation cache)
    sps, compile_s, counted = accelerator.world_steps_per_s(
        jax.devices("cpu")[0], batch=4, size=None, steps=2, repeats=1
    )
    assert counted == 4 * 2 and sps > 0 and compile_s > 0


def test_budget_spent_lists_the_rest_as_skipped(tmp_path):
    cfg = accelerator.Config(tiny=True, budget_s=0.0, ppo=False, out=tmp_path / "a.json")
    result = accelerator.run(cfg)
    assert result["rows"] and all("skipped" in r for r in result["rows"])
