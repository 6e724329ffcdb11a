"""Smoke run of ``python -m agents.evaluate`` on the embedded world (tiny world, 2 short episodes)."""

from agents.evaluate import EvaluateConfig, main
from envs.tasks.evaluation import read_csv

# A small world and state-only observations keep the compile and the run short.
TINY_WORLD = (
    "render=false",
    "size_x=16",
    "size_y=16",
    "size_z=16",
    "sea_level=6",
    "world_pool_size=1",
    "num_trees=2",
)


def test_evaluate_runs_on_the_voxel_world(tmp_path, capsys):
    cfg = EvaluateConfig(
        tasks=("playthrough", "milk a cow"),  # the world has no End: playthrough is skipped
        episodes=2,
        num_envs=2,
        max_steps=4,
        out_dir=tmp_path,
        env_options=TINY_WORLD,
    )
    main(cfg)
    assert "milk_cow: 0/2 successes" in capsys.readouterr().out  # 4 random steps cannot milk a cow
    results = read_csv(tmp_path / "results.csv")
    assert [(r.task_id, r.episodes, r.successes, r.mean_length) for r in results] == [
        ("milk_cow", 2, 0, 4.0)
    ]
    markdown = (tmp_path / "results.md").read_text()
    assert "| `milk_cow` | harvest | voxel | 2 | 0.0 | [0.0, 65.8] |" in markdown
    assert "Skipped (1):" in markdown and "- `playthrough`: " in markdown
    episodes = (tmp_path / "episodes.csv").read_text().splitlines()
    assert episodes[0] == "task_id,episode,env,success,return,length" and len(episodes) == 3
