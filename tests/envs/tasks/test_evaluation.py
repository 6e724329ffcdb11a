"""Success-rate tables: Wilson intervals and the Markdown / CSV writers."""

import math

import pytest

from envs.tasks.evaluation import (
    TaskResult,
    markdown_table,
    read_csv,
    wilson_interval,
    write_csv,
    write_markdown,
)


def test_wilson_against_hand_computed_values():
    z2 = 1.959963984540054**2
    # 0/10 and 10/10: the bounds reduce to z^2/(n+z^2) and n/(n+z^2)
    assert wilson_interval(0, 10) == pytest.approx((0.0, z2 / (10 + z2)), abs=1e-12)
    assert wilson_interval(10, 10) == pytest.approx((10 / (10 + z2), 1.0), abs=1e-12)
    assert wilson_interval(0, 10)[1] == pytest.approx(0.27753, abs=1e-5)
    # 5/10: centre 0.5, half-width 1.96/1.38415 * sqrt(0.025 + 0.0096) = 0.26340
    assert wilson_interval(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    # 60/100 and 37/100: roots of (p - k/n)^2 = z^2 p (1 - p) / n
    assert wilson_interval(60, 100) == pytest.approx((0.502003, 0.690599), abs=1e-6)
    assert wilson_interval(37, 100) == pytest.approx((0.281824, 0.467795), abs=1e-6)
    low, high = wilson_interval(1, 100)
    assert 0 < low < 0.01 < high
    # the ends are exact, not a round-off: 0 of n is at its own lower bound, n of n at its upper
    for n in range(1, 301):
        assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="episodes"):
        wilson_interval(0, 0)


def _results():
    return [
        TaskResult("harvest_1_log", "obtain log", "harvest", "voxel", 100, 37, 0.37, 412.5),
        TaskResult(
            "combat_cow_forest_barehand",
            "hunt a cow in forest",
            "combat",
            "voxel",
            10,
            0,
            0.0,
            500.0,
        ),
        TaskResult(
            "creative:2",
            "Explore, find ocean",
            "creative",
            "minedojo",
            20,
            11,
            0.0,
            321.25,
            "mineclip",
            0.875,
        ),
        TaskResult(
            "creative:7",
            "Dig a hole",
            "creative",
            "voxel",
            10,
            4,
            0.0,
            200.0,
            "mineclip",
            judge_delta=0.4316,
            judge_calibration_ticks=200,
        ),
        TaskResult(
            "creative:8",
            "Find a portal",
            "creative",
            "voxel",
            10,
            1,
            0.0,
            90.0,
            "mineclip",
            judge_delta=0.5,
        ),  # fmt: skip
    ]


def test_csv_round_trip(tmp_path):
    results = _results()
    path = write_csv(results, tmp_path / "sub" / "table.csv")
    assert read_csv(path) == results
    header = path.read_text().splitlines()[0]
    assert header.startswith(
        "task_id,prompt,category,backend,episodes,successes,success_rate,ci95_low,ci95_high"
    )
    row = path.read_text().splitlines()[1].split(",")
    assert row[6] == "0.370000"
    assert math.isclose(float(row[7]), wilson_interval(37, 100)[0], abs_tol=1e-6)


def test_markdown_table(tmp_path):
    results = _results()
    text = markdown_table(results, title="Eval")
    lines = text.splitlines()
    assert lines[0] == "## Eval"
    assert (
        "| `harvest_1_log` | harvest | voxel | 100 | 37.0 | [28.2, 46.8] | 0.37 | 412.5 | programmatic |"
        in lines
    )
    assert "mineclip (F1 0.88)" in text
    # the judge's threshold and the calibration it comes from (or that it was given by hand)
    assert "| mineclip (delta 0.432, 200-tick calibration) |" in text
    assert "| mineclip (delta 0.500, by hand) |" in text
    # (37/100 + 0/10 + 11/20 + 4/10 + 1/10) / 5 = 1.42 / 5
    assert "Mean success rate over 5 tasks: 28.4%." in text
    assert write_markdown(results, tmp_path / "t.md").read_text() == markdown_table(results)


def test_csv_without_the_judge_calibration_columns_still_reads(tmp_path):
    # results.csv files written before the judge's delta and calibration length were recorded
    path = write_csv(_results(), tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    old = [",".join(line.split(",")[:-2]) for line in lines]
    path.write_text("\n".join(old) + "\n")
    back = read_csv(path)
    assert [r.judge_delta for r in back] == [None] * len(back)
    assert [r.f1 for r in back] == [r.f1 for r in _results()]


def test_result_validation():
    with pytest.raises(ValueError, match="successes"):
        TaskResult("x", "p", "harvest", "voxel", 3, 4)
