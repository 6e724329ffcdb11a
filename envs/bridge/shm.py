"""Shared-memory layout of a Gymnasium space, for batches of observations and actions.

A space is flattened into *leaves* (one per Box / Discrete / MultiDiscrete / MultiBinary inside any
nesting of Dict / Tuple). Each leaf gets one C-contiguous array of shape ``[num_rows, *leaf_shape]``
in a single flat buffer, so a worker process writes its observation row in place and the parent
reads a batch with one fancy-index copy per leaf: no pickling of frames.

This module imports only NumPy and the standard library, because the worker bootstrap loads it
by file path (see ``worker.py``) before any project package is imported.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any

import numpy as np

# Cache-line alignment keeps rows of different leaves from sharing a line (false sharing between
# the parent copying one leaf and a worker writing the next).
_ALIGN = 64

# A leaf path is the sequence of Dict keys / Tuple indices from the root space to the leaf.
LeafPath = tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One array in the layout: where it sits in the nested structure and in the buffer."""

    path: LeafPath
    dtype: str  # numpy dtype string, e.g. "uint8"
    shape: tuple[int, ...]  # per-row shape
    offset: int  # byte offset of row 0 in the buffer
    is_scalar_discrete: bool  # a Discrete leaf: returned as np.int64 scalar per env

    @property
    def row_nbytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64)))


@dataclasses.dataclass(frozen=True)
class Structure:
    """The nesting of a space with leaves numbered in order: ("dict", keys, children) etc."""

    kind: str  # "leaf" | "dict" | "tuple"
    keys: tuple[Any, ...] = ()
    children: tuple[Structure, ...] = ()
    leaf_index: int = -1


@dataclasses.dataclass(frozen=True)
class Layout:
    """Leaves of one space, repeated ``num_rows`` times, starting at ``base`` in a buffer."""

    structure: Structure
    leaves: tuple[Leaf, ...]
    num_rows: int
    nbytes: int  # total bytes this layout spans from its base

    def views(self, buffer: Any) -> list[np.ndarray]:
        """One ``[num_rows, *shape]`` array per leaf, aliasing ``buffer`` (no copy)."""
        return [
            np.ndarray(
                (self.num_rows, *leaf.shape),
                dtype=np.dtype(leaf.dtype),
                buffer=buffer,
                offset=leaf.offset,
            )
            for leaf in self.leaves
        ]


def _align(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _leaf_spec(space: Any) -> tuple[str, tuple[int, ...], bool]:
    """(dtype, shape, is_scalar_discrete) of a leaf space, without importing gymnasium here."""
    kind = type(space).__name__
    # Checked by class name so subclasses of the standard spaces work the same way, and so this
    # module stays importable without gymnasium.
    for cls in type(space).__mro__:
        name = cls.__name__
        if name == "Box":
            return np.dtype(space.dtype).str, tuple(int(s) for s in space.shape), False
        if name == "Discrete":
            return np.dtype(np.int64).str, (), True
        if name == "MultiDiscrete":
            return np.dtype(space.dtype).str, tuple(int(s) for s in space.shape), False
        if name == "MultiBinary":
            return np.dtype(np.int8).str, tuple(int(s) for s in space.shape), False
    raise TypeError(
        f"space {kind} cannot be laid out in shared memory: only Box, Discrete, MultiDiscrete, "
        "MultiBinary nested in Dict/Tuple are supported. Encode text or graph observations as "
        "fixed-size integer arrays (e.g. item ids from envs.spaces.ITEMS) in the env."
    )


def _structure(space: Any, path: LeafPath, out: list[tuple[LeafPath, Any]]) -> Structure:
    mro_names = {cls.__name__ for cls in type(space).__mro__}
    if "Dict" in mro_names and hasattr(space, "spaces") and isinstance(space.spaces, dict):
        keys = tuple(space.spaces.keys())
        children = tuple(_structure(space.spaces[k], (*path, k), out) for k in keys)
        return Structure("dict", keys, children)
    if "Tuple" in mro_names and hasattr(space, "spaces"):
        keys = tuple(range(len(space.spaces)))
        children = tuple(_structure(s, (*path, i), out) for i, s in enumerate(space.spaces))
        return Structure("tuple", keys, children)
    out.append((path, space))
    return Structure("leaf", leaf_index=len(out) - 1)


def make_layout(space: Any, num_rows: int, base: int = 0) -> Layout:
    """Lay out ``num_rows`` copies of ``space`` starting at byte ``base`` (aligned)."""
    found: list[tuple[LeafPath, Any]] = []
    structure = _structure(space, (), found)
    leaves = []
    offset = _align(base)
    for path, leaf_space in found:
        dtype, shape, is_discrete = _leaf_spec(leaf_space)
        leaf = Leaf(path, dtype, shape, offset, is_discrete)
        leaves.append(leaf)
        offset = _align(offset + leaf.row_nbytes * num_rows)
    return Layout(structure, tuple(leaves), num_rows, offset - base)


def write_row(views: list[np.ndarray], structure: Structure, row: int, value: Any) -> None:
    """Write one env's nested observation/action ``value`` into row ``row`` of every leaf."""
    if structure.kind == "leaf":
        view = views[structure.leaf_index]
        try:
            view[row] = value
        except (ValueError, TypeError) as err:
            got = np.shape(value)
            raise ValueError(
                f"value of shape {got} does not fit the declared space shape {view.shape[1:]} "
                f"({view.dtype}); the env returned data that disagrees with its observation "
                "or action space"
            ) from err
        return
    for key, child in zip(structure.keys, structure.children, strict=True):
        try:
            item = value[key]
        except (KeyError, IndexError, TypeError) as err:
            raise ValueError(
                f"value is missing key {key!r} that its space declares; got {type(value).__name__}"
            ) from err
        write_row(views, child, row, item)


def read_rows(views: list[np.ndarray], structure: Structure, rows: Any) -> Any:
    """Copy rows ``rows`` (an index array, a slice or an int) out into a fresh nested structure."""
    if structure.kind == "leaf":
        out = views[structure.leaf_index][rows]
        if isinstance(rows, np.ndarray):
            return out  # fancy indexing already copied
        return out.copy() if np.ndim(out) > 0 else out[()]
    values = [read_rows(views, child, rows) for child in structure.children]
    if structure.kind == "dict":
        return dict(zip(structure.keys, values, strict=True))
    return tuple(values)


def read_single(views: list[np.ndarray], layout: Layout, row: int) -> Any:
    """One env's value as the env itself would produce it (Discrete leaves as np.int64 scalars)."""
    return _read_single(views, layout.structure, layout.leaves, row)


def _read_single(views, structure: Structure, leaves: tuple[Leaf, ...], row: int) -> Any:
    if structure.kind == "leaf":
        view = views[structure.leaf_index]
        if leaves[structure.leaf_index].is_scalar_discrete:
            return np.int64(view[row])
        return view[row].copy()
    values = [_read_single(views, child, leaves, row) for child in structure.children]
    if structure.kind == "dict":
        return dict(zip(structure.keys, values, strict=True))
    return tuple(values)


def single_reader(views: list[np.ndarray], layout: Layout) -> Any:
    """``read_single`` bound to ``views``; a plain indexing closure when the space is one leaf."""
    structure = layout.structure
    if structure.kind == "leaf":
        view = views[structure.leaf_index]
        if layout.leaves[structure.leaf_index].is_scalar_discrete:
            return view.__getitem__  # an np.int64 scalar per row
        return lambda row: view[row].copy()
    return lambda row: _read_single(views, structure, layout.leaves, row)


def row_writer(views: list[np.ndarray], structure: Structure) -> Any:
    """``write_row`` bound to ``views`` (the worker's per-step path)."""
    if structure.kind == "leaf":
        view = views[structure.leaf_index]

        def write_leaf(row: int, value: Any) -> None:
            try:
                view[row] = value
            except (ValueError, TypeError):
                write_row(views, structure, row, value)  # raises with the explanation

        return write_leaf
    return lambda row, value: write_row(views, structure, row, value)


def view_rows(views: list[np.ndarray], structure: Structure, rows: slice) -> Any:
    """Like ``read_rows`` for a slice, but aliasing the buffer instead of copying."""
    if structure.kind == "leaf":
        return views[structure.leaf_index][rows]
    values = [view_rows(views, child, rows) for child in structure.children]
    if structure.kind == "dict":
        return dict(zip(structure.keys, values, strict=True))
    return tuple(values)


def write_batch(
    views: list[np.ndarray], structure: Structure, rows: np.ndarray | slice, batch: Any
) -> None:
    """Scatter a batched nested value (leading axis = number of rows) into ``rows``."""
    if structure.kind == "leaf":
        view = views[structure.leaf_index]
        try:
            view[rows] = batch
        except (ValueError, TypeError) as err:
            ids = (
                list(range(view.shape[0])[rows])
                if isinstance(rows, slice)
                else np.asarray(rows).tolist()
            )
            raise ValueError(
                f"batched value of shape {np.shape(batch)} does not fit "
                f"[{len(ids)}, *{view.shape[1:]}] ({view.dtype}) for env ids {ids}"
            ) from err
        return
    for key, child in zip(structure.keys, structure.children, strict=True):
        write_batch(views, child, rows, batch[key])


@dataclasses.dataclass(frozen=True)
class BridgeLayout:
    """Everything a vector env shares with its workers, in one buffer.

    ``obs`` rows hold each env's latest observation; ``final_obs`` the last observation of an
    episode that was auto-reset in the same step; ``action`` the action the parent wants stepped;
    ``reward`` / ``terminated`` / ``truncated`` the scalars of the latest step.
    """

    obs: Layout
    final_obs: Layout
    action: Layout
    reward_offset: int
    terminated_offset: int
    truncated_offset: int
    num_envs: int
    nbytes: int

    def scalar_views(self, buffer: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.num_envs
        return (
            np.ndarray((n,), np.float64, buffer=buffer, offset=self.reward_offset),
            np.ndarray((n,), np.bool_, buffer=buffer, offset=self.terminated_offset),
            np.ndarray((n,), np.bool_, buffer=buffer, offset=self.truncated_offset),
        )


def make_bridge_layout(observation_space: Any, action_space: Any, num_envs: int) -> BridgeLayout:
    obs = make_layout(observation_space, num_envs, 0)
    final_obs = make_layout(observation_space, num_envs, obs.nbytes)
    action = make_layout(action_space, num_envs, obs.nbytes + final_obs.nbytes)
    cursor = _align(obs.nbytes + final_obs.nbytes + action.nbytes)
    reward_offset = cursor
    terminated_offset = _align(reward_offset + 8 * num_envs)
    truncated_offset = _align(terminated_offset + num_envs)
    total = _align(truncated_offset + num_envs)
    return BridgeLayout(
        obs, final_obs, action, reward_offset, terminated_offset, truncated_offset, num_envs, total
    )


def create_anonymous_buffer(nbytes: int) -> int:
    """A file descriptor of ``nbytes`` zeroed bytes that has no name anywhere.

    It is shared with workers by passing the descriptor over their Unix socket, so nothing can
    leak in /dev/shm when a process is killed: the memory goes away with the last descriptor.
    """
    nbytes = max(int(nbytes), 1)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("mineclip-jax-bridge", os.MFD_CLOEXEC)
    else:  # macOS: an unlinked temporary file behaves the same way
        tmp_fd, tmp_path = tempfile.mkstemp(prefix="mineclip-jax-bridge-")
        os.unlink(tmp_path)
        fd = tmp_fd
    os.ftruncate(fd, nbytes)
    return fd
