"""A scripted (privileged) policy for the paper's tasks, pure JAX.

``oracle_action(state, params, mode)`` reads the world state, turns toward the task's target in
15 degree camera steps, walks (jumping over one-block steps, sidestepping trees) and attacks or
uses once the target is under the crosshair. It solves the paper's 12 tasks in most worlds and
is what the tests, ``record`` and the demos use to show a successful episode. Modes:

* ``MODE_ATTACK`` / ``MODE_USE``: go to the nearest target mob, attack it / use the held item.
* ``MODE_GOTO``: walk to the privileged target (portal, house; the nearest ocean column, then on
  toward the ocean's centre, facing the open water).
* ``MODE_DIG``: look straight down and mine.
* ``MODE_PLACE``: look straight down while walking forward and use (lays carpet), turning at
  walls too high to jump.

``scripted_action(behaviour, state, params, mode, key, tick)`` adds the near misses the
MineCLIP training clips need on top of the oracle (one controller set for tests, recordings and
``data.synthetic``): ``BEHAVIOUR_CIRCLE`` circles the target at a few blocks without reaching
it, ``BEHAVIOUR_WANDER`` walks about with random turns, ``BEHAVIOUR_RANDOM`` draws uniformly
random actions (no inventory operations) and ``BEHAVIOUR_AGENT`` acts as a fresh agent does (a
compact action from the balanced prior, held for ``AGENT_ACTION_REPEAT`` ticks: the frames an
RL agent's MineCLIP reward will see first). Approaching the wrong mob is the oracle with another
``params.target_entity``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envs import spaces
from envs.voxel import env as E
from envs.voxel import physics
from envs.voxel import tables as T

MODE_ATTACK, MODE_USE, MODE_GOTO, MODE_DIG, MODE_PLACE = range(5)
BEHAVIOUR_ORACLE, BEHAVIOUR_CIRCLE, BEHAVIOUR_WANDER, BEHAVIOUR_RANDOM, BEHAVIOUR_AGENT = range(5)
AGENT_ACTION_REPEAT = 4  # ticks per agent action (agents.ppo's default --action-repeat)
CIRCLE_RADIUS = 4.0  # blocks: the circling controller turns away inside this distance


def mode_for(spec) -> int:
    """The oracle mode that solves ``spec`` (a paper task)."""
    kind = spec.success.kind
    if kind == "kill":
        return MODE_ATTACK
    if kind == "inventory":
        return MODE_USE
    if kind == "depth":
        return MODE_DIG
    if kind == "place":
        return MODE_PLACE
    return MODE_GOTO


def _turn_bins(delta_deg):
    """Camera value turning by ``delta_deg`` rounded to 15 degrees (within +-180)."""
    delta = (delta_deg + 180.0) % 360.0 - 180.0
    return jnp.clip(jnp.round(delta / spaces.CAMERA_BIN_DEG), -12, 12).astype(jnp.int32) + 12


def _target_point(state, params):
    """World point the oracle walks to / aims at."""
    p = state.player
    mobs = state.mobs
    is_target = mobs.alive & params.target_entity[mobs.mob_type]
    d = jnp.where(is_target, jnp.linalg.norm(mobs.pos - p.pos, axis=-1), jnp.inf)
    k = jnp.argmin(d)
    mob_centre = mobs.pos[k] + jnp.array([0.0, 0.5, 0.0])
    # The nearest ocean column; once in the ocean, its centre (the open water), so that the
    # player walks on into the sea and faces it rather than whatever stood at the shore.
    sx, sz = state.biome.shape
    xs = jnp.arange(sx)[:, None] + 0.5
    zs = jnp.arange(sz)[None, :] + 0.5
    ocean = state.ocean_distance <= 0.0
    dist = jnp.where(ocean, (xs - p.pos[0]) ** 2 + (zs - p.pos[2]) ** 2, jnp.inf)
    flat = jnp.argmin(dist)
    nearest = jnp.array([flat // sz + 0.5, flat % sz + 0.5])
    count = jnp.maximum(ocean.sum(), 1)
    centre = jnp.array([(ocean * xs).sum() / count, (ocean * zs).sum() / count])
    column = jnp.clip(jnp.floor(p.pos[jnp.array([0, 2])]).astype(jnp.int32), 0,
                      jnp.array([sx - 1, sz - 1]))  # fmt: skip
    in_ocean = ocean[column[0], column[1]]
    ocean_xz = jnp.where(in_ocean, centre, nearest)
    ocean_pt = jnp.array([ocean_xz[0], p.pos[1], ocean_xz[1]])
    house = jnp.array(
        [(state.house[0] + state.house[2] + 1) / 2, state.house_floor_y + 1.0,
         (state.house[1] + state.house[3] + 1) / 2],
    )  # fmt: skip
    kind = params.target_kind
    return jnp.select(
        [kind == E.TARGET_ENTITY, kind == E.TARGET_PORTAL, kind == E.TARGET_OCEAN],
        [mob_centre, state.portal_center, ocean_pt],
        house,
    )


def oracle_action(state, params, mode):
    """MineDojo action int32 [8] for the current state (jit/vmap-able; ``mode`` may be traced)."""
    p = state.player
    target = _target_point(state, params)
    eye = p.pos + jnp.array([0.0, E.EYE_HEIGHT, 0.0])
    delta = target - eye
    dist_h = jnp.linalg.norm(delta[jnp.array([0, 2])])
    want_yaw = jnp.rad2deg(jnp.arctan2(-delta[0], delta[2]))
    want_pitch = jnp.rad2deg(jnp.arctan2(-delta[1], dist_h))
    look_down = (mode == MODE_DIG) | (mode == MODE_PLACE)
    want_pitch = jnp.where(look_down, 90.0, want_pitch)
    yaw_bin = jnp.where(look_down, 12, _turn_bins(want_yaw - p.yaw))
    pitch_bin = _turn_bins(jnp.clip(want_pitch, -90, 90) - p.pitch)
    # Walk unless close; jump when the block ahead at foot level is solid, except a tree's
    # log or leaves: sidestep those (strafe right while walking on), as jumping onto leaves
    # takes the player over the canopy, whose frames show leaves instead of the way.
    r = jnp.deg2rad(p.yaw)
    ahead = p.pos + jnp.array([-jnp.sin(r), 0.0, jnp.cos(r)]) * 0.8
    # The blocks ahead of the body's left side, centre and right side, at the feet and at head
    # height: trees anywhere there (low leaves stop the player too; else a corner holds it).
    side = jnp.array([jnp.cos(r), 0.0, jnp.sin(r)]) * 0.3
    probes = ahead + jnp.array([0.0, 0.1, 0.0]) + jnp.array([-1.0, 0.0, 1.0])[:, None] * side
    feet = jnp.floor(probes).astype(jnp.int32)
    cells = jnp.concatenate([feet, feet + jnp.array([0, 1, 0])])
    near_blocks = jax.vmap(physics.cell_value, in_axes=(None, 0))(state.blocks, cells)
    ahead_block, ahead_head_block = near_blocks[1], near_blocks[4]  # the centre's two
    tree = jnp.isin(near_blocks, jnp.array([T.B["leaves"], T.B["log"]])).any()
    blocked = physics.SOLID[ahead_block] & ~tree
    in_water = physics.LIQUID[
        physics.cell_value(
            state.blocks, jnp.floor(p.pos + jnp.array([0.0, 0.4, 0.0])).astype(jnp.int32)
        )
    ]
    near = dist_h < jnp.where(mode == MODE_GOTO, 0.3, 1.8)
    facing = jnp.abs((want_yaw - p.yaw + 180.0) % 360.0 - 180.0) < 30.0
    walk = (~near & facing & ~(mode == MODE_DIG)) | (mode == MODE_PLACE)
    # Swim up whenever in water, walking or not: a player who has reached the ocean (or a
    # mob by a river) stays afloat; jumping only while walking, the oracle stood still at
    # its goal, sank to the sea floor and drowned (65 of 100 ocean oracles in 1,000 ticks).
    jump = (walk & blocked) | in_water
    strafe = jnp.where(walk & tree, 2, 0)
    # Laying carpet, the player walks on blind: a wall too high to jump turns it 90 degrees
    # (else it jumps against the wall to the end of the episode, placing nothing).
    wall = blocked & physics.SOLID[ahead_head_block]
    yaw_bin = jnp.where((mode == MODE_PLACE) & wall, 18, yaw_bin)
    # Act when the target mob is under the crosshair.
    look = E.look_vector(p.yaw, p.pitch)
    hit, idx, _ = physics.ray_mobs(state.mobs, eye, look, params.attack_reach)
    hit = hit & params.target_entity[state.mobs.mob_type[idx]]
    fn = jnp.select(
        [
            (mode == MODE_ATTACK) & hit,
            (mode == MODE_USE) & hit,
            mode == MODE_DIG,
            mode == MODE_PLACE,
        ],
        [spaces.FN_ATTACK, spaces.FN_USE, spaces.FN_ATTACK, spaces.FN_USE],
        spaces.FN_NOOP,
    )
    return jnp.array(
        [jnp.where(walk, 1, 0), strafe, jnp.where(jump, 1, 0), pitch_bin, yaw_bin, fn, 0, 0],
        jnp.int32,
    )


def _level_pitch_bin(state, pitch_deg=0.0):
    """Camera pitch value turning toward ``pitch_deg`` (0: level; positive looks down)."""
    return _turn_bins(pitch_deg - state.player.pitch)


def episode_pitch(episode_key):
    """The camera pitch (0, 15, 30 or 45 degrees down) the circling and wandering controllers
    hold for a whole episode: looking down at grass is how the oracle sees an animal it hits,
    so clips without the animal must show that view too, or a model learns the view for the
    act."""
    return 15.0 * jax.random.randint(jax.random.fold_in(episode_key, 2**31 - 1), (), 0, 4)


def circle_action(state, params, pitch_deg=0.0):
    """Walk around the task's target at about ``CIRCLE_RADIUS`` blocks, never reaching it: head
    for it from afar, and keep it 80 degrees to the left once close (a near miss)."""
    p = state.player
    delta = _target_point(state, params) - p.pos
    dist_h = jnp.linalg.norm(delta[jnp.array([0, 2])])
    want_yaw = jnp.rad2deg(jnp.arctan2(-delta[0], delta[2]))
    # Inside the radius turn further away (100 degrees), outside it slightly in (60 degrees).
    offset = jnp.where(dist_h < CIRCLE_RADIUS, jnp.where(dist_h < CIRCLE_RADIUS - 1, 100.0, 80.0),
                       jnp.where(dist_h < CIRCLE_RADIUS + 3, 60.0, 0.0))  # fmt: skip
    yaw_bin = _turn_bins(want_yaw + offset - p.yaw)
    jump = _blocked_ahead(state)
    return jnp.array(
        [1, 0, jnp.where(jump, 1, 0), _level_pitch_bin(state, pitch_deg), yaw_bin, 0, 0, 0],
        jnp.int32,
    )


def _blocked_ahead(state):
    p = state.player
    r = jnp.deg2rad(p.yaw)
    ahead = p.pos + jnp.array([-jnp.sin(r), 0.0, jnp.cos(r)]) * 0.8
    cell = jnp.floor(ahead + jnp.array([0.0, 0.1, 0.0])).astype(jnp.int32)
    feet = jnp.floor(p.pos + jnp.array([0.0, 0.4, 0.0])).astype(jnp.int32)
    return (
        physics.SOLID[physics.cell_value(state.blocks, cell)]
        | physics.LIQUID[physics.cell_value(state.blocks, feet)]
    )


def wander_action(state, key, tick, pitch_deg=0.0):
    """Walk forward with a random 15-degree turn every 8 ticks, jumping over steps, the camera
    at ``pitch_deg``."""
    turn = jax.random.randint(key, (), 10, 15)  # -30 .. +30 degrees
    yaw_bin = jnp.where(tick % 8 == 0, turn, 12)
    jump = _blocked_ahead(state)
    return jnp.array(
        [1, 0, jnp.where(jump, 1, 0), _level_pitch_bin(state, pitch_deg), yaw_bin, 0, 0, 0],
        jnp.int32,
    )


def random_action(key):
    """A uniformly random MineDojo action without inventory operations (use/attack kept)."""
    action = jax.random.randint(key, (8,), 0, jnp.asarray(spaces.ACTION_NVEC))
    fn = action[5]
    return action.at[5].set(jnp.where(fn >= spaces.FN_CRAFT, spaces.FN_ATTACK, fn)).at[6].set(0)


def agent_action(episode_key, tick):
    """The compact action a fresh agent would take at ``tick``: drawn from the balanced prior
    (``spaces.balanced_compact_logits``) once per ``AGENT_ACTION_REPEAT`` ticks, from a key that
    depends only on the episode and the action's index (so it is held between draws)."""
    key = jax.random.fold_in(episode_key, tick // AGENT_ACTION_REPEAT)
    idx = jax.random.categorical(key, jnp.asarray(spaces.balanced_compact_logits(), jnp.float32))
    return jnp.asarray(spaces.COMPACT_ACTIONS, jnp.int32)[idx]


def scripted_action(behaviour, state, params, mode, key, tick, episode_key=None):
    """MineDojo action int32 [8] of ``behaviour`` (``BEHAVIOUR_*``, may be traced); ``mode`` is
    the oracle mode (``mode_for``) used by ``BEHAVIOUR_ORACLE``; ``key`` is the tick's key and
    ``episode_key`` the episode's (``BEHAVIOUR_AGENT`` holds its action, circling and wandering
    hold ``episode_pitch``; default: ``key`` for the agent, a level camera for the others)."""
    pitch = 0.0 if episode_key is None else episode_pitch(episode_key)
    return jax.lax.switch(
        behaviour,
        [
            lambda: oracle_action(state, params, mode),
            lambda: circle_action(state, params, pitch),
            lambda: wander_action(state, key, tick, pitch),
            lambda: random_action(key),
            lambda: agent_action(key if episode_key is None else episode_key, tick),
        ],
    )
