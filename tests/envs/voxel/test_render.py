"""Tests of the voxel renderer and its procedural assets (envs/voxel/render.py, textures.py).

Every test renders tiny images (24x32) of a 16^3 grid with the same static config and mob count,
so one compiled renderer serves them all.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.voxel import render as R
from envs.voxel.textures import (
    FACE_X,
    FACE_Z,
    KIND_OPAQUE,
    KIND_SPECIAL,
    KIND_TRANSLUCENT,
    make_render_assets,
    mob_base_color,
)

BLOCKS = [
    "air",
    "stone",
    "dirt",
    "grass",
    "water",
    "leaves",
    "white_carpet",
    "log",
    "sand",
    "furnace",
]
MOBS = [
    "cow",
    "sheep",
    "pig",
    "chicken",
    "zombie",
    "spider",
    "skeleton",
    "enderman",
    "zombie_pigman",
]
ID = {n: i for i, n in enumerate(BLOCKS)}
MOB = {n: i for i, n in enumerate(MOBS)}
CFG = R.RenderConfig(height=24, width=32, fov_deg=70.0, max_distance=12.0, tile_rows=8)
N = 16  # grid edge
NUM_MOBS = 2
EYE = (8.5, 8.5, 2.5)


@functools.cache
def assets():
    # concrete arrays even when first called inside a jit trace: the cache must never keep a
    # tracer (which test calls it first depends on how xdist spreads the tests)
    with jax.ensure_compile_time_eval():
        return make_render_assets(BLOCKS, MOBS)


render_jit = jax.jit(R.render_first_person, static_argnames="cfg")


def render(scene):
    return np.asarray(render_jit(scene, assets(), CFG))


def grid(**cells):
    """16^3 grid of air with blocks at {name: [(i, j, k), ...]}."""
    b = np.zeros((N, N, N), np.uint8)
    for name, where in cells.items():
        for i, j, k in where:
            b[i, j, k] = ID[name]
    return b


def wall(name, z):
    """A 16x16 wall of `name` filling the plane of cells with index z."""
    return grid(**{name: [(i, j, z) for i in range(N) for j in range(N)]})


def scene(blocks, eye=EYE, yaw=0.0, pitch=0.0, mobs=(), daylight=1.0, hurt=0.0, variant=0):
    mob_pos = [m[1] for m in mobs]
    return R.make_scene(
        blocks,
        eye,
        yaw,
        pitch,
        mob_pos=mob_pos if mobs else None,
        mob_type=[MOB[m[0]] for m in mobs] if mobs else None,
        mob_hurt=[hurt] * len(mobs) if mobs else None,
        mob_variant=[variant] * len(mobs) if mobs else None,
        daylight=daylight,
        num_mobs=NUM_MOBS,
    )


def centre(img):
    return img[CFG.height // 2, CFG.width // 2].astype(np.float32)


def sky_mask(img, **camera):
    """bool [H, W]: pixels identical to an empty world's render from the same camera."""
    empty = render(scene(grid(), **camera))
    return np.all(img == empty, axis=-1)


def sky_at_centre(img, **camera):
    return bool(sky_mask(img, **camera)[CFG.height // 2, CFG.width // 2])


def test_shapes_and_dtype():
    img = render(scene(wall("stone", 8)))
    assert img.shape == (CFG.height, CFG.width, 3) and img.dtype == np.uint8


def test_block_ahead_fills_centre_pixel_with_its_texel():
    a = assets()
    for name in ("stone", "dirt", "furnace"):
        img = render(scene(wall(name, 8)))
        # The centre pixel's ray hits the z=8 plane; look the texel up in the atlas directly.
        d = np.asarray(R.ray_directions(0.0, 0.0, CFG))[CFG.height // 2, CFG.width // 2]
        p = np.asarray(EYE) + d * (8.0 - EYE[2]) / d[2]
        u, v = int((p[0] % 1) * 16), int((1 - p[1] % 1) * 16)
        texel = np.asarray(a.block_tex[ID[name], FACE_Z, v, u, :3], np.float32)
        np.testing.assert_allclose(centre(img), texel * R._SHADE_Z, atol=1.5)


def test_sky_colour_by_day_and_darker_at_night():
    empty = grid()
    day = render(scene(empty, pitch=-90.0, daylight=1.0))
    night = render(scene(empty, pitch=-90.0, daylight=0.0))
    up = np.asarray(R.sky_color(jnp.asarray([0.0, 1.0, 0.0]), 1.0)) * 255
    np.testing.assert_allclose(centre(day), up, atol=1.5)
    assert day[..., 2].mean() > day[..., 0].mean() + 40  # blue sky
    assert night.mean() < 0.25 * day.mean()
    # Blocks are dimmer at night too.
    assert (
        render(scene(wall("sand", 8), daylight=0.0)).mean()
        < 0.4 * render(scene(wall("sand", 8))).mean()
    )


def test_yaw_pitch_convention():
    cases = [
        (grid(stone=[(8, 8, 12)]), dict(yaw=0.0), dict(yaw=180.0)),  # block to the south (+z)
        (grid(stone=[(4, 8, 2)]), dict(yaw=90.0), dict(yaw=-90.0)),  # block to the west (-x)
        (grid(stone=[(8, 5, 2)]), dict(pitch=90.0), dict(pitch=-90.0)),  # block below
    ]
    for blocks, sees, misses in cases:
        assert not sky_at_centre(render(scene(blocks, **sees)), **sees)
        assert sky_at_centre(render(scene(blocks, **misses)), **misses)


def test_camera_helpers_agree():
    f, r, u = (np.asarray(v) for v in R.camera_basis(0.0, 0.0))
    np.testing.assert_allclose(f, [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(r, [-1, 0, 0], atol=1e-6)  # facing south, west is on the right
    np.testing.assert_allclose(u, [0, 1, 0], atol=1e-6)
    np.testing.assert_allclose(R.look_direction(90.0, 0.0), [-1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(R.look_direction(0.0, 90.0), [0, -1, 0], atol=1e-6)
    # Projecting a point on a pixel's ray lands on that pixel's centre.
    yaw, pitch = 33.0, -12.0
    dirs = R.ray_directions(yaw, pitch, CFG)
    rows, cols = np.array([0, 5, 23]), np.array([0, 17, 31])
    pts = jnp.asarray(EYE) + 7.0 * dirs[rows, cols]
    c, rr, depth = R.project_points(pts, jnp.asarray(EYE), yaw, pitch, CFG)
    np.testing.assert_allclose(c, cols + 0.5, atol=1e-3)
    np.testing.assert_allclose(rr, rows + 0.5, atol=1e-3)
    assert np.all(np.asarray(depth) > 0)


def test_mob_visible_in_front_and_hidden_behind_a_block():
    pig = ("pig", (8.5, 8.0, 6.5))  # snout towards the camera would face -z; body fills centre
    with_pig = render(scene(grid(), mobs=[pig]))
    pink = mob_base_color(assets(), MOB["pig"])
    assert np.abs(centre(with_pig) - pink * R._SHADE_Z).max() < 30, centre(with_pig)
    # A block between the camera and the pig hides it: identical to the block alone.
    blocker = grid(stone=[(8, 8, 4)])
    np.testing.assert_array_equal(render(scene(blocker, mobs=[pig])), render(scene(blocker)))
    # A pig in front of a wall hides the wall, and a wall in front of ... is depth-tested.
    w = wall("stone", 10)
    assert np.abs(centre(render(scene(w, mobs=[pig]))) - centre(with_pig)).max() <= 1
    # Hurt mobs are tinted red.
    hurt = centre(render(scene(grid(), mobs=[pig], hurt=1.0)))
    assert hurt[0] - hurt[1] > centre(with_pig)[0] - centre(with_pig)[1] + 20


def test_mobs_distinct_on_screen():
    camera = dict(eye=(8.5, 8.6, 3.0), pitch=15.0)
    floor = grid(grass=[(i, 6, k) for i in range(N) for k in range(N)])
    shots = {}
    for name in ("cow", "sheep", "pig", "chicken", "zombie", "spider", "enderman", "skeleton"):
        img = render(scene(floor, mobs=[(name, (8.5, 7.0, 5.5))], **camera))
        mask = np.any(img != render(scene(floor, **camera)), -1)
        assert mask.sum() >= 4, name
        shots[name] = (img[mask].astype(np.float32).mean(0), mask.sum())
    names = list(shots)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (ca, na), (cb, nb) = shots[a], shots[b]
            colour_differs = np.abs(ca - cb).max() > 12
            shape_differs = abs(na - nb) > 0.3 * max(na, nb)
            assert colour_differs or shape_differs, (a, b, shots[a], shots[b])


def test_translucent_water_blends_with_what_is_behind():
    stone = wall("stone", 10)
    water_in_front = stone.copy()
    water_in_front[:, :, 6] = ID["water"]
    behind = centre(render(scene(stone)))
    blended = centre(render(scene(water_in_front)))
    water_alone = centre(render(scene(wall("water", 6))))  # sky behind the water
    assert blended[2] > blended[0] + 20  # bluish
    assert np.abs(blended - behind).max() > 15 and np.abs(blended - water_alone).max() > 5


def test_leaves_have_holes_and_carpet_is_thin():
    sky = sky_mask(render(scene(wall("leaves", 6))))
    assert 0.1 < sky.mean() < 0.6
    # Carpet is 1/16 high: seen edge-on at eye height it is invisible, from above it shows.
    carpet = grid(white_carpet=[(i, 8, k) for i in range(N) for k in range(4, N)])
    assert sky_at_centre(render(scene(carpet)))
    above = dict(eye=(8.5, 9.5, 2.5), pitch=30.0)
    seen = render(scene(carpet, **above))
    assert centre(seen).min() > 150 and not sky_at_centre(seen, **above)  # white wool


def test_distance_fog_hides_far_blocks():
    far = render(scene(wall("log", 15)))  # 12.5 blocks away > max_distance 12
    assert sky_mask(far).all()
    near = render(scene(wall("log", 4)))
    assert not sky_mask(near).any()


def test_vmap_matches_per_scene_renders():
    # vmap goes through the custom batching rule (all tiles of all scenes in one loop) and must
    # equal the single-scene renders bit for bit.
    scenes = [
        scene(wall("stone", 9), yaw=10.0),
        scene(wall("dirt", 7), yaw=-30.0, pitch=20.0, mobs=[("cow", (8.5, 7.0, 5.5))]),
        scene(grid(stone=[(8, 8, 12)]), pitch=-45.0, daylight=0.3),
        scene(wall("grass", 9), yaw=20.0, pitch=10.0, mobs=[("sheep", (8.0, 7.0, 6.0))]),
    ]
    batch = jax.tree.map(lambda *x: jnp.stack(x), *scenes)
    a = assets()
    out = jax.jit(jax.vmap(lambda s: R.render_first_person(s, a, CFG)))(batch)
    singles = np.stack([render(s) for s in scenes])
    np.testing.assert_array_equal(np.asarray(out), singles)


def test_lean_march_matches_plain_step_loop():
    # The default march (lean air-only steps, full steps only at special/translucent cells)
    # against the plain per-step loop (lean_steps=0) on mixed scenes. Cell-crossing times are
    # accumulated differently (brick jumps recompute them), so a texel or a grazed edge may
    # round the other way in rare pixels; on these scenes the pictures are identical.
    rng = np.random.default_rng(7)
    b = np.zeros((N, N, N), np.uint8)
    b[:, :6, :] = ID["dirt"]
    b[:, 6, :] = ID["grass"]
    b[rng.random((N, N, N)) < 0.04] = ID["stone"]
    b[3:7, 7:10, 9:13] = ID["leaves"]
    b[9:14, 6, 5:10] = ID["water"]
    b[2:5, 7, 4:8] = ID["white_carpet"]
    b[:, 9:, :] = np.where(rng.random((N, N - 9, N)) < 0.02, ID["leaves"], 0)
    b[EYE[0].__int__() - 1 : 10, 8:10, 2:4] = 0  # keep the eye in air
    scenes = [
        scene(b, yaw=yaw, pitch=pitch, mobs=[("pig", (9.0, 7.0, 9.0))], daylight=light)
        for yaw, pitch, light in [(0.0, 20.0, 1.0), (140.0, 35.0, 0.5), (-60.0, -10.0, 1.0)]
    ]
    batch = jax.tree.map(lambda *x: jnp.stack(x), *scenes)
    ref_cfg = dataclasses.replace(CFG, lean_steps=0)
    fast = np.asarray(jax.jit(R.render_batch, static_argnames="cfg")(batch, assets(), CFG))
    ref = np.asarray(jax.jit(R.render_batch, static_argnames="cfg")(batch, assets(), ref_cfg))
    assert not np.all(fast == fast[:, :1, :1])  # something is drawn
    same = np.all(fast == ref, axis=-1)
    assert same.mean() >= 0.995, same.mean()


def test_camera_helpers_same_with_and_without_jit():
    # The full renderer's no-jit run costs a second big compile (~30 s on the shared CPU); its
    # traced helpers are checked here, the renderer itself under jit and under jit(vmap).
    args = (jnp.asarray([[1.0, 2.0, 9.0], [3.0, 4.0, 5.0]]), jnp.asarray(EYE), 33.0, -12.0)
    eager = R.project_points(*args, CFG)
    jitted = jax.jit(R.project_points, static_argnames="cfg")(*args, cfg=CFG)
    for e, j in zip(eager, jitted, strict=True):
        np.testing.assert_allclose(e, j, rtol=1e-6)
    np.testing.assert_allclose(
        R.ray_directions(10.0, 5.0, CFG),
        jax.jit(R.ray_directions, static_argnames="cfg")(10.0, 5.0, cfg=CFG),
        rtol=1e-6,
        atol=1e-7,
    )


def test_textures_deterministic_distinct_and_fallback():
    a, b = make_render_assets(BLOCKS, MOBS), make_render_assets(BLOCKS, MOBS)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    names = ["stone", "dirt", "grass", "sand", "log", "cobblestone", "planks", "obsidian"]
    names += ["diamond_ore", "gravel", "crafting_table", "furnace", "snow", "clay", "bedrock"]
    t = make_render_assets(["air", *names], [])
    means = (
        np.asarray(t.block_tex[1:, :, :, :, :3], np.float32).mean((2, 3)).reshape(len(names), -1)
    )
    dist = np.abs(means[:, None] - means[None]).max(-1) + np.eye(len(names)) * 1e3
    assert dist.min() > 4, dist.min()
    # Faces differ where Minecraft's do.
    grass = np.asarray(t.block_tex[3], np.float32)
    assert np.abs(grass[0].mean((0, 1)) - grass[FACE_X].mean((0, 1))).max() > 20
    kinds = np.asarray(make_render_assets(BLOCKS, MOBS).block_kind)
    assert kinds[ID["stone"]] == KIND_OPAQUE and kinds[ID["water"]] == KIND_TRANSLUCENT
    assert kinds[ID["leaves"]] == KIND_SPECIAL and kinds[ID["white_carpet"]] == KIND_SPECIAL
    # Cow and sheep differ clearly; a sheared sheep differs from a woolly one.
    cow, sheep = mob_base_color(a, MOB["cow"]), mob_base_color(a, MOB["sheep"])
    assert np.abs(cow - sheep).max() > 40
    assert np.abs(mob_base_color(a, MOB["sheep"], 1) - sheep).max() > 20
    # Unknown names: deterministic opaque fallback, no error; unknown mobs get a box model.
    u1 = make_render_assets(["air", "mystery_block"], ["mystery_mob"])
    u2 = make_render_assets(["air", "mystery_block"], ["mystery_mob"])
    assert int(u1.block_kind[1]) == KIND_OPAQUE
    np.testing.assert_array_equal(np.asarray(u1.block_tex), np.asarray(u2.block_tex))
    assert float(u1.mob_radius[0, 0]) > 0


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="id 0 must be 'air'"):
        make_render_assets(["stone", "air"], [])
    with pytest.raises(ValueError, match="at most 256"):
        make_render_assets(["air"] + [f"b{i}" for i in range(300)], [])
    s = scene(wall("stone", 8))
    with pytest.raises(ValueError, match="integer block ids"):
        R.render_first_person(s.replace(blocks=s.blocks.astype(jnp.float32)), assets(), CFG)
    with pytest.raises(ValueError, match=r"expected \[X, Y, Z\]"):
        R.render_first_person(s.replace(blocks=s.blocks[0]), assets(), CFG)
    with pytest.raises(ValueError, match="fov_deg"):
        R.RenderConfig(fov_deg=0.0)


def test_padded_mob_slots_are_dead():
    s = R.make_scene(grid(), EYE, mob_pos=[(8.5, 7.0, 6.0)], num_mobs=3)
    np.testing.assert_array_equal(np.asarray(s.mob_alive), [True, False, False])
    s = R.make_scene(grid(), EYE, mob_pos=[(8.5, 7.0, 6.0)] * 2, mob_alive=[True, False])
    np.testing.assert_array_equal(np.asarray(s.mob_alive), [True, False])
    assert not np.asarray(R.make_scene(grid(), EYE, num_mobs=2).mob_alive).any()


def _mob_hits_reference(o, d, pos, yaw, mtype, a):
    """Nearest (t, mob, box) per ray by a plain float64 slab test of every box of every mob."""
    best_t = np.full(len(d), np.inf)
    best_m = np.zeros(len(d), int)
    best_k = np.zeros(len(d), int)
    for m in range(len(pos)):
        y = np.deg2rad(yaw[m])
        xa, za = np.array([np.cos(y), 0, np.sin(y)]), np.array([-np.sin(y), 0, np.cos(y)])
        rel = o - pos[m]
        ol = np.array([rel @ xa, rel[1], rel @ za])
        dl = np.stack([d @ xa, d[:, 1], d @ za], -1)
        dl = np.where(np.abs(dl) < 1e-7, 1e-7, dl)
        lo, hi = np.asarray(a.mob_lo[mtype[m], 0], float), np.asarray(a.mob_hi[mtype[m], 0], float)
        for k in range(len(lo)):
            if np.any(lo[k] > hi[k]):
                continue
            ta, tb = (lo[k] - ol) / dl, (hi[k] - ol) / dl
            tn, tf = np.minimum(ta, tb).max(-1), np.maximum(ta, tb).min(-1)
            t = np.where((tn <= tf) & (tf > 0), np.maximum(tn, 0), np.inf)
            better = t < best_t
            best_t, best_m, best_k = (
                np.where(better, t, best_t),
                np.where(better, m, best_m),
                np.where(better, k, best_k),
            )
    return best_t, best_m, best_k


def test_mob_windows_match_a_plain_test_of_every_box():
    # _trace_mobs tests each mob on the narrowest 32/64/128-column window that holds it (or the
    # whole tile) with the boxes unrolled; near, mid and far mobs exercise every branch.
    cfg = R.RenderConfig(height=160, width=256, tile_rows=8, max_distance=30.0)
    tile = 9  # rows 72-79, just above the centre
    a = assets()
    o = np.asarray(EYE, np.float32)
    d = np.asarray(R.ray_directions(0.0, 0.0, cfg))[8 * tile : 8 * tile + 8].reshape(-1, 3)
    pos = np.array([[8.3, 7.6, 4.6], [6.5, 7.6, 7.0], [10.0, 7.6, 11.0], [9.0, 7.6, 19.0]])
    yaw = np.array([10.0, 75.0, 200.0, 300.0])
    mtype = np.array([MOB["cow"], MOB["zombie"], MOB["pig"], MOB["spider"]])
    s = R.make_scene(grid(), EYE, 0.0, 0.0, mob_pos=pos, mob_yaw_deg=yaw, mob_type=mtype)
    batch = jax.tree.map(lambda x: x[None], s)
    relevant, col_lo, col_hi = R._mob_tile_mask(batch, a, cfg, 20)
    span = np.asarray(col_hi - np.maximum(col_lo, 0))[0]
    assert {int(np.searchsorted([32, 64, 128], w)) for w in span} == {0, 1, 2, 3}, span
    mobs = (s.mob_pos, s.mob_yaw_deg, s.mob_type, s.mob_variant)
    t, m, k, _ = jax.jit(R._trace_mobs, static_argnames="cfg")(
        s.eye_pos, jnp.asarray(d), mobs, relevant[0, tile], col_lo[0], col_hi[0], a, cfg=cfg
    )
    rt, rm, rk = _mob_hits_reference(o.astype(float), d.astype(float), pos, yaw, mtype, a)
    t = np.where(np.asarray(t) > 1e29, np.inf, np.asarray(t))
    hit, rhit = np.isfinite(t), np.isfinite(rt)
    assert rhit.sum() > 100  # the mobs are on screen
    assert (hit != rhit).mean() < 0.005  # grazed edges may round the other way
    both = hit & rhit
    np.testing.assert_allclose(t[both], rt[both], rtol=1e-4, atol=1e-4)
    assert (np.asarray(m)[both] == rm[both]).mean() > 0.995
    assert (np.asarray(k)[both] == rk[both]).mean() > 0.995


def test_fine_steps_on_a_few_gathered_rays_match_the_whole_tile(monkeypatch):
    # Rays waiting at special/translucent cells are gathered into a batch of at most
    # _FINE_COMPACT rays for the fine step (the whole tile when more wait); with a tiny batch
    # both branches run on these scenes and the picture must not change.
    b = wall("dirt", 12)
    b[:, 6, :] = ID["water"]
    b[3:12, 7:9, 6:9] = ID["leaves"]
    b[2:6, 7, 3:6] = ID["white_carpet"]
    batch = jax.tree.map(
        lambda *x: jnp.stack(x),
        scene(b, pitch=25.0, mobs=[("cow", (8.5, 7.0, 5.0))]),
        scene(b, yaw=30.0, pitch=10.0, daylight=0.4),
    )
    fn = functools.partial(R.render_batch, cfg=CFG)
    ref = np.asarray(jax.jit(fn)(batch, assets()))
    monkeypatch.setattr(R, "_FINE_COMPACT", 3)
    small = np.asarray(jax.jit(fn)(batch, assets()))
    assert len(np.unique(ref.reshape(-1, 3), axis=0)) > 20  # water, leaves, carpet, cow, sky
    np.testing.assert_array_equal(small, ref)
