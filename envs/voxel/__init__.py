"""The embedded first-person voxel world, pure JAX (see ``envs.voxel.env`` for the API)."""

from envs.voxel.env import (
    NUM_TARGET_FEATURES,
    TARGET_FEATURES,
    look_vector,
    make_params,
    observe,
    render_state,
    reset,
    reset_state,
    scene,
    step,
    step_autoreset,
    step_autoreset_batch,
    step_state,
    target_features,
)
from envs.voxel.state import (
    Inventory,
    Mobs,
    Player,
    VoxelParams,
    VoxelState,
    VoxelStaticConfig,
    WorldPool,
)
from envs.voxel.support import can_run
from envs.voxel.tables import BLOCK_NAMES, MOB_NAMES
from envs.voxel.worldgen import generate_pool, generate_world

__all__ = [
    "NUM_TARGET_FEATURES",
    "TARGET_FEATURES",
    "BLOCK_NAMES",
    "MOB_NAMES",
    "Inventory",
    "Mobs",
    "Player",
    "VoxelParams",
    "VoxelState",
    "VoxelStaticConfig",
    "WorldPool",
    "can_run",
    "generate_pool",
    "generate_world",
    "look_vector",
    "make_params",
    "observe",
    "render_state",
    "reset",
    "reset_state",
    "scene",
    "step",
    "step_autoreset",
    "step_autoreset_batch",
    "step_state",
    "target_features",
]
