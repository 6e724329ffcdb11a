"""MineCLIP reward: ring-buffer cache, Direct/Delta/Peak maths, cached == from-scratch scoring."""

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import reward as rw

WINDOW = 16


@pytest.fixture(scope="module")
def handle():
    return mcj.create(mcj.MineCLIPConfig.tiny(pool="attn"), jax.random.key(0))


@pytest.fixture(scope="module")
def clip_frames():
    # 20 random frames for env 0 and 20 for env 1.
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(2, 20, 160, 256, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def clip_features(handle, clip_frames):
    return np.asarray(handle.encode_frames(clip_frames))  # [2, 20, D]


def _np_softmax_prob(logits, goal_col, cand):
    z = np.where(cand, logits, -np.inf)
    z = z - z.max()
    e = np.exp(z)
    return e[goal_col] / e.sum()


# -------------------------------------------------------------------------------- the cache
def _reference_windows(seq, firsts, window):
    """Loop reference: per env a deque; at an episode start the window is the first frame
    repeated `window` times."""
    n = seq.shape[1]
    dq = [None] * n
    out = []
    for t in range(seq.shape[0]):
        for e in range(n):
            if firsts[t, e] or dq[e] is None:
                dq[e] = deque([seq[t, e]] * window, maxlen=window)
            else:
                dq[e].append(seq[t, e])
        out.append(np.stack([np.stack(list(d)) for d in dq]))
    return out


@pytest.mark.parametrize("use_jit", [False, True])
def test_cache_matches_loop_reference(use_jit):
    rng = np.random.default_rng(1)
    steps, n, d, w = 40, 3, 5, 6
    seq = rng.normal(size=(steps, n, d)).astype(np.float32)
    firsts = rng.random((steps, n)) < 0.15
    firsts[0] = [True, False, True]  # env 1 starts with is_first False: empty cache counts as start
    expected = _reference_windows(seq, firsts, w)
    upd = jax.jit(rw.update) if use_jit else rw.update
    win = jax.jit(rw.window_features) if use_jit else rw.window_features
    cache = rw.init_cache(n, d, window=w)
    count = np.zeros(n, int)
    for t in range(steps):
        cache = upd(cache, jnp.asarray(seq[t]), jnp.asarray(firsts[t]))
        np.testing.assert_array_equal(np.asarray(win(cache)), expected[t])
        count = np.where(firsts[t] | (count == 0), 1, np.minimum(count + 1, w))
        np.testing.assert_array_equal(np.asarray(cache.count), count)


def test_cache_subset_update_with_env_ids():
    rng = np.random.default_rng(2)
    n, d, w = 4, 3, 4
    full = rw.init_cache(n, d, window=w)
    part = rw.init_cache(n, d, window=w)
    for t in range(9):
        feats = rng.normal(size=(n, d)).astype(np.float32)
        first = np.array([t == 0, t == 0, t in (0, 5), t == 0])
        full = rw.update(full, feats, first)
        # Same thing as two asynchronous half-batches, in a scrambled order.
        part = rw.update(part, feats[[3, 1]], first[[3, 1]], env_ids=np.array([3, 1]))
        part = rw.update(part, feats[[0, 2]], first[[0, 2]], env_ids=np.array([0, 2]))
        np.testing.assert_array_equal(
            np.asarray(rw.window_features(full)), rw.window_features(part)
        )
    np.testing.assert_array_equal(
        np.asarray(rw.window_features(part, env_ids=np.array([2]))),
        np.asarray(rw.window_features(full))[[2]],
    )


def test_init_cache_rejects_bad_sizes():
    with pytest.raises(ValueError, match="num_envs"):
        rw.init_cache(0, 8)


# -------------------------------------------------------------------------------- the maths
@pytest.mark.parametrize("use_jit", [False, True])
def test_goal_probability_direct_delta_vs_numpy(use_jit):
    maybe_jit = jax.jit if use_jit else (lambda f: f)
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=5.0, size=(4, 6)).astype(np.float32)
    goal_col = np.array([0, 2, 5, 1])
    cand = rng.random((4, 6)) < 0.6
    cand[np.arange(4), goal_col] = True
    cand[:, 3] = True
    p, nt = maybe_jit(rw.goal_probability)(
        jnp.asarray(logits), jnp.asarray(goal_col), jnp.asarray(cand)
    )
    p_ref = np.array([_np_softmax_prob(logits[i], goal_col[i], cand[i]) for i in range(4)])
    np.testing.assert_allclose(np.asarray(p), p_ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(nt), cand.sum(1))
    direct = np.asarray(maybe_jit(rw.direct_reward)(p, nt))
    np.testing.assert_allclose(direct, np.maximum(p_ref - 1.0 / cand.sum(1), 0), atol=1e-7)
    prev = np.array([0.1, 0.9, 0.3, 0.5], np.float32)
    first = np.array([False, True, False, False])
    delta = np.asarray(maybe_jit(rw.delta_reward)(p, prev, first))
    np.testing.assert_allclose(delta, np.where(first, 0, p_ref - prev), atol=1e-6)


def test_direct_reward_hand_values():
    # p = 0.5 among 4 prompts: 0.5 - 0.25; p = 0.2 < chance: floored at 0.
    r = rw.direct_reward(jnp.array([0.5, 0.2]), jnp.array([4.0, 4.0]))
    np.testing.assert_allclose(np.asarray(r), [0.25, 0.0])


@pytest.mark.parametrize("use_jit", [False, True])
def test_peak_reward_pays_rises_of_the_best_direct_by_hand(use_jit):
    peak = jax.jit(rw.peak_reward) if use_jit else rw.peak_reward
    # One env, one episode: Direct 0.2 (spawn), 0.1, 0.3, 0.3, 0.25, 0.5; then a new episode
    # starts at 0.4 and drops to 0.1.
    direct = [0.2, 0.1, 0.3, 0.3, 0.25, 0.5, 0.4, 0.1]
    first = [True, False, False, False, False, False, True, False]
    best, paid = jnp.zeros((1,)), []
    for d, f in zip(direct, first):
        r, best = peak(jnp.array([d]), best, jnp.array([f]))
        paid.append(float(r[0]))
    # 0 at each start; 0.3 - 0.2, nothing while below 0.3, then 0.5 - 0.3; the second episode's
    # best starts at its own 0.4, not the first's 0.5.
    np.testing.assert_allclose(paid, [0, 0, 0.1, 0, 0, 0.2, 0, 0], atol=1e-6)
    np.testing.assert_allclose(float(best[0]), 0.4, atol=1e-6)
    np.testing.assert_allclose(sum(paid[:6]), max(direct[:6]) - direct[0], atol=1e-6)


def test_prompt_table_and_errors():
    prompts, goal_col, cand = rw.build_prompt_table(
        ["hunt a cow", "Shear a  sheep"], ["shear a sheep", "dig a hole"]
    )
    assert prompts == ("hunt a cow", "Shear a  sheep", "dig a hole")
    np.testing.assert_array_equal(goal_col, [0, 1])
    # hunt a cow competes with shear a sheep (listed as negative) and dig a hole;
    # shear a sheep only with dig a hole (itself removed from its negatives).
    np.testing.assert_array_equal(cand, [[True, True, True], [False, True, True]])
    with pytest.raises(ValueError, match="no negative prompts"):
        rw.build_prompt_table(["dig a hole"], ["Dig a hole"])


def test_default_negatives_are_paper_tasks_minus_goal(handle):
    r = rw.MineCLIPReward(handle, "hunt a cow")
    assert len(rw.PAPER_TASK_PROMPTS) == 12
    assert set(r.prompts) == set(rw.PAPER_TASK_PROMPTS)
    assert int(np.asarray(r.spec.candidates).sum()) == 12  # goal + 11 negatives
    r2 = rw.MineCLIPReward(handle, "chop a tree")
    assert r2.prompts[0] == "chop a tree" and len(r2.prompts) == 13


def test_reward_constructor_errors(handle):
    with pytest.raises(ValueError, match="kind"):
        rw.MineCLIPReward(handle, "hunt a cow", kind="dense")
    with pytest.raises(ValueError, match="max_seq_len"):
        rw.MineCLIPReward(handle, "hunt a cow", window=64)
    with pytest.raises(TypeError, match="list of prompts"):
        rw.MineCLIPReward(handle, "hunt a cow", negatives="dig a hole")
    r = rw.MineCLIPReward(handle, ["hunt a cow", "dig a hole"])
    with pytest.raises(ValueError, match="goal_index"):
        r.init(2, goal_index=[0, 2])
    s = r.set_goals(r.init(2), [1, 0])
    np.testing.assert_array_equal(np.asarray(s.goal_index), [1, 0])
    with pytest.raises(AssertionError):
        r.set_goals(s, [1, 0, 1])


# ------------------------------------------------------------- cached == from scratch
def _scratch_rewards(handle, reward, frames_env, goal_g, steps):
    """From scratch: at step k build the 16-frame window (first frame repeated in front),
    run the whole video path on raw frames, softmax in NumPy."""
    spec = reward.spec
    cand = np.asarray(spec.candidates)[goal_g]
    col = int(np.asarray(spec.goal_prompt)[goal_g])
    text = np.asarray(spec.text_features)
    windows = []
    for k in range(steps):
        idx = [0] * max(0, WINDOW - (k + 1)) + list(range(max(0, k + 1 - WINDOW), k + 1))
        windows.append(frames_env[idx])
    video = handle.encode_video(np.stack(windows))  # [steps, D]
    logits = np.asarray(handle.logits(video, text))
    p = np.array([_np_softmax_prob(logits[k], col, cand) for k in range(steps)])
    direct = np.maximum(p - 1.0 / cand.sum(), 0.0)
    delta = np.concatenate([[0.0], np.diff(p)])
    peak = np.concatenate([[0.0], np.diff(np.maximum.accumulate(direct))])
    return p, direct, delta, peak


@pytest.fixture(scope="module")
def multi_goal_reward(handle):
    return rw.MineCLIPReward(
        handle, ["hunt a cow", "dig a hole"], negatives=rw.PAPER_TASK_PROMPTS[:6], kind="direct"
    )


def test_cached_reward_equals_scratch(handle, clip_frames, clip_features, multi_goal_reward):
    steps = 20
    goals = np.array([0, 1])
    direct_r = multi_goal_reward
    delta_r = rw.MineCLIPReward(
        handle, ["hunt a cow", "dig a hole"], negatives=rw.PAPER_TASK_PROMPTS[:6], kind="delta"
    )
    peak_r = rw.MineCLIPReward(
        handle, ["hunt a cow", "dig a hole"], negatives=rw.PAPER_TASK_PROMPTS[:6], kind="peak"
    )
    states = {r.kind: r.init(2, goal_index=goals) for r in (direct_r, delta_r, peak_r)}
    got = {"p": [], "direct": [], "delta": [], "peak": []}
    for t in range(steps):
        first = np.array([t == 0, t == 0])
        for r in (direct_r, delta_r, peak_r):
            states[r.kind], r_t, p = r.step(states[r.kind], clip_features[:, t], first)
            got[r.kind].append(np.asarray(r_t))
            if r is direct_r:
                got["p"].append(np.asarray(p))
            np.testing.assert_allclose(np.asarray(p), got["p"][-1], rtol=1e-6)
    for e in range(2):
        p_ref, direct_ref, delta_ref, peak_ref = _scratch_rewards(
            handle, direct_r, clip_frames[e], goals[e], steps
        )
        np.testing.assert_allclose(np.stack(got["p"])[:, e], p_ref, rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(np.stack(got["direct"])[:, e], direct_ref, atol=2e-5)
        np.testing.assert_allclose(np.stack(got["delta"])[:, e], delta_ref, atol=2e-5)
        np.testing.assert_allclose(np.stack(got["peak"])[:, e], peak_ref, atol=2e-5)
    # The two envs score against different goals, so their N_T differ (1 + 6 vs 1 + 5 + ... ).
    cand = np.asarray(direct_r.spec.candidates)
    assert cand[0].sum() == 6 and cand[1].sum() == 7


def test_reset_awareness(clip_features, multi_goal_reward):
    """After env 0 resets at step 9 its reward equals that of a fresh env fed the same frames:
    nothing of the previous episode leaks into the window."""
    r = multi_goal_reward
    s = r.init(2)
    for t in range(9):
        s, _, _ = r.step(s, clip_features[:, t], np.array([t == 0, t == 0]))
    fresh = r.init(1)
    for t in range(9, 20):
        s, _, p = r.step(s, clip_features[:, t], np.array([t == 9, False]))
        fresh, _, p_fresh = r.step(fresh, clip_features[:1, t], np.array([t == 9]))
        np.testing.assert_allclose(float(p[0]), float(p_fresh[0]), rtol=1e-5)
        # env 1 continues its episode: its window still spans the old frames.
        assert int(s.cache.count[1]) == min(t + 1, WINDOW)
    assert int(s.cache.count[0]) == 11


def _numpy_peak(direct, first):
    """Peak by its definition, one env: the rise of the episode's running max of Direct."""
    paid, best = np.zeros_like(direct), 0.0
    for t, (d, f) in enumerate(zip(direct, first)):
        best = d if f else best
        paid[t], best = max(d - best, 0.0), max(best, d)
    return paid


def test_peak_equals_its_definition_on_direct_rewards_that_rise_and_fall(handle, clip_features):
    """With one negative, chance is 1/2 and this random model puts P_G near 0.96, where it
    rises and falls from frame to frame (with the paper's 11 negatives Direct stays 0 for these
    frames): Peak over 20 steps, env 1 resetting at step 9, against NumPy on Direct."""
    kinds = {k: rw.MineCLIPReward(handle, "find an ocean", negatives=["hunt a cow"], kind=k)
             for k in ("direct", "peak")}  # fmt: skip
    states = {k: r.init(2) for k, r in kinds.items()}
    first = np.zeros((20, 2), bool)
    first[0], first[9, 1] = True, True
    got = {k: [] for k in kinds}
    for t in range(20):
        for k, r in kinds.items():
            states[k], r_t, _ = r.step(states[k], clip_features[:, t], first[t])
            got[k].append(np.asarray(r_t))
    direct, peak = np.stack(got["direct"]), np.stack(got["peak"])
    for e in range(2):
        np.testing.assert_allclose(peak[:, e], _numpy_peak(direct[:, e], first[:, e]), atol=1e-6)
    assert (peak > 0).any() and (np.diff(direct, axis=0) < 0).any()  # both happen here
    assert (peak != direct).any()


def test_peak_best_starts_again_at_each_reset(handle, clip_features):
    """Peak's best Direct belongs to one episode: after env 0 resets at step 9 it is paid what
    a fresh env fed the same frames is paid, though its first episode set a higher best."""
    r = rw.MineCLIPReward(handle, "find an ocean", negatives=["hunt a cow"], kind="peak")
    s = r.init(2)
    for t in range(9):
        s, _, _ = r.step(s, clip_features[:, t], np.array([t == 0, t == 0]))
    fresh = r.init(1)
    paid, paid_fresh = [], []
    for t in range(9, 20):
        s, r_t, _ = r.step(s, clip_features[:, t], np.array([t == 9, False]))
        fresh, r_fresh, _ = r.step(fresh, clip_features[:1, t], np.array([t == 9]))
        paid.append(float(r_t[0]))
        paid_fresh.append(float(r_fresh[0]))
    np.testing.assert_allclose(paid, paid_fresh, atol=1e-6)
    # Carrying the first episode's best over would pay less: the test can tell the two apart.
    direct_r = rw.MineCLIPReward(handle, "find an ocean", negatives=["hunt a cow"])
    direct = np.asarray(direct_r.trajectory_rewards(clip_features[:1, :20])[0])[0]
    assert direct[:9].max() > direct[9]
    traj, _ = r.trajectory_rewards(clip_features[:1, 9:20])
    np.testing.assert_allclose(np.asarray(traj)[0], paid_fresh, atol=1e-6)


def test_trajectory_and_step_frames_match_step(handle, clip_frames, clip_features):
    r = rw.MineCLIPReward(handle, "hunt a cow", kind="delta")
    s = r.init(2)
    rewards = []
    for t in range(5):
        s, rt, _ = r.step(s, clip_features[:, t], np.array([t == 0, t == 0]))
        rewards.append(np.asarray(rt))
    assert np.abs(np.stack(rewards)[1:]).max() > 0  # Delta is not trivially zero here
    traj_r, _ = r.trajectory_rewards(clip_features[:, :5])
    np.testing.assert_allclose(np.asarray(traj_r), np.stack(rewards, 1), atol=1e-6)
    # Encoding inside the step gives the same reward and returns the features to share.
    s = r.init(2)
    s, r0, _, feats = r.step_frames(s, clip_frames[:, 0], np.array([True, True]))
    np.testing.assert_allclose(np.asarray(feats), clip_features[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(r0), 0.0)  # Delta is 0 on the first step


# ------------------------------------------------------------------------------ the demo
def test_demo_scores_clip_and_reads_video(handle, tmp_path):
    import av

    from mineclip_jax import demo

    frames = demo.procedural_clip()
    assert frames.shape == (16, 160, 256, 3) and frames.dtype == np.uint8
    prompts = ("hunt a cow", "dig a hole", "find an ocean")
    scores = demo.score_clip(handle, frames, prompts)
    video = handle.encode_video(frames[None])
    logits = np.asarray(handle.logits(video, handle.encode_text(list(prompts))))[0]
    np.testing.assert_allclose(scores["logits"], logits, rtol=1e-5)
    np.testing.assert_allclose(scores["probs"].sum(), 1.0, rtol=1e-6)
    np.testing.assert_allclose(scores["direct"], np.maximum(scores["probs"] - 1 / 3, 0), atol=1e-7)
    table = demo.format_table(prompts, scores)
    assert all(p in table for p in prompts)
    # A real encoded video: 2 s at 10 fps, frame i filled with value 10 * i.
    path = tmp_path / "clip.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 128, 80, "yuv420p"
        for i in range(20):
            img = np.full((80, 128, 3), 10 * i, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    clip = demo.read_video_clip(path, start_s=0.4, duration_s=1.6)
    assert clip.shape == (16, 160, 256, 3)
    # Frames are picked in time order: brightness grows from ~frame 4 to ~frame 19.
    means = clip.reshape(16, -1).mean(1)
    assert np.all(np.diff(means) >= -2) and 35 < means[0] < 60 and means[-1] > 170
    with pytest.raises(ValueError, match="no frames"):
        demo.read_video_clip(path, start_s=50.0, duration_s=1.0)


# ------------------------------------------------------------------- negatives (issue 14)
def test_negatives_never_paraphrase_the_goal_for_the_paper_tasks():
    from envs.tasks.paper import PAPER_TASKS

    prompts = [t.prompt for t in PAPER_TASKS.values()]
    # The default negative set is exactly the 12 tasks' own prompts.
    assert sorted(rw.DEFAULT_NEGATIVE_PROMPTS) == sorted(prompts)
    for goal in prompts:
        table, goal_col, cand = rw.build_prompt_table([goal], rw.DEFAULT_NEGATIVE_PROMPTS)
        negatives = {table[c] for c in np.flatnonzero(cand[0]) if c != goal_col[0]}
        assert negatives == set(prompts) - {goal}, goal
    # Paraphrases passed explicitly are dropped for the goal they paraphrase, others kept.
    cases = {
        "combat a zombie pigman": ("combat a pigman", "fight the zombie pigmen"),
        "hunt a cow": ("kill a cow", "Hunt the cows"),
        "put carpets on the floor": ("place carpet on the floor",),
        "find an ocean": ("locate the ocean",),
    }
    for goal, paraphrases in cases.items():
        others = ("combat a zombie", "dig a hole", "milk a cow")
        table, goal_col, cand = rw.build_prompt_table([goal], [*paraphrases, *others])
        kept = {table[c] for c in np.flatnonzero(cand[0]) if c != goal_col[0]}
        assert kept == set(others) - {goal}, goal


def test_demo_world_clip_names_the_tasks_it_has_and_takes_one_clip_source():
    from data import demo as world_demo
    from mineclip_jax import demo

    with pytest.raises(ValueError, match="no scripted oracle for it; use one of .*'milk a cow'"):
        world_demo.world_clip("fly to the moon", (48, 64))
    with pytest.raises(ValueError, match="--video or --world, not both"):
        demo.run(demo.DemoConfig(video="clip.mp4", world="milk a cow"))
    # mineclip_jax does not import the world: its --world points to data.demo
    with pytest.raises(ValueError, match="python -m data.demo --world 'milk a cow'"):
        demo.run(demo.DemoConfig(world="milk a cow"))


def test_demo_refuses_a_clip_shorter_than_the_window(tmp_path):
    import av

    from mineclip_jax import demo

    path = tmp_path / "short.mp4"  # 1 s at 10 fps: 10 frames
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(10):
            img = np.full((48, 64, 3), 20 * i, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    with pytest.raises(ValueError, match=r"only 10 frames in the 16-frame window"):
        demo.read_video_clip(path, start_s=0.0, duration_s=8.0)
    assert demo.DemoConfig().ckpt == "mini"
    small = demo.resize_clip(demo.procedural_clip(), (48, 64))
    assert small.shape == (16, 48, 64, 3) and small.dtype == np.uint8
