"""Dataset builds on a full disk and two builds of one --out. Before these checks
`data.synthetic` simulated for minutes, then died of a bare SIGBUS when its memory-mapped frame
file hit the full disk, and nothing kept a second build out of the same --out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from data import synthetic, tfds_io
from mineclip_jax import run_lock
from tests.multiprocess import REPO, process_env


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs: a real full disk (root in a container may mount one; skipped otherwise)."""
    mount = tmp_path / "small"
    mount.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a small tmpfs to fill ({e}); the full-disk path is untested")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill ({done.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True, timeout=30)


def test_synthetic_on_a_full_disk_says_disk_full_before_simulating(small_disk):
    out = small_disk / "clips"
    proc = subprocess.run(
        [sys.executable, "-m", "data.synthetic", "--out", str(out), "--episodes", "16",
         "--no-all-cores"],
        env=process_env(1), cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != -signal.SIGBUS, "died of SIGBUS writing into the full disk"
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "disk full" in proc.stderr and str(out) in proc.stderr
    assert "batch 10/" not in proc.stdout  # refused before simulating anything


def test_reserve_turns_a_full_disk_into_a_clear_error(small_disk):
    path = small_disk / "big.npy"
    with open(path, "wb") as f:
        f.truncate(8 << 20)  # a sparse 8 MB file on a 2 MB disk: writing it would SIGBUS
    with pytest.raises(OSError, match="disk full: could not reserve"):
        synthetic.reserve(str(path), "the frames")
    os.unlink(path)
    with pytest.raises(OSError, match=r"disk full: the clips need 0\.005 GB"):
        synthetic.check_free_space(str(small_disk), 5_000_000, "the clips")


def test_a_second_build_of_the_same_out_is_refused(tmp_path):
    out = tmp_path / "clips"
    with run_lock.hold(run_lock.build_lock_path(out)):  # another build holds --out
        with pytest.raises(run_lock.RunLockedError, match=f"pid {os.getpid()} on host"):
            synthetic.build(synthetic.SyntheticConfig(out=str(out), episodes=16))
        with pytest.raises(run_lock.RunLockedError, match="choose another --out"):
            tfds_io.write_clip_dataset(out, {"train": lambda: iter(())})
    assert not out.exists()
