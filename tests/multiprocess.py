"""Launching real local multi-process JAX runs from tests: bounded by a timeout, never leaked."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(devices: int) -> dict[str, str]:
    """The environment of one CPU process exposing `devices` JAX devices."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    # the suite's other flags (tests/conftest.py) with this device count
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join([f"--xla_force_host_platform_device_count={devices}", *flags])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def start_processes(
    argv_for: Callable[[int], Sequence[str]], count: int, devices: int
) -> list[subprocess.Popen]:
    """Starts `count` processes (`sys.executable` + argv_for(i)), each with `devices` CPU devices
    and piped, text-mode stdout / stderr; the caller waits for them and kills them."""
    return [
        subprocess.Popen(
            [sys.executable, *argv_for(i)],
            env=process_env(devices),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in range(count)
    ]


def run_processes(
    argv_for: Callable[[int], Sequence[str]], count: int, devices: int, timeout_s: float
) -> list[subprocess.CompletedProcess]:
    """Starts `count` processes (`start_processes`) and waits for all; kills every one still
    running when one fails or the time is up."""
    procs = start_processes(argv_for, count, devices)
    deadline = time.monotonic() + timeout_s
    try:
        while any(p.poll() is None for p in procs):
            failed = [p for p in procs if p.poll() not in (None, 0)]
            if failed or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = []
    for p in procs:
        out, err = p.communicate()
        results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return results


def check(results: list[subprocess.CompletedProcess]) -> list[str]:
    """The stdout of each process; an AssertionError with every stderr tail if any failed."""
    if any(r.returncode != 0 for r in results):
        report = "\n".join(
            f"--- process {i}: exit {r.returncode}\n{r.stderr[-3000:]}"
            for i, r in enumerate(results)
        )
        raise AssertionError(f"a process failed or timed out:\n{report}")
    return [r.stdout for r in results]
