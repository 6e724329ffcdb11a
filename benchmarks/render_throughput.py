"""Rendered frames/s of the voxel renderer (envs/voxel/render.py) at 160x256.

    python -m benchmarks.render_throughput                      # batches 1 16 64
    python -m benchmarks.render_throughput --batches 1 16 64 256 --repeats 5

Scenes: the world generator's 64x32x64 world (a hand-built one if the generator is missing),
cameras on the surface looking around, 2-4 mobs in view per scene, 16 mob slots.

Baseline, run in the same process on the same scenes: the straightforward JAX ray marcher one
would write first - every pixel of every frame marches `max_steps` DDA cells in one
`fori_loop` (no tiles, no early exit, no empty-space bricks), stopping at any non-air block,
with the same texture lookup, face shade and sky (no mobs, no translucency: it does less work
than the real renderer). The ratio printed is frames/s of the renderer / frames/s of the
baseline at the same batch. Figures are wall-clock best-of-`repeats` after compilation; the
machine's load average is printed beside them because the CPU may be shared.

What was tried (2-core CPU shared with other jobs, load average 11-20, so compared by process
CPU time per frame, best of 4-5, variants compiled and run interleaved in one process):
- tiles with a per-tile early-exit while_loop vs one loop over the whole frame: per-ray step
  counts on hand-built terrain averaged 23 while the tile maxima averaged 1.6x that, so tiles
  waste far less than a frame-wide loop; 16 rows per tile beat 8 (more loop overhead) and 32
  (more waste): 38 vs 41 vs 52 ms/frame.
- empty-space bricks (two-level DDA): brick 4 about 2x faster than no bricks (brick 1); brick 8
  no better than 4.
- the partial-box / alpha / translucent tests behind a per-step lax.cond vs always computed:
  the cond won or tied; two DDA steps per loop iteration: about 10-20% less CPU time.
- mobs: testing every relevant mob on whole tiles cost as much as the block march; testing
  only the 64-column window its bounding sphere projects to cut mob cost to a few percent.
- max_distance 24 instead of 32: about 15% faster (not the default: the world is 64 wide).
- parallel_tiles 10/40/160 (vmapped tile kernel): about 6x slower on CPU (conds run both
  branches); one tile per frame (tile_rows 160): about 2x slower (loop runs to the slowest ray).
Open finding: the naive baseline's step is lean (about 7.5 ns per ray-step against about 29
for this renderer's step with bricks and special-block tests), so in process CPU time it was
faster per frame in a later run (18-28 vs 33-50 ms/frame) even though it marches every ray the
full 59 steps; the wall-clock ratio printed here swung between 0.5x and 3x under the shared
load. The next speed step is a leaner inner step (fewer live arrays, no per-step reductions).
Lean march (RenderConfig.lean_steps, default 4): isolated per ray-step costs on this CPU were
about 22 ns for the brick-jumping step body (the jump arithmetic, recomputed into each of the
loop outputs' fusions, dominates: 12 ns without its gathers; optimization_barrier made it worse)
and about 6 ns for a plain one-cell step with the same gathers, so the lean loop steps cell by
cell without bricks, carries nine arrays, stops rays at the first cell that is not see-through
and runs the full step (special-block tests, under a cond) only when some ray waits in such a
cell. A first try that marched all rays to their first non-air cell and then resumed the old
loop (or alternated whole lean marches with one full step) was slower than the old loop: each
phase runs to the slowest ray, so the tile's step count became a sum of maxima. Measured side
by side (a copy of the previous module imported next to this one, the demo scenes, process CPU
time, best of 3, load 4.5-4.8 on the shared 2 cores): batch 16: 49.8 -> 36.3 ms/frame; batch 64: 43.2 -> 35.1
ms/frame (23 -> 28.5 frames per CPU-second); quieter runs at batch 16 gave 35-39 -> 23-25.
The accumulated crossing times also exposed a bug of the old loop: a ray leaving the grid
through a side face could round its exit time below the slab's and step into a wrapped cell
(the gather has no bounds test), drawing a noisy band of ground colours in the sky at the
world's edge; both loops now stop 1e-3 short of the slab exit.
Issue #3 pass (CPU time per frame, demo scenes, batch 16 unless said, old module imported next
to the new one in one process, best of 3-4, load average 4-7.5 on the shared 2 cores; every
variant below gave pixel-identical frames to the previous renderer):
- where the time went (parts swapped for stubs): march 16-18, mobs 14, shading under 1 of
  about 31 ms/frame.
- mobs: the K=9 boxes of a mob unrolled with a running nearest hit instead of [n, K, 3]
  temporaries + argmin + take_along_axis, and the narrowest of 32/64/128-column windows
  instead of 64-or-whole-tile: 30.0 -> 24.7 ms/frame (mobs about 14 -> 5).
- lean steps one per iteration of an inner fori_loop instead of unrolled in the tile loop's
  body: the optimized HLO showed each of the nine loop outputs' fusions recomputing the whole
  unrolled chain of steps (about 1,100 ops per ray per 4 steps; 19 fusions): 24.7 -> 19.0 at
  lean_steps 4, 18.0 at 8 (the new default), 18.9 at 12, 20.1 at 16. Old vs new together:
  29.6-30.6 -> 18.0-18.3 ms/frame. The loop bound now counts iterations, not steps (with
  16 lean steps the old step-count bound cut a few rays short at chains of special cells).
- optimization_barrier between unrolled steps: no effect (the barrier is gone from the
  optimized HLO before fusion; same CPU time as without).
- empty-space skipping with a per-cell free-cube field (Chebyshev radius 0/1/3/7 from three
  doubling passes of shifted ANDs; a ray jumps to the exit of the free cube around its cell,
  crossing counts per axis from ceil((t_exit - t_a) |d_a|), so R = 0 is the plain step):
  pixel-identical, tile-loop iterations 8.1 -> 5.5 per tile, but slower: 30 -> 45 ms/frame
  unrolled, 29 -> 28 in the inner loop against 18 for the plain lean steps there. Building the
  two fields (before/after a translucent surface) cost 3.4 ms/frame, and the jump step has
  about twice the arithmetic of a cell step while the slowest ray of a tile (grazing the
  ground, radius 0-1) gains little. Removed.
- carrying the cell as one flat index (six loop outputs instead of nine): 18.9 -> 19.1, no gain;
  the state stacked into one int [5, N] and one float [4, N] array per step: 16.9 -> 18.9;
  the step's decision materialized once through a gather from an identity table (XLA keeps
  gathers as their own fusions): 18.7 -> 19.5; a lean step carrying only t (cell and exit
  time recomputed from o + t d): 18.9 -> 20.3 and 0.006% of pixels different. None kept.
- mob hits carried as (t, packed mob/box/axis): the unrolled box tests are recomputed in two
  loop-output fusions instead of four: 19.0 -> 18.6.
- the fine step at special/translucent cells (stubbed out, leaving those rays as hits: 18.4 ->
  11.7, so these cells cost about a third) on the waiting rays gathered into a batch of at most
  256 (the whole tile when more wait): 17.7 -> 17.1, 18.8 -> 18.3. Letting that batch run fine
  steps until none waits (runs of grass, leaves, a water surface) instead of one cell per tile
  iteration: 17.7 -> 17.6, not kept; lean_steps 2/4/6/16 with it: 21.3/18.9/18.6/19.0 vs 18.3.
- make_scene padded the mob slots of `num_mobs` as alive cows at the origin (12 of the 16
  slots of these scenes); they are dead now, so figures from here on have 2-4 mobs per scene.
- batch 64, same process, load 7.1: old 32.8 -> new 19.9 ms/frame of CPU (wall 42.3 -> 23.1);
  `python -m benchmarks.render_throughput --batches 64` at load 7.0: 42.9 frames/s (23.3
  ms/frame), /usr/bin/time user 14.0 s vs wall 22.0 s for the whole script. Before this pass
  the same command gave 29.5 frames/s at load 2.5, and 43.7 on an idle machine.
- two cores: XLA:CPU (jax 0.10) runs one thunk per kernel; two independent lax.map chains were
  still serialized (the thunk executor's graph chained the while thunks, buffer reuse), with
  or without --xla_cpu_enable_concurrency_optimized_scheduler. Single loop fusions of 64k+
  elements are split across both threads, 4k-element tile fusions are not, but independent
  fusions inside a loop body do run concurrently (process CPU/wall up to 1.3-1.7 in quieter
  moments). Larger work units (tiles spanning several scenes) are the open next step.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import tyro

from benchmarks import common
from envs.voxel import render as R
from envs.voxel.make_strip import demo_scenes, demo_world
from envs.voxel.textures import FACE_BOTTOM, FACE_TOP, FACE_X, FACE_Z, make_render_assets


def naive_render(scene: R.Scene, assets, cfg: R.RenderConfig):
    """Baseline: one fixed-length DDA per pixel over the whole frame, no acceleration."""
    X, Y, Z = scene.blocks.shape
    d = R.ray_directions(scene.yaw_deg, scene.pitch_deg, cfg).reshape(-1, 3)
    d = jnp.where(jnp.abs(d) < 1e-7, 1e-7, d)
    o = scene.eye_pos
    inv = 1.0 / d
    cell = jnp.floor(o).astype(jnp.int32) * jnp.ones_like(d, jnp.int32)
    step = jnp.where(d > 0, 1, -1).astype(jnp.int32)
    tmax = (cell + (d > 0) - o) * inv
    tdelta = jnp.abs(inv)
    n = d.shape[0]
    init = (
        cell,
        tmax,
        jnp.zeros(n),
        jnp.zeros(n, jnp.int32),
        jnp.zeros(n, bool),
        jnp.zeros(n, jnp.int32),
    )

    def body(_, s):
        cell, tmax, t, axis, done, hit = s
        inb = jnp.all((cell >= 0) & (cell < jnp.array([X, Y, Z])), -1)
        c = jnp.clip(cell, 0, jnp.array([X - 1, Y - 1, Z - 1]))
        bid = jnp.where(inb, scene.blocks[c[:, 0], c[:, 1], c[:, 2]], 0).astype(jnp.int32)
        now = ~done & (bid > 0) & (t < cfg.max_distance)
        hit = jnp.where(now, bid, hit)
        done = done | now
        a = jnp.argmin(tmax, -1)
        onehot = jax.nn.one_hot(a, 3, dtype=jnp.int32) * (~done)[:, None]
        t = jnp.where(done, t, jnp.min(tmax, -1))
        return cell + onehot * step, tmax + onehot * tdelta, t, jnp.where(done, axis, a), done, hit

    cell, tmax, t, axis, done, hit = jax.lax.fori_loop(0, cfg.max_steps, body, init)
    p = o + d * t[:, None]
    frac = p - jnp.floor(p + d * 1e-3)
    u = jnp.where(axis == 0, frac[:, 2], frac[:, 0])
    v = jnp.where(axis == 1, frac[:, 2], 1 - frac[:, 1])
    face = jnp.where(
        axis == 0,
        FACE_X,
        jnp.where(axis == 2, FACE_Z, jnp.where(d[:, 1] < 0, FACE_TOP, FACE_BOTTOM)),
    )
    ui = jnp.clip((u * 16).astype(jnp.int32), 0, 15)
    vi = jnp.clip((v * 16).astype(jnp.int32), 0, 15)
    rgb = assets.block_tex[hit, face, vi, ui, :3] / 255.0
    rgb = jnp.where(done[:, None], rgb * 0.85, R.sky_color(d, scene.daylight))
    return (rgb * 255).astype(jnp.uint8).reshape(cfg.height, cfg.width, 3)


@dataclasses.dataclass
class Args:
    """python -m benchmarks.render_throughput --batches 1 16 64"""

    batches: tuple[int, ...] = (1, 16, 64)  # frames rendered per call, one figure each.
    baseline_batches: tuple[int, ...] = (1, 16)  # batches also timed with the naive baseline.
    repeats: int = 3  # timed calls per batch (the best is kept).
    max_distance: float = R.RenderConfig().max_distance  # the renderer's view distance (blocks).


def best_time(fn, arg, repeats):
    """The fastest of `repeats` calls fn(arg) after a warm-up call (`common.best_time`)."""
    return common.best_time(fn, lambda _: (arg,), repeats)


def main(argv=None):
    args = tyro.cli(Args, args=argv)

    cfg = R.RenderConfig(max_distance=args.max_distance)
    blocks, block_names, mob_names = demo_world(0)
    assets = make_render_assets(block_names, mob_names)
    all_scenes = demo_scenes(blocks, mob_names, max(args.batches), seed=1, num_mobs=16)
    print(f"devices: {jax.devices()}  world {blocks.shape}  image {cfg.height}x{cfg.width}")
    print(f"max_distance {cfg.max_distance}  max_steps {cfg.max_steps}  {common.load_text()}")
    fast = jax.jit(jax.vmap(lambda s: R.render_first_person(s, assets, cfg)))
    naive = jax.jit(jax.vmap(lambda s: naive_render(s, assets, cfg)))
    for b in args.batches:
        scenes = jax.tree.map(lambda x, b=b: x[:b], all_scenes)
        t = best_time(fast, scenes, args.repeats)
        line = f"batch {b:4d}: renderer {b / t:8.1f} frames/s ({1000 * t / b:6.2f} ms/frame)"
        if b in args.baseline_batches:
            tb = best_time(naive, scenes, max(1, args.repeats // 2))
            line += f" | naive baseline {b / tb:7.1f} frames/s | ratio {tb / t:5.2f}x"
        print(line + f"  [load {common.load()[0]:.1f}]", flush=True)


if __name__ == "__main__":
    main()
