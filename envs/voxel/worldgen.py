"""Procedural world generation (pure JAX, one world per key).

Biomes are a warped Voronoi diagram of a few seed points (one is always ocean, one plains, one
forest; the rest random among the land biomes); the height of each column blends per-biome base
heights and noise amplitudes with soft Voronoi weights so biomes meet smoothly. Columns are filled
bedrock / stone (with coal, iron, gold and diamond ore by depth) / dirt / surface block, water up
to sea level in oceans, beaches and swamps, then trees, cacti, grass tufts and flowers, a nether
portal frame (obsidian, lit) and a small house with a plank floor, each on its own levelled
platform so tasks can always reach them.

A task with a ``specified_biome`` gets what MineDojo's ``BiomeGenerator`` gives it: a world of
that one biome (``generate_world(..., biome="plains")``), with its terrain, plants and trees but
no ocean, portal or house (the Creative tasks' structures).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.voxel import tables as T
from envs.voxel.state import VoxelStaticConfig, WorldPool

B = T.B
_OCEAN, _PLAINS, _FOREST, _DESERT, _BEACH, _HILLS, _SWAMP = (
    spaces.biome_id(n)
    for n in ("ocean", "plains", "forest", "desert", "beach", "extreme_hills", "swampland")
)
_LAND_BIOMES = np.array([_PLAINS, _FOREST, _DESERT, _HILLS, _SWAMP], np.int32)
NUM_SEEDS = 8
# Biomes a single-biome world can be made of (by MineDojo name); sunflower plains (the biome of
# MineCLIP's sample hunt env) is generated as plains, the world's blocks having no sunflowers.
SINGLE_BIOMES: dict[str, int] = {
    "plains": _PLAINS, "sunflower_plains": _PLAINS, "forest": _FOREST, "desert": _DESERT,
    "extreme_hills": _HILLS, "swampland": _SWAMP,
}  # fmt: skip
# Where a single-biome world puts the structures it does not have: far outside every world, so
# spawn exclusion zones and target distances never meet them.
NO_STRUCTURE = -1000

# Leaves around a tree top (dx, dy, dz) relative to the top log.
_LEAF_OFFSETS = np.array(
    [(dx, dy, dz) for dy in (-1, 0) for dx in range(-2, 3) for dz in range(-2, 3)
     if not (abs(dx) == 2 and abs(dz) == 2)]
    + [(dx, 1, dz) for dx in range(-1, 2) for dz in range(-1, 2)]
    + [(0, 2, 0)],
    np.int32,
)  # fmt: skip


def _biome_params(biome, sea):
    """Base height and noise amplitude for each biome id (elementwise)."""
    base = np.select(
        [biome == _OCEAN, biome == _HILLS, biome == _SWAMP, biome == _FOREST],
        [sea - 5.0, sea + 7.0, sea + 0.3, sea + 3.0],
        sea + 2.0,
    )
    amp = np.select(
        [biome == _OCEAN, biome == _HILLS, biome == _SWAMP, biome == _DESERT],
        [2.0, 6.0, 0.8, 1.2],
        1.6,
    )
    return base, amp


def _noise(rng, xs, zs, octaves=((0.06, 1.0), (0.13, 0.5), (0.27, 0.25))):
    """Sum of random plane waves: a cheap smooth noise in about [-1, 1]."""
    total = 0.0
    for freq, amp in octaves:
        angles = rng.uniform(0, 2 * np.pi, 3)
        phases = rng.uniform(0, 2 * np.pi, 3)
        for a, p in zip(angles, phases):
            total = total + amp / 3.0 * np.sin(freq * (np.cos(a) * xs + np.sin(a) * zs) + p)
    return total / 0.8


def _distance_to_mask(mask):
    """Exact Euclidean distance (in columns) from each column to the nearest True column."""
    sx, sz = mask.shape
    xs = np.arange(sx, dtype=np.float32)
    zs = np.arange(sz, dtype=np.float32)
    big = 1e4
    # Pass 1 along x: g[x, z'] = min over ocean x' in row z' of |x - x'|.
    dx = np.abs(xs[:, None, None] - xs[None, :, None])  # [x, x', 1]
    g = np.min(np.where(mask[None, :, :], dx, big), axis=1)  # [x, z']
    # Pass 2 along z.
    dz2 = (zs[:, None] - zs[None, :]) ** 2  # [z, z']
    d2 = g[:, None, :] ** 2 + dz2[None, :, :]  # [x, z, z']
    return np.sqrt(np.min(d2, axis=-1))


def _platform(blocks, x0, z0, x1, z1, floor_y):
    """Level the box [x0, x1] x [z0, z1]: stone up to floor_y - 1, air above."""
    sx, sy, sz = blocks.shape
    xs = np.arange(sx)[:, None, None]
    ys = np.arange(sy)[None, :, None]
    zs = np.arange(sz)[None, None, :]
    inside = (xs >= x0) & (xs <= x1) & (zs >= z0) & (zs <= z1)
    fill = np.where(ys < floor_y, np.uint8(B["stone"]), np.uint8(B["air"]))
    fill = np.where(ys == 0, np.uint8(B["bedrock"]), fill)
    return np.where(inside, fill, blocks)


def _box_mask(shape, lo, hi):
    """bool [X, Y, Z]: cells with lo <= (x, y, z) <= hi (inclusive)."""
    sx, sy, sz = shape
    xs = np.arange(sx)[:, None, None]
    ys = np.arange(sy)[None, :, None]
    zs = np.arange(sz)[None, None, :]
    return (
        (xs >= lo[0])
        & (xs <= hi[0])
        & (ys >= lo[1])
        & (ys <= hi[1])
        & (zs >= lo[2])
        & (zs <= hi[2])
    )


def generate_world(seed: int, static: VoxelStaticConfig, biome: str | None = None) -> dict:
    """One world (NumPy arrays): blocks, per-column biome, ocean distance, structure locations.

    ``biome``: None for the mixed world with the Creative structures; a name in
    ``SINGLE_BIOMES`` for a world of that biome only, with no ocean, portal or house (their
    locations are set to ``NO_STRUCTURE``).
    """
    if biome is not None and biome not in SINGLE_BIOMES:
        raise ValueError(f"no single-biome world of {biome!r}; one of {sorted(SINGLE_BIOMES)}")
    single = None if biome is None else SINGLE_BIOMES[biome]
    sx, sy, sz, sea = static.size_x, static.size_y, static.size_z, static.sea_level
    rng = np.random.default_rng(seed)
    xs = np.arange(sx, dtype=np.float32)[:, None] + 0.5
    zs = np.arange(sz, dtype=np.float32)[None, :] + 0.5

    # --- biomes: warped Voronoi ------------------------------------------------------------
    seeds = rng.uniform(0, 1, (NUM_SEEDS, 2)) * np.array([sx, sz], np.float32)
    rest = rng.choice(_LAND_BIOMES, NUM_SEEDS - 3)
    seed_biome = np.concatenate([np.array([_OCEAN, _PLAINS, _FOREST], np.int32), rest])
    if single is not None:  # after the draws above, so mixed worlds keep their random stream
        seed_biome = np.full(NUM_SEEDS, single, np.int32)
    wx = xs + 4.0 * _noise(rng, xs, zs)
    wz = zs + 4.0 * _noise(rng, xs, zs)
    d = np.sqrt((wx[..., None] - seeds[:, 0]) ** 2 + (wz[..., None] - seeds[:, 1]) ** 2)
    nearest = np.argmin(d, axis=-1)
    biome = seed_biome[nearest]
    weights = np.exp(-(d - d.min(axis=-1, keepdims=True)) / 3.0)
    weights = weights / weights.sum(-1, keepdims=True)
    base, amp = _biome_params(seed_biome, float(sea))
    n = _noise(rng, xs, zs)
    height = np.sum(weights * (base + amp * n[..., None]), axis=-1)
    height = np.clip(np.round(height), 3, sy - 7).astype(np.int32)
    ocean = biome == _OCEAN
    ocean_distance = _distance_to_mask(ocean)
    beach = (~ocean) & (ocean_distance <= 3.0) & (biome != _HILLS)
    biome = np.where(beach, _BEACH, biome)
    height = np.where(beach, np.clip(height, sea - 1, sea + 1), height)

    # --- columns -------------------------------------------------------------------------
    ys = np.arange(sy)[None, :, None]
    h = height[:, None, :]
    b = biome[:, None, :]
    sandy = (b == _DESERT) | (b == _BEACH) | (b == _OCEAN)
    rocky_top = (b == _HILLS) & (h > sea + 9)
    surface = np.where(sandy, B["sand"], np.where(rocky_top, B["stone"], B["grass"]))
    surface = np.where((b == _OCEAN) & (h < sea - 3), B["gravel"], surface)
    underfill = np.where(sandy, np.where(b == _DESERT, B["sandstone"], B["sand"]), B["dirt"])
    underfill = np.where(rocky_top, B["stone"], underfill)
    grass_under_water = (surface == B["grass"]) & (h < sea)
    surface = np.where(grass_under_water, B["dirt"], surface)
    blocks = np.where(ys < h - 3, B["stone"], B["air"])
    blocks = np.where((ys >= h - 3) & (ys < h), underfill, blocks)
    blocks = np.where(ys == h, surface, blocks)
    wet = (b == _OCEAN) | (b == _BEACH) | (b == _SWAMP)
    blocks = np.where(wet & (ys > h) & (ys <= sea), B["water"], blocks)
    # Ores by depth (scaled to a low world: Minecraft's diamond band y <= 16 becomes y <= 5).
    u = rng.uniform(0, 1, (sx, sy, sz)).astype(np.float32)
    stone = blocks == B["stone"]
    ore = np.where((u < 0.003) & (ys <= 5), B["diamond_ore"], B["stone"])
    ore = np.where((u >= 0.003) & (u < 0.006) & (ys <= 7), B["gold_ore"], ore)
    ore = np.where((u >= 0.006) & (u < 0.018) & (ys <= sea + 2), B["iron_ore"], ore)
    ore = np.where((u >= 0.018) & (u < 0.036) & (ys <= sea + 12), B["coal_ore"], ore)
    ore = np.where((u >= 0.036) & (u < 0.040), B["gravel"], ore)
    blocks = np.where(stone, ore, blocks)
    blocks = np.where(ys == 0, B["bedrock"], blocks).astype(np.uint8)
    blocks = np.ascontiguousarray(blocks)

    # --- plants ----------------------------------------------------------------------------
    top_is_grass = np.take_along_axis(blocks, height[:, None, :], axis=1)[:, 0, :] == B["grass"]
    v = rng.uniform(0, 1, (sx, sz))
    tuft = top_is_grass & (v < 0.06) & ((biome == _PLAINS) | (biome == _FOREST) | (biome == _SWAMP))
    flower = top_is_grass & (v >= 0.06) & (v < 0.075)
    cactus = (biome == _DESERT) & (v < 0.008)
    plant = np.where(tuft, B["tallgrass"], np.where(flower, B["red_flower"], B["air"]))
    plant = np.where(flower & (v < 0.067), B["yellow_flower"], plant)
    plant = np.where(cactus, B["cactus"], plant)
    is_plant_cell = (ys == h + 1) & (plant[:, None, :] != B["air"])
    blocks = np.where(is_plant_cell, plant[:, None, :].astype(np.uint8), blocks)
    lily = (biome == _SWAMP) & (v > 0.9) & (height < sea)
    blocks = np.where(lily[:, None, :] & (ys == sea + 1), np.uint8(B["waterlily"]), blocks)

    # Trees: candidate sites; the biome decides whether a tree grows there.
    nt = static.num_trees
    tx = rng.integers(2, sx - 2, nt)
    tz = rng.integers(2, sz - 2, nt)
    tb = biome[tx, tz]
    th = height[tx, tz]
    p_grow = np.select([tb == _FOREST, tb == _SWAMP, tb == _PLAINS, tb == _HILLS],
                        [0.95, 0.5, 0.15, 0.25], 0.0)  # fmt: skip
    r = rng.uniform(0, 1, (nt, 2))
    grow = (r[:, 0] < p_grow) & top_is_grass[tx, tz] & (th + 8 < sy)
    trunk = 4 + (r[:, 1] < 0.5).astype(np.int32)
    top = th + trunk
    lx = (tx[:, None] + _LEAF_OFFSETS[None, :, 0])[grow]
    ly = (top[:, None] + _LEAF_OFFSETS[None, :, 1])[grow]
    lz = (tz[:, None] + _LEAF_OFFSETS[None, :, 2])[grow]
    ok = (lx >= 0) & (lx < sx) & (ly >= 0) & (ly < sy) & (lz >= 0) & (lz < sz)
    leaf_grid = np.zeros((sx, sy, sz), bool)
    leaf_grid[lx[ok], ly[ok], lz[ok]] = True
    blocks = np.where(leaf_grid & (blocks == B["air"]), np.uint8(B["leaves"]), blocks)
    for i in np.nonzero(grow)[0]:
        blocks[tx[i], th[i] + 1 : th[i] + 1 + trunk[i], tz[i]] = B["log"]

    if single is not None:
        far = np.float32(NO_STRUCTURE)
        return dict(
            blocks=blocks.astype(np.uint8),
            biome=biome.astype(np.int32),
            ocean_distance=ocean_distance.astype(np.float32),
            portal_center=np.full(3, far, np.float32),
            house_floor=np.full(4, NO_STRUCTURE, np.int32),
            house_floor_y=np.int32(NO_STRUCTURE),
        )

    # --- nether portal (west half) ---------------------------------------------------------
    k_p = rng.integers(0, 1 << 30, 2)
    px = 3 + k_p[0] % max(sx // 2 - 10, 1)
    pz = 4 + k_p[1] % max(sz - 10, 1)
    p_floor = np.clip(np.maximum(height[px + 1, pz], sea + 1) + 1, 2, sy - 8)
    blocks = _platform(blocks, px - 1, pz - 2, px + 4, pz + 2, p_floor)
    frame = _box_mask(
        blocks.shape, np.array([px, p_floor, pz]), np.array([px + 3, p_floor + 4, pz])
    )
    inner = _box_mask(
        blocks.shape, np.array([px + 1, p_floor + 1, pz]), np.array([px + 2, p_floor + 3, pz])
    )
    blocks = np.where(frame, np.uint8(B["obsidian"]), blocks)
    blocks = np.where(inner, np.uint8(B["portal"]), blocks)
    portal_center = np.array([px + 2.0, p_floor + 2.5, pz + 0.5], np.float32)

    # --- house (east half): cobblestone walls, plank floor, door on the south side ---------
    k_h = rng.integers(0, 1 << 30, 2)
    hx = sx // 2 + 2 + k_h[0] % max(sx // 2 - 10, 1)
    hz = 3 + k_h[1] % max(sz - 10, 1)
    h_floor = np.clip(np.maximum(height[hx + 3, hz + 3], sea + 1), 2, sy - 8)
    blocks = _platform(blocks, hx - 1, hz - 1, hx + 7, hz + 7, h_floor + 1)
    shell = _box_mask(
        blocks.shape, np.array([hx, h_floor, hz]), np.array([hx + 6, h_floor + 4, hz + 6])
    )
    hollow = _box_mask(
        blocks.shape,
        np.array([hx + 1, h_floor + 1, hz + 1]),
        np.array([hx + 5, h_floor + 3, hz + 5]),
    )
    door = _box_mask(
        blocks.shape,
        np.array([hx + 3, h_floor + 1, hz + 6]),
        np.array([hx + 3, h_floor + 2, hz + 6]),
    )
    floor = _box_mask(
        blocks.shape, np.array([hx + 1, h_floor, hz + 1]), np.array([hx + 5, h_floor, hz + 5])
    )
    roof = _box_mask(
        blocks.shape, np.array([hx, h_floor + 4, hz]), np.array([hx + 6, h_floor + 4, hz + 6])
    )
    blocks = np.where(shell, np.uint8(B["cobblestone"]), blocks)
    blocks = np.where(hollow | door, np.uint8(B["air"]), blocks)
    blocks = np.where(floor | roof, np.uint8(B["planks"]), blocks)
    house = np.stack([hx + 1, hz + 1, hx + 5, hz + 5]).astype(np.int32)

    return dict(
        blocks=blocks.astype(np.uint8),
        biome=biome.astype(np.int32),
        ocean_distance=ocean_distance.astype(np.float32),
        portal_center=portal_center,
        house_floor=house,
        house_floor_y=h_floor.astype(np.int32),
    )


def generate_pool(
    seed: int, size: int, static: VoxelStaticConfig, biome: str | None = None
) -> WorldPool:
    """``size`` worlds from one integer seed, stacked into a ``WorldPool`` of JAX arrays.

    Generation runs once, in NumPy, when params are built (no compile time); resets then draw a
    world from the pool and randomise the spawn point, mobs and time on it. ``biome``: as in
    ``generate_world`` (None: mixed worlds with the Creative structures).
    """
    if size <= 0:
        raise ValueError(f"world pool size must be positive, got {size}")
    seeds = np.random.SeedSequence(int(seed)).generate_state(size)
    worlds = [generate_world(int(s), static, biome) for s in seeds]
    return WorldPool(**{k: jnp.asarray(np.stack([w[k] for w in worlds])) for k in worlds[0]})


def pool_biome(pool: WorldPool) -> int | None:
    """The biome id every column of every world in ``pool`` has, or None for a mixed pool."""
    ids = np.unique(np.asarray(pool.biome))
    return int(ids[0]) if ids.size == 1 else None
