"""Procedural block textures and mob box models for the voxel renderer.

Everything here is drawn by the project from a few numeric recipes (noise, stripes, Voronoi
stones, rings); no Minecraft asset is used or needed. `make_render_assets` turns the world's id
tables (block names, mob names) into a `RenderAssets` pytree of small arrays that
`envs.voxel.render.render_first_person` indexes by id inside jit.

Names are matched loosely (lower case, an optional ``minecraft:`` prefix dropped, MineDojo 1.11
names such as ``log2``/``leaves2`` and flattened names such as ``birch_log``/``red_wool`` both
understood). A name the recipes do not know (or a non-block item name such as ``milk_bucket``)
gets a deterministic fallback: an opaque full cube whose colour is chosen from a CRC32 hash of
the name, with mild noise. The fallback never warns: the world's item table legitimately contains
hundreds of names that are never placed. Unknown mob names likewise get a two-box model (body and
head) coloured from the name's hash.

Faces: every block has four 16x16 RGBA faces, indexed by `FACE_TOP`, `FACE_BOTTOM`, `FACE_X`
(the faces whose normal is +-x) and `FACE_Z` (+-z), so blocks with a distinct front (furnace,
crafting table) show it on the z faces.
"""

from __future__ import annotations

import colorsys
import zlib
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from flax import struct

TEX = 16  # texels per block edge
FACE_TOP, FACE_BOTTOM, FACE_X, FACE_Z = 0, 1, 2, 3
NUM_FACES = 4

# How the ray marcher treats a block id.
KIND_AIR = 0  # never hit
KIND_OPAQUE = 1  # full opaque unit cube: the fast path of the ray marcher
KIND_SPECIAL = 2  # partial box and/or alpha-tested texels: tested geometrically in the loop
KIND_TRANSLUCENT = 3  # blended over what lies behind (water, portal, ice); the ray continues

MAX_MOB_BOXES = 12  # boxes per mob model (unused slots are empty boxes)
MOB_VARIANTS = 2  # variant 0 = normal, 1 = sheared sheep (other mobs repeat variant 0)


@struct.dataclass
class RenderAssets:
    """Per-id lookup tables for the renderer (a pytree of arrays; build with `make_render_assets`).

    Block tables are indexed by block id, mob tables by mob type id then variant.
    """

    block_tex: jnp.ndarray  # uint8 [NB, 4 faces, 16, 16, 4] RGBA; alpha 0 = cut-out texel
    block_kind: jnp.ndarray  # int32 [NB], one of KIND_*
    block_lo: jnp.ndarray  # f32 [NB, 3] box inside the unit cell (carpet, torch, cactus ...)
    block_hi: jnp.ndarray  # f32 [NB, 3]
    block_alpha: jnp.ndarray  # f32 [NB] blend opacity of KIND_TRANSLUCENT blocks
    block_emissive: jnp.ndarray  # f32 [NB] 0..1, light the block keeps at night
    mob_lo: jnp.ndarray  # f32 [NM, 2, K, 3] boxes in the mob frame (feet centre, facing +z)
    mob_hi: jnp.ndarray  # f32 [NM, 2, K, 3]; empty slots have lo > hi
    mob_box_tex: jnp.ndarray  # int32 [NM, 2, K] index into mob_tex
    mob_radius: jnp.ndarray  # f32 [NM, 2] bounding sphere radius around (0, mob_center_y, 0)
    mob_center_y: jnp.ndarray  # f32 [NM, 2]
    mob_tex: jnp.ndarray  # uint8 [T, 16, 16, 3]

    @property
    def num_blocks(self) -> int:
        return self.block_kind.shape[0]

    @property
    def num_mob_types(self) -> int:
        return self.mob_lo.shape[0]


# --------------------------------------------------------------------------------------------
# Drawing primitives (NumPy, run once when the assets are built)
# --------------------------------------------------------------------------------------------


def _rng(*parts: str) -> np.random.Generator:
    # crc32, not hash(): Python salts str hashes per process and assets must be reproducible.
    return np.random.default_rng(zlib.crc32("/".join(parts).encode()))


def _rgb(hex_or_tuple) -> np.ndarray:
    if isinstance(hex_or_tuple, str):
        h = hex_or_tuple.lstrip("#")
        return np.array([int(h[i : i + 2], 16) for i in (0, 2, 4)], np.float32)
    return np.asarray(hex_or_tuple, np.float32)


def _noise(rng, base, amp=18.0, grain=1.0) -> np.ndarray:
    """Base colour with per-texel brightness noise (same offset on r, g, b so hue is kept)."""
    n = rng.normal(0.0, 1.0, (TEX, TEX, 1)) * amp * grain
    return _rgb(base)[None, None, :] + n


def _smooth_noise(rng, scale=4) -> np.ndarray:
    """Blobby noise in [0, 1]: a coarse random grid upsampled with wrap-around bilinear blend."""
    c = rng.random((scale, scale))
    idx = np.arange(TEX) * scale / TEX
    i0 = np.floor(idx).astype(int)
    f = idx - i0
    i1 = (i0 + 1) % scale
    rows = c[i0] * (1 - f)[:, None] + c[i1] * f[:, None]
    return rows[:, i0] * (1 - f)[None, :] + rows[:, i1] * f[None, :]


def _voronoi_edges(rng, n=7) -> np.ndarray:
    """1 on texels near a border between Voronoi cells (cobblestone mortar), else 0."""
    pts = rng.random((n, 2)) * TEX
    yy, xx = np.mgrid[0:TEX, 0:TEX] + 0.5
    d = []
    for py, px in pts:
        dy = np.abs(yy - py)
        dx = np.abs(xx - px)
        dy = np.minimum(dy, TEX - dy)  # wrap so the texture tiles
        dx = np.minimum(dx, TEX - dx)
        d.append(np.sqrt(dy * dy + dx * dx))
    d = np.sort(np.stack(d), axis=0)
    return (d[1] - d[0] < 1.3).astype(np.float32)


def _rgba(rgb: np.ndarray, alpha=None) -> np.ndarray:
    out = np.empty((TEX, TEX, 4), np.float32)
    out[..., :3] = rgb
    out[..., 3] = 255.0 if alpha is None else alpha
    return np.clip(out, 0, 255)


def _faces(top, side=None, bottom=None, side_z=None) -> np.ndarray:
    """Stack RGBA faces in FACE_* order; missing faces repeat the given ones."""
    side = top if side is None else side
    bottom = top if bottom is None else bottom
    side_z = side if side_z is None else side_z
    return np.stack([top, bottom, side, side_z])


def _stone(rng, base="#7f7f7f"):
    blobs = _smooth_noise(rng, 4)
    return _noise(rng, base, 10) - 22 * (blobs[..., None] > 0.7)


def _ore(rng, color):
    img = _stone(rng)
    for _ in range(4):  # a few clusters of 2-4 texels
        cy, cx = rng.integers(1, TEX - 2, 2)
        for dy, dx in [(0, 0), (0, 1), (1, 0), (1, 1)][: rng.integers(2, 5)]:
            img[cy + dy, cx + dx] = _rgb(color) + rng.normal(0, 12)
    return img


def _log_side(rng, bark, dark):
    img = _noise(rng, bark, 8)
    stripes = rng.random(TEX) < 0.35  # vertical bark furrows
    img[:, stripes] = _rgb(dark) + rng.normal(0, 6, (TEX, stripes.sum(), 1))
    return img


def _log_top(rng, wood, ring, bark):
    yy, xx = np.mgrid[0:TEX, 0:TEX] + 0.5
    r = np.maximum(np.abs(yy - 8), np.abs(xx - 8))  # square-ish rings like sawn wood
    img = np.where((np.floor(r) % 3 == 0)[..., None], _rgb(ring), _rgb(wood))
    img = img + rng.normal(0, 5, (TEX, TEX, 1))
    img[r > 7] = _rgb(bark)
    return img


def _planks(rng, base="#a0824f"):
    img = _noise(rng, base, 7)
    for row in range(TEX):
        board = row // 4
        img[row] += (board % 2) * 8
        if row % 4 == 3:
            img[row] = _rgb(base) * 0.6
        seam = (5 + 8 * board) % TEX
        img[row, seam] = _rgb(base) * 0.6 if row % 4 != 3 else img[row, seam]
    return img


def _leaves(rng, base):
    img = _noise(rng, base, 22)
    holes = rng.random((TEX, TEX)) < 0.3  # cut-out texels: the sky and trunk show through
    return _rgba(img, np.where(holes, 0, 255))


def _wool(rng, color):
    img = _noise(rng, color, 9)
    img[rng.random((TEX, TEX)) < 0.15] *= 0.88  # fibre specks
    return img


# Minecraft's sixteen dye colours, by the names MineDojo/1.11 and later releases use.
DYE_COLORS = {
    "white": "#e9ecec",
    "orange": "#f07613",
    "magenta": "#bd44b3",
    "light_blue": "#3aafd9",
    "yellow": "#f8c527",
    "lime": "#70b919",
    "pink": "#ed8dac",
    "gray": "#3e4447",
    "silver": "#8e8e86",
    "light_gray": "#8e8e86",
    "cyan": "#158991",
    "purple": "#792aac",
    "blue": "#35399d",
    "brown": "#724728",
    "green": "#546d1b",
    "red": "#a12722",
    "black": "#141519",
}

_WOODS = {  # species: (bark, bark furrow, wood, ring, planks, leaves)
    "oak": ("#6b5332", "#4d3b22", "#b0905a", "#8f7140", "#a0824f", "#3f8a2a"),
    "birch": ("#d8d6cf", "#2f2f2a", "#cdbb80", "#b29e63", "#c4b077", "#6b9a45"),
    "spruce": ("#3b2a17", "#2a1d0f", "#7a5a34", "#5e4424", "#735430", "#2f5c3a"),
    "jungle": ("#584419", "#3d2e10", "#ab7f4c", "#8a6035", "#a4754b", "#2f9a1e"),
    "acacia": ("#676157", "#4c4840", "#ba6337", "#9b4f2a", "#ab5c33", "#5a8a22"),
    "dark_oak": ("#3c2e1a", "#2a1f10", "#60462a", "#4a341e", "#472f16", "#2f6b1e"),
}


def _species(name: str) -> str:
    for s in ("dark_oak", "birch", "spruce", "jungle", "acacia"):
        if s in name:
            return s
    if name in ("log2", "leaves2"):
        return "acacia"
    return "oak"


def _dye(name: str) -> str:
    for c in sorted(DYE_COLORS, key=len, reverse=True):  # light_blue before blue
        if c in name:
            return DYE_COLORS[c]
    return DYE_COLORS["white"]


def _fallback_color(name: str) -> tuple[float, float, float]:
    h = zlib.crc32(name.encode())
    hue = (h % 360) / 360.0
    sat = 0.35 + ((h >> 9) % 40) / 100.0
    val = 0.45 + ((h >> 17) % 40) / 100.0
    return tuple(255.0 * c for c in colorsys.hsv_to_rgb(hue, sat, val))


class _Block:
    """Recipe result for one block: faces plus how the ray marcher treats it."""

    def __init__(self, faces, kind=KIND_OPAQUE, lo=(0, 0, 0), hi=(1, 1, 1), alpha=1.0, emit=0.0):
        self.faces, self.kind, self.lo, self.hi = faces, kind, lo, hi
        self.alpha, self.emit = alpha, emit


def _block_recipe(raw_name: str) -> _Block:
    n = raw_name.lower().removeprefix("minecraft:")
    r = _rng("block", n)
    if n in ("air", "cave_air", "void_air", "barrier", "structure_void", ""):
        return _Block(np.zeros((NUM_FACES, TEX, TEX, 4)), KIND_AIR)

    def solid(img):
        return _Block(_faces(_rgba(img)))

    if n in ("grass", "grass_block"):
        top = _noise(r, "#6aaa3a", 14)
        dirt = _noise(r, "#86603c", 14)
        side = dirt.copy()
        fringe = 3 + (r.random(TEX) < 0.4)  # jagged grass edge hanging down the side
        for x in range(TEX):
            side[: fringe[x], x] = top[: fringe[x], x]
        return _Block(_faces(_rgba(top), _rgba(side), _rgba(dirt)))
    if n in ("dirt", "coarse_dirt", "grass_path"):
        img = _noise(r, "#86603c", 14)
        img[r.random((TEX, TEX)) < 0.12] *= 0.75
        return solid(img)
    if n == "farmland":
        top = _noise(r, "#5a3b1e", 10)
        top[::4] *= 0.7  # furrows
        side = _noise(r, "#86603c", 14)
        return _Block(
            _faces(_rgba(top), _rgba(side), _rgba(side)), KIND_SPECIAL, hi=(1, 15 / 16, 1)
        )
    if n in ("mycelium", "podzol"):
        top = _noise(r, "#6f6369" if n == "mycelium" else "#5b3f1d", 12)
        side = _noise(r, "#86603c", 14)
        side[:3] = top[:3]
        return _Block(_faces(_rgba(top), _rgba(side), _rgba(_noise(r, "#86603c", 14))))
    if n in ("stone", "smooth_stone"):
        return solid(_stone(r))
    if n in ("cobblestone", "mossy_cobblestone", "stone_stairs"):
        img = _noise(r, "#8a8a8a", 16) - 55 * _voronoi_edges(r)[..., None]
        if n.startswith("mossy"):
            img[_smooth_noise(r) > 0.6] = _rgb("#4f7a33")
        return solid(img)
    if n in ("stonebrick", "stone_bricks", "brick_block", "bricks"):
        base = "#7d7d7d" if "stone" in n else "#96503c"
        img = _noise(r, base, 8)
        h = 8 if "stone" in n else 4
        img[h - 1 :: h] = 0.55 * _rgb(base)
        for row0 in range(0, TEX, h):
            off = (row0 // h % 2) * (h if h == 8 else 4)
            img[row0 : row0 + h, (off + (h if h == 8 else 7)) % TEX] = 0.55 * _rgb(base)
        return solid(img)
    if n in ("sand", "red_sand"):
        return solid(_noise(r, "#dbd3a0" if n == "sand" else "#a95821", 9))
    if n in ("sandstone", "red_sandstone"):
        base = "#d8cb94" if n == "sandstone" else "#b05d24"
        side = _noise(r, base, 6)
        side[3::5] *= 0.9
        side[12:] *= 0.93
        return _Block(_faces(_rgba(_noise(r, base, 5)), _rgba(side), _rgba(_noise(r, base, 8))))
    if n == "gravel":
        img = _noise(r, "#857f7c", 22)
        img[r.random((TEX, TEX)) < 0.18] = _rgb("#5b5553")
        img[r.random((TEX, TEX)) < 0.1] = _rgb("#b0a9a6")
        return solid(img)
    if n == "clay":
        return solid(_noise(r, "#a1a7b2", 5))
    if n in ("hardened_clay", "terracotta", "stained_hardened_clay"):
        return solid(_noise(r, "#965c42", 6))
    if n in ("water", "flowing_water"):
        img = _noise(r, "#2f5fd8", 10)
        img[_smooth_noise(r, 4) > 0.72] = _rgb("#5f86ea")  # wave highlights
        return _Block(_faces(_rgba(img)), KIND_TRANSLUCENT, alpha=0.62)
    if n in ("lava", "flowing_lava"):
        img = _rgb("#d4420c") + 60 * _smooth_noise(r, 4)[..., None] * np.array([1, 0.8, 0.2])
        return _Block(_faces(_rgba(img)), emit=1.0)
    if n in ("ice", "packed_ice", "frosted_ice"):
        img = _noise(r, "#91b4fe", 6)
        img[np.eye(TEX, dtype=bool)[::-1] | np.roll(np.eye(TEX, dtype=bool), 5, 1)] = _rgb(
            "#d0e0ff"
        )
        if n == "packed_ice":
            return solid(img)
        return _Block(_faces(_rgba(img)), KIND_TRANSLUCENT, alpha=0.75)
    if n in ("snow", "snow_block"):
        return solid(_noise(r, "#f0fafa", 5))
    if n == "snow_layer":
        top = _rgba(_noise(r, "#f0fafa", 5))
        return _Block(_faces(top), KIND_SPECIAL, hi=(1, 2 / 16, 1))
    if n in ("log", "log2") or n.endswith("_log") or n.endswith("_wood"):
        bark, furrow, wood, ring, _, _ = _WOODS[_species(n)]
        side = _log_side(r, bark, furrow)
        if _species(n) == "birch":  # birch: white bark with black dashes
            side = _noise(r, bark, 6)
            for _ in range(7):
                y, x = r.integers(0, TEX, 2)
                side[y, x : x + r.integers(2, 5)] = _rgb(furrow)
        top = _log_top(r, wood, ring, bark)
        return _Block(_faces(_rgba(top), _rgba(side), _rgba(top)))
    if n in ("leaves", "leaves2") or n.endswith("_leaves"):
        return _Block(_faces(_leaves(r, _WOODS[_species(n)][5])), KIND_SPECIAL)
    if n in ("planks",) or n.endswith("_planks"):
        return solid(_planks(r, _WOODS[_species(n)][4]))
    if n == "bookshelf":
        side = _planks(r)
        for row0 in (1, 9):
            for x in range(1, TEX - 1):
                side[row0 : row0 + 6, x] = _rgb(("#7a2b22", "#2f4f8a", "#3f6b2a", "#8a6f22")[x % 4])
        plank = _rgba(_planks(r))
        return _Block(_faces(plank, _rgba(side), plank))
    if n == "crafting_table":
        plank = _planks(r)
        top = plank.copy()
        top[[0, 5, 10, 15], :] = _rgb("#4a3420")  # 3x3 crafting grid
        top[:, [0, 5, 10, 15]] = _rgb("#4a3420")
        side_x = plank.copy()
        side_x[:3] = _rgb("#6b4a2c")
        side_x[5:13, 3] = _rgb("#6d6d6d")  # saw blade
        side_x[5:7, 4:7] = _rgb("#6d6d6d")
        side_z = plank.copy()
        side_z[:3] = _rgb("#6b4a2c")
        side_z[4:13, 8] = _rgb("#5a3d22")  # hammer handle and head
        side_z[4:6, 5:12] = _rgb("#8a8a8a")
        return _Block(_faces(_rgba(top), _rgba(side_x), _rgba(plank), _rgba(side_z)))
    if n in ("furnace", "lit_furnace"):
        side = _noise(r, "#7a7a7a", 9) - 30 * _voronoi_edges(r, 9)[..., None]
        front = side.copy()
        front[8:14, 3:13] = _rgb("#1c1c1c")  # fire opening
        if n == "lit_furnace":
            front[10:14, 4:12] = _rgb("#f0a020") + r.normal(0, 15, (4, 8, 1))
        front[2:5, 4:12] = _rgb("#4a4a4a")
        top = _noise(r, "#8a8a8a", 6)
        emit = 0.5 if n == "lit_furnace" else 0.0
        return _Block(_faces(_rgba(top), _rgba(side), _rgba(top), _rgba(front)), emit=emit)
    for ore, color in (
        ("coal", "#1e1e1e"),
        ("iron", "#d8af93"),
        ("gold", "#fcee4b"),
        ("diamond", "#5decf5"),
        ("redstone", "#ff1010"),
        ("lapis", "#1f48b8"),
        ("emerald", "#17dd62"),
        ("quartz", "#eae5de"),
    ):
        if n in (f"{ore}_ore", f"lit_{ore}_ore"):
            return solid(_ore(r, color))
        if n == f"{ore}_block":
            img = _noise(r, color, 8)
            img[[0, 15]] *= 0.8
            img[:, [0, 15]] *= 0.8
            return solid(img)
    if n == "bedrock":
        img = _noise(r, "#555555", 10)
        blobs = _smooth_noise(r, 8)
        img[blobs > 0.55] = _rgb("#222222")
        img[blobs < 0.2] = _rgb("#8a8a8a")
        return solid(img)
    if n == "obsidian":
        img = _noise(r, "#140f1e", 5)
        img[_smooth_noise(r, 6) > 0.75] = _rgb("#3b2a5a")
        return solid(img)
    if n in ("portal", "nether_portal"):
        sw = _smooth_noise(r, 4)
        yy, xx = np.mgrid[0:TEX, 0:TEX]
        swirl = 0.5 + 0.5 * np.sin((xx + yy) * 0.7 + 6 * sw)
        img = _rgb("#5a10b0") * (0.7 + 0.5 * swirl[..., None])
        return _Block(_faces(_rgba(img)), KIND_TRANSLUCENT, alpha=0.72, emit=0.8)
    if n in ("glass", "stained_glass") or n.endswith("_glass"):
        img = np.broadcast_to(_rgb("#c8e6f0"), (TEX, TEX, 3)).copy()
        alpha = np.zeros((TEX, TEX))
        alpha[[0, 15], :] = alpha[:, [0, 15]] = 255  # frame only: a cut-out window
        alpha[3:5, 3:5] = alpha[4:6, 11:13] = 255  # glints
        return _Block(_faces(_rgba(img, alpha)), KIND_SPECIAL)
    if n in ("wool",) or n.endswith("_wool") or n.startswith("wool"):
        return solid(_wool(r, _dye(n)))
    if "carpet" in n:
        return _Block(_faces(_rgba(_wool(r, _dye(n)))), KIND_SPECIAL, hi=(1, 1 / 16, 1))
    if n == "cactus":
        side = _noise(r, "#0f7a1c", 8)
        side[:, ::4] *= 0.7  # ribs
        side[r.random((TEX, TEX)) < 0.06] = _rgb("#d8d8a0")  # spines
        top = _noise(r, "#3f9a3a", 8)
        lo, hi = (1 / 16, 0, 1 / 16), (15 / 16, 1, 15 / 16)
        return _Block(_faces(_rgba(top), _rgba(side)), KIND_SPECIAL, lo, hi)
    if n in ("torch", "redstone_torch", "wall_torch"):
        img = np.broadcast_to(_rgb("#6b4a2a"), (TEX, TEX, 3)).copy()
        img[:3] = _rgb("#ffd84a") if n != "redstone_torch" else _rgb("#ff2a10")
        top = np.broadcast_to(_rgb("#ffe27a"), (TEX, TEX, 3)).copy()
        lo, hi = (7 / 16, 0, 7 / 16), (9 / 16, 10 / 16, 9 / 16)
        return _Block(_faces(_rgba(top), _rgba(img), _rgba(img)), KIND_SPECIAL, lo, hi, emit=1.0)
    if n in ("hay_block", "hay_bale"):
        side = _noise(r, "#c4a531", 10)
        side[:, ::3] *= 0.85
        side[3:5] = side[11:13] = _rgb("#7a4a1a")  # binding bands
        top = _noise(r, "#b8972a", 12)
        return _Block(_faces(_rgba(top), _rgba(side)))
    if n in ("pumpkin", "lit_pumpkin", "jack_o_lantern", "melon_block", "melon"):
        melon = n.startswith("melon")
        base = "#7fa32a" if melon else "#d8851c"
        side = _noise(r, base, 8)
        side[:, ::4] *= 0.8
        front = side.copy()
        if not melon:
            front[4:7, 3:6] = front[4:7, 10:13] = front[10:12, 3:13] = _rgb("#402010")
        top = _noise(r, base, 6)
        return _Block(_faces(_rgba(top), _rgba(side), _rgba(top), _rgba(front)))
    if n in ("tallgrass", "grass_plant", "double_plant", "fern", "deadbush", "reeds", "sapling"):
        img = _noise(r, "#5f9a34" if n != "deadbush" else "#8a6a3a", 18)
        alpha = np.zeros((TEX, TEX))
        for x in r.choice(TEX, 6, replace=False):  # a few blades from the ground up
            alpha[r.integers(2, 9) :, x] = 255
        return _Block(_faces(_rgba(img, alpha)), KIND_SPECIAL)
    if n in ("red_flower", "yellow_flower", "poppy", "dandelion"):
        img = np.broadcast_to(_rgb("#3f8a2a"), (TEX, TEX, 3)).copy()
        img[:5] = _rgb("#e02a2a" if n in ("red_flower", "poppy") else "#f0e020")
        lo, hi = (6 / 16, 0, 6 / 16), (10 / 16, 10 / 16, 10 / 16)
        return _Block(
            _faces(_rgba(img[:5].mean((0, 1)) * np.ones((TEX, TEX, 3))), _rgba(img)),
            KIND_SPECIAL,
            lo,
            hi,
        )
    if n in ("waterlily", "lily_pad"):
        yy, xx = np.mgrid[0:TEX, 0:TEX] + 0.5
        pad = ((yy - 8) ** 2 + (xx - 8) ** 2 < 56) & ~((xx > 8) & (np.abs(yy - 8) < 1.5))
        img = _noise(r, "#2f7a20", 12)
        return _Block(_faces(_rgba(img, np.where(pad, 255, 0))), KIND_SPECIAL, hi=(1, 1 / 64, 1))
    if n in ("glowstone", "sea_lantern"):
        return _Block(_faces(_rgba(_noise(r, "#e8c070", 20))), emit=1.0)
    if n in ("netherrack",):
        return solid(_noise(r, "#6f3434", 16))
    # Fallback: deterministic colour per name, opaque cube, subtle noise so it still reads as a
    # surface rather than a flat polygon.
    return solid(_noise(r, _fallback_color(n), 10))


# --------------------------------------------------------------------------------------------
# Mob models: boxes in the mob frame (origin at the feet centre, y up, facing +z), in blocks
# --------------------------------------------------------------------------------------------


class _MobTextures:
    """Collects the 16x16 RGB textures mob boxes reference, deduplicated by key."""

    def __init__(self):
        self.images: list[np.ndarray] = []
        self.keys: dict[str, int] = {}

    def add(self, key: str, img: np.ndarray) -> int:
        if key not in self.keys:
            self.keys[key] = len(self.images)
            self.images.append(np.clip(img, 0, 255))
        return self.keys[key]

    def flat(self, key: str, color, amp=8.0) -> int:
        return self.add(key, _noise(_rng("mob", key), color, amp))


def _humanoid(t: _MobTextures, name, skin, shirt, pants, *, thin=False, tall=1.0, arms_fwd=False):
    """Head, body, two arms, two legs; `tall` stretches limbs (enderman)."""
    limb = 0.0625 if thin else 0.125  # half width
    leg_h = 0.75 * tall
    body_top = leg_h + 0.75
    head = [(-0.25, body_top, -0.25), (0.25, body_top + 0.5, 0.25)]
    boxes = [
        (*head, t.flat(f"{name}/head", skin)),
        ((-0.25, leg_h, -0.125), (0.25, body_top, 0.125), t.flat(f"{name}/shirt", shirt)),
        ((-0.25, 0, -limb), (-0.25 + 2 * limb, leg_h, limb), t.flat(f"{name}/pants", pants)),
        ((0.25 - 2 * limb, 0, -limb), (0.25, leg_h, limb), t.flat(f"{name}/pants", pants)),
    ]
    arm_tex = t.flat(f"{name}/arm", skin)
    for sx in (-1, 1):
        x0, x1 = sorted((sx * 0.25, sx * (0.25 + 2 * limb)))
        if arms_fwd:  # zombie pose: arms stretched forward at shoulder height
            boxes.append(((x0, body_top - 0.25, 0.0), (x1, body_top, 0.75), arm_tex))
        else:
            boxes.append(((x0, body_top - 0.75 * tall, -limb), (x1, body_top, limb), arm_tex))
    return boxes, body_top


def _eyes(t, name, color, y, z, half_gap=0.1, size=0.0625, wide=0.0625):
    tex = t.flat(f"{name}/eye", color, 2)
    return [
        ((sx * half_gap - wide, y, z), (sx * half_gap + wide, y + size, z + 0.02), tex)
        for sx in (-1, 1)
    ]


def _quadruped(t, name, body_tex, head_tex, leg_tex, *, body, head, leg_h, leg_w, leg_xz):
    boxes = [(body[0], body[1], body_tex), (head[0], head[1], head_tex)]
    for sx in (-1, 1):
        for sz in (-1, 1):
            cx, cz = sx * leg_xz[0], sz * leg_xz[1]
            boxes.append(((cx - leg_w, 0, cz - leg_w), (cx + leg_w, leg_h, cz + leg_w), leg_tex))
    return boxes


def _patches(name, a, b, frac=0.4, scale=4):
    r = _rng("mob", name)
    blob = _smooth_noise(r, scale)
    img = np.where((blob > 1 - frac)[..., None], _rgb(b), _rgb(a))
    return img + r.normal(0, 5, (TEX, TEX, 1))


def _mob_model(t: _MobTextures, raw: str, variant: int):
    n = raw.lower().removeprefix("minecraft:").removeprefix("entity")
    if n == "cow" or n == "mooshroom":
        hide = t.add("cow/hide", _patches("cow/hide", "#f2f2f2", "#221a14", 0.55))
        face = t.add("cow/face", _patches("cow/face", "#2a2018", "#e8e8e8", 0.3))
        boxes = _quadruped(
            t,
            n,
            hide,
            face,
            t.add("cow/leg", _patches("cow/leg", "#2a2018", "#e8e8e8", 0.3)),
            body=((-0.375, 0.75, -0.55), (0.375, 1.375, 0.55)),
            head=((-0.25, 1.0, 0.55), (0.25, 1.5, 0.95)),
            leg_h=0.75,
            leg_w=0.125,
            leg_xz=(0.22, 0.38),
        )
        horn = t.flat("cow/horn", "#d8d0b8")
        boxes += [
            ((sx * 0.25 - 0.06, 1.38, 0.7), (sx * 0.25 + 0.06, 1.56, 0.78), horn) for sx in (-1, 1)
        ]
        boxes.append(((-0.15, 0.68, -0.2), (0.15, 0.76, 0.1), t.flat("cow/udder", "#e8a0a8")))
        return boxes
    if n == "sheep":
        skin = t.flat("sheep/skin", "#d8b4a0", 6)
        wool = t.add("sheep/wool", _wool(_rng("mob", "wool"), "#ececec"))
        if variant == 1:  # sheared: thin pinkish body, no wool
            body = ((-0.25, 0.75, -0.5), (0.25, 1.2, 0.5))
            body_tex, leg_tex = t.flat("sheep/shorn", "#e0b8b0", 6), skin
        else:
            body = ((-0.42, 0.65, -0.6), (0.42, 1.35, 0.55))
            body_tex, leg_tex = wool, skin
        boxes = _quadruped(
            t,
            n,
            body_tex,
            skin,
            leg_tex,
            body=body,
            head=((-0.19, 1.0, 0.5), (0.19, 1.45, 0.9)),
            leg_h=0.75,
            leg_w=0.1,
            leg_xz=(0.2, 0.35),
        )
        if variant == 0:  # wool cap on the head
            boxes.append(((-0.21, 1.3, 0.5), (0.21, 1.48, 0.8), wool))
        boxes += _eyes(t, n, "#202020", 1.28, 0.9, 0.1, 0.06, 0.04)
        return boxes
    if n == "pig":
        pink = t.flat("pig/skin", "#f0a0a0", 6)
        boxes = _quadruped(
            t,
            n,
            pink,
            pink,
            pink,
            body=((-0.3125, 0.375, -0.5), (0.3125, 0.875, 0.5)),
            head=((-0.25, 0.5, 0.5), (0.25, 1.0, 0.95)),
            leg_h=0.375,
            leg_w=0.125,
            leg_xz=(0.19, 0.3),
        )
        boxes.append(((-0.125, 0.56, 0.95), (0.125, 0.75, 1.02), t.flat("pig/snout", "#e07a88", 3)))
        boxes += _eyes(t, n, "#1a1a1a", 0.8, 0.95, 0.15, 0.06, 0.04)
        return boxes
    if n == "chicken":
        white = t.flat("chicken/feather", "#f4f4f4", 5)
        yellow = t.flat("chicken/leg", "#e0a020", 3)
        return [
            ((-0.19, 0.3, -0.25), (0.19, 0.68, 0.25), white),
            ((-0.125, 0.55, 0.12), (0.125, 0.92, 0.32), white),
            ((-0.125, 0.7, 0.32), (0.125, 0.8, 0.45), t.flat("chicken/beak", "#f0a010", 3)),
            ((-0.06, 0.56, 0.32), (0.06, 0.7, 0.38), t.flat("chicken/wattle", "#d01818", 3)),
            ((-0.12, 0, -0.03), (-0.06, 0.3, 0.03), yellow),
            ((0.06, 0, -0.03), (0.12, 0.3, 0.03), yellow),
            ((-0.25, 0.38, -0.18), (-0.19, 0.6, 0.18), white),
            ((0.19, 0.38, -0.18), (0.25, 0.6, 0.18), white),
        ]
    if n == "zombie":
        boxes, top = _humanoid(t, n, "#4f8a3a", "#2ea0a8", "#3a3a8a", arms_fwd=True)
        return boxes + _eyes(t, n, "#101010", top + 0.22, 0.25)
    if n in ("zombie_pigman", "pig_zombie", "zombified_piglin"):
        skin = t.add("pigman/skin", _patches("pigman/skin", "#e89a9a", "#5a8a3a", 0.35))
        boxes, top = _humanoid(t, "pigman", "#e89a9a", "#c07a7a", "#6a4a2a")
        boxes[0] = (boxes[0][0], boxes[0][1], skin)
        boxes[1] = (boxes[1][0], boxes[1][1], skin)
        sword = t.flat("pigman/sword", "#f0d040", 4)
        boxes.append(((0.3, top - 0.85, 0.0), (0.36, top - 0.7, 0.8), sword))
        return boxes + _eyes(t, n, "#d02020", top + 0.22, 0.25)
    if n == "skeleton":
        bone = "#c8c8c8"
        boxes, top = _humanoid(t, n, bone, bone, bone, thin=True)
        boxes[1] = ((-0.2, 0.75, -0.06), (0.2, top, 0.06), t.add("skeleton/ribs", _ribs()))
        return boxes + _eyes(t, n, "#202020", top + 0.2, 0.25, 0.11, 0.09, 0.06)
    if n == "spider":
        black = t.add("spider/body", _patches("spider/body", "#2a2420", "#453a32", 0.4))
        leg = t.flat("spider/leg", "#1e1a16", 4)
        boxes = [
            ((-0.45, 0.3, -1.0), (0.45, 0.95, -0.2), black),
            ((-0.2, 0.35, -0.2), (0.2, 0.7, 0.15), black),
            ((-0.25, 0.3, 0.15), (0.25, 0.8, 0.6), black),
        ]
        for z in (-0.35, -0.1, 0.15, 0.4):
            boxes.append(((-1.0, 0.45, z - 0.05), (1.0, 0.55, z + 0.05), leg))
        return boxes + _eyes(t, n, "#ff1a1a", 0.62, 0.6, 0.12, 0.07, 0.06)
    if n == "enderman":
        boxes, top = _humanoid(t, n, "#141414", "#181818", "#141414", thin=True, tall=1.9)
        return boxes + _eyes(t, n, "#cc33ff", top + 0.2, 0.25, 0.12, 0.06, 0.08)
    if n == "creeper":
        green = t.add("creeper/skin", _patches("creeper/skin", "#5fb04a", "#2f7a2a", 0.35, 8))
        boxes = [
            ((-0.25, 0.375, -0.125), (0.25, 1.125, 0.125), green),
            ((-0.25, 1.125, -0.25), (0.25, 1.625, 0.25), green),
        ]
        for sx in (-1, 1):
            for sz in (-1, 1):
                boxes.append(
                    (
                        (sx * 0.125 - 0.125, 0, sz * 0.25 - 0.125),
                        (sx * 0.125 + 0.125, 0.375, sz * 0.25 + 0.125),
                        green,
                    )
                )
        return boxes + _eyes(t, n, "#101010", 1.4, 0.25, 0.12, 0.12, 0.06)
    if n == "villager":
        boxes, top = _humanoid(t, n, "#b88a6a", "#6a4a2a", "#5a3a22")
        return boxes + _eyes(t, n, "#2a6a2a", top + 0.22, 0.25)
    # Fallback: body and head boxes in a colour from the name's hash.
    col = _fallback_color(n)
    return [
        ((-0.3, 0, -0.3), (0.3, 0.9, 0.3), t.flat(f"fallback/{n}", col)),
        ((-0.2, 0.9, -0.2), (0.2, 1.3, 0.2), t.flat(f"fallback/{n}/head", np.array(col) * 0.8)),
    ]


def _ribs() -> np.ndarray:
    img = np.full((TEX, TEX, 3), 40.0)
    img[::3] = 200.0  # light ribs on a dark gap
    img[:, 7:9] = 200.0  # spine
    return img


# --------------------------------------------------------------------------------------------


def make_render_assets(block_names: Sequence[str], mob_names: Sequence[str]) -> RenderAssets:
    """Builds the renderer's lookup tables for the given id orders.

    Args:
      block_names: name per block id (id 0 must be an air name such as ``"air"``).
      mob_names: name per mob type id.

    Returns:
      `RenderAssets`. Deterministic: the same names always give the same arrays.
    """
    block_names = list(block_names)
    mob_names = list(mob_names)
    if not block_names:
        raise ValueError("make_render_assets: block_names is empty; pass the world's id table")
    if len(block_names) > 256:
        raise ValueError(
            f"make_render_assets: {len(block_names)} block names, but Scene.blocks is uint8 "
            "(at most 256 ids); keep placeable blocks in the first 256 ids"
        )
    if _block_recipe(block_names[0]).kind != KIND_AIR:
        raise ValueError(
            f"make_render_assets: block id 0 is {block_names[0]!r}; id 0 must be 'air' "
            "(the renderer treats it as empty space)"
        )
    recipes = [_block_recipe(str(n)) for n in block_names]
    tex = np.stack([b.faces for b in recipes])
    tex = np.clip(np.round(tex), 0, 255).astype(np.uint8)

    mt = _MobTextures()
    nm = max(len(mob_names), 1)
    lo = np.full((nm, MOB_VARIANTS, MAX_MOB_BOXES, 3), 1.0, np.float32)
    hi = np.full((nm, MOB_VARIANTS, MAX_MOB_BOXES, 3), -1.0, np.float32)  # empty: lo > hi
    box_tex = np.zeros((nm, MOB_VARIANTS, MAX_MOB_BOXES), np.int32)
    radius = np.zeros((nm, MOB_VARIANTS), np.float32)
    center = np.zeros((nm, MOB_VARIANTS), np.float32)
    for i, name in enumerate(mob_names):
        for v in range(MOB_VARIANTS):
            boxes = _mob_model(mt, str(name), v)
            if len(boxes) > MAX_MOB_BOXES:
                raise AssertionError(f"mob model {name!r} has {len(boxes)} > {MAX_MOB_BOXES} boxes")
            for k, (blo, bhi, ti) in enumerate(boxes):
                lo[i, v, k], hi[i, v, k], box_tex[i, v, k] = blo, bhi, ti
            pts = np.concatenate([np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])])
            center[i, v] = 0.5 * (pts[:, 1].min() + pts[:, 1].max())
            radius[i, v] = np.sqrt(
                np.max(np.abs(pts[:, 0])) ** 2
                + (0.5 * (pts[:, 1].max() - pts[:, 1].min())) ** 2
                + np.max(np.abs(pts[:, 2])) ** 2
            )
    if not mt.images:
        mt.flat("none", "#ff00ff")
    # Keep only as many box slots as the largest model uses: every ray tests every slot.
    k_used = max(1, int(np.max(np.sum(np.all(lo <= hi, -1), -1))))
    lo, hi, box_tex = lo[:, :, :k_used], hi[:, :, :k_used], box_tex[:, :, :k_used]
    return RenderAssets(
        block_tex=jnp.asarray(tex),
        block_kind=jnp.asarray([b.kind for b in recipes], jnp.int32),
        block_lo=jnp.asarray([b.lo for b in recipes], jnp.float32),
        block_hi=jnp.asarray([b.hi for b in recipes], jnp.float32),
        block_alpha=jnp.asarray([b.alpha for b in recipes], jnp.float32),
        block_emissive=jnp.asarray([b.emit for b in recipes], jnp.float32),
        mob_lo=jnp.asarray(lo),
        mob_hi=jnp.asarray(hi),
        mob_box_tex=jnp.asarray(box_tex),
        mob_radius=jnp.asarray(radius),
        mob_center_y=jnp.asarray(center),
        mob_tex=jnp.asarray(np.clip(np.round(np.stack(mt.images)), 0, 255).astype(np.uint8)),
    )


def mob_base_color(assets: RenderAssets, mob_type: int, variant: int = 0) -> np.ndarray:
    """Mean RGB (0..255) of a mob model's largest box: what a test or a legend calls its colour."""
    lo = np.asarray(assets.mob_lo[mob_type, variant])
    hi = np.asarray(assets.mob_hi[mob_type, variant])
    vol = np.prod(np.maximum(hi - lo, 0), axis=-1)
    k = int(np.argmax(vol))
    tex = np.asarray(assets.mob_tex[int(assets.mob_box_tex[mob_type, variant, k])], np.float32)
    return tex.reshape(-1, 3).mean(0)
