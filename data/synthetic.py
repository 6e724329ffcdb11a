"""Synthetic captioned clips from the embedded world, written as a MineCLIP training dataset.

    python -m data.synthetic --num-clips 512 --out ~/datasets/mc_synthetic

Each clip is one scripted behaviour run in the embedded JAX world (`envs.voxel`): approach and
attack a cow / sheep / zombie at night / spider, shear a sheep, milk a cow, chop a tree, head for
the ocean and swim, dig a hole, lay carpet (place blocks), or wander. Controllers steer with
privileged state (mob positions, log blocks, the distance-to-ocean field) and act through the
world's MultiDiscrete actions only. After a random warm-up, 16 frames are rendered at 160x256,
one every `frame_stride` game ticks. The caption is generated from what the simulator says
happened (kills, shears, milk, mined and placed blocks, water, biome, time of day), in one of
several phrasings, so a clip whose behaviour did not succeed gets an "attempt" caption rather
than a false one.

Every clip runs through one jitted rollout (behaviour, task parameters, warm-up and key are
traced), so the world compiles once per build. Output follows the training-data contract with a
held-out `test` split; the whole build is a pure function of the config (seed included).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from data import tfds_io, tokens

TICKS_PER_SECOND = 20
NUM_FRAMES = 16

# Controllers (the index is traced; lax.switch picks the branch).
ATTACK_MOB, USE_ON_MOB, GO_TO_OCEAN, DIG_DOWN, CHOP_TREE, LAY_BLOCKS, WANDER = range(7)


@dataclasses.dataclass(frozen=True)
class Behaviour:
    """A scripted behaviour: the world task it runs in and the controller that acts."""

    name: str  # behaviour id, also stored in clip ids.
    task: str  # prompt of the envs.tasks task whose initial conditions the clip starts from.
    controller: int  # one of the controller constants above.
    target_mob: str = ""  # entity the controller steers to ("" for none).
    success: tuple[str, ...] = ()  # caption phrasings when the behaviour succeeded.
    attempt: tuple[str, ...] = ()  # caption phrasings when it did not (yet).


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        "hunt_cow", "hunt a cow", ATTACK_MOB, "cow",
        ("hunt a cow", "kill a cow", "the player kills a cow {where}", "slay a cow with a sword"),
        ("attack a cow", "chase a cow and hit it", "run after a cow {where}", "hit a cow with a sword"),
    ),
    Behaviour(
        "hunt_sheep", "hunt a sheep", ATTACK_MOB, "sheep",
        ("hunt a sheep", "kill a sheep", "the player kills a sheep {where}"),
        ("attack a sheep", "chase a sheep and hit it", "run after a sheep {where}"),
    ),
    Behaviour(
        "shear_sheep", "shear a sheep", USE_ON_MOB, "sheep",
        ("shear a sheep", "use shears on a sheep to get wool", "shear the wool off a sheep {where}"),
        ("walk up to a sheep holding shears", "approach a sheep with shears {where}"),
    ),
    Behaviour(
        "milk_cow", "milk a cow", USE_ON_MOB, "cow",
        ("milk a cow", "fill a bucket with milk from a cow", "milk the cow {where}"),
        ("walk up to a cow holding a bucket", "approach a cow with an empty bucket {where}"),
    ),
    Behaviour(
        "combat_zombie", "combat a zombie", ATTACK_MOB, "zombie",
        ("kill a zombie {when}", "fight a zombie and win", "slay a zombie with a diamond sword"),
        ("fight a zombie {when}", "attack a zombie with a sword", "combat a zombie {when}"),
    ),
    Behaviour(
        "combat_spider", "combat a spider", ATTACK_MOB, "spider",
        ("kill a spider", "fight a spider and win", "slay a spider {when}"),
        ("fight a spider", "attack a spider with a sword", "combat a spider {when}"),
    ),
    Behaviour(
        "find_ocean", "find an ocean", GO_TO_OCEAN, "",
        ("swim in the ocean", "swim in the water", "jump into the ocean and swim"),
        ("walk towards the ocean", "head to the sea {where}", "look for the ocean {where}"),
    ),
    Behaviour(
        "dig_hole", "dig a hole", DIG_DOWN, "",
        ("dig a hole", "dig straight down", "dig down into the ground with a shovel"),
        ("look down at the ground", "start digging a hole {where}"),
    ),
    Behaviour(
        "chop_tree", "hunt a cow", CHOP_TREE, "",
        ("chop a tree", "cut down a tree for wood", "collect a log from a tree {where}"),
        ("walk to a tree", "punch a tree trunk", "go to a tree {where}"),
    ),
    Behaviour(
        "lay_carpet", "put carpets on the floor", LAY_BLOCKS, "",
        ("place carpet blocks on the floor", "put carpets on the floor", "lay carpet on the ground"),
        ("look at the floor holding carpet", "try to place carpet {where}"),
    ),
    Behaviour(
        "wander", "hunt a cow", WANDER, "",
        ("walk around {where}", "explore {where}", "wander around {where}"),
        ("walk around {where}", "explore {where}", "wander around {where}"),
    ),
)  # fmt: skip
BEHAVIOUR_NAMES: tuple[str, ...] = tuple(b.name for b in BEHAVIOURS)


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    """Build synthetic clips. Run: python -m data.synthetic --num-clips N --out DIR"""

    out: str  # output TFDS dataset directory (must be new or empty unless --overwrite).
    num_clips: int = 256  # clips in train + test.
    seed: int = 0  # seed of worlds, behaviours, warm-ups and captions.
    test_fraction: float = 0.2  # fraction of clips held out as the test split.
    behaviours: tuple[str, ...] = BEHAVIOUR_NAMES  # behaviours to sample from (uniformly).
    frame_stride: int = 4  # game ticks between captured frames (20 ticks = 1 s).
    max_warmup: int = 40  # clips start after 0..max_warmup ticks of the behaviour.
    world_size: int = 32  # world extent in x and z, blocks.
    world_height: int = 32  # world height, blocks.
    world_pool: int = 8  # distinct pre-generated worlds clips start in.
    overwrite: bool = False  # replace a non-empty --out directory.

    def __post_init__(self):
        unknown = sorted(set(self.behaviours) - set(BEHAVIOUR_NAMES))
        if unknown:
            raise ValueError(f"unknown behaviours {unknown}; choose from {list(BEHAVIOUR_NAMES)}")
        if self.num_clips < 2 or not 0 < self.test_fraction < 1:
            raise ValueError("need num_clips >= 2 and 0 < test_fraction < 1 (train and test)")
        if self.frame_stride < 1 or self.max_warmup < 0:
            raise ValueError("need frame_stride >= 1 and max_warmup >= 0")


# ---------------------------------------------------------------------------------------------
# Controllers: (state, tick, key) -> MultiDiscrete action int32 [8], pure JAX
# ---------------------------------------------------------------------------------------------


def _world():
    """The embedded world's modules (imported lazily: `import data` stays light)."""
    from envs import spaces, voxel
    from envs.voxel import tables

    return voxel, spaces, tables


def _action(move=0, strafe=0, jump=0, pitch_bin=12, yaw_bin=12, fn=0, slot=0):
    return jnp.stack(
        [jnp.asarray(v, jnp.int32) for v in (move, strafe, jump, pitch_bin, yaw_bin, fn, 0, slot)]
    )


def _camera_bins(state, target):
    """Camera bins turning toward `target` [3], the horizontal distance and the yaw error."""
    p = state.player
    d = target - p.pos
    horiz = jnp.sqrt(d[0] ** 2 + d[2] ** 2)
    # MC yaw: 0 looks along +z, forward = (-sin yaw, cos yaw).
    want_yaw = jnp.degrees(jnp.arctan2(-d[0], d[2]))
    yaw_err = (want_yaw - p.yaw + 180.0) % 360.0 - 180.0
    eye_y = p.pos[1] + 1.62
    want_pitch = jnp.degrees(jnp.arctan2(eye_y - target[1], jnp.maximum(horiz, 1e-3)))
    pitch_err = want_pitch - p.pitch
    yaw_bin = jnp.clip(jnp.round(yaw_err / 15.0), -12, 12).astype(jnp.int32) + 12
    pitch_bin = jnp.clip(jnp.round(pitch_err / 15.0), -12, 12).astype(jnp.int32) + 12
    return pitch_bin, yaw_bin, horiz, yaw_err


def _nearest_mob(state, mob_type):
    m = state.mobs
    ok = m.alive & (m.mob_type == mob_type)
    dist = jnp.linalg.norm(m.pos - state.player.pos, axis=-1)
    idx = jnp.argmin(jnp.where(ok, dist, jnp.inf))
    return m.pos[idx], ok.any()


def _unstick(move, stuck, tick):
    """Strafe (alternating sides) and jump while walking makes no progress."""
    blocked = (move == 1) & (stuck > 3)
    strafe = jnp.where(blocked, 1 + (tick // 20) % 2, 0)
    return strafe, blocked


def _approach_mob(state, tick, key, mob_type, fn, stuck):
    target, found = _nearest_mob(state, mob_type)
    target = target + jnp.array([0.0, 0.6, 0.0])  # aim at the body, not the feet
    pitch_bin, yaw_bin, horiz, yaw_err = _camera_bins(state, target)
    facing = jnp.abs(yaw_err) < 30.0
    close = horiz < 2.2
    move = jnp.where(found & facing & ~close, 1, 0)
    strafe, blocked = _unstick(move, stuck, tick)
    jump = jnp.where(move == 1, ((tick % 12) == 0) | blocked, 0)  # hop over one-block steps
    act = jnp.where(found & close & facing, fn, 0)
    # Nothing to chase: look around for it.
    yaw_bin = jnp.where(found, yaw_bin, 14)
    return _action(move, strafe, jump, pitch_bin, yaw_bin, act)


def _attack_mob(state, tick, key, mob_type, stuck):
    return _approach_mob(state, tick, key, mob_type, 3, stuck)  # functional 3 = attack


def _use_on_mob(state, tick, key, mob_type, stuck):
    return _approach_mob(state, tick, key, mob_type, 1, stuck)  # functional 1 = use


def _go_to_ocean(state, tick, key, mob_type, stuck):
    p = state.player
    field = state.ocean_distance
    sx, sz = field.shape
    x = jnp.clip(jnp.floor(p.pos[0]).astype(jnp.int32), 0, sx - 1)
    z = jnp.clip(jnp.floor(p.pos[2]).astype(jnp.int32), 0, sz - 1)
    # Step toward the neighbouring column (2 blocks away) nearest to the ocean.
    offsets = jnp.array([[2, 0], [-2, 0], [0, 2], [0, -2], [2, 2], [2, -2], [-2, 2], [-2, -2]])
    nx = jnp.clip(x + offsets[:, 0], 0, sx - 1)
    nz = jnp.clip(z + offsets[:, 1], 0, sz - 1)
    best = jnp.argmin(field[nx, nz])
    target = jnp.stack([nx[best] + 0.5, p.pos[1] + 1.0, nz[best] + 0.5])
    _, yaw_bin, _, _ = _camera_bins(state, target)
    in_ocean = field[x, z] <= 0.0
    # In the water: keep swimming forward at the surface, sweeping the view.
    yaw_bin = jnp.where(in_ocean, jnp.where((tick // 20) % 2 == 0, 13, 11), yaw_bin)
    pitch_bin = jnp.clip(jnp.round((-10.0 - p.pitch) / 15.0), -12, 12).astype(jnp.int32) + 12
    strafe, blocked = _unstick(1, stuck, tick)
    jump = jnp.where(in_ocean | blocked, 1, (tick % 10) == 0)
    return _action(1, strafe, jump, pitch_bin, yaw_bin, 0)


def _dig_down(state, tick, key, mob_type, stuck):
    pitch_bin = jnp.clip(jnp.round((90.0 - state.player.pitch) / 15.0), -12, 12) + 12
    return _action(0, 0, 0, pitch_bin.astype(jnp.int32), 12, 3)


def _chop_tree(state, tick, key, mob_type, stuck, log_block):
    blocks = state.blocks
    is_log = blocks == log_block
    coords = jnp.stack(
        jnp.meshgrid(*(jnp.arange(n) for n in blocks.shape), indexing="ij"), axis=-1
    ).astype(jnp.float32)
    # Prefer trunk cells at head height: distance with the vertical offset weighed more.
    d = coords + 0.5 - state.player.pos
    cost = d[..., 0] ** 2 + d[..., 2] ** 2 + 4.0 * (d[..., 1] - 1.2) ** 2
    flat = jnp.argmin(jnp.where(is_log, cost, jnp.inf))
    target = coords.reshape(-1, 3)[flat] + 0.5
    found = is_log.any()
    pitch_bin, yaw_bin, horiz, yaw_err = _camera_bins(state, target)
    facing = jnp.abs(yaw_err) < 30.0
    close = horiz < 2.0
    move = jnp.where(found & facing & ~close, 1, 0)
    strafe, blocked = _unstick(move, stuck, tick)
    jump = jnp.where(move == 1, ((tick % 12) == 0) | blocked, 0)
    yaw_bin = jnp.where(found, yaw_bin, 14)
    return _action(move, strafe, jump, pitch_bin, yaw_bin, jnp.where(close, 3, 0))


def _lay_blocks(state, tick, key, mob_type, stuck):
    # Look at the floor in front, place, and step back now and then to free new cells.
    pitch_bin = jnp.clip(jnp.round((55.0 - state.player.pitch) / 15.0), -12, 12) + 12
    backing = (tick // 6) % 3 == 0
    turn = jnp.where((tick % 30) == 0, 14, 12)
    return _action(
        jnp.where(backing, 2, 0), 0, 0, pitch_bin.astype(jnp.int32), turn, 6, slot=0
    )  # functional 6 = place, from the mainhand slot


def _wander(state, tick, key, mob_type, stuck):
    turn = jax.random.randint(key, (), 11, 14)  # -15, 0 or +15 degrees
    turn = jnp.where(stuck > 3, 15, turn)  # facing a wall: turn away
    pitch_bin = jnp.clip(jnp.round((0.0 - state.player.pitch) / 15.0), -12, 12) + 12
    return _action(
        1, 0, (tick % 10) == 0, pitch_bin.astype(jnp.int32), jnp.where(tick % 8 == 0, turn, 12)
    )


def controller_action(controller, state, tick, key, mob_type, stuck, log_block):
    """The scripted action of `controller` (traced int) in `state`.

    `stuck` counts consecutive ticks in which a forward move left the player in place.
    """
    branches = [
        _attack_mob,
        _use_on_mob,
        _go_to_ocean,
        _dig_down,
        functools.partial(_chop_tree, log_block=log_block),
        _lay_blocks,
        _wander,
    ]
    return jax.lax.switch(controller, branches, state, tick, key, mob_type, stuck)


# ---------------------------------------------------------------------------------------------
# Rollout and ground truth
# ---------------------------------------------------------------------------------------------


def _ground_truth(initial, final, mob_type, static_tables):
    """What happened between two states, as scalars the captioner reads."""
    _, spaces, tables = static_tables
    p = final.player
    sx, sz = final.biome.shape
    x = jnp.clip(jnp.floor(p.pos[0]).astype(jnp.int32), 0, sx - 1)
    z = jnp.clip(jnp.floor(p.pos[2]).astype(jnp.int32), 0, sz - 1)
    body = jnp.floor(p.pos + jnp.array([0.0, 0.4, 0.0])).astype(jnp.int32)
    body = jnp.clip(body, 0, jnp.array(final.blocks.shape) - 1)
    liquid = jnp.asarray(tables.BLOCK_LIQUID)[final.blocks[body[0], body[1], body[2]]]
    item = spaces.item_id
    sheep = final.mobs.mob_type == spaces.entity_id("sheep")
    sheared = jnp.sum(sheep & (final.mobs.variant == 1)) - jnp.sum(
        (initial.mobs.mob_type == spaces.entity_id("sheep")) & (initial.mobs.variant == 1)
    )
    milk = jnp.sum(jnp.where(final.inv.item == item("milk_bucket"), final.inv.count, 0))

    def mob_distance(state):
        ok = state.mobs.alive & (state.mobs.mob_type == mob_type)
        d = jnp.linalg.norm(state.mobs.pos - state.player.pos, axis=-1)
        return jnp.min(jnp.where(ok, d, jnp.inf))

    return {
        "mob_distance_start": mob_distance(initial),
        "mob_distance_end": mob_distance(final),
        "kills": final.stats_kills[mob_type] - initial.stats_kills[mob_type],
        "sheared": sheared,
        "milked": milk,
        "in_water": liquid,
        "mined_total": jnp.sum(final.stats_mines) - jnp.sum(initial.stats_mines),
        "logs_mined": final.stats_mines[item("log")] - initial.stats_mines[item("log")],
        "carpet_placed": final.stats_places[item("carpet")] - initial.stats_places[item("carpet")],
        "depth": initial.player.pos[1] - p.pos[1],
        "pitch": p.pitch,
        "world_time": final.world_time % 24000,
        "biome": final.biome[x, z],
    }


def make_rollout(static, render_static, num_frames: int, stride: int, max_warmup: int):
    """`rollout(key, params, controller, mob_type, warmup) -> (frames, ground truth)`, one clip.

    One `lax.scan` over `max_warmup + num_frames * stride` ticks with a single world step in its
    body; a frame is rendered (under `lax.cond`, so only then) every `stride` ticks once this
    clip's own warm-up is over, and the state freezes after the clip's last frame. One step and
    one render in the program keep the compile short; different behaviours and tasks are traced
    arguments, so every clip of a build reuses the compiled program.
    """
    world = _world()
    voxel, _, tables = world
    log_block = tables.B["log"]
    total_ticks = max_warmup + num_frames * stride

    def rollout(key, params, controller, mob_type, warmup):
        k_reset, key = jax.random.split(key)
        _, state = voxel.reset(k_reset, params, static)
        initial = state
        frames = jnp.zeros((num_frames, render_static.height, render_static.width, 3), jnp.uint8)
        clip_end = warmup + num_frames * stride

        def tick_fn(carry, tick):
            state, key, stuck, frames = carry
            key, k_act, k_step = jax.random.split(key, 3)
            action = controller_action(controller, state, tick, k_act, mob_type, stuck, log_block)
            _, new_state, *_ = voxel.step(k_step, state, action, params, static)
            moved = jnp.linalg.norm((new_state.player.pos - state.player.pos)[jnp.array([0, 2])])
            stuck = jnp.where((action[0] == 1) & (moved < 0.02), stuck + 1, 0)
            active = tick < clip_end  # after the clip, the state stays as it ended
            state = jax.tree.map(lambda n, o: jnp.where(active, n, o), new_state, state)
            since = tick - warmup
            capture = active & (since >= 0) & (since % stride == stride - 1)
            frames = jax.lax.cond(
                capture,
                lambda f: jax.lax.dynamic_update_index_in_dim(
                    f, voxel.render_state(state, render_static), since // stride, 0
                ),
                lambda f: f,
                frames,
            )
            return (state, key, stuck, frames), None

        carry = (state, key, jnp.int32(0), frames)
        (state, _, _, frames), _ = jax.lax.scan(tick_fn, carry, jnp.arange(total_ticks))
        return frames, _ground_truth(initial, state, mob_type, world)

    return rollout


# ---------------------------------------------------------------------------------------------
# Captions
# ---------------------------------------------------------------------------------------------


def _readable_biome(biome_id: int) -> str:
    _, spaces, _ = _world()
    name = spaces.BIOME_NAMES.get(int(biome_id), "overworld")
    return name.replace("_", " ").replace("swampland", "swamp").replace("extreme hills", "hills")


def is_night(world_time: int) -> bool:
    return 13000 <= int(world_time) % 24000 < 23000


def succeeded(behaviour: Behaviour, truth: dict) -> bool:
    """Did the simulator's ground truth show the behaviour's outcome?"""
    name = behaviour.name
    if name in ("hunt_cow", "hunt_sheep", "combat_zombie", "combat_spider"):
        return truth["kills"] > 0
    if name == "shear_sheep":
        return truth["sheared"] > 0
    if name == "milk_cow":
        return truth["milked"] > 0
    if name == "find_ocean":
        return bool(truth["in_water"])
    if name == "dig_hole":
        return truth["mined_total"] > 0 and truth["depth"] >= 0.9
    if name == "chop_tree":
        return truth["logs_mined"] > 0
    if name == "lay_carpet":
        return truth["carpet_placed"] > 0
    return True  # wandering always "succeeds"


def caption(behaviour: Behaviour, truth: dict, rng: np.random.Generator) -> str:
    """One phrasing of what happened, with the biome and time of day from the simulator."""
    phrasings = behaviour.success if succeeded(behaviour, truth) else behaviour.attempt
    template = phrasings[int(rng.integers(len(phrasings)))]
    biome = _readable_biome(truth["biome"])
    when = "at night" if is_night(truth["world_time"]) else "during the day"
    if biome.split()[-1] in template or behaviour.name == "find_ocean" and "ocean" in biome:
        where = when  # "look for the ocean in the ocean" reads wrong
    else:
        where = f"in the {biome}" if rng.random() < 0.5 else f"in the {biome} {when}"
    if "{where}" not in template and "{when}" not in template and rng.random() < 0.7:
        template += " {where}"  # most captions say where: clips differ by biome, not just act
    return " ".join(template.format(where=where, when=when).split())


# ---------------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------------


def clip_plan(config: SyntheticConfig) -> list[dict]:
    """Per clip: behaviour, warm-up ticks, split and seeds (host-side, from the config seed)."""
    rng = np.random.default_rng([config.seed, 1])
    names = list(config.behaviours)
    # Balanced behaviours (cycled), in a random order.
    order = rng.permutation(config.num_clips)
    plan = []
    for i in range(config.num_clips):
        plan.append(
            {
                "index": i,
                "behaviour": names[int(order[i]) % len(names)],
                "warmup": int(rng.integers(0, config.max_warmup + 1)),
                "key_seed": int(rng.integers(2**31)),
            }
        )
    test_count = max(1, int(round(config.test_fraction * config.num_clips)))
    test = set(rng.choice(config.num_clips, test_count, replace=False).tolist())
    for clip in plan:
        clip["split"] = "test" if clip["index"] in test else "train"
    return plan


@functools.cache
def _simulator(config_key: tuple):
    """Compiled rollout and per-behaviour params for a world shape (cached per build shape)."""
    world_size, world_height, world_pool, seed, stride, max_warmup = config_key
    voxel, spaces, _ = _world()
    from envs import tasks

    static = voxel.VoxelStaticConfig(
        size_x=world_size,
        size_z=world_size,
        size_y=world_height,
        world_pool_size=world_pool,
        render=False,
    )
    render_static = dataclasses.replace(static, render=True)
    params, pool = {}, None
    for b in BEHAVIOURS:
        p = voxel.make_params(tasks.get(b.task), static, seed=seed, pool=pool)
        pool = p.pool
        params[b.name] = p
    rollout = jax.jit(make_rollout(static, render_static, NUM_FRAMES, stride, max_warmup))
    return rollout, params, spaces


def simulate(config: SyntheticConfig, clips: list[dict]) -> list[tuple[np.ndarray, dict]]:
    """Frames uint8 [16, 160, 256, 3] and ground truth for each planned clip."""
    rollout, params, spaces = _simulator(
        (config.world_size, config.world_height, config.world_pool, config.seed,
         config.frame_stride, config.max_warmup)
    )  # fmt: skip
    by_name = {b.name: b for b in BEHAVIOURS}
    out = []
    for clip in clips:
        behaviour = by_name[clip["behaviour"]]
        mob_type = spaces.entity_id(behaviour.target_mob) if behaviour.target_mob else 0
        frames, truth = jax.device_get(
            rollout(
                jax.random.key(clip["key_seed"]),
                params[behaviour.name],
                jnp.int32(behaviour.controller),
                jnp.int32(mob_type),
                jnp.int32(clip["warmup"]),
            )
        )
        out.append((np.asarray(frames), {k: v.item() for k, v in truth.items()}))
    return out


class SyntheticClips(tfds_io.ClipDataset, skip_registration=True):
    """Captioned 16-frame clips of scripted behaviours in the embedded world."""


def build(config: SyntheticConfig) -> dict:
    """Simulate, caption and write the dataset; returns a summary (also in build_report.json)."""
    tfds_io.prepare_output_dir(config.out, config.overwrite)  # fail before simulating
    plan = clip_plan(config)
    results = simulate(config, plan)
    by_name = {b.name: b for b in BEHAVIOURS}
    examples = {"train": [], "test": []}
    summary = {"clips": {"train": 0, "test": 0}, "behaviours": {}}
    texts = []
    for clip, (frames, truth) in zip(plan, results):
        behaviour = by_name[clip["behaviour"]]
        rng = np.random.default_rng([config.seed, 2, clip["index"]])
        text = caption(behaviour, truth, rng)
        start_s = clip["warmup"] / TICKS_PER_SECOND
        end_s = (clip["warmup"] + NUM_FRAMES * config.frame_stride) / TICKS_PER_SECOND
        clip_id = f"synthetic/{clip['index']:06d}/{behaviour.name}"
        texts.append(text)
        examples[clip["split"]].append(
            {"frames": frames, "text": text, "clip_id": clip_id, "start_s": start_s, "end_s": end_s}
        )
        stats = summary["behaviours"].setdefault(behaviour.name, {"clips": 0, "succeeded": 0})
        stats["clips"] += 1
        stats["succeeded"] += int(succeeded(behaviour, truth))
        summary["clips"][clip["split"]] += 1
    unique_texts = sorted(set(texts))  # captions repeat a lot: tokenize each once
    token_ids = dict(zip(unique_texts, tokens.tokenize(unique_texts)))
    for split in examples:
        for ex in examples[split]:
            ex["tokens"] = token_ids[ex["text"]]
    tfds_io.write_clip_dataset(
        config.out,
        {
            split: (lambda items=items: ((ex["clip_id"], ex) for ex in items))
            for split, items in examples.items()
        },
        description=__doc__,
        overwrite=config.overwrite,
        builder_class=SyntheticClips,
    )
    summary["config"] = dataclasses.asdict(config)
    with open(os.path.join(config.out, "build_report.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def main(config: SyntheticConfig) -> None:
    summary = build(config)
    print(f"clips: train {summary['clips']['train']}, test {summary['clips']['test']}")
    for name, stats in sorted(summary["behaviours"].items()):
        print(f"  {name}: {stats['clips']} clips, {stats['succeeded']} succeeded")
    print(f"wrote {config.out}")


if __name__ == "__main__":
    main(tyro.cli(SyntheticConfig))
