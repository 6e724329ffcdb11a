"""First-person renderer of the embedded voxel world: a bounded voxel ray marcher in pure JAX.

One ray per pixel walks the block grid with the Amanatides-Woo DDA (one cell per step, fixed
upper bound on the steps, so it runs as an XLA loop on CPU, GPU and TPU). Mobs are oriented box
models intersected analytically and depth-tested against the blocks. Shading: textured faces
(nearest texel, 16x16 per face), per-face directional shade, day/night light with emissive
blocks, sky gradient, distance fog into the sky colour, translucent water/portal/ice blended over
what lies behind, alpha-tested leaves and glass.

Coordinates (Minecraft's): x east, y up, z south; block (i, j, k) fills [i, i+1]x[j, j+1]x[k, k+1];
cells outside the grid are air. Yaw 0 looks toward +z (south), yaw 90 toward -x (west); pitch
+90 looks straight down, -90 straight up. `fov_deg` is the vertical field of view, as in
Minecraft's options.

Why it is fast enough on a CPU:
- Pixels are processed in tiles of `tile_rows` image rows (over all scenes of a batch: vmap of
  `render_first_person` is redirected to one batched implementation with `custom_vmap`). Each
  tile runs its own `while_loop` that stops as soon as every ray in the tile has hit something or
  left the view, so sky tiles cost a few steps and only tiles near the horizon pay the full
  `max_steps`; the tile's loop state stays in cache.
- Rays are first clipped to the occupied slab of the grid (y below the highest non-air layer),
  so rays that rise above the terrain finish at once.
- Most steps are lean (`lean_steps` per loop iteration, each one iteration of an inner
  `fori_loop`: unrolled steps made XLA recompute the whole chain in each of the nine output
  fusions): a plain one-cell DDA step through see-through cells (air, and translucent blocks
  once one is recorded) that carries nine arrays, reads one byte of a per-cell class grid and
  has no reduction or cond; a ray stops in the first other cell, and an opaque cube is a hit
  found after the steps. Only when some ray of the tile waits in a special cell (partial
  boxes: carpet, torch, cactus; alpha-tested texels: leaves, glass; the first translucent
  block) does a full step with those geometric tests run (`lax.switch`), on the waiting rays gathered into a batch of at most `_FINE_COMPACT` (the
  whole tile when more wait). Measured per ray-step on CPU the lean step is about 6 ns against
  about 22 for the brick-jumping step, which more than pays for the extra steps without bricks.
  `lean_steps=0` selects the plain loop of full steps (`step`, with empty-space bricks), kept as
  the reference the tests compare with.
- Mobs are tested only in the tiles their projected bounding sphere overlaps, on the
  narrowest 32/64/128-column window that holds it, box by box with a running nearest hit.
On a GPU, `parallel_tiles` processes many tiles at once (the loops are vmapped, bounds stay
fixed; not measured yet). `benchmarks/render_throughput.py` measures frames/s against a naive
fixed-step ray marcher and records what was tried.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import chex
import jax
import jax.numpy as jnp
from flax import struct
from jax.custom_batching import custom_vmap

from envs.voxel.textures import (
    FACE_BOTTOM,
    FACE_TOP,
    FACE_X,
    FACE_Z,
    KIND_OPAQUE,
    KIND_SPECIAL,
    KIND_TRANSLUCENT,
    TEX,
    RenderAssets,
)

_INF = 1e30
_MOB_WINDOWS = (32, 64, 128)
_FINE_COMPACT = 256  # rays a fine step gathers into a small batch (more: it runs on the tile)  # column windows a mob is tested on (see _trace_mobs)
# Face brightness by the face's axis (Minecraft-like: tops brightest, bottoms darkest, and the
# two side orientations differ so edges between faces stay visible).
_SHADE_X, _SHADE_Z, _SHADE_TOP, _SHADE_BOTTOM = 0.72, 0.86, 1.0, 0.55
_NIGHT_LIGHT = 0.16  # block brightness at daylight 0 (moonlight), 1.0 at noon
_SKY_DAY_ZENITH = (0.47, 0.65, 1.0)
_SKY_DAY_HORIZON = (0.75, 0.85, 1.0)
_SKY_NIGHT_ZENITH = (0.01, 0.01, 0.04)
_SKY_NIGHT_HORIZON = (0.05, 0.06, 0.12)


@dataclasses.dataclass(frozen=True)
class RenderConfig:
    """Static (shape-setting) renderer settings; hashable, pass as a static argument.

    Attributes:
      height: image rows.
      width: image columns.
      fov_deg: vertical field of view in degrees (Minecraft's 70 by default).
      max_distance: view distance in blocks; fog reaches the sky colour there and the ray march
        is bounded by it (cost grows linearly with it).
      fog_start: fraction of `max_distance` where fog begins.
      tile_rows: image rows per tile (one early-exit loop per tile).
      parallel_tiles: tiles processed together by vmapping the tile kernel. Keep 1 on CPU
        (vmapped, the per-tile conds run both branches: about 6x slower there); meant for
        GPU/TPU, where it has not been measured yet.
      brick_size: edge of the empty-space bricks rays skip in one step (power of two); used by
        the full steps only (the lean steps go cell by cell).
      lean_steps: lean DDA steps per loop iteration before the full step for rays waiting in
        special cells; 0 runs only full steps (the reference loop, slower on CPU).
    """

    height: int = 160
    width: int = 256
    fov_deg: float = 70.0
    max_distance: float = 32.0
    fog_start: float = 0.55
    tile_rows: int = 16
    parallel_tiles: int = 1
    brick_size: int = 4
    lean_steps: int = 8

    def __post_init__(self):
        if self.height < 1 or self.width < 1:
            raise ValueError(f"RenderConfig: image size {self.height}x{self.width} must be >= 1x1")
        if not 1.0 <= self.fov_deg <= 170.0:
            raise ValueError(f"RenderConfig: fov_deg={self.fov_deg} must be in [1, 170] degrees")
        if not self.max_distance > 0:
            raise ValueError(f"RenderConfig: max_distance={self.max_distance} must be > 0 blocks")
        if not 0.0 <= self.fog_start < 1.0:
            raise ValueError(f"RenderConfig: fog_start={self.fog_start} must be in [0, 1)")
        if self.brick_size < 1 or self.brick_size & (self.brick_size - 1):
            raise ValueError(f"RenderConfig: brick_size={self.brick_size} must be a power of two")
        if self.tile_rows < 1 or self.parallel_tiles < 1:
            raise ValueError("RenderConfig: tile_rows and parallel_tiles must be >= 1")
        if self.lean_steps < 0:
            raise ValueError(f"RenderConfig: lean_steps={self.lean_steps} must be >= 0")

    @property
    def max_steps(self) -> int:
        # A ray crosses at most |dx|+|dy|+|dz| <= sqrt(3) cells per unit length.
        return int(math.ceil(self.max_distance * math.sqrt(3.0))) + 3

    @property
    def focal_px(self) -> float:
        return 0.5 * self.height / math.tan(math.radians(self.fov_deg) / 2.0)


@struct.dataclass
class Scene:
    """What one first-person frame shows. All leaves are traced; `vmap` over a leading axis.

    blocks: uint8 [X, Y, Z] block ids (0 = air). eye_pos: f32 [3]. yaw_deg, pitch_deg: f32 [].
    mob_pos: f32 [M, 3] feet centre. mob_yaw_deg: f32 [M]. mob_type: int32 [M].
    mob_alive: bool [M] (dead/unused slots are not drawn). mob_variant: int32 [M] (sheared
    sheep = 1). mob_hurt: f32 [M] red tint 0..1. daylight: f32 [] 0 night .. 1 noon.
    """

    blocks: jax.Array
    eye_pos: jax.Array
    yaw_deg: jax.Array
    pitch_deg: jax.Array
    mob_pos: jax.Array
    mob_yaw_deg: jax.Array
    mob_type: jax.Array
    mob_alive: jax.Array
    mob_variant: jax.Array
    mob_hurt: jax.Array
    daylight: jax.Array


def make_scene(
    blocks,
    eye_pos,
    yaw_deg=0.0,
    pitch_deg=0.0,
    *,
    mob_pos=None,
    mob_yaw_deg=None,
    mob_type=None,
    mob_alive=None,
    mob_variant=None,
    mob_hurt=None,
    daylight=1.0,
    num_mobs: int | None = None,
) -> Scene:
    """Builds a `Scene` with sensible defaults (no mobs unless given; `num_mobs` pads slots)."""
    n_given = 0 if mob_pos is None else len(mob_pos)
    m = num_mobs if num_mobs is not None else n_given

    def arr(x, default, dtype, shape):
        x = jnp.full(shape, default, dtype) if x is None else jnp.asarray(x, dtype)
        if x.shape[0] < shape[0]:  # pad unused slots
            pad = jnp.full((shape[0] - x.shape[0], *shape[1:]), default, dtype)
            x = jnp.concatenate([x, pad])
        return x

    # Padded slots are dead: the default True applies to the mobs given, not to the padding.
    n_set = max(n_given, 0 if mob_alive is None else len(mob_alive))
    alive = arr(mob_alive, mob_pos is not None, jnp.bool_, (m,)) & (jnp.arange(m) < n_set)
    blocks = jnp.asarray(blocks)
    if blocks.dtype != jnp.uint8:
        blocks = blocks.astype(jnp.uint8)
    return Scene(
        blocks=blocks,
        eye_pos=jnp.asarray(eye_pos, jnp.float32),
        yaw_deg=jnp.asarray(yaw_deg, jnp.float32),
        pitch_deg=jnp.asarray(pitch_deg, jnp.float32),
        mob_pos=arr(mob_pos, 0.0, jnp.float32, (m, 3)),
        mob_yaw_deg=arr(mob_yaw_deg, 0.0, jnp.float32, (m,)),
        mob_type=arr(mob_type, 0, jnp.int32, (m,)),
        mob_alive=alive,
        mob_variant=arr(mob_variant, 0, jnp.int32, (m,)),
        mob_hurt=arr(mob_hurt, 0.0, jnp.float32, (m,)),
        daylight=jnp.asarray(daylight, jnp.float32),
    )


# --------------------------------------------------------------------------------------------
# Camera
# --------------------------------------------------------------------------------------------


def camera_basis(yaw_deg, pitch_deg):
    """(forward, right, up) unit vectors, each f32 [..., 3], for Minecraft yaw/pitch in degrees."""
    yaw = jnp.deg2rad(jnp.asarray(yaw_deg, jnp.float32))
    pitch = jnp.deg2rad(jnp.asarray(pitch_deg, jnp.float32))
    sy, cy, sp, cp = jnp.sin(yaw), jnp.cos(yaw), jnp.sin(pitch), jnp.cos(pitch)
    forward = jnp.stack([-sy * cp, -sp, cy * cp], -1)
    right = jnp.stack([-cy, jnp.zeros_like(cy), -sy], -1)  # facing south (+z), west is right
    up = jnp.cross(right, forward)
    return forward, right, up


def look_direction(yaw_deg, pitch_deg):
    """Unit view direction f32 [..., 3] (the centre ray)."""
    return camera_basis(yaw_deg, pitch_deg)[0]


def ray_directions(yaw_deg, pitch_deg, cfg: RenderConfig, rows: int | None = None):
    """Unit ray direction per pixel centre, f32 [rows or H, W, 3] (row 0 = top of the image)."""
    rows = cfg.height if rows is None else rows
    fwd, right, up = camera_basis(yaw_deg, pitch_deg)
    f = cfg.focal_px
    xs = (jnp.arange(cfg.width, dtype=jnp.float32) + 0.5 - 0.5 * cfg.width) / f
    ys = (0.5 * cfg.height - (jnp.arange(rows, dtype=jnp.float32) + 0.5)) / f
    d = fwd + xs[None, :, None] * right + ys[:, None, None] * up
    return d / jnp.linalg.norm(d, axis=-1, keepdims=True)


def project_points(points, eye_pos, yaw_deg, pitch_deg, cfg: RenderConfig):
    """World points f32 [..., 3] -> (col, row, depth), each f32 [...].

    `col`/`row` are continuous pixel coordinates (pixel (r, c) covers [c, c+1) x [r, r+1));
    `depth` is the distance along the view axis; a point is on screen iff depth > 0 and
    0 <= col < W and 0 <= row < H.
    """
    fwd, right, up = camera_basis(yaw_deg, pitch_deg)
    v = jnp.asarray(points, jnp.float32) - jnp.asarray(eye_pos, jnp.float32)
    z = jnp.sum(v * fwd, -1)
    x = jnp.sum(v * right, -1)
    y = jnp.sum(v * up, -1)
    safe = jnp.where(jnp.abs(z) < 1e-6, 1e-6, z)
    f = cfg.focal_px
    return 0.5 * cfg.width + f * x / safe, 0.5 * cfg.height - f * y / safe, z


def sky_color(d, daylight):
    """Sky colour f32 [..., 3] in [0, 1] for unit directions d [..., 3] and daylight []."""
    s = jnp.clip(d[..., 1:2] * 1.6 + 0.1, 0.0, 1.0)  # 0 at/below the horizon, 1 high up
    day = (1 - s) * jnp.asarray(_SKY_DAY_HORIZON) + s * jnp.asarray(_SKY_DAY_ZENITH)
    night = (1 - s) * jnp.asarray(_SKY_NIGHT_HORIZON) + s * jnp.asarray(_SKY_NIGHT_ZENITH)
    below = jnp.clip(-d[..., 1:2] * 2.0, 0.0, 1.0) * 0.15  # slightly darker under the horizon
    w = jnp.asarray(daylight, jnp.float32)[..., None]
    return (w * day + (1 - w) * night) * (1 - below)


# --------------------------------------------------------------------------------------------
# Geometry helpers (all elementwise over rays)
# --------------------------------------------------------------------------------------------


def _face_and_texel(p_local, axis, d_axis_y):
    """Face index and integer texel (u, v) for a hit at cell-local point p on the face of `axis`.

    `d_axis_y` is the ray's y direction (picks top vs bottom). p_local components in [0, 1].
    """
    lx, ly, lz = p_local
    u = jnp.where(axis == 0, lz, lx)
    v = jnp.where(axis == 1, lz, 1.0 - ly)
    face = jnp.where(
        axis == 0,
        FACE_X,
        jnp.where(axis == 2, FACE_Z, jnp.where(d_axis_y < 0, FACE_TOP, FACE_BOTTOM)),
    )
    ui = jnp.clip(jnp.floor(u * TEX), 0, TEX - 1).astype(jnp.int32)
    vi = jnp.clip(jnp.floor(v * TEX), 0, TEX - 1).astype(jnp.int32)
    return face, ui, vi


def _argmin3(a, b, c):
    return jnp.where((a <= b) & (a <= c), 0, jnp.where(b <= c, 1, 2)).astype(jnp.int32)


def _argmax3(a, b, c):
    return jnp.where((a >= b) & (a >= c), 0, jnp.where(b >= c, 1, 2)).astype(jnp.int32)


def _axis_shade(axis, dy):
    return jnp.where(
        axis == 0,
        _SHADE_X,
        jnp.where(axis == 2, _SHADE_Z, jnp.where(dy < 0, _SHADE_TOP, _SHADE_BOTTOM)),
    )


# --------------------------------------------------------------------------------------------
# The tile kernel
# --------------------------------------------------------------------------------------------


@struct.dataclass
class _Ray:
    """Loop state of the DDA for the rays of one tile (each leaf [N])."""

    ix: jax.Array  # current cell
    iy: jax.Array
    iz: jax.Array
    tx: jax.Array  # t at which the ray leaves the current cell through an x face
    ty: jax.Array
    tz: jax.Array
    t_in: jax.Array  # t at which the ray entered the current cell (at a hit: the hit's t)
    axis: jax.Array  # axis of the face it entered through (at a hit: the hit face's axis)
    status: jax.Array  # _MARCHING, _HIT or _MISSED
    tr_id: jax.Array  # first translucent block passed (0 = none)
    tr_t: jax.Array
    tr_axis: jax.Array


_MARCHING, _HIT, _MISSED = 0, 1, 2
# Bits of the brick occupancy grid.
_OCC_ANY = 1  # the brick holds some non-air block
_OCC_SOLID = 2  # ... some non-air block that is not translucent


# Cell classes of the lean march (`_block_class`); ordered so that "see-through" is one
# comparison: class <= _CLS_AIR before a translucent surface is recorded, <= _CLS_TRANSLUCENT
# after (later translucent blocks are see-through, as in `step`).
_CLS_AIR, _CLS_TRANSLUCENT, _CLS_SPECIAL, _CLS_OPAQUE = 0, 1, 2, 3


def _block_class(assets: RenderAssets):
    """uint8 [NB] lean-march class of each block id (KIND_AIR ids are air, like in `step`)."""
    k = assets.block_kind
    c = jnp.where(
        k == KIND_OPAQUE,
        _CLS_OPAQUE,
        jnp.where(
            k == KIND_SPECIAL, _CLS_SPECIAL, jnp.where(k == KIND_TRANSLUCENT, _CLS_TRANSLUCENT, 0)
        ),
    )
    return c.astype(jnp.uint8)


def _brick_occupancy(blocks, assets: RenderAssets, brick: int):
    """uint8 [..., CX, CY, CZ] occupancy bits of `brick`^3 bricks (grid padded to a multiple)."""
    *lead, X, Y, Z = blocks.shape
    pad = [(0, 0)] * len(lead) + [(0, -n % brick) for n in (X, Y, Z)]
    b = jnp.pad(blocks, pad)
    tr = (assets.block_kind == KIND_TRANSLUCENT).astype(jnp.uint8)
    nonair = (b != 0).astype(jnp.uint8)
    solid = nonair * (1 - tr[b.astype(jnp.int32)])
    bits = nonair * _OCC_ANY + solid * _OCC_SOLID
    cx, cy, cz = (s // brick for s in b.shape[-3:])
    bits = bits.reshape(*lead, cx, brick, cy, brick, cz, brick)
    # max over the in-brick cells works as OR here: bit 2 (solid) implies bit 1 (any).
    return jnp.max(bits, axis=(-5, -3, -1))


def _trace_tile(
    o, d, blocks_flat, cls_flat, base, dims, ytop, occ_flat, cbase, assets, cfg: RenderConfig
):
    """Marches rays o [3] + t d [N, 3] through one scene's grid; returns the final `_Ray`.

    A two-level DDA: a ray inside an empty brick (no non-air block in its `brick_size`^3 cells)
    jumps to the brick's exit in one step; otherwise it advances one cell.
    """
    X, Y, Z = dims
    S = cfg.brick_size
    shift = S.bit_length() - 1
    CY, CZ = -(-Y // S), -(-Z // S)
    n = d.shape[0]
    # Axis-parallel rays would divide by zero; nudge them (1e-7 rad is far below a texel).
    d = jnp.where(jnp.abs(d) < 1e-7, jnp.where(d < 0, -1e-7, 1e-7), d)
    inv = 1.0 / d
    dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
    ivx, ivy, ivz = inv[:, 0], inv[:, 1], inv[:, 2]
    ox, oy, oz = o[..., 0], o[..., 1], o[..., 2]
    # Clip to the occupied slab [0,X]x[0,ytop]x[0,Z]: nothing outside it can be hit, and inside
    # it every visited cell is in the grid (so no bounds test per step).
    hi = jnp.stack(jnp.broadcast_arrays(X, ytop, Z), -1).astype(jnp.float32)
    ta = (0.0 - o) * inv
    tb = (hi - o) * inv
    mins = jnp.minimum(ta, tb)
    tnear = jnp.max(mins, -1)
    tfar = jnp.min(jnp.maximum(ta, tb), -1)
    t0 = jnp.maximum(tnear, 0.0)
    t_end = jnp.minimum(tfar, cfg.max_distance)
    # The lean and fine steps accumulate cell-crossing times (t += 1/|d|), which drift by up to
    # ~1e-4 over a march: they stop a little short of t_end so that a ray leaving the slab never
    # steps into a cell outside the grid (the flat gather has no bounds test).
    t_lim = t_end - 1e-3
    p = o + d * (t0 + 1e-4)[:, None]
    cell = jnp.floor(p).astype(jnp.int32)
    ix = jnp.clip(cell[:, 0], 0, X - 1)
    iy = jnp.clip(cell[:, 1], 0, jnp.maximum(ytop - 1, 0))
    iz = jnp.clip(cell[:, 2], 0, Z - 1)
    px, py, pz = dx > 0, dy > 0, dz > 0
    sx, sy, sz = (jnp.where(c, 1, -1).astype(jnp.int32) for c in (px, py, pz))
    adx, ady, adz = jnp.abs(ivx), jnp.abs(ivy), jnp.abs(ivz)
    zero_i = jnp.zeros((n,), jnp.int32)
    state = _Ray(
        ix=ix, iy=iy, iz=iz,
        tx=(ix + px - ox) * ivx, ty=(iy + py - oy) * ivy, tz=(iz + pz - oz) * ivz,
        t_in=t0, axis=_argmax3(mins[:, 0], mins[:, 1], mins[:, 2]),
        status=jnp.where(t0 < t_end, _MARCHING, _MISSED).astype(jnp.int32),
        tr_id=zero_i, tr_t=jnp.full((n,), _INF), tr_axis=zero_i,
    )  # fmt: skip

    # Per-ray constants of the full and fine steps (passed explicitly so that the fine step
    # can run on a compacted subset of the rays).
    rc_all = (dx, dy, dz, ivx, ivy, ivz, sx, sy, sz, adx, ady, adz, t_lim)

    def special(s: _Ray, bid, kind, rc):
        """Box + alpha tests for partial / cut-out / translucent blocks (rare steps only)."""
        dx, dy, dz, ivx, ivy, ivz = rc[:6]
        fx, fy, fz = (s.ix.astype(jnp.float32), s.iy.astype(jnp.float32), s.iz.astype(jnp.float32))
        lo = assets.block_lo[bid]
        bh = assets.block_hi[bid]
        a0, b0 = (fx + lo[:, 0] - ox) * ivx, (fx + bh[:, 0] - ox) * ivx
        a1, b1 = (fy + lo[:, 1] - oy) * ivy, (fy + bh[:, 1] - oy) * ivy
        a2, b2 = (fz + lo[:, 2] - oz) * ivz, (fz + bh[:, 2] - oz) * ivz
        m0, m1, m2 = jnp.minimum(a0, b0), jnp.minimum(a1, b1), jnp.minimum(a2, b2)
        tn = jnp.maximum(jnp.maximum(m0, m1), m2)
        tf = jnp.minimum(jnp.minimum(jnp.maximum(a0, b0), jnp.maximum(a1, b1)), jnp.maximum(a2, b2))
        t_out = jnp.minimum(jnp.minimum(s.tx, s.ty), s.tz)
        geo = (tn <= tf) & (tf >= s.t_in) & (tn <= t_out)
        th = jnp.maximum(tn, s.t_in)
        ax = jnp.where(tn > s.t_in, _argmax3(m0, m1, m2), s.axis)
        local = (
            jnp.clip(ox + dx * th - fx, 0.0, 1.0),
            jnp.clip(oy + dy * th - fy, 0.0, 1.0),
            jnp.clip(oz + dz * th - fz, 0.0, 1.0),
        )
        face, u, v = _face_and_texel(local, ax, dy)
        opaque_texel = assets.block_tex[bid, face, v, u, 3] > 127
        live = (s.status == _MARCHING) & geo
        solid = live & (kind == KIND_SPECIAL) & opaque_texel
        tr_new = live & (kind == KIND_TRANSLUCENT) & (s.tr_id == 0)
        return (
            solid,
            th,
            ax,
            s.replace(
                tr_id=jnp.where(tr_new, bid, s.tr_id),
                tr_t=jnp.where(tr_new, th, s.tr_t),
                tr_axis=jnp.where(tr_new, ax, s.tr_axis),
            ),
        )

    def no_special(s: _Ray, bid, kind, rc):
        return jnp.zeros((n,), bool), s.t_in, s.axis, s

    def step(s: _Ray) -> _Ray:
        marching = s.status == _MARCHING
        lin = base + (s.ix * Y + s.iy) * Z + s.iz
        bid = blocks_flat.at[lin].get(mode="promise_in_bounds").astype(jnp.int32)
        kind = assets.block_kind[bid]
        clin = cbase + ((s.ix >> shift) * CY + (s.iy >> shift)) * CZ + (s.iz >> shift)
        occ = occ_flat.at[clin].get(mode="promise_in_bounds")
        # Once a translucent surface is recorded, further translucent blocks are see-through.
        need = jnp.where(s.tr_id > 0, _OCC_SOLID, _OCC_ANY).astype(occ.dtype)
        empty = (occ & need) == 0
        is_special = (kind == KIND_SPECIAL) | ((kind == KIND_TRANSLUCENT) & (s.tr_id == 0))
        any_special = jnp.any(marching & is_special)
        solid, th, ax, s = jax.lax.cond(any_special, special, no_special, s, bid, kind, rc_all)
        hit = marching & ((kind == KIND_OPAQUE) | solid)
        # Next cell boundary (fine step) and the brick's exit (jump).
        t_out = jnp.minimum(jnp.minimum(s.tx, s.ty), s.tz)
        a = _argmin3(s.tx, s.ty, s.tz)
        bx0, by0, bz0 = (s.ix >> shift) << shift, (s.iy >> shift) << shift, (s.iz >> shift) << shift
        ebx = (bx0 + jnp.where(px, S, 0) - ox) * ivx
        eby = (by0 + jnp.where(py, S, 0) - oy) * ivy
        ebz = (bz0 + jnp.where(pz, S, 0) - oz) * ivz
        t_b = jnp.minimum(jnp.minimum(ebx, eby), ebz)
        ba = _argmin3(ebx, eby, ebz)
        t_next = jnp.where(empty, t_b, t_out)
        a_next = jnp.where(empty, ba, a)
        missed = marching & ~hit & (t_next >= t_lim)
        mv = marching & ~hit & ~missed
        jump = mv & empty
        fine = mv & ~empty

        def nxt(c, c0, pos, sgn, o_c, d_c, iv, k, t_c, ad):
            # Jump: exit axis leaves the brick, the other coordinates come from the exit point.
            at_exit = jnp.clip(jnp.floor(o_c + d_c * t_b).astype(jnp.int32), c0, c0 + S - 1)
            cj = jnp.where(ba == k, jnp.where(pos, c0 + S, c0 - 1), at_exit)
            c_new = jnp.where(jump, cj, jnp.where(fine & (a == k), c + sgn, c))
            t_new = jnp.where(
                jump, (cj + pos - o_c) * iv, jnp.where(fine & (a == k), t_c + ad, t_c)
            )
            return c_new, t_new

        ix, tx = nxt(s.ix, bx0, px, sx, ox, dx, ivx, 0, s.tx, adx)
        iy, ty = nxt(s.iy, by0, py, sy, oy, dy, ivy, 1, s.ty, ady)
        iz, tz = nxt(s.iz, bz0, pz, sz, oz, dz, ivz, 2, s.tz, adz)
        return s.replace(
            ix=ix, iy=iy, iz=iz, tx=tx, ty=ty, tz=tz,
            t_in=jnp.where(mv, t_next, jnp.where(solid & marching, th, s.t_in)),
            axis=jnp.where(mv, a_next, jnp.where(solid & marching, ax, s.axis)),
            status=jnp.where(hit, _HIT, jnp.where(missed, _MISSED, s.status)),
        )  # fmt: skip

    def fine_step(s: _Ray, rc) -> _Ray:
        """`step` without the brick jump (one cell per step): for the few steps of `lean_body`
        taken at special or translucent cells."""
        sx, sy, sz, adx, ady, adz, t_lim = rc[6:]
        marching = s.status == _MARCHING
        lin = base + (s.ix * Y + s.iy) * Z + s.iz
        bid = blocks_flat.at[lin].get(mode="promise_in_bounds").astype(jnp.int32)
        kind = assets.block_kind[bid]
        is_special = (kind == KIND_SPECIAL) | ((kind == KIND_TRANSLUCENT) & (s.tr_id == 0))
        solid, th, ax, s = special(s, bid, kind, rc)
        solid = solid & is_special
        hit = marching & ((kind == KIND_OPAQUE) | solid)
        t_out = jnp.minimum(jnp.minimum(s.tx, s.ty), s.tz)
        a = _argmin3(s.tx, s.ty, s.tz)
        missed = marching & ~hit & (t_out >= t_lim)
        mv = marching & ~hit & ~missed
        ix, tx = (
            jnp.where(mv & (a == 0), s.ix + sx, s.ix),
            jnp.where(mv & (a == 0), s.tx + adx, s.tx),
        )
        iy, ty = (
            jnp.where(mv & (a == 1), s.iy + sy, s.iy),
            jnp.where(mv & (a == 1), s.ty + ady, s.ty),
        )
        iz, tz = (
            jnp.where(mv & (a == 2), s.iz + sz, s.iz),
            jnp.where(mv & (a == 2), s.tz + adz, s.tz),
        )
        return s.replace(
            ix=ix, iy=iy, iz=iz, tx=tx, ty=ty, tz=tz,
            t_in=jnp.where(mv, t_out, jnp.where(solid & marching, th, s.t_in)),
            axis=jnp.where(mv, a, jnp.where(solid & marching, ax, s.axis)),
            status=jnp.where(hit, _HIT, jnp.where(missed, _MISSED, s.status)),
        )  # fmt: skip

    def lean_step(c, thr):
        """One DDA step through see-through cells only: `step`'s arithmetic for such a cell.

        A see-through cell has class <= thr (air, and translucent once one is recorded); a ray
        stays put in the first other cell. A ray that leaves the slab or the view distance gets
        t_in >= t_lim. No status, translucency or special-block state is carried and there is
        no reduction or cond. `go` marks the rays that moved in the previous step: a ray that
        did not move never will.
        """
        ix, iy, iz, tx, ty, tz, t_in, axis, go = c
        lin = base + (ix * Y + iy) * Z + iz
        see = cls_flat.at[lin].get(mode="promise_in_bounds") <= thr
        active = go & see
        t_out = jnp.minimum(jnp.minimum(tx, ty), tz)
        a = _argmin3(tx, ty, tz)
        mv = active & (t_out < t_lim)
        ix, tx = jnp.where(mv & (a == 0), ix + sx, ix), jnp.where(mv & (a == 0), tx + adx, tx)
        iy, ty = jnp.where(mv & (a == 1), iy + sy, iy), jnp.where(mv & (a == 1), ty + ady, ty)
        iz, tz = jnp.where(mv & (a == 2), iz + sz, iz), jnp.where(mv & (a == 2), tz + adz, tz)
        t_in = jnp.where(active, t_out, t_in)
        axis = jnp.where(mv, a, axis)
        return ix, iy, iz, tx, ty, tz, t_in, axis, mv

    def lean_body(c):
        """`lean_steps` lean steps for every marching ray, then one full `step` if some ray sits
        in a cell that needs it (special, or translucent before one is recorded).

        Rays that stop in an opaque cube become hits there; a ray that reaches a special cell
        waits (unchanged) until the full step, which sees exactly the state it would have
        reached itself, so the result equals the plain `step` loop's.
        """
        i, s = c
        thr = jnp.where(s.tr_id > 0, _CLS_TRANSLUCENT, _CLS_AIR).astype(cls_flat.dtype)
        marching = s.status == _MARCHING
        r = (s.ix, s.iy, s.iz, s.tx, s.ty, s.tz, s.t_in, s.axis, marching)
        # One lean step per iteration of an inner loop: unrolled, XLA fuses each loop output
        # separately and recomputes the whole chain of steps in every one of them (about 2x
        # the arithmetic; see benchmarks/render_throughput.py).
        r = jax.lax.fori_loop(0, cfg.lean_steps, lambda _, r: lean_step(r, thr), r)
        ix, iy, iz, tx, ty, tz, t_in, axis, _ = r
        cl = cls_flat.at[base + (ix * Y + iy) * Z + iz].get(mode="promise_in_bounds")
        status = jnp.where(
            marching,
            jnp.where(t_in >= t_lim, _MISSED, jnp.where(cl == _CLS_OPAQUE, _HIT, _MARCHING)),
            s.status,
        ).astype(jnp.int32)
        s = s.replace(ix=ix, iy=iy, iz=iz, tx=tx, ty=ty, tz=tz, t_in=t_in, axis=axis, status=status)
        wait = (status == _MARCHING) & (cl > thr)
        n_wait = jnp.sum(wait.astype(jnp.int32))
        kc = min(_FINE_COMPACT, n)

        def fine_some(s):
            # The waiting rays (at most kc of them) gathered into a small batch; slots past
            # their count point past the end (gathers fill, scatters drop).
            idx = jnp.nonzero(wait, size=kc, fill_value=n)[0]
            sub = jax.tree.map(lambda x: x.at[idx].get(mode="fill", fill_value=0), s)
            rc = tuple(x.at[idx].get(mode="fill", fill_value=0) for x in rc_all)
            sub = fine_step(sub, rc)
            return jax.tree.map(lambda x, y: x.at[idx].set(y, mode="drop"), s, sub)

        branch = jnp.where(n_wait == 0, 0, jnp.where(n_wait <= kc, 1, 2))
        s = jax.lax.switch(branch, (lambda s: s, fine_some, lambda s: fine_step(s, rc_all)), s)
        return i + 1, s

    def cond(c):
        i, s = c
        return (i < cfg.max_steps) & jnp.any(s.status == _MARCHING)

    def body(c):
        # Two steps per iteration halve the loop's fixed cost (condition, reduction, dispatch);
        # a step on a finished ray is a no-op, so overshooting by one is harmless.
        i, s = c
        return i + 2, step(step(s))

    if cfg.lean_steps > 0:
        # Each iteration moves every marching ray by at least one cell (a ray waiting at a
        # special cell by exactly one), so max_steps iterations would do; the bound counts
        # iterations (not steps, so lean_steps cannot cut a march short) and is generous:
        # t_end ends every ray before it.
        def lean_cond(c):
            i, s = c
            return (i < 2 * cfg.max_steps) & jnp.any(s.status == _MARCHING)

        _, state = jax.lax.while_loop(lean_cond, lean_body, (jnp.int32(0), state))
    else:
        _, state = jax.lax.while_loop(cond, body, (jnp.int32(0), state))
    return state


def _mob_frame(pos, yaw_deg):
    """Mob-local axes: x_axis [.., 3], facing (local +z) [.., 3] for a world yaw."""
    yaw = jnp.deg2rad(yaw_deg)
    s, c = jnp.sin(yaw), jnp.cos(yaw)
    zero = jnp.zeros_like(s)
    return jnp.stack([c, zero, s], -1), jnp.stack([-s, zero, c], -1)


def _trace_mobs(o, d, mobs, relevant, col_lo, col_hi, assets: RenderAssets, cfg: RenderConfig):
    """Nearest mob box hit per ray: (t [N], mob index [N], box index [N], local axis [N]).

    Only mobs flagged `relevant` for this tile are tested, each on the narrowest of the
    `_MOB_WINDOWS` column windows that holds its projection (the whole tile if none does).
    """
    rows, width = cfg.tile_rows, cfg.width
    wins = [w for w in _MOB_WINDOWS if w < width]
    pos, yaw, mtype, variant = mobs
    d2 = d.reshape(rows, width, 3)

    def box_test(m, dw):
        """Ray vs the mob's boxes in its own frame for rays dw [n, 3]: (t, box, axis) [n].

        The K boxes are unrolled with a running nearest hit (no [n, K, 3] temporaries); the
        arithmetic per box is that of a vectorized slab test, so the result is the same.
        """
        xa, za = _mob_frame(pos[m], yaw[m])
        rel = o - pos[m]
        ol = (rel @ xa, rel[1], rel @ za)
        dl = (dw @ xa, dw[:, 1], dw @ za)
        inv = tuple(1.0 / jnp.where(jnp.abs(x) < 1e-7, 1e-7, x) for x in dl)
        lo = assets.mob_lo[mtype[m], variant[m]]  # [K, 3]
        hi = assets.mob_hi[mtype[m], variant[m]]
        valid = jnp.all(lo <= hi, -1)
        n = dw.shape[0]
        bt = jnp.full((n,), _INF)
        bc = jnp.zeros((n,), jnp.int32)  # box * 4 + axis: one int output, not two
        for kk in range(lo.shape[0]):
            ta = [(lo[kk, i] - ol[i]) * inv[i] for i in range(3)]
            tb = [(hi[kk, i] - ol[i]) * inv[i] for i in range(3)]
            mins = [jnp.minimum(a, b) for a, b in zip(ta, tb)]
            tn = jnp.maximum(jnp.maximum(mins[0], mins[1]), mins[2])
            tf = jnp.minimum(
                jnp.minimum(jnp.maximum(ta[0], tb[0]), jnp.maximum(ta[1], tb[1])),
                jnp.maximum(ta[2], tb[2]),
            )
            ok = (tn <= tf) & (tf > 0) & valid[kk]
            tk = jnp.where(ok, jnp.maximum(tn, 0.0), _INF)
            better = tk < bt
            bt = jnp.where(better, tk, bt)
            bc = jnp.where(better, 4 * kk + _argmax3(*mins), bc)
        return bt, bc

    n_box = assets.mob_lo.shape[2]

    def merge(m, best, new):
        # (t, code) with code = (mob * K + box) * 4 + axis: each fusion of the unrolled box
        # tests is recomputed once per loop output, so the outputs are kept to two.
        bt, bc = best
        t, c = new
        better = t < bt
        return jnp.where(better, t, bt), jnp.where(better, m * (4 * n_box) + c, bc)

    def one(m, best):
        def skip(best):
            return best

        def full(best):
            new = box_test(m, d)
            new = tuple(x.reshape(rows, width) for x in new)
            return merge(m, best, new)

        def windowed(best, win):
            c0 = jnp.clip(col_lo[m], 0, width - win)
            dw = jax.lax.dynamic_slice(d2, (0, c0, 0), (rows, win, 3)).reshape(-1, 3)
            new = tuple(x.reshape(rows, win) for x in box_test(m, dw))
            old = tuple(jax.lax.dynamic_slice(x, (0, c0), (rows, win)) for x in best)
            upd = merge(m, old, new)
            return tuple(jax.lax.dynamic_update_slice(x, u, (0, c0)) for x, u in zip(best, upd))

        # The narrowest window that holds the mob's columns (branch 1 + its index), else full.
        span = col_hi[m] - jnp.maximum(col_lo[m], 0)
        idx = sum((span > w).astype(jnp.int32) for w in wins)
        branch = jnp.where(relevant[m], 1 + idx, 0)
        fns = [skip] + [functools.partial(windowed, win=w) for w in wins] + [full]
        return jax.lax.switch(branch, fns, best)

    init = (jnp.full((rows, width), _INF), jnp.zeros((rows, width), jnp.int32))
    t, code = (x.reshape(-1) for x in jax.lax.fori_loop(0, relevant.shape[0], one, init))
    return t, code // (4 * n_box), (code // 4) % n_box, code % 4


def _shade_tile(o, d, ray: _Ray, hit_id, mob_hit, mobs, hurt, daylight, assets, cfg):
    """Final colours f32 [N, 3] in [0, 1] for one tile."""
    dy = d[:, 1]
    sky = sky_color(d, daylight)
    light = _NIGHT_LIGHT + (1.0 - _NIGHT_LIGHT) * daylight
    fog0 = cfg.fog_start * cfg.max_distance
    fog_len = cfg.max_distance - fog0

    def block_color(bid, t, axis):
        p = o + d * t[:, None]
        # Point just inside the hit block gives its cell (robust on faces and partial boxes).
        cell = jnp.floor(p + d * 1e-3)
        local = tuple(jnp.clip(p[:, i] - cell[:, i], 0.0, 1.0) for i in range(3))
        face, u, v = _face_and_texel(local, axis, dy)
        rgb = assets.block_tex[bid, face, v, u, :3].astype(jnp.float32) / 255.0
        lit = jnp.maximum(light, assets.block_emissive[bid])
        return rgb * (_axis_shade(axis, dy) * lit)[:, None]

    def fog(rgb, t):
        f = jnp.clip((t - fog0) / fog_len, 0.0, 1.0)[:, None]
        return rgb * (1 - f) + sky * f

    mt, mm, mk, ma = mob_hit
    pos, yaw, mtype, variant = mobs

    def mob_color(_):
        xa, za = _mob_frame(pos[mm], yaw[mm])  # [N, 3]
        p = o + d * jnp.minimum(mt, cfg.max_distance)[:, None] - pos[mm]
        pl = jnp.stack([jnp.sum(p * xa, -1), p[:, 1], jnp.sum(p * za, -1)], -1)
        lo = assets.mob_lo[mtype[mm], variant[mm], mk]  # [N, 3]
        rel = (pl - lo) * TEX
        # u, v along the two axes of the face (local axis ma); textures repeat every block.
        u = jnp.where(ma == 0, rel[:, 2], rel[:, 0])
        v = jnp.where(ma == 1, rel[:, 2], -rel[:, 1])
        ui = jnp.floor(u).astype(jnp.int32) % TEX
        vi = jnp.floor(v).astype(jnp.int32) % TEX
        tex = assets.mob_box_tex[mtype[mm], variant[mm], mk]
        rgb = assets.mob_tex[tex, vi, ui].astype(jnp.float32) / 255.0
        # Mob frames only yaw, so a local y face is a world y face.
        rgb = rgb * (_axis_shade(ma, dy) * light)[:, None]
        h = (0.6 * jnp.clip(hurt[mm], 0.0, 1.0))[:, None]
        return rgb * (1 - h) + jnp.asarray([0.85, 0.1, 0.1]) * h

    # Opaque layer: nearest of block and mob. Tiles without a visible mob or translucent
    # surface skip that shading (lax.cond), which is most tiles.
    hit_t = jnp.where(ray.status == _HIT, ray.t_in, _INF)
    blk_rgb = block_color(hit_id, hit_t, ray.axis)
    mob_front = mt < hit_t
    rgb = jax.lax.cond(
        jnp.any(mob_front),
        lambda _: jnp.where(mob_front[:, None], mob_color(None), blk_rgb),
        lambda _: blk_rgb,
        None,
    )
    t_opq = jnp.minimum(mt, hit_t)
    rgb = jnp.where((t_opq < _INF * 0.5)[:, None], fog(rgb, t_opq), sky)
    # Translucent layer in front of the opaque one.
    in_front = (ray.tr_id > 0) & (ray.tr_t < t_opq)

    def blend(rgb):
        tr_rgb = fog(block_color(ray.tr_id, ray.tr_t, ray.tr_axis), ray.tr_t)
        a = jnp.where(in_front, assets.block_alpha[ray.tr_id], 0.0)[:, None]
        return rgb * (1 - a) + tr_rgb * a

    return jax.lax.cond(jnp.any(in_front), blend, lambda rgb: rgb, rgb)


# --------------------------------------------------------------------------------------------
# Batched implementation and the public entry point
# --------------------------------------------------------------------------------------------


def _mob_tile_mask(scene: Scene, assets: RenderAssets, cfg: RenderConfig, n_tiles: int):
    """Which mobs may show in which tile, and their column ranges.

    Returns (bool [B, n_tiles, M], col_lo int32 [B, M], col_hi int32 [B, M]); the columns bound the
    projection of the mob's bounding sphere (full width for a mob reaching the camera plane).
    """
    fwd, right, up = camera_basis(scene.yaw_deg, scene.pitch_deg)  # [B, 3]
    ntypes = assets.mob_lo.shape[0]
    mtype = jnp.clip(scene.mob_type, 0, ntypes - 1)
    var = jnp.clip(scene.mob_variant, 0, assets.mob_lo.shape[1] - 1)
    r = assets.mob_radius[mtype, var] + 0.05  # [B, M]
    c = scene.mob_pos.at[..., 1].add(assets.mob_center_y[mtype, var])
    v = c - scene.eye_pos[:, None]
    zc = jnp.einsum("bmi,bi->bm", v, fwd)
    xc = jnp.einsum("bmi,bi->bm", v, right)
    yc = jnp.einsum("bmi,bi->bm", v, up)
    f = cfg.focal_px
    front = zc > r + 1e-3
    zs = jnp.where(front, zc, 1.0)
    # Project the camera-space box [c-r, c+r] that contains the sphere: exact bounds on screen.
    near, far = zs - r, zs + r
    near = jnp.maximum(near, 1e-3)
    y_hi = jnp.maximum((yc + r) / near, (yc + r) / far)
    y_lo = jnp.minimum((yc - r) / near, (yc - r) / far)
    x_hi = jnp.maximum((xc + r) / near, (xc + r) / far)
    x_lo = jnp.minimum((xc - r) / near, (xc - r) / far)
    row_top = 0.5 * cfg.height - f * y_hi - 1.0
    row_bot = 0.5 * cfg.height - f * y_lo + 1.0
    col_ok = (0.5 * cfg.width + f * x_hi + 1.0 >= 0) & (
        0.5 * cfg.width + f * x_lo - 1.0 <= cfg.width
    )
    dist = jnp.linalg.norm(v, axis=-1)
    alive = scene.mob_alive & (dist - r < cfg.max_distance) & (zc > -r)
    t0 = (jnp.arange(n_tiles) * cfg.tile_rows).astype(jnp.float32)
    t1 = t0 + cfg.tile_rows
    in_rows = (row_bot[..., None, :] >= t0[:, None]) & (row_top[..., None, :] <= t1[:, None])
    straddles = ~front  # the sphere reaches the camera plane: may cover any tile
    vis = jnp.where(straddles[..., None, :], True, in_rows & col_ok[..., None, :])
    c_lo = jnp.floor(0.5 * cfg.width + f * x_lo - 1.0)
    c_hi = jnp.ceil(0.5 * cfg.width + f * x_hi + 1.0)
    c_lo = jnp.where(straddles, 0, jnp.clip(c_lo, -1, cfg.width)).astype(jnp.int32)
    c_hi = jnp.where(straddles, cfg.width, jnp.clip(c_hi, -1, cfg.width)).astype(jnp.int32)
    return vis & alive[..., None, :], c_lo, c_hi


def _render_batch(scene: Scene, assets: RenderAssets, cfg: RenderConfig) -> jax.Array:
    """Renders B scenes (every leaf with a leading batch axis) -> uint8 [B, H, W, 3]."""
    b, X, Y, Z = scene.blocks.shape
    if scene.mob_type.shape[-1] == 0:  # no mob slots: one dead slot keeps the gathers valid
        scene = scene.replace(
            mob_pos=jnp.zeros((b, 1, 3), jnp.float32),
            mob_yaw_deg=jnp.zeros((b, 1), jnp.float32),
            mob_type=jnp.zeros((b, 1), jnp.int32),
            mob_alive=jnp.zeros((b, 1), bool),
            mob_variant=jnp.zeros((b, 1), jnp.int32),
            mob_hurt=jnp.zeros((b, 1), jnp.float32),
        )
    m = scene.mob_type.shape[-1]
    H, W, R = cfg.height, cfg.width, cfg.tile_rows
    n_tiles = -(-H // R)
    dirs = jax.vmap(lambda y, p: ray_directions(y, p, cfg, rows=n_tiles * R))(
        scene.yaw_deg, scene.pitch_deg
    )
    dirs = dirs.reshape(b * n_tiles, R * W, 3)
    # Highest occupied layer + 1 per scene: rays above it can only see sky.
    occ = jnp.any(scene.blocks != 0, axis=(1, 3))  # [B, Y]
    ytop = jnp.max(jnp.where(occ, jnp.arange(1, Y + 1), 0), axis=-1).astype(jnp.int32)
    blocks_flat = scene.blocks.reshape(-1)
    cls_flat = _block_class(assets)[scene.blocks.astype(jnp.int32)].reshape(-1)
    occ = _brick_occupancy(scene.blocks, assets, cfg.brick_size)
    n_bricks = occ[0].size
    occ_flat = occ.reshape(-1)
    mob_mask, col_lo, col_hi = _mob_tile_mask(scene, assets, cfg, n_tiles)
    mob_mask = mob_mask.reshape(b * n_tiles, m)
    ntypes, nvar = assets.mob_lo.shape[:2]
    mtype = jnp.clip(scene.mob_type, 0, ntypes - 1)
    mvar = jnp.clip(scene.mob_variant, 0, nvar - 1)
    scene_of_tile = jnp.repeat(jnp.arange(b, dtype=jnp.int32), n_tiles)

    def march(d, s):
        ray = _trace_tile(
            scene.eye_pos[s],
            d,
            blocks_flat,
            cls_flat,
            s * (X * Y * Z),
            (X, Y, Z),
            ytop[s],
            occ_flat,
            s * n_bricks,
            assets,
            cfg,
        )
        lin = s * (X * Y * Z) + (ray.ix * Y + ray.iy) * Z + ray.iz
        hit_id = jnp.where(ray.status == _HIT, blocks_flat[lin], 0).astype(jnp.int32)
        return ray, hit_id

    def shade(d, s, mask, ray, hit_id):
        o = scene.eye_pos[s]
        mobs = (scene.mob_pos[s], scene.mob_yaw_deg[s], mtype[s], mvar[s])
        mob_hit = _trace_mobs(o, d, mobs, mask, col_lo[s], col_hi[s], assets, cfg)
        rgb = _shade_tile(
            o, d, ray, hit_id, mob_hit, mobs, scene.mob_hurt[s], scene.daylight[s], assets, cfg
        )
        return jnp.round(jnp.clip(rgb, 0.0, 1.0) * 255.0).astype(jnp.uint8)

    def tile(args):
        d, s, mask = args
        return shade(d, s, mask, *march(d, s))

    bs = cfg.parallel_tiles if cfg.parallel_tiles > 1 else None
    out = jax.lax.map(tile, (dirs, scene_of_tile, mob_mask), batch_size=bs)
    return out.reshape(b, n_tiles * R, W, 3)[:, :H]


def _check_scene(scene: Scene, batch_dims: int):
    if not isinstance(scene, Scene):
        raise TypeError(f"render: expected an envs.voxel.render.Scene, got {type(scene).__name__}")
    blocks = scene.blocks
    if blocks.ndim != 3 + batch_dims:
        raise ValueError(
            f"render: Scene.blocks has shape {blocks.shape}; expected [X, Y, Z]"
            + (" with a leading batch axis" if batch_dims else "")
            + " (use jax.vmap or render_batch for batches)"
        )
    if not jnp.issubdtype(blocks.dtype, jnp.integer):
        raise ValueError(
            f"render: Scene.blocks must hold integer block ids (uint8), got {blocks.dtype}"
        )
    m = scene.mob_type.shape[batch_dims:]
    chex.assert_shape(scene.eye_pos, (*blocks.shape[:batch_dims], 3))
    chex.assert_shape(scene.mob_pos, (*blocks.shape[:batch_dims], *m, 3))
    for leaf in (scene.mob_yaw_deg, scene.mob_alive, scene.mob_variant, scene.mob_hurt):
        chex.assert_shape(leaf, (*blocks.shape[:batch_dims], *m))


def _as_batch(scene: Scene) -> Scene:
    return jax.tree.map(lambda x: x[None], scene)


@functools.cache
def _renderer(cfg: RenderConfig):
    @custom_vmap
    def render(scene, assets):
        return _render_batch(_as_batch(scene), assets, cfg)[0]

    @render.def_vmap
    def render_vmap(axis_size, in_batched, scene, assets):
        scene_b, assets_b = in_batched
        if any(jax.tree.leaves(assets_b)):
            # Per-scene assets: no shared tables, fall back to the generic vmap of one scene.
            axes = jax.tree.map(lambda x: 0 if x else None, (scene_b, assets_b))
            single = lambda s, a: _render_batch(_as_batch(s), a, cfg)[0]  # noqa: E731
            return jax.vmap(single, in_axes=axes)(scene, assets), True
        scene = jax.tree.map(
            lambda x, bt: x if bt else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))),
            scene,
            scene_b,
        )
        return _render_batch(scene, assets, cfg), True

    return render


def render_first_person(
    scene: Scene, assets: RenderAssets, cfg: RenderConfig = RenderConfig()
) -> jax.Array:
    """Renders one first-person frame -> uint8 [H, W, 3].

    Pure and jit-able with `cfg` static (`jax.jit(render_first_person, static_argnames="cfg")`);
    `jax.vmap` over scenes runs one batched kernel (all tiles of all scenes share one loop).
    """
    if not isinstance(cfg, RenderConfig):
        raise TypeError(
            f"render_first_person: cfg must be a RenderConfig, got {type(cfg).__name__}"
        )
    _check_scene(scene, 0)
    return _renderer(cfg)(scene, assets)


def render_batch(
    scenes: Scene, assets: RenderAssets, cfg: RenderConfig = RenderConfig()
) -> jax.Array:
    """Renders a batch (every Scene leaf with a leading axis B) -> uint8 [B, H, W, 3]."""
    _check_scene(scenes, 1)
    return _render_batch(scenes, assets, cfg)
