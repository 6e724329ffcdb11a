"""Renders a strip of first-person frames of the embedded world (the README's picture).

    python -m envs.voxel.make_strip --out docs/render_strip.png

Scenes come from the world generator (`envs.voxel.worldgen`) with cameras and mobs placed by a
fixed seed, so the picture is reproducible; the last frames show dusk and night.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from envs.voxel import render as R
from envs.voxel.textures import make_render_assets


def demo_world(seed: int = 0):
    """(blocks uint8 [X, Y, Z], block names, mob names) from the world generator.

    Falls back to a small hand-built hilly scene when the generator cannot be imported, so the
    renderer's scripts work on their own.
    """
    try:
        from envs.voxel import tables, worldgen
        from envs.voxel.state import VoxelStaticConfig

        blocks = np.asarray(
            worldgen.generate_world(seed, VoxelStaticConfig(render=False))["blocks"]
        )
        return blocks, tables.BLOCK_NAMES, tables.MOB_NAMES
    except ImportError:
        return _hand_built_world(seed)


def _hand_built_world(seed: int):
    names = ("air", "stone", "grass", "dirt", "sand", "water", "log", "leaves", "cobblestone")
    mobs = ("cow", "sheep", "pig", "chicken", "zombie", "spider", "skeleton", "enderman")
    ids = {n: i for i, n in enumerate(names)}
    x, z = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    h = (10 + 3 * np.sin(x / 7.0 + seed) + 3 * np.cos(z / 5.0)).astype(int)
    y = np.arange(32)[None, :, None]
    hh = h[:, None, :]
    b = np.where(y < hh - 3, ids["stone"], np.where(y < hh - 1, ids["dirt"], 0))
    b = np.where(y == hh - 1, np.where(hh <= 9, ids["sand"], ids["grass"]), b)
    b = np.where((b == 0) & (y < 9), ids["water"], b).astype(np.uint8)
    rng = np.random.default_rng(seed)
    for _ in range(12):
        tx, tz = rng.integers(4, 60, 2)
        ty = h[tx, tz]
        if ty > 9:
            b[tx - 2 : tx + 3, ty + 3 : ty + 6, tz - 2 : tz + 3] = ids["leaves"]
            b[tx, ty : ty + 5, tz] = ids["log"]
    return b, names, mobs


def surface_y(blocks: np.ndarray, x: int, z: int) -> int:
    """Height of the first air cell above the highest non-air block of column (x, z)."""
    nz = np.nonzero(blocks[x, :, z])[0]
    return int(nz.max()) + 1 if len(nz) else 0


def demo_scenes(blocks, mob_names, count: int, seed: int = 0, num_mobs: int = 8):
    """`count` scenes: cameras on the surface, a few mobs placed in view, last ones at dusk/night."""
    rng = np.random.default_rng(seed)
    X, _, Z = blocks.shape
    scenes = []
    for i in range(count):
        x, z = (int(v) for v in rng.integers(8, min(X, Z) - 8, 2))
        eye = np.array([x + 0.5, surface_y(blocks, x, z) + 1.62, z + 0.5], np.float32)
        yaw, pitch = float(rng.uniform(0, 360)), float(rng.uniform(-5, 25))
        fwd = np.asarray(R.look_direction(yaw, 0.0))
        pos, types = [], []
        for _ in range(int(rng.integers(2, 5))):
            dist, side = rng.uniform(3.0, 9.0), rng.uniform(-3.0, 3.0)
            p = eye + fwd * dist + np.array([fwd[2], 0, -fwd[0]]) * side
            px = int(np.clip(p[0], 0, X - 1))
            pz = int(np.clip(p[2], 0, Z - 1))
            pos.append([p[0], surface_y(blocks, px, pz), p[2]])
            types.append(int(rng.integers(0, len(mob_names))))
        daylight = 1.0 if i < count - 2 else (0.45 if i == count - 2 else 0.05)
        scenes.append(
            R.make_scene(
                blocks,
                eye,
                yaw,
                pitch,
                mob_pos=pos,
                mob_type=types,
                mob_yaw_deg=rng.uniform(0, 360, len(pos)),
                daylight=daylight,
                num_mobs=num_mobs,
            )
        )
    return jax.tree.map(lambda *x: jnp.stack(x), *scenes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/render_strip.png")
    ap.add_argument("--frames", type=int, default=8, help="frames in the strip (two rows)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    blocks, block_names, mob_names = demo_world(args.seed)
    assets = make_render_assets(block_names, mob_names)
    scenes = demo_scenes(blocks, mob_names, args.frames, args.seed)
    frames = np.asarray(R.render_batch(scenes, assets, R.RenderConfig()))
    cols = (len(frames) + 1) // 2
    pad = np.full((2 * cols - len(frames), *frames.shape[1:]), 255, np.uint8)
    frames = np.concatenate([frames, pad])
    gap = 4  # white gutter between frames
    h, w = frames.shape[1:3]
    strip = np.full((2 * h + gap, cols * w + (cols - 1) * gap, 3), 255, np.uint8)
    for k, f in enumerate(frames):
        r, c = divmod(k, cols)
        strip[r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w] = f
    import matplotlib.pyplot as plt

    plt.imsave(args.out, strip)
    print(f"wrote {args.out} ({strip.shape[1]}x{strip.shape[0]})")


if __name__ == "__main__":
    main()
