"""Input checks shared by every backend: actions against their space, and seeds.

Bad input is refused with an error naming the problem and the fix, never clipped into a valid
value: an out-of-range camera bin would otherwise act as another turn, a float 0.9 as a no-op.

    check_action(spaces.ACTION_SPACE, action)               # one action
    check_action(spaces.ACTION_SPACE, actions, batch=64)    # [64, 8]
    check_seed(seed)                                         # int in [0, 2**32 - 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

MAX_SEED = 2**32 - 1  # JAX keys and NumPy generators take seeds up to here without wrapping


def check_seed(seed, what: str = "seed") -> int:
    """``seed`` as an int, or a ``ValueError`` / ``TypeError`` saying what a seed must be."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{what} must be an int in [0, {MAX_SEED}], got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(
            f"{what} must be in [0, {MAX_SEED}], got {int(seed)}; use a non-negative seed below "
            "2**32 (e.g. seed % 2**32)"
        )
    return int(seed)


def _component_name(names: Sequence[str] | None, index: int) -> str:
    if names is not None and index < len(names):
        return f"{names[index]!r} (component {index})"
    return f"component {index}"


def _check_discrete_values(
    values: np.ndarray, low: np.ndarray, high: np.ndarray, names, where: str
) -> np.ndarray:
    """``values`` [..., K] integer in [low, high) per component, else an error naming the first
    bad component, its range and its value."""
    if values.dtype.kind not in "iu":
        kind = {"f": "float", "c": "complex", "b": "bool", "O": "object"}.get(
            values.dtype.kind, str(values.dtype)
        )
        flat = values.reshape(-1, values.shape[-1])
        row, index = 0, 0
        if values.dtype.kind in "fc":  # point at the first component that is not a whole number
            bad = np.argwhere(~np.isfinite(flat) | (flat != np.round(flat.real)))
            if len(bad):
                row, index = int(bad[0][0]), int(bad[0][1])
        value = flat[row, index].item() if flat.size else None
        rng = f"[{int(low[index])}, {int(high[index]) - 1}]"
        raise TypeError(
            f"{where}: actions of a discrete space must be integers, got {kind} dtype "
            f"({values.dtype}); {_component_name(names, index)} has range {rng}, value "
            f"{value!r}. Pass an integer array (e.g. np.int64); floats are not cast."
        )
    v = values.astype(np.int64, copy=False)
    bad = (v < low) | (v >= high)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        index = pos[-1]
        rng = f"[{int(low[index])}, {int(high[index]) - 1}]"
        at = f" of env {pos[0]}" if v.ndim == 2 else ""
        raise ValueError(
            f"{where}: {_component_name(names, index)}{at} must be in {rng}, got {int(v[pos])}"
        )
    return v


def check_action(
    space: gym.Space,
    action,
    *,
    batch: int | None = None,
    names: Sequence[str] | None = None,
    where: str = "action",
):
    """``action`` (or ``batch`` stacked actions) if valid for ``space``, else a clear error.

    ``Discrete`` and ``MultiDiscrete`` are checked component by component (integer dtype, shape,
    range; ``names`` label the components in messages); other spaces by ``space.contains``.
    Returns the action as an int64 array for the discrete spaces, unchanged otherwise.
    """
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        start = np.asarray(getattr(space, "start", np.zeros_like(nvec)))
        a = np.asarray(action)
        shape = nvec.shape if batch is None else (batch, *nvec.shape)
        if a.shape != shape:
            raise ValueError(f"{where} must have shape {shape} (MultiDiscrete {nvec.tolist()}), "
                             f"got {a.shape}")  # fmt: skip
        if a.dtype.kind == "O":
            raise TypeError(f"{where} must be an integer array, got values {a.tolist()!r}")
        flat = a.reshape(a.shape[: a.ndim - nvec.ndim] + (nvec.size,))  # components last
        low = start.reshape(-1)
        return _check_discrete_values(flat, low, low + nvec.reshape(-1), names, where).reshape(
            a.shape
        )
    if isinstance(space, gym.spaces.Discrete):
        a = np.asarray(action)
        shape = () if batch is None else (batch,)
        if a.shape != shape:
            raise ValueError(
                f"{where} must have shape {shape} (Discrete({space.n})), got {a.shape}"
            )
        if a.dtype.kind == "O":
            raise TypeError(f"{where} must be an integer, got {action!r}")
        low = np.asarray([space.start])
        return _check_discrete_values(a[..., None], low, low + space.n, names, where)[..., 0]
    items = [action] if batch is None else list(action)
    if batch is not None and len(items) != batch:
        raise ValueError(f"{where} must hold {batch} actions, got {len(items)}")
    for i, item in enumerate(items):
        if not space.contains(item):
            at = "" if batch is None else f" of env {i}"
            raise ValueError(f"{where}{at} {item!r} is not in the action space {space}")
    return action
