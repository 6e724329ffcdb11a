"""Success-rate tables for the evaluation protocol (paper section 3: 100 episodes per task, report
the percentage of successes), with 95% Wilson score intervals, as Markdown and CSV.

The interval is `envs.stats.wilson_interval` (re-exported here).
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from envs.stats import Z_95, wilson_interval  # noqa: F401 (re-exported)

Judge = Literal["programmatic", "mineclip"]


class SuccessCount:
    """`successes` of `episodes` (fields of the dataclass that mixes this in): the rate and its
    95% Wilson interval."""

    episodes: int
    successes: int

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.episodes)


@dataclasses.dataclass(frozen=True)
class TaskResult(SuccessCount):
    """Outcome of evaluating one task."""

    task_id: str
    prompt: str
    category: str
    backend: str
    episodes: int
    successes: int
    mean_return: float = 0.0  # programmatic reward summed per episode, averaged
    mean_length: float = 0.0  # steps per episode, averaged
    judge: Judge = "programmatic"  # who decided success: the task's check or the MineCLIP evaluator
    f1: float | None = None  # creative: MineCLIP's agreement with human labels, when given
    judge_delta: float | None = None  # creative: the MineCLIP threshold that decided success
    judge_calibration_ticks: int | None = None  # creative: episode length (game ticks) of the
    # stored calibration that delta comes from; None with a delta given by hand

    def __post_init__(self):
        if self.episodes <= 0 or not 0 <= self.successes <= self.episodes:
            raise ValueError(
                f"{self.task_id}: need 0 <= successes <= episodes > 0, got {self.successes}/{self.episodes}"
            )


_CSV_FIELDS = (
    "task_id",
    "prompt",
    "category",
    "backend",
    "episodes",
    "successes",
    "success_rate",
    "ci95_low",
    "ci95_high",
    "mean_return",
    "mean_length",
    "judge",
    "f1",
    "judge_delta",
    "judge_calibration_ticks",
)
_OPTIONAL_CSV_FIELDS = frozenset({"judge_delta", "judge_calibration_ticks"})  # newer columns


def write_csv(results: Iterable[TaskResult], path: str | os.PathLike) -> Path:
    """One row per task; rates and bounds as fractions with 6 decimals."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=_CSV_FIELDS)
        writer.writeheader()
        for r in results:
            low, high = r.interval
            writer.writerow(
                {
                    "task_id": r.task_id,
                    "prompt": r.prompt,
                    "category": r.category,
                    "backend": r.backend,
                    "episodes": r.episodes,
                    "successes": r.successes,
                    "success_rate": f"{r.success_rate:.6f}",
                    "ci95_low": f"{low:.6f}",
                    "ci95_high": f"{high:.6f}",
                    "mean_return": repr(float(r.mean_return)),
                    "mean_length": repr(float(r.mean_length)),
                    "judge": r.judge,
                    "f1": "" if r.f1 is None else repr(float(r.f1)),
                    "judge_delta": "" if r.judge_delta is None else repr(float(r.judge_delta)),
                    "judge_calibration_ticks": r.judge_calibration_ticks or "",
                }
            )
    return path


def read_csv(path: str | os.PathLike) -> list[TaskResult]:
    """Results written by ``write_csv`` (derived columns are recomputed, not read)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = set(_CSV_FIELDS) - _OPTIONAL_CSV_FIELDS - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path} is not a results table: missing columns {sorted(missing)}")
        return [
            TaskResult(
                task_id=row["task_id"],
                prompt=row["prompt"],
                category=row["category"],
                backend=row["backend"],
                episodes=int(row["episodes"]),
                successes=int(row["successes"]),
                mean_return=float(row["mean_return"]),
                mean_length=float(row["mean_length"]),
                judge=row["judge"],
                f1=float(row["f1"]) if row["f1"] else None,
                judge_delta=float(row["judge_delta"]) if row.get("judge_delta") else None,
                judge_calibration_ticks=(
                    int(row["judge_calibration_ticks"])
                    if row.get("judge_calibration_ticks")
                    else None
                ),
            )
            for row in reader
        ]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def judge_text(result: TaskResult) -> str:
    """Who decided success, with the MineCLIP judge's delta and the calibration it came from
    (or "by hand") and its F1 against human labels when known."""
    text = result.judge
    if result.judge_delta is not None:
        made = (
            f"{result.judge_calibration_ticks}-tick calibration"
            if result.judge_calibration_ticks
            else "by hand"
        )
        text += f" (delta {result.judge_delta:.3f}, {made})"
    if result.f1 is not None:
        text += f" (F1 {result.f1:.2f})"
    return text


def markdown_table(results: Sequence[TaskResult], title: str | None = None) -> str:
    """A Markdown table of success rates (percent) with 95% Wilson intervals, plus the mean."""
    lines = [f"## {title}", ""] if title else []
    lines += [
        "| task | category | backend | episodes | success % | 95% CI % | mean return | mean length | judge |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        low, high = r.interval
        judge = judge_text(r)
        lines.append(
            f"| `{r.task_id}` | {r.category} | {r.backend} | {r.episodes} | {_pct(r.success_rate)} "
            f"| [{_pct(low)}, {_pct(high)}] | {r.mean_return:.2f} | {r.mean_length:.1f} | {judge} |"
        )
    if results:
        mean_rate = sum(r.success_rate for r in results) / len(results)
        lines += ["", f"Mean success rate over {len(results)} tasks: {_pct(mean_rate)}%."]
    lines.append("")
    return "\n".join(lines)


def write_markdown(
    results: Sequence[TaskResult], path: str | os.PathLike, title: str | None = None
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown_table(results, title), encoding="utf-8")
    return path
