"""Trained agents shipped inside the package, loadable by name.

    from agents.checkpoints import load_policy
    policy_fn, info = load_policy("animal-zoo")        # as a run directory's policy
    python -m agents.evaluate --policy animal-zoo --tasks "hunt a cow"

A shipped agent is a directory `agents/pretrained/<name>/` holding the run's `config.json` (its
`agents.ppo` flags), `params.msgpack` (the policy's parameters, Flax serialization), `card.json`
(what it was trained on: tasks, training seeds, env steps, the command that rebuilds it, its
evaluation) and `SHA256SUMS` over the three, verified before every load. `agents.checkpoints.export_policy`
writes one from a finished run; `experiments/table1` holds the commands that trained the shipped ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jax
from flax import serialization

from agents import adapters
from agents.build import build
from agents.config import CONFIG_FILE, load_config
from mineclip_jax.checkpoint import verify_checksums, write_checksums, write_json

PRETRAINED_DIR = Path(__file__).parent / "pretrained"
PARAMS_FILE, CARD_FILE = "params.msgpack", "card.json"
SHIPPED_POLICIES = tuple(
    sorted(p.name for p in PRETRAINED_DIR.glob("*") if (p / PARAMS_FILE).is_file())
)
"""Agents shipped with the package (`load_policy(name)`, `agents.evaluate --policy name`)."""
FILES = (CONFIG_FILE, PARAMS_FILE, CARD_FILE)
_HINT = "the shipped agent is damaged: reinstall mineclip-jax, or rebuild it with the command in its card.json"


def shipped_dir(name: str) -> Path | None:
    """The directory of the shipped agent `name`, or None when `name` is not one (an existing
    path of that name is a run directory and wins)."""
    if name not in SHIPPED_POLICIES or os.path.exists(name):
        return None
    return PRETRAINED_DIR / name


def is_exported(path: str | os.PathLike) -> bool:
    """Whether `path` is an exported policy directory (params.msgpack, no orbax checkpoints)."""
    return (Path(path) / PARAMS_FILE).is_file() and not (Path(path) / "checkpoints").is_dir()


def read_card(path: str | os.PathLike) -> dict:
    return json.loads((Path(path) / CARD_FILE).read_text())


def write_exported(out_dir: str | os.PathLike, config: dict, params, card: dict) -> Path:
    """Write an exported policy directory: `config` (a run's config.json fields), `params` (the
    policy's parameters), `card`, and the checksums over the three."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / PARAMS_FILE).write_bytes(serialization.to_bytes(jax.device_get(params)))
    write_json(out / CONFIG_FILE, config)
    write_json(out / CARD_FILE, card)
    write_checksums(out, FILES)
    return out


def load_exported(path: str | os.PathLike):
    """An exported policy directory -> (cfg, built, params, card), checksums verified first;
    `built` is the learner and env of the policy's last stage (`agents.build.Built`)."""
    path = Path(path)
    verify_checksums(path, _HINT)
    cfg = load_config(path)
    built = build(cfg, adapters.stage_tasks(cfg.task, cfg.stages)[-1])
    like = jax.eval_shape(built.learner.init, jax.random.PRNGKey(0)).params
    template = jax.tree.map(lambda s: jax.numpy.zeros(s.shape, s.dtype), like)
    try:  # from_bytes takes any arrays at the template's keys: the shapes are checked here
        params = serialization.from_bytes(template, (path / PARAMS_FILE).read_bytes())
        bad = [
            f"{jax.tree_util.keystr(k)}: {a.shape} {a.dtype}, the network wants {b.shape} {b.dtype}"
            for (k, a), b in zip(jax.tree_util.tree_leaves_with_path(params), jax.tree.leaves(like))
            if a.shape != b.shape or a.dtype != b.dtype
        ]
        if bad:
            raise ValueError("; ".join(bad[:3]))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path / PARAMS_FILE} does not fit the network of its config.json "
                         f"({e}); {_HINT}") from None  # fmt: skip
    return cfg, built, params, read_card(path)
