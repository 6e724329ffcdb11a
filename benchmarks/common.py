"""What every speed script shares: the load average printed beside each figure, timing (best of
a few calls, or alternating rounds of two implementations in one process), the ratio.

Every benchmark runs its baseline in the same process (or, for whole jobs, in alternating
subprocesses) and prints the ratio with the load: on a shared machine the load moves a ratio
more than most code changes do, so a figure is quoted only with its rounds and load
(benchmarks/RESULTS.md). Run a benchmark as `python -m benchmarks.NAME --help`.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def load() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages, rounded to 0.01."""
    return tuple(round(x, 2) for x in os.getloadavg())  # type: ignore[return-value]


def load_text() -> str:
    """'load average 1.52 1.71 1.80', for the line beside a figure."""
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _block(x):
    import jax

    return jax.block_until_ready(x)


def best_time(run: Callable, args_for: Callable[[int], Sequence], repeats: int) -> float:
    """Seconds of the fastest of `repeats` calls `run(*args_for(2 + r))` after one call with
    `args_for(1)` (compilation and warm-up); JAX results are waited for."""
    _block(run(*args_for(1)))
    best = float("inf")
    for r in range(repeats):
        args = args_for(2 + r)
        t = time.perf_counter()
        _block(run(*args))
        best = min(best, time.perf_counter() - t)
    return best


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(wall s, process CPU s) per call of fn (already warmed up)."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        _block(fn())
    return (time.perf_counter() - wall0) / repeats, (time.process_time() - cpu0) / repeats


def alternate(
    calls: dict[str, Callable[[], object]], rounds: int, repeats: int, timer=timed, load=None
) -> dict[str, list[tuple[float, float, float]]]:
    """Warm every call up, then time them in `rounds` rounds, the order reversed every other
    round. Returns impl -> [(wall s, CPU s, 1-min load average after the call)] per round."""
    load = load or (lambda: os.getloadavg()[0])
    for fn in calls.values():
        _block(fn())
    out = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            wall, cpu = timer(calls[name], repeats)
            out[name].append((wall, cpu, load()))
    return out


def ratio_text(ratio: float, label: str = "ratio") -> str:
    """'ratio 1.23x' (how many times faster the measured implementation is)."""
    return f"{label} {ratio:.2f}x"


RESULTS = Path(__file__).with_name("RESULTS.md")


def machine() -> str:
    """'N-core CPU' or the first device's kind, for a RESULTS.md row."""
    import jax

    device = jax.devices()[0]
    if device.platform == "cpu":
        return f"{os.cpu_count()}-core CPU"
    return f"{jax.device_count()}x {device.device_kind}"


def record(command: str, figure: str, where: str | None = None, path: Path = RESULTS) -> str:
    """Add a row (today's date, the command, the machine and its load now, the figure) to the
    end of the first table of RESULTS.md; returns the row. A script calls it after printing its
    figure when asked to (`--record`), so the figure goes in with its date and load."""
    row = (f"| {datetime.date.today().isoformat()} | `{command}` | "
           f"{where or machine()}, load {' '.join(f'{x:.1f}' for x in load())} | {figure} |")  # fmt: skip
    lines = path.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    lines.insert(end, row)
    path.write_text("\n".join(lines) + "\n")
    return row
