"""Configuration and state pytrees of the embedded world.

``VoxelStaticConfig`` holds every shape-setting choice (hashable; pass as a static argument).
``VoxelParams`` holds everything traced: the task, initial conditions, physics constants and the
pool of pre-generated worlds resets draw from. ``VoxelState`` is one world's full state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flax import struct


@dataclasses.dataclass(frozen=True)
class VoxelStaticConfig:
    """Shape-setting configuration of the embedded world (static under jit)."""

    size_x: int = 64  # world extent east-west (blocks)
    size_y: int = 32  # world height (blocks); y = 0 is bedrock
    size_z: int = 64  # world extent north-south (blocks)
    sea_level: int = 12  # water surface height in oceans, beaches and swamps
    max_mobs: int = 16  # mob slots per world (alive mask marks used ones)
    max_initial_mobs: int = 8  # initial mob slots a task may request
    world_pool_size: int = 16  # pre-generated worlds resets draw from (0: generate each reset)
    render: bool = True  # produce the rgb observation (False: state-only, much faster)
    height: int = 160  # rgb height
    width: int = 256  # rgb width
    fov_deg: float = 70.0  # vertical field of view of the camera
    voxel_size: int = 3  # edge of the voxels observation cube
    num_trees: int = 48  # tree candidate sites per world (biome decides which grow)
    # Game ticks per env step (frame skip). The camera turn and one-shot functional actions
    # (use, drop, craft, equip, place, destroy) apply on the first tick; movement, jump,
    # sneak/sprint and attack are held for every tick; one frame is rendered at the end.
    action_repeat: int = 1

    def __post_init__(self):
        if min(self.size_x, self.size_z) < 16 or self.size_y < 16:
            raise ValueError(
                f"world must be at least 16x16x16 blocks, got {self.size_x}x{self.size_y}x{self.size_z}"
            )
        if not 4 <= self.sea_level <= self.size_y - 8:
            raise ValueError(f"sea_level {self.sea_level} must be in [4, size_y - 8]")
        if self.max_mobs < self.max_initial_mobs:
            raise ValueError("max_mobs must be >= max_initial_mobs")
        if self.voxel_size % 2 != 1:
            raise ValueError(f"voxel_size must be odd, got {self.voxel_size}")
        if self.action_repeat < 1:
            raise ValueError(f"action_repeat must be >= 1 game tick, got {self.action_repeat}")
        if self.size_y > 255:
            raise ValueError("size_y must be < 256 (heights are stored as uint8)")


@struct.dataclass
class WorldPool:
    """Pre-generated worlds and their per-column metadata."""

    blocks: Any  # u8 [P, X, Y, Z] world block ids
    biome: Any  # i32 [P, X, Z] Minecraft biome id per column
    ocean_distance: Any  # f32 [P, X, Z] horizontal distance to the nearest ocean column
    portal_center: Any  # f32 [P, 3] centre of the nether portal's interior
    house_floor: Any  # i32 [P, 4] house floor box x0, z0, x1, z1 (inclusive), floor at y = [.., 3]
    house_floor_y: Any  # i32 [P]


@struct.dataclass
class VoxelParams:
    """Traced parameters: task, initial conditions, physics constants, world pool."""

    task: Any  # envs.tasks.spec.TaskParams
    pool: WorldPool  # worlds resets draw from
    max_steps: Any  # i32 [] truncation limit
    # Initial inventory, raw MineDojo slots 0..40 (36 feet, 37 legs, 38 chest, 39 head, 40 offhand).
    init_slot_item: Any  # i32 [41]
    init_slot_count: Any  # i32 [41]
    init_mob_type: Any  # i32 [max_initial_mobs]
    init_mob_mask: Any  # bool [max_initial_mobs]
    spawn_low: Any  # f32 [3] initial mob offset range from the player
    spawn_high: Any  # f32 [3]
    passive_mobs: Any  # i32 [] extra wandering passive animals at reset
    allow_mob_spawn: Any  # bool [] natural hostile spawning at night
    start_time: Any  # i32 [] world time at reset (0 = sunrise, 6000 noon, 18000 midnight)
    freeze_time: Any  # bool [] time does not advance (always_night)
    target_entity: Any  # bool [NUM_ENTITIES] mobs that count as the task's target
    target_kind: Any  # i32 [] 0 none, 1 entity, 2 portal, 3 ocean, 4 house floor
    biome_spawn: Any  # bool [NUM_BIOME_IDS] spawn in these biomes if possible (all False: any land)
    gravity: Any  # f32 [] blocks/tick^2
    walk_speed: Any  # f32 [] blocks/tick
    sprint_speed: Any  # f32 []
    sneak_speed: Any  # f32 []
    jump_velocity: Any  # f32 []
    block_reach: Any  # f32 [] blocks
    attack_reach: Any  # f32 [] blocks
    spawn_interval: Any  # i32 [] ticks between night spawn attempts
    end_on_any_kill: Any  # bool [] any kill ends the episode (paper's hunts)
    end_on_success: Any  # bool [] the success check ends the episode (not on Creative tasks)


@struct.dataclass
class Player:
    pos: Any  # f32 [3] feet centre
    vel: Any  # f32 [3]
    yaw: Any  # f32 [] degrees, MC convention (0 = +z, 90 = -x)
    pitch: Any  # f32 [] degrees, +90 looks down
    on_ground: Any  # bool []
    fall_distance: Any  # f32 []
    health: Any  # f32 [] 0..20
    food: Any  # f32 [] 0..20
    saturation: Any  # f32 []
    exhaustion: Any  # f32 []
    oxygen: Any  # f32 [] 0..300
    regen_timer: Any  # i32 []
    hurt_time: Any  # i32 [] ticks of damage immunity left
    sneaking: Any  # bool []
    last_damage: Any  # f32 [] damage taken this step
    last_damage_yaw: Any  # f32 []
    last_damage_dist: Any  # f32 []


@struct.dataclass
class Inventory:
    item: Any  # i32 [41] raw slots (0-35 main, 36-39 armour feet..head, 40 offhand)
    count: Any  # i32 [41]
    durability: Any  # i32 [41] remaining uses (-1: undamageable)


@struct.dataclass
class Mobs:
    pos: Any  # f32 [M, 3] feet centre
    vel_y: Any  # f32 [M]
    yaw: Any  # f32 [M] degrees
    mob_type: Any  # i32 [M] entity id
    alive: Any  # bool [M]
    health: Any  # f32 [M]
    hurt: Any  # f32 [M] red flash 0..1
    immune: Any  # i32 [M] hurt-immunity ticks
    ai_timer: Any  # i32 [M] ticks until the next wander decision
    walking: Any  # bool [M] wandering (vs idle)
    flee: Any  # i32 [M] ticks left of fleeing
    angry: Any  # bool [M] neutral mob provoked
    cooldown: Any  # i32 [M] ticks until the next attack
    variant: Any  # i32 [M] sheep: 1 = sheared
    regrow: Any  # i32 [M] ticks until wool regrows


@struct.dataclass
class VoxelState:
    blocks: Any  # u8 [X, Y, Z]
    biome: Any  # i32 [X, Z]
    ocean_distance: Any  # f32 [X, Z]
    portal_center: Any  # f32 [3]
    house: Any  # i32 [4]
    house_floor_y: Any  # i32 []
    player: Player
    inv: Inventory
    mobs: Mobs
    world_time: Any  # i32 [] ticks since sunrise (mod 24000 for the day cycle)
    ticks: Any  # i32 [] ticks this episode (time alive)
    steps: Any  # i32 [] agent steps this episode
    mine_target: Any  # i32 [3] block being mined (-1: none)
    mine_progress: Any  # f32 [] 0..1
    table_pos: Any  # i32 [3] last crafting table the player placed (-1: none)
    furnace_pos: Any  # i32 [3] last furnace the player placed (-1: none)
    stats_kills: Any  # f32 [NUM_ENTITIES]
    stats_uses: Any  # f32 [NUM_ITEMS]
    stats_crafts: Any  # f32 [NUM_ITEMS]
    stats_mines: Any  # f32 [NUM_ITEMS]
    stats_places: Any  # f32 [NUM_ITEMS]
    best_target_distance: Any  # f32 []
    succeeded: Any  # bool [] the task's success check has passed this episode
    initial_signals: Any  # TaskSignals at reset
    prev_signals: Any  # TaskSignals after the previous step
