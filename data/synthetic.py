"""Captioned clips of the embedded world, for training MineCLIP-mini.

    python -m data.synthetic --out ~/datasets/mc_mini --episodes 2400

Each episode runs one scripted behaviour of `envs.voxel.scripted` in one of the paper's 12 task
worlds: the oracle that solves the task (approach from a distance, the act, the success event),
the oracle sent to the wrong animal, circling the target without reaching it, wandering,
random actions, or acting as a fresh RL agent does (balanced random compact actions held for 4
ticks: the frames a MineCLIP reward meets first, which an earlier model without them scored
high for "hunt a cow" when no cow was in view). Worlds, biomes and times of day come from the
task and the world pool. Every tick is rendered at the agents' frame size (default 48x64), so
clips look exactly like what a policy sees. From each episode `clips_per_episode` windows of 16
frames (one frame every 1 to 4 ticks; 4 is an agent's step) are cut: one around the success
event when there is one, one during the approach, one at random (in a Creative task's episode,
which goes on after its success, often after it: the player at the ocean, in the hole).

Captions come from the simulator's ground truth over the window (kills by mob type, hits on the
target, shears, milk, carpets placed, depth dug, water, distance to and sight of the portal or
target), through an act label (`kill:cow`, `hit:cow`, `chase:cow` for a hunt's approach,
`approach:sheep` for a milking or shearing one, `near:cow` for a target in view and close,
`circle:zombie`, `ocean`, `dig` for going down by mining, `mine` for blocks broken without
going down, `hole` for standing in a shaft dug earlier, `sky` for looking up, `wander`, ...)
and one of several phrasings per label, as a narrator would say them. No caption contains one
of the 12 task prompts verbatim: the reward must come from language generalisation, as
MineCLIP's prompts differ from YouTube transcripts. The act label is stored with each clip;
clips with the same label have equivalent captions (the retrieval benchmark counts them as
matches).

Output: an array clip directory (`mineclip_jax.train` reads it), with episodes of the `test`
split in worlds of another seed than `train`:

    clips.json                  format, frame shape, clip counts, the build config
    {split}_frames.npy          uint8 [N, 16, H, W, 3]
    {split}_tokens.npy          int32 [N, 77] (CLIP BPE, zero padded)
    {split}_clips.jsonl         one JSON line per clip: text, label, clip_id, task, behaviour...
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import os
import shutil
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from data import tokens
from mineclip_jax import compile_cache, run_lock

TICKS_PER_SECOND = 20
NUM_FRAMES = 16
ARRAY_FORMAT = "mineclip-jax-clips/1"

# The paper's 12 task prompts (envs.tasks.paper) and the act label whose clips show each.
TASK_ACTS: dict[str, str] = {
    "milk a cow": "milk",
    "hunt a cow": "kill:cow",
    "shear a sheep": "shear",
    "hunt a sheep": "kill:sheep",
    "combat a spider": "kill:spider",
    "combat a zombie": "kill:zombie",
    "combat a zombie pigman": "kill:zombie_pigman",
    "combat an enderman": "kill:enderman",
    "find a nether portal": "portal",
    "find an ocean": "ocean",
    "dig a hole": "dig",
    "put carpets on the floor": "carpet",
}
ANIMALS = ("cow", "sheep", "pig")
MOBS = ANIMALS + ("spider", "zombie", "zombie_pigman", "enderman")

# Phrasings per act; "{m}" is the mob's name. None contains a task prompt (tested).
_KILL_ANIMAL = (
    "kill a {m}", "kill the {m}", "hunt the {m}", "hunt down a {m}", "hunting a {m} for food",
    "slay a {m} with a sword", "the player kills a {m}", "attack and kill a {m}",
)  # fmt: skip
_KILL_HOSTILE = (
    "kill the {m}", "fight the {m}", "fight a {m} and win", "combat the {m}", "battle a {m}",
    "slay a {m} with a diamond sword", "defeat the {m}", "the player kills a {m}",
)  # fmt: skip
PHRASES: dict[str, tuple[str, ...]] = {
    "milk": (
        "milk the cow", "milking a cow", "fill a bucket with milk from a cow",
        "use a bucket on a cow", "get milk from the cow",
    ),
    "shear": (
        "shear the sheep", "shearing a sheep", "use shears on a sheep",
        "cut the wool off a sheep", "get wool from a sheep with shears",
    ),
    "portal": (
        "find the nether portal", "walk up to a nether portal", "reach the nether portal",
        "arrive at a nether portal", "stand next to the obsidian portal",
    ),
    "ocean": (
        "find the ocean", "swim in the ocean", "reach the sea", "walk into the ocean water",
        "jump into the sea and swim",
    ),
    "dig": (
        "dig down into the ground", "dig the hole", "digging a hole", "dig a pit with a shovel",
        "mine straight down",
    ),
    # Down in a shaft the player dug (two or more blocks below the start), not digging further.
    "hole": (
        "stand at the bottom of a hole", "down in a deep pit", "look down into the hole",
        "inside a hole in the ground", "at the bottom of the pit", "stuck down in a shaft",
    ),
    # Breaking blocks while looking down without going down: what random play does.
    "mine": (
        "break a block", "mine a block of dirt", "punch the ground", "break some blocks",
        "hit the ground and break it", "mine the grass block below",
    ),
    "carpet": (
        "lay carpets on the floor", "put carpet on the ground", "place carpets on the floor",
        "cover the floor with carpet", "put down some carpets",
    ),
    "approach": (
        "walk toward a {m}", "approach the {m}", "run up to a {m}", "move closer to the {m}",
        "head for the {m} in the distance",
    ),
    "circle": (
        "circle around a {m}", "walk around the {m} without reaching it",
        "run in circles near a {m}", "keep away from the {m}",
    ),
    "approach_place": ("walk toward the {m}", "head for the {m}", "look for the {m}"),
    # The approach of a hunt, as a narrator about to kill says it (the oracle in attack mode).
    "chase": (
        "chase the {m}", "go after the {m} to kill it", "run after a {m} to hunt it",
        "chase down the {m}", "going hunting for a {m}", "sneak up on a {m} to kill it",
    ),
    # The target struck in the window (any controller), before it dies.
    "hit": (
        "hit the {m}", "attack the {m}", "punch a {m}", "strike the {m} again",
        "hunting the {m}, hit it", "hit a {m} with the sword",
    ),
    # The target in view and close at the window's end, whatever the player did.
    "near": (
        "a {m} right in front of the player", "stand next to a {m}", "a {m} close by",
        "look at a {m} up close", "face the {m} from a few blocks away",
    ),
    "wander": ("walk around", "wander around", "explore the area", "look around", "roam about"),
    # Looking up, the frame all sky: what fresh agents see often (and, captioned "ocean" when
    # they stood on a beach, what taught an earlier model that blue sky is the sea).
    "sky": (
        "look up at the sky", "stare at the clouds", "looking straight up", "gaze at the blue sky",
        "look up above the trees",
    ),
}  # fmt: skip

# Behaviours: (name, task prompt, scripted behaviour, target override, sampling weight).
_ORACLE, _CIRCLE, _WANDER, _RANDOM, _AGENT = range(5)  # = envs.voxel.scripted.BEHAVIOUR_*
MAX_STRIDE = 4  # ticks between a clip's frames: 1..4 (4: an agent acting every 4 ticks)
NEAR_DISTANCE = 5.0  # blocks: a visible target this close at a window's end is "near"
SKY_PITCH = 30.0  # degrees above level: the frame shows sky only ("sky", never "ocean")
HOLE_DEPTH = 2  # blocks below the start (and blocks mined) for a window to be "in a hole"


@dataclasses.dataclass(frozen=True)
class Behaviour:
    """One scripted behaviour: the task world it runs in and the controller that acts."""

    name: str  # behaviour id, also in clip ids.
    task: str  # prompt of the paper task whose initial conditions the episode starts from.
    controller: int  # envs.voxel.scripted.BEHAVIOUR_* (oracle, circle, wander, random, agent).
    target: str = ""  # entity the oracle steers to instead of the task's own ("" = the task's).
    weight: float = 1.0  # relative sampling frequency of episodes.
    hide_target: bool = False  # the target's mobs are not drawn: the same approach, camera and
    # swings with nothing there, a clip that differs from the real act only in the animal's
    # presence (always labelled `wander`).


def _behaviours() -> tuple[Behaviour, ...]:
    out = []
    for prompt, act in TASK_ACTS.items():
        slug = act.replace("kill:", "kill_")
        out.append(Behaviour(f"{slug}", prompt, _ORACLE, weight=3.0))
        out.append(Behaviour(f"wander_{slug}", prompt, _WANDER, weight=0.5))
        out.append(Behaviour(f"random_{slug}", prompt, _RANDOM, weight=0.5))
        out.append(Behaviour(f"agent_{slug}", prompt, _AGENT, weight=1.0))
        if act.startswith("kill:") or act in ("milk", "shear", "portal"):
            out.append(Behaviour(f"circle_{slug}", prompt, _CIRCLE, weight=1.0))
        if act.startswith("kill:") or act in ("milk", "shear"):
            out.append(Behaviour(f"hidden_{slug}", prompt, _ORACLE, weight=1.5, hide_target=True))
    for prompt in ("hunt a cow", "milk a cow", "hunt a sheep", "shear a sheep"):
        out.append(Behaviour(f"wrong_pig_{prompt.split()[0]}_{prompt.split()[-1]}", prompt,
                             _ORACLE, target="pig", weight=0.75))  # fmt: skip
    out.append(Behaviour("wrong_sheep_hunt_cow", "hunt a cow", _ORACLE, target="sheep"))
    out.append(Behaviour("wrong_cow_hunt_sheep", "hunt a sheep", _ORACLE, target="cow"))
    return tuple(out)


BEHAVIOURS: tuple[Behaviour, ...] = _behaviours()
BEHAVIOUR_NAMES: tuple[str, ...] = tuple(b.name for b in BEHAVIOURS)


def task_oracle(task: str) -> Behaviour:
    """The scripted oracle that does `task` itself (a paper task prompt): its own target, drawn."""
    for b in BEHAVIOURS:
        if b.task == task and b.controller == _ORACLE and not b.target and not b.hide_target:
            return b
    known = sorted({b.task for b in BEHAVIOURS})
    raise ValueError(f"{task!r}: no scripted oracle for it; use one of {known}")


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    """Build captioned clips. Run: python -m data.synthetic --out DIR --episodes N"""

    out: str  # output directory (must be new or empty unless --overwrite).
    episodes: int = 2400  # episodes in train + test (rounded up to whole batches per split).
    clips_per_episode: int = 3  # 16-frame windows cut from each episode.
    seed: int = 0  # seed of behaviours, episodes and captions (test worlds use seed + 1).
    test_fraction: float = 0.15  # fraction of episodes held out (in worlds of another seed).
    height: int = 48  # frame height (the agents' default render).
    width: int = 64  # frame width.
    episode_ticks: int = 160  # game ticks per episode (20 ticks = 1 s).
    batch: int = 8  # episodes simulated together (one behaviour per batch).
    world_size: int = 32  # world extent in x and z, blocks.
    world_height: int = 32  # world height, blocks.
    world_pool: int = 8  # distinct pre-generated worlds per split.
    overwrite: bool = False  # replace a non-empty --out directory.
    hidden_targets: bool = False  # also run the `hidden_*` behaviours (the oracle's hunts,
    # milkings and shearings drawn without the animal, labelled `wander`): contrast pairs that
    # make the model look at the animal, not at the camera motion of the act.
    all_cores: bool = True  # on a CPU, simulate a batch's episodes on every core (one JAX
    # device each; the clips are the same either way).

    def __post_init__(self):
        problems = []
        if self.episodes < 2 or not 0 < self.test_fraction < 1:
            problems.append("need --episodes >= 2 and 0 < --test-fraction < 1 (train and test)")
        if self.clips_per_episode < 1 or self.batch < 1:
            problems.append("need --clips-per-episode >= 1 and --batch >= 1")
        if self.episode_ticks < 2 * NUM_FRAMES:
            problems.append(f"--episode-ticks must be >= {2 * NUM_FRAMES} (one 2-tick window)")
        if problems:
            raise ValueError("invalid SyntheticConfig: " + "; ".join(problems))


# ---------------------------------------------------------------------------------------------
# Episodes: one jitted scan per batch of episodes, every tick rendered
# ---------------------------------------------------------------------------------------------


def _truth_row(state, params, start_y, success, done, hit):
    """Simulator ground truth the captioner reads, for one tick (`hit`: the tick's attack
    struck the task's target)."""
    from envs import spaces
    from envs.voxel import scripted, signals
    from envs.voxel import tables as T

    p = state.player
    sx, sz = state.biome.shape
    x = jnp.clip(jnp.floor(p.pos[0]).astype(jnp.int32), 0, sx - 1)
    z = jnp.clip(jnp.floor(p.pos[2]).astype(jnp.int32), 0, sz - 1)
    body = jnp.floor(p.pos + jnp.array([0.0, 0.4, 0.0])).astype(jnp.int32)
    body = jnp.clip(body, 0, jnp.array(state.blocks.shape) - 1)
    sheep = state.mobs.mob_type == spaces.entity_id("sheep")
    milk = jnp.where(state.inv.item == spaces.item_id("milk_bucket"), state.inv.count, 0)
    target = scripted._target_point(state, params)
    return {
        "success": success,
        "done": done,  # the episode has ended (the state is frozen from here on)
        "kills": state.stats_kills.astype(jnp.int32),
        "sheared": jnp.sum(sheep & (state.mobs.variant == 1)).astype(jnp.int32),
        "milk": jnp.sum(milk).astype(jnp.int32),
        "places": jnp.sum(state.stats_places).astype(jnp.int32),
        "mines": jnp.sum(state.stats_mines).astype(jnp.int32),
        "depth": (start_y - p.pos[1]).astype(jnp.float32),
        "pitch": p.pitch.astype(jnp.float32),
        "in_water": jnp.asarray(T.BLOCK_LIQUID)[state.blocks[body[0], body[1], body[2]]] > 0,
        "target_distance": jnp.linalg.norm((target - p.pos)[jnp.array([0, 2])]),
        "target_visible": signals.task_signals(state, params).target_visible,
        "hit": hit,
        "portal_distance": jnp.linalg.norm(state.portal_center - p.pos - jnp.array([0, 1.0, 0])),
        "world_time": state.world_time.astype(jnp.int32),
        "biome": state.biome[x, z].astype(jnp.int32),
    }


def without_target(state, params, hide=True):
    """`state` with the task target's mobs hidden (not alive) where `hide`, for drawing only."""
    mobs = state.mobs
    shown = mobs.alive & ~(hide & params.target_entity[mobs.mob_type])
    return state.replace(mobs=mobs.replace(alive=shown))


@functools.cache
def episode_fn(static, ticks: int, mesh=None):
    """Jitted `(keys [B], params, behaviour, mode, hide_target) -> (frames [B, ticks+1, H, W, 3],
    truth)`.
    With a 1-D `mesh` (envs.voxel.parallel.env_mesh) each device runs its share of the B episodes
    (shard_map, no communication: partitioned by jit instead, the scan ran slower than on one).

    `static` renders (its height and width set the frames); the world steps without rendering
    and each tick's frame is rendered once. The state freezes when the episode ends.
    `hide_target` (bool): the frames are drawn without the target's mobs (`without_target`),
    which still act and are struck in the simulated world (the truth rows are the real episode's).
    """
    from jax.sharding import PartitionSpec as P

    from envs.voxel import env as E
    from envs.voxel import parallel, scripted

    step_static = dataclasses.replace(static, render=False)

    def one(key, params, behaviour, mode, hide_target):
        def draw(state):
            return E.render_state(without_target(state, params, hide_target), static)

        k_reset, k_run = jax.random.split(key)
        _, state = E.reset(k_reset, params, step_static)
        start_y = state.player.pos[1]

        def body(carry, inp):
            state, done = carry
            k, tick = inp
            k_act, k_step = jax.random.split(k)
            action = scripted.scripted_action(behaviour, state, params, mode, k_act, tick, k_run)
            _, new, _, term, trunc, info = E.step(k_step, state, action, params, step_static)
            state = jax.tree.map(lambda a, b: jnp.where(done, a, b), state, new)
            ended = done | term | trunc
            hit = info["signals"].attack_hit_target & ~done
            row = _truth_row(state, params, start_y, info["success"] & ~done, ended, hit)
            return (state, ended), (draw(state), row)

        first = (
            draw(state),
            _truth_row(
                state, params, start_y, jnp.bool_(False), jnp.bool_(False), jnp.bool_(False)
            ),
        )
        _, (frames, rows) = jax.lax.scan(
            body, (state, jnp.bool_(False)), (jax.random.split(k_run, ticks), jnp.arange(ticks))
        )
        return jax.tree.map(
            lambda f, r: jnp.concatenate([jnp.asarray(f)[None], r]), first, (frames, rows)
        )

    batched = jax.vmap(one, in_axes=(0, None, None, None, None))
    if mesh is None or mesh.devices.size == 1:
        return jax.jit(batched)
    env, rep = P(parallel.AXIS), P()
    # check_vma=False: every output is per episode, as out_specs says (see parallel.sharded_step)
    return jax.jit(jax.shard_map(batched, mesh=mesh, in_specs=(env, rep, rep, rep, rep),
                                 out_specs=env, check_vma=False))  # fmt: skip


@functools.cache
def _world(config_key: tuple):
    """Static config and per-behaviour params for one split's world pool."""
    from envs import spaces, tasks
    from envs.voxel import env as E
    from envs.voxel import scripted
    from envs.voxel.state import VoxelStaticConfig
    from envs.voxel.worldgen import generate_pool

    size, height, pool_size, seed, h, w = config_key
    static = VoxelStaticConfig(size_x=size, size_z=size, size_y=height, world_pool_size=pool_size,
                               height=h, width=w)  # fmt: skip
    pool = generate_pool(seed, pool_size, static)
    params, modes = {}, {}
    for b in BEHAVIOURS:
        spec = tasks.get(b.task)
        p = E.make_params(spec, static, pool=pool)
        if b.target:
            target = np.zeros(spaces.NUM_ENTITIES, bool)
            target[spaces.entity_id(b.target)] = True
            p = p.replace(target_entity=jnp.asarray(target))
        params[b.name] = p
        modes[b.name] = scripted.mode_for(spec)
    return static, params, modes


def run_episodes(config: SyntheticConfig, behaviour: Behaviour, seed: int, key_seed: int):
    """Frames uint8 [B, T+1, H, W, 3] and ground truth (NumPy) of one batch of episodes."""
    static, params, modes = _world(
        (config.world_size, config.world_height, config.world_pool, seed, config.height,
         config.width)
    )  # fmt: skip
    from envs.voxel import parallel

    # The episodes split over the local devices (every core with --all-cores, the default)
    mesh = parallel.env_mesh(config.batch)
    run = episode_fn(static, config.episode_ticks, mesh)
    keys = jax.random.split(jax.random.key(key_seed), config.batch)
    keys = jax.device_put(keys, parallel.env_sharding(mesh))
    frames, truth = jax.device_get(
        run(keys, params[behaviour.name], jnp.int32(behaviour.controller),
            jnp.int32(modes[behaviour.name]), jnp.bool_(behaviour.hide_target))
    )  # fmt: skip
    return np.asarray(frames), {k: np.asarray(v) for k, v in truth.items()}


# ---------------------------------------------------------------------------------------------
# Windows, act labels and captions
# ---------------------------------------------------------------------------------------------


def window_frames(end: int, stride: int) -> np.ndarray:
    """Frame indices of the 16-frame window ending at frame `end`, one every `stride` ticks."""
    return end - stride * np.arange(NUM_FRAMES - 1, -1, -1)


def choose_windows(truth: dict, behaviour: Behaviour, count: int, rng) -> list[tuple[int, int]]:
    """(end frame, stride) of `count` windows of one episode (truth arrays of length T+1).

    With a success event, the first window ends 0..3 ticks after it (approach and act in view)
    and the second during the approach; the rest are at random, ending no later than 3 ticks
    after the episode's end (`truth["done"]`; the state is frozen from there on). An episode
    that goes on after its success (the Creative tasks: the player stays at the ocean, in the
    hole) so also gives windows of what follows the success, as the judge's episodes show it."""
    n = len(truth["success"])
    hits = np.flatnonzero(truth["success"])
    ended = np.flatnonzero(truth["done"])
    windows = []
    for i in range(count):
        # The widest spacing whose window fits in the episode (--episode-ticks >= 32 fits 2).
        stride = int(rng.integers(1, min(MAX_STRIDE, (n - 1) // (NUM_FRAMES - 1)) + 1))
        lo = stride * (NUM_FRAMES - 1)
        hi = n - 1
        if ended.size:
            hi = min(hi, int(ended[0]) + 3)
        hi = max(hi, lo)
        if hits.size and i == 0:
            end = int(hits[0]) + int(rng.integers(0, 4))
        elif hits.size and i == 1:
            end = int(hits[0]) - NUM_FRAMES * stride - int(rng.integers(0, 8))
        else:
            end = int(rng.integers(lo, hi + 1))
        windows.append((int(np.clip(end, lo, hi)), stride))
    return windows


def act_label(truth: dict, behaviour: Behaviour, end: int, stride: int) -> str:
    """What happened in the window, from ground truth only (the caption's equivalence class)."""
    from envs import spaces

    if behaviour.hide_target:
        return "wander"  # whatever the hidden target did, nothing of it is in the frames
    start = max(end - NUM_FRAMES * stride, 0)

    def delta(name):
        return truth[name][end] - truth[name][start]

    kills = delta("kills")
    if kills.max() > 0:
        return "kill:" + spaces.ENTITIES[int(np.argmax(kills))]
    if delta("sheared") > 0:
        return "shear"
    if delta("milk") > 0:
        return "milk"
    if delta("places") > 0:
        return "carpet"
    looking_down, looking_up = truth["pitch"][end] > 60, truth["pitch"][end] < -SKY_PITCH
    if looking_down and delta("depth") >= 0.9 and delta("mines") > 0:
        return "dig"  # looking down and going down by mining (walking downhill is not digging)
    if truth["depth"][end] >= HOLE_DEPTH and truth["mines"][end] >= HOLE_DEPTH:
        return "hole"  # down in a shaft dug earlier in the episode
    if looking_down and delta("mines") > 0:
        return "mine"  # blocks broken in front of the feet, no way down
    if truth["in_water"][end] or (_is_ocean(truth["biome"][end]) and not looking_up):
        return "ocean"
    if truth["portal_distance"][end] < 3.0:
        return "portal"
    target = _target_name(behaviour)
    if target in MOBS and np.any(truth["hit"][start + 1 : end + 1]):
        return "hit:" + target
    closer = truth["target_distance"][start] - truth["target_distance"][end]
    if behaviour.controller == _ORACLE and target and closer >= 1.0:
        if target not in MOBS:
            return "approach_place:" + target
        hunting = TASK_ACTS[behaviour.task].startswith("kill:")
        return ("chase:" if hunting else "approach:") + target
    if behaviour.controller == _CIRCLE and target:
        near = truth["target_distance"][start : end + 1].min() < 8.0
        if near and target in MOBS:
            return "circle:" + target
    if (target in MOBS and truth["target_visible"][end]
            and truth["target_distance"][end] < NEAR_DISTANCE):  # fmt: skip
        return "near:" + target
    return "sky" if looking_up else "wander"


def _is_ocean(biome: int) -> bool:
    from envs import spaces

    return "ocean" in spaces.BIOME_NAMES.get(int(biome), "") or "beach" in spaces.BIOME_NAMES.get(
        int(biome), ""
    )


def _target_name(behaviour: Behaviour) -> str:
    from envs import tasks

    if behaviour.target:
        return behaviour.target
    spec = tasks.get(behaviour.task)
    if spec.initial_mobs:
        return spec.initial_mobs[0]
    act = TASK_ACTS[behaviour.task]
    return {"portal": "nether portal", "ocean": "ocean"}.get(act, "")


def readable_biome(biome_id: int) -> str:
    from envs import spaces

    name = spaces.BIOME_NAMES.get(int(biome_id), "overworld")
    name = name.replace("_", " ").replace("swampland", "swamp").replace("extreme hills", "hills")
    return name.replace(" m", "").replace(" plus", "")


def is_night(world_time: int) -> bool:
    return 13000 <= int(world_time) % 24000 < 23000


def caption(label: str, biome_id: int, world_time: int, rng) -> str:
    """One narrator phrasing of the act `label`, sometimes with where and when it happened."""
    kind, _, subject = label.partition(":")
    if kind == "kill":
        phrasings = _KILL_ANIMAL if subject in ANIMALS else _KILL_HOSTILE
    else:
        phrasings = PHRASES[kind]
    text = phrasings[int(rng.integers(len(phrasings)))]
    text = text.format(m=subject.replace("_", " "))
    when = "at night" if is_night(world_time) else "during the day"
    where = readable_biome(biome_id)
    r = rng.random()
    if r < 0.3:
        text += f" in the {where}"
    elif r < 0.5:
        text += f" {when}"
    elif r < 0.6:
        text += f" in the {where} {when}"
    return " ".join(text.split())


def episode_clips(truth: dict, behaviour: Behaviour, count: int, rng) -> list[tuple]:
    """The `count` captioned windows of one episode (truth arrays of length T+1): (end frame,
    stride, frame indices, act label, caption) each, windows chosen first, then captioned in
    order (the rng's draws, and so a build's clips, depend on that order)."""
    clips = []
    for end, stride in choose_windows(truth, behaviour, count, rng):
        label = act_label(truth, behaviour, end, stride)
        text = caption(label, truth["biome"][end], truth["world_time"][end], rng)
        clips.append((end, stride, window_frames(end, stride), label, text))
    return clips


def captions_contain_prompt(texts, prompts=tuple(TASK_ACTS)) -> list[tuple[str, str]]:
    """(caption, prompt) pairs where a task prompt appears verbatim in a caption."""
    found = []
    for t in texts:
        padded = f" {' '.join(t.lower().split())} "
        found += [(t, p) for p in prompts if f" {p} " in padded]
    return found


# ---------------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------------


def behaviours(config: SyntheticConfig) -> tuple[Behaviour, ...]:
    """The behaviours a build samples episodes from."""
    return tuple(b for b in BEHAVIOURS if config.hidden_targets or not b.hide_target)


def episode_plan(config: SyntheticConfig) -> list[dict]:
    """Per batch of episodes: split, behaviour, world seed and key (from the config seed)."""
    rng = np.random.default_rng([config.seed, 1])
    batches = -(-config.episodes // config.batch)
    test_batches = max(1, int(round(config.test_fraction * batches)))
    pool = behaviours(config)
    weights = np.array([b.weight for b in pool])
    plan = []
    for split, n, world_seed in (("train", batches - test_batches, config.seed),
                                 ("test", test_batches, config.seed + 1)):  # fmt: skip
        # Stratified: every behaviour in proportion to its weight, then shuffled.
        counts = np.floor(weights / weights.sum() * n).astype(int)
        extra = rng.choice(len(pool), n - counts.sum(), replace=False,
                           p=weights / weights.sum())  # fmt: skip
        counts[extra] += 1
        names = np.repeat(np.arange(len(pool)), counts)
        for i in rng.permutation(names):
            plan.append({"split": split, "behaviour": pool[i].name,
                         "world_seed": world_seed, "key_seed": int(rng.integers(2**31))})  # fmt: skip
    return plan


# Bytes a clip needs beside its frames (its 77 int32 tokens and its JSON record, generously),
# and room for the files' headers and clips.json.
CLIP_EXTRA_BYTES = 77 * 4 + 1024
SPACE_MARGIN_BYTES = 1 << 20


def check_free_space(directory: str, need: int, what: str) -> None:
    """Raise OSError(ENOSPC) saying "disk full" when `directory`'s file system has less than
    `need` bytes free, before anything long starts."""
    free = shutil.disk_usage(directory).free
    if free < need:
        raise OSError(
            errno.ENOSPC,
            f"disk full: {what} need {need / 1e9:.3f} GB in {directory} but its file system has "
            f"{free / 1e9:.3f} GB free; free some space, choose another --out, or build fewer "
            f"clips (--episodes, --clips-per-episode, --height/--width)",
        )


def reserve(path: str, what: str) -> None:
    """Allocate a memory-mapped file's blocks now: a write into a hole that the disk cannot fill
    is a SIGBUS that kills the process without a word, long after the start."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, os.fstat(fd).st_size)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise OSError(
            errno.ENOSPC,
            f"disk full: could not reserve {os.fstat(fd).st_size / 1e9:.3f} GB for {what} "
            f"({path}); free some space, choose another --out, or build fewer clips",
        ) from None
    finally:
        os.close(fd)


def build(config: SyntheticConfig, progress: bool = True) -> dict:
    """Simulate, cut, caption and write the clip directory; returns its summary. Holds the
    --out's build lock (mineclip_jax.run_lock: a second build of the same --out is refused)."""
    lock = run_lock.build_lock_path(config.out)
    with run_lock.hold(lock, what=f"--out {os.path.expanduser(config.out)}"):
        return _build(config, progress)


def _build(config: SyntheticConfig, progress: bool) -> dict:
    out = _prepare(config.out, config.overwrite)
    plan = episode_plan(config)
    by_name = dict(zip(BEHAVIOUR_NAMES, BEHAVIOURS))
    per_batch = config.batch * config.clips_per_episode
    sizes = {s: per_batch * sum(p["split"] == s for p in plan) for s in ("train", "test")}
    shape = (NUM_FRAMES, config.height, config.width, 3)
    need = sum(sizes.values()) * (int(np.prod(shape)) + CLIP_EXTRA_BYTES) + SPACE_MARGIN_BYTES
    check_free_space(out, need, f"{sum(sizes.values())} clips of {list(shape)} frames")
    frames_out = {}
    for s, n in sizes.items():
        path = os.path.join(out, f"{s}_frames.npy")
        frames_out[s] = np.lib.format.open_memmap(path, "w+", np.uint8, (n, *shape))
        reserve(path, f"the {s} clips' frames")
    records = {"train": [], "test": []}
    labels: dict[str, int] = {}
    t0 = time.monotonic()
    for b, batch in enumerate(plan):
        behaviour = by_name[batch["behaviour"]]
        frames, truth = run_episodes(config, behaviour, batch["world_seed"], batch["key_seed"])
        rng = np.random.default_rng([config.seed, 2, b])
        for e in range(config.batch):
            ep = {k: v[e] for k, v in truth.items()}
            for end, stride, idx, label, text in episode_clips(
                ep, behaviour, config.clips_per_episode, rng
            ):
                split = batch["split"]
                row = len(records[split])
                frames_out[split][row] = frames[e, idx]
                records[split].append({
                    "text": text, "label": label, "task": behaviour.task,
                    "behaviour": behaviour.name, "stride": stride,
                    "clip_id": f"synthetic/{b:05d}/{e}/{end}/{behaviour.name}",
                    "start_s": float(idx[0] / TICKS_PER_SECOND),
                    "end_s": float(idx[-1] / TICKS_PER_SECOND),
                    "target_distance": float(ep["target_distance"][end]),
                })  # fmt: skip
                labels[label] = labels.get(label, 0) + 1
        if progress and (b + 1) % 10 == 0:
            rate = (b + 1) / (time.monotonic() - t0)
            print(f"batch {b + 1}/{len(plan)} ({rate * config.batch:.1f} episodes/s)", flush=True)
    for split, recs in records.items():
        frames_out[split].flush()
        texts = [r["text"] for r in recs]
        unique = sorted(set(texts))
        ids = dict(zip(unique, tokens.tokenize(unique)))
        np.save(os.path.join(out, f"{split}_tokens.npy"),
                np.stack([ids[t] for t in texts]).astype(np.int32))  # fmt: skip
        with open(os.path.join(out, f"{split}_clips.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    summary = {
        "format": ARRAY_FORMAT,
        "frame_shape": list(shape),
        "clips": {s: len(r) for s, r in records.items()},
        "labels": dict(sorted(labels.items())),
        "seconds": round(time.monotonic() - t0, 1),
        "config": dataclasses.asdict(config),
    }
    with open(os.path.join(out, "clips.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def _prepare(out: str, overwrite: bool) -> str:
    out = os.path.expanduser(out)
    if os.path.isdir(out) and os.listdir(out):
        if not overwrite:
            raise FileExistsError(f"{out} is not empty; pass --overwrite to replace it")
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    return out


def main(config: SyntheticConfig) -> None:
    import envs  # before JAX starts: the episodes then run on every core

    envs.use_every_core("data.synthetic", "--no-all-cores", enabled=config.all_cores)
    compile_cache.enable()  # a rebuild loads the world's compiled episode program from disk
    summary = build(config)
    print(f"clips: train {summary['clips']['train']}, test {summary['clips']['test']} "
          f"in {summary['seconds']} s")  # fmt: skip
    for label, n in summary["labels"].items():
        print(f"  {label}: {n}")
    print(f"wrote {config.out}")


if __name__ == "__main__":
    main(tyro.cli(SyntheticConfig))
