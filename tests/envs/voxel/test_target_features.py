"""envs.voxel.target_features against hand-computed geometry and the renderer's frames (with and
without jit)."""

import dataclasses
import math

import jax
import numpy as np
import pytest

from envs.tasks import paper
from envs.voxel import env as E
from tests.envs.voxel import helpers as H

X0, Z0 = 16.5, 16.5
FEET = H.GROUND + 1.0
COW_HEIGHT = 1.4
F = {name: i for i, name in enumerate(E.TARGET_FEATURES)}


@pytest.fixture(scope="module")
def hunt_cow():
    params = H.params_for(paper.get("hunt a cow"), passive_mobs=0)
    _, state = H.reset(jax.random.key(0), params, H.STATIC)
    return params, H.place_player(H.clear_mobs(state), [X0, FEET, Z0])


def _features(state, params, use_jit, static=H.STATIC):
    fn = jax.jit(E.target_features, static_argnums=2) if use_jit else E.target_features
    out = np.asarray(fn(state, params, static))
    assert out.shape == (E.NUM_TARGET_FEATURES,) and out.dtype == np.float32
    return out


def _expected(cow_xz, yaw, pitch):
    """The features by hand for a cow with feet on the ground at ``cow_xz``."""
    eye = np.array([X0, FEET + E.EYE_HEIGHT, Z0])
    centre = np.array([cow_xz[0], FEET + COW_HEIGHT / 2, cow_xz[1]])
    rel = centre - eye
    yaw_to = math.degrees(math.atan2(-rel[0], rel[2]))  # Minecraft: yaw 0 -> +z, 90 -> -x
    err = math.radians(yaw_to - yaw)
    pitch_to = -math.degrees(math.atan2(rel[1], math.hypot(rel[0], rel[2])))
    dist = float(np.linalg.norm(rel))
    return {
        "sin_yaw_error": math.sin(err),
        "cos_yaw_error": math.cos(err),
        "pitch_error": (pitch_to - pitch) / 90.0,
        "distance": dist / 32.0,
        "in_reach": float(dist <= 3.0),
    }


@pytest.mark.parametrize("use_jit", [False, True])
@pytest.mark.parametrize(
    "cow_xz, yaw, pitch",
    [
        ((X0, Z0 + 2.0), 0.0, 0.0),  # straight ahead, in reach, slightly below the eye
        ((X0 - 6.0, Z0), 0.0, 15.0),  # 90 degrees to the left (yaw 90 faces -x)
        ((X0 + 4.0, Z0 - 4.0), 45.0, -30.0),  # behind and to the right
    ],
)
def test_features_match_hand_computed_geometry(hunt_cow, cow_xz, yaw, pitch, use_jit):
    params, state = hunt_cow
    state = H.place_player(state, [X0, FEET, Z0], yaw=yaw, pitch=pitch)
    state = H.place_mob(state, 0, "cow", [cow_xz[0], FEET, cow_xz[1]])
    got = _features(state, params, use_jit)
    want = _expected(cow_xz, yaw, pitch)
    assert got[F["exists"]] == 1.0
    for name, value in want.items():
        assert got[F[name]] == pytest.approx(value, abs=1e-5), name
    assert got[F["fleeing"]] == 0.0 and got[F["immune"]] == 0.0 and got[F["health"]] == 1.0


def test_cow_ahead_has_zero_yaw_error_and_one_to_the_left_a_positive_quarter_turn(hunt_cow):
    params, state = hunt_cow
    ahead = _features(H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 5.0]), params, False)
    left = _features(H.place_mob(state, 0, "cow", [X0 + 5.0, FEET, Z0]), params, False)
    assert ahead[F["sin_yaw_error"]] == pytest.approx(0.0, abs=1e-6)
    assert ahead[F["cos_yaw_error"]] == pytest.approx(1.0)
    assert abs(left[F["sin_yaw_error"]]) == pytest.approx(1.0)
    assert left[F["cos_yaw_error"]] == pytest.approx(0.0, abs=1e-6)
    assert ahead[F["pitch_error"]] > 0  # the cow's centre is below the eye: look down


def test_nearest_target_wins_and_distractors_are_ignored(hunt_cow):
    params, state = hunt_cow
    state = H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 9.0])
    state = H.place_mob(state, 1, "cow", [X0, FEET, Z0 - 4.0])  # nearer, behind
    state = H.place_mob(state, 2, "sheep", [X0, FEET, Z0 + 1.5])  # nearest, not a target
    got = _features(state, params, False)
    assert got[F["cos_yaw_error"]] == pytest.approx(-1.0, abs=1e-5)
    assert got[F["distance"]] == pytest.approx(_expected((X0, Z0 - 4.0), 0, 0)["distance"])


def test_no_target_gives_zeros(hunt_cow):
    params, state = hunt_cow
    dead = H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 2.0], alive=False)
    sheep_only = H.place_mob(state, 0, "sheep", [X0, FEET, Z0 + 2.0])
    for s in (state, dead, sheep_only):
        assert not np.any(_features(s, params, False))


def test_hit_cow_reports_fleeing_immune_and_lost_health(hunt_cow):
    params, state = hunt_cow
    state = H.place_mob(state, 0, "cow", [X0, FEET, Z0 + 1.6])
    m = state.mobs  # as right after a diamond-sword hit (7 of 10 health; see test_world)
    hit = state.replace(mobs=m.replace(health=m.health.at[0].set(3.0), flee=m.flee.at[0].set(100),
                                       immune=m.immune.at[0].set(10)))  # fmt: skip
    got = _features(hit, params, True)
    assert got[F["fleeing"]] == 1.0 and got[F["immune"]] == 1.0
    assert got[F["health"]] == pytest.approx(0.3)
    assert not np.any(_features(state, params, True)[[F["fleeing"], F["immune"]]])


@pytest.mark.parametrize(
    "cow_xz, yaw, pitch",
    [
        ((X0 + 2.5, Z0 + 6.0), 0.0, 0.0),  # ahead, to the left of centre (+x is left at yaw 0)
        ((X0 - 3.0, Z0 + 5.0), 10.0, 15.0),  # to the right, looking down
        ((X0, Z0 + 4.0), -20.0, -10.0),  # turned away a bit, looking up
    ],
)
def test_screen_position_matches_where_the_renderer_draws_the_cow(hunt_cow, cow_xz, yaw, pitch):
    """The frame with the cow minus the frame without it: the changed pixels' centre is where
    ``screen_x`` / ``screen_y`` put the cow's centre."""
    params, state = hunt_cow
    static = dataclasses.replace(H.STATIC, render=True, height=64, width=96)
    state = H.place_player(state, [X0, FEET, Z0], yaw=yaw, pitch=pitch)
    with_cow = H.place_mob(state, 0, "cow", [cow_xz[0], FEET, cow_xz[1]])
    diff = np.any(np.asarray(E.render_state(with_cow, static)) !=
                  np.asarray(E.render_state(state, static)), axis=-1)  # fmt: skip
    rows, cols = np.nonzero(diff)
    assert rows.size > 20
    drawn_x = (cols.mean() + 0.5) / static.width * 2 - 1  # pixel centres -> [-1, 1], right +
    drawn_y = 1 - (rows.mean() + 0.5) / static.height * 2  # up +
    got = _features(with_cow, params, True, static)
    assert got[F["in_view"]] == 1.0
    assert got[F["screen_x"]] == pytest.approx(drawn_x, abs=0.08)
    assert got[F["screen_y"]] == pytest.approx(drawn_y, abs=0.12)


def test_target_behind_or_beside_the_frame_is_out_of_view(hunt_cow):
    params, state = hunt_cow
    for cow_xz in ((X0, Z0 - 5.0), (X0 + 8.0, Z0 + 1.0), (X0 - 8.0, Z0 + 1.0)):
        got = _features(H.place_mob(state, 0, "cow", [cow_xz[0], FEET, cow_xz[1]]), params, False)
        assert got[F["exists"]] == 1.0 and got[F["in_view"]] == 0.0
        assert got[F["screen_x"]] == 0.0 and got[F["screen_y"]] == 0.0
