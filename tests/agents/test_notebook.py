"""Execute notebooks/quickstart.ipynb in its tiny mode so it cannot rot."""

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_notebook_runs_in_tiny_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("QUICKSTART_TINY", "1")
    monkeypatch.setenv("QUICKSTART_OUT", str(tmp_path / "run"))
    monkeypatch.delenv("MINECLIP_CKPT", raising=False)
    # the kernel inherits this process's environment (CPU, host device count from conftest)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()  # fmt: skip
    outputs = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "tiny mode" in outputs and "hunt a cow" in outputs
    assert "policy animal-zoo" in outputs and "hunt_sheep" in outputs  # the shipped agent played
    assert (tmp_path / "run" / "metrics.jsonl").exists()
    assert (tmp_path / "run" / "checkpoints").exists()
