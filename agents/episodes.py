"""Episode bookkeeping shared by the on-device driver (`agents.learner`), the host-stepped driver
(`agents.sebulba`) and the evaluator (`agents.evaluate`): one definition of an episode's return,
length and success.

Works on NumPy arrays (host loops) and on JAX arrays or tracers (inside `lax.scan`): the array
module follows the inputs.

    ret, length, finished = step_episodes(ret, length, reward, done, valid)
    totals = per_task_totals(finished["done"], finished["return"], finished["length"],
                             success, task_id, num_tasks)
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from agents.errors import EnvContractError


def _xp(*arrays):
    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


def step_episodes(ep_return, ep_length, reward, done, valid=None):
    """Advance every env's running episode by one step -> (ep_return, ep_length, finished).

    `valid` False marks a step that belongs to no episode (a Gymnasium NEXT_STEP reset step): it
    adds neither reward nor length. `done` ends the episode on this step (the step counts).
    `finished` holds `done` and, where done, the episode's `return` and `length` (0 elsewhere);
    the running sums restart at 0 where done."""
    xp = _xp(ep_return, ep_length, reward, done, valid)
    done = xp.asarray(done, bool)
    valid = xp.ones_like(done) if valid is None else xp.asarray(valid, bool)
    ret = ep_return + xp.where(valid, reward, 0.0).astype(ep_return.dtype)
    length = ep_length + valid.astype(ep_length.dtype)
    finished = {
        "done": done,
        "return": xp.where(done, ret, 0.0),
        "length": xp.where(done, length, 0),
    }
    return xp.where(done, 0.0, ret).astype(ret.dtype), xp.where(done, 0, length), finished


def per_task_totals(done, ret, length, success, task_id, num_tasks: int) -> dict:
    """Sums over finished episodes per task: `episodes`, `return_sum`, `length_sum`,
    `success_sum` (each `[num_tasks]`). Inputs are `[..., N]` (any leading time axes, as
    `finished` of `step_episodes`); `task_id` `[N]`; `success` counts only where `done`."""
    xp = _xp(done, ret, length, success, task_id)
    n = task_id.shape[-1]

    def per_env(x):
        return xp.sum(xp.asarray(x, xp.float32).reshape(-1, n), axis=0)

    def segment(x):
        if xp is jnp:
            return jax.ops.segment_sum(per_env(x), task_id, num_segments=num_tasks)
        return np.bincount(task_id, weights=per_env(x), minlength=num_tasks)

    done = xp.asarray(done, bool)
    return {
        "episodes": segment(done),
        "return_sum": segment(xp.where(done, ret, 0.0)),
        "length_sum": segment(xp.where(done, length, 0)),
        "success_sum": segment(done & xp.asarray(success, bool)),
    }


def env_success(info) -> jax.Array:
    """`info["success"]` of an env step (bool, one per env), which every episode statistic and
    the SI buffer read; an env without it gets an error naming the contract instead of a bare
    KeyError from inside a trace."""
    if isinstance(info, Mapping) and "success" in info:
        return info["success"]
    got = f"keys {sorted(info)}" if isinstance(info, Mapping) else type(info).__name__
    raise EnvContractError(
        f"the env's step returned an info without 'success' ({got}): a JaxEnv's step must return "
        "(obs, state, reward, terminated, truncated, info) with info['success'] a bool per env "
        "(all False for a task without a success check); see docs/agents.md, 'Bring your own "
        "JAX env'"
    )
