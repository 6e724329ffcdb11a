"""GAE, PPO loss pieces, action smoothing and SI sampling against NumPy / hand-computed values."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents import losses
from agents import self_imitation as si


def _gae_numpy(r, v, d, last_v, gamma, lam):
    t_len = r.shape[0]
    adv = np.zeros_like(r)
    carry = np.zeros_like(last_v)
    for t in reversed(range(t_len)):
        nv = last_v if t == t_len - 1 else v[t + 1]
        nonterm = 1.0 - d[t]
        delta = r[t] + gamma * nv * nonterm - v[t]
        carry = delta + gamma * lam * nonterm * carry
        adv[t] = carry
    return adv, adv + v


@pytest.mark.parametrize("use_jit", [False, True])
def test_gae_matches_numpy_loop(use_jit):
    rng = np.random.default_rng(0)
    r = rng.normal(size=(7, 3)).astype(np.float32)
    v = rng.normal(size=(7, 3)).astype(np.float32)
    d = rng.random((7, 3)) < 0.3
    lv = rng.normal(size=(3,)).astype(np.float32)
    # jitted, gamma and lambda are traced arguments, as in training (they are hyper-parameters
    # of the traced pytree): one compiled program serves every pair below
    fn = jax.jit(losses.gae) if use_jit else losses.gae
    for gamma, lam in ((0.97, 0.9), (0.5, 0.0), (1.0, 1.0)):
        coefs = (jnp.float32(gamma), jnp.float32(lam)) if use_jit else (gamma, lam)
        adv, ret = fn(jnp.asarray(r), jnp.asarray(v), jnp.asarray(d), jnp.asarray(lv), *coefs)
        adv_np, ret_np = _gae_numpy(r, v, d.astype(np.float32), lv, gamma, lam)
        np.testing.assert_allclose(adv, adv_np, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ret, ret_np, rtol=1e-5, atol=1e-5)
    if use_jit:
        assert fn._cache_size() == 1  # traced, not baked in: no recompilation per value


@pytest.mark.parametrize("use_jit", [False, True])
def test_policy_loss_hand_computed(use_jit):
    # ratios e^0.5=1.6487 (A=+1 -> clipped at 1.2: loss -1.2), e^-0.5=0.6065 (A=-2 -> max(1.2131,
    # 1.6)=1.6), ratio 1 (A=3 -> -3). mean = (-1.2 + 1.6 - 3)/3
    new = jnp.array([0.5, -0.5, 0.0])
    old = jnp.zeros(3)
    adv = jnp.array([1.0, -2.0, 3.0])
    # jitted, the clip range is a traced argument, as in training
    fn = jax.jit(losses.policy_loss) if use_jit else losses.policy_loss
    loss, clipfrac = fn(new, old, adv, jnp.float32(0.2) if use_jit else 0.2)
    np.testing.assert_allclose(loss, (-1.2 + 1.6 - 3.0) / 3, rtol=1e-5)
    np.testing.assert_allclose(clipfrac, 2 / 3, rtol=1e-6)
    # clip 0.6: e^0.5 = 1.6487 > 1.6 still clipped (-1.6); e^-0.5 = 0.6065 > 0.4 unclipped
    loss, clipfrac = fn(new, old, adv, jnp.float32(0.6) if use_jit else 0.6)
    np.testing.assert_allclose(loss, (-1.6 + 2 * 0.60653066 - 3.0) / 3, rtol=1e-5)
    np.testing.assert_allclose(clipfrac, 1 / 3, rtol=1e-6)


def test_value_loss_hand_computed():
    new = jnp.array([1.0, 0.0])
    old = jnp.array([0.0, 0.0])
    ret = jnp.array([2.0, 1.0])
    # unclipped: 0.5 * mean(1, 1) = 0.5
    np.testing.assert_allclose(losses.value_loss(new, old, ret, None), 0.5)
    # clipped at 0.2: v_clip = (0.2, 0); max((1)^2,(1.8)^2)=3.24, max(1, 1)=1 -> 0.5*2.12
    np.testing.assert_allclose(
        losses.value_loss(new, old, ret, 0.2), 0.5 * (3.24 + 1) / 2, rtol=1e-6
    )
    # masked: only the second element counts
    np.testing.assert_allclose(losses.value_loss(new, old, ret, None, jnp.array([0, 1])), 0.5)


def test_factorised_logprob_entropy_kl():
    dims = (2, 3)
    logits = jnp.log(jnp.array([0.25, 0.75, 0.2, 0.3, 0.5]))
    a = jnp.array([1, 2])
    np.testing.assert_allclose(losses.log_prob(logits, a, dims), np.log(0.75 * 0.5), rtol=1e-6)
    h = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75)) - sum(p * np.log(p) for p in (0.2, 0.3, 0.5))
    np.testing.assert_allclose(losses.entropy(logits, dims), h, rtol=1e-5)
    q = jnp.log(jnp.array([0.5, 0.5, 1 / 3, 1 / 3, 1 / 3]))
    want = 0.25 * np.log(0.5) + 0.75 * np.log(1.5) + sum(p * np.log(p * 3) for p in (0.2, 0.3, 0.5))
    np.testing.assert_allclose(losses.kl(logits, q, dims), want, rtol=1e-5)
    np.testing.assert_allclose(losses.kl(logits, logits, dims), 0.0, atol=1e-7)


@pytest.mark.parametrize("use_jit", [False, True])
def test_action_smoothing_kl_window(use_jit):
    dims = (2,)
    p = [np.array([0.5, 0.5]), np.array([0.9, 0.1]), np.array([0.2, 0.8])]
    logits = jnp.log(jnp.asarray(np.stack(p)))[:, None, :]  # [T=3, N=1, 2]

    def kl_np(a, b):
        return float(np.sum(a * np.log(a / b)))

    fn = losses.action_smoothing_loss
    if use_jit:
        fn = jax.jit(fn, static_argnums=(2, 3))
    # window 3, one episode: t=1: KL(p0||p1)/2; t=2: (KL(p1||p2) + KL(p0||p2))/2; mean over 3 steps
    same = jnp.zeros((3, 1), jnp.int32)
    want = (kl_np(p[0], p[1]) + kl_np(p[1], p[2]) + kl_np(p[0], p[2])) / 2 / 3
    np.testing.assert_allclose(fn(logits, same, 3, dims), want, rtol=1e-5)
    # an episode boundary before t=2 removes every pair that crosses it
    split = jnp.array([[0], [0], [1]])
    np.testing.assert_allclose(fn(logits, split, 3, dims), kl_np(p[0], p[1]) / 2 / 3, rtol=1e-5)
    assert float(losses.action_smoothing_loss(logits, same, 1, dims)) == 0.0


def _buffer(success, ret, valid, task=None):
    c = len(success)
    buf = si.init_buffer(c, 2, {"x": jnp.zeros((1,))}, 1)
    return buf.replace(
        success=jnp.asarray(success),
        ret=jnp.asarray(ret, jnp.float32),
        valid=jnp.asarray(valid),
        task_id=jnp.asarray(task if task is not None else [0] * c, jnp.int32),
    )


def test_si_probabilities_success_equal_failure_proportional():
    buf = _buffer([True, True, False, False, False], [5.0, 1.0, 4.0, 2.0, 9.0], [1, 1, 1, 1, 0])
    p = np.asarray(si.probabilities(buf, 0.5))
    # weights: 1, 1, 0.5*4/4, 0.5*2/4, invalid 0 -> (1, 1, .5, .25, 0) / 2.75
    np.testing.assert_allclose(p, np.array([1, 1, 0.5, 0.25, 0]) / 2.75, rtol=1e-6)
    idx, ok = jax.jit(si.sample, static_argnums=(2, 3))(jax.random.PRNGKey(0), buf, 20000, 0.5)
    assert bool(ok)
    freq = np.bincount(np.asarray(idx), minlength=5) / 20000
    np.testing.assert_allclose(freq, p, atol=0.015)


def test_si_balanced_tasks_and_empty_buffer():
    buf = _buffer([True, True, True], [1.0, 1.0, 1.0], [1, 1, 1], task=[0, 0, 1])
    p = np.asarray(si.probabilities(buf, 0.5, num_tasks=2, balance_tasks=True))
    np.testing.assert_allclose(p, [0.25, 0.25, 0.5], rtol=1e-6)
    empty = _buffer([False, False], [0.0, 0.0], [0, 0])
    _, ok = si.sample(jax.random.PRNGKey(0), empty, 4, 0.5)
    assert not bool(ok)


def test_si_insert_replaces_lowest_and_store_roundtrip():
    obs = {"x": jnp.zeros((1,))}
    buf = si.init_buffer(2, 3, obs, 1)
    store = si.init_store(2, 3, obs, 1)
    for t in range(2):
        o = {"x": jnp.full((2, 1), float(t))}
        store = si.record_step(store, o, jnp.zeros((2, 1), jnp.int32), jnp.full((2, 1), t + 1))
    done = jnp.array([True, True])
    buf, store = si.finish_episodes(
        buf, store, done, jnp.array([1.0, 3.0]), jnp.array([False, False]),
        jnp.zeros(2, jnp.int32), 0.0,
    )  # fmt: skip
    assert np.asarray(buf.valid).all() and sorted(np.asarray(buf.ret)) == [1.0, 3.0]
    np.testing.assert_array_equal(store.ptr, [0, 0])
    np.testing.assert_array_equal(buf.length, [2, 2])
    np.testing.assert_array_equal(buf.action[0, :, 0], [1, 2, 0])
    # a success replaces the lowest-return failure; a low-return failure is not inserted
    b2 = si.insert(buf, {"x": jnp.zeros((3, 1))}, jnp.zeros((3, 1), jnp.int32),
                   jnp.zeros((3, 1), jnp.int32), 1, 0.5, True, 0, 0.0)  # fmt: skip
    assert sorted(np.asarray(b2.ret)) == [0.5, 3.0] and int(np.sum(b2.success)) == 1
    b3 = si.insert(b2, {"x": jnp.zeros((3, 1))}, jnp.zeros((3, 1), jnp.int32),
                   jnp.zeros((3, 1), jnp.int32), 1, 2.0, False, 0, 0.0)  # fmt: skip
    assert sorted(np.asarray(b3.ret)) == [0.5, 3.0]


@functools.cache
def _si_insert(num_tasks, balance, use_jit):
    """si.insert with its static keywords bound, jitted once per combination (a fresh jit
    wrapper per call would trace and compile every offer again)."""
    fn = functools.partial(si.insert, num_tasks=num_tasks, balance_tasks=balance)
    return jax.jit(fn) if use_jit else fn


def _insert_one(buf, ret, success, task, balance, num_tasks=4, use_jit=False):
    fn = _si_insert(num_tasks, balance, use_jit)
    return fn(buf, {"x": jnp.full((3, 1), ret)}, jnp.zeros((3, 1), jnp.int32),
              jnp.zeros((3, 1), jnp.int32), 1, ret, success, task, 0.0)  # fmt: skip


def _balanced_reference(slots, ret, success, task, capacity, num_tasks):
    """The balanced keeping rule by hand over a list of (success, ret, task) slots."""
    rank = lambda e: (1e9 if e[0] else 0.0) + e[1]  # noqa: E731
    if not (success or ret > 0.0):
        return slots
    new = (success, ret, task)
    if len(slots) < capacity:
        return [*slots, new]
    counts = [sum(e[2] == t for e in slots) for t in range(num_tasks)]
    richest = max(range(num_tasks), key=lambda t: (counts[t], -t))
    if counts[task] + 1 < counts[richest]:
        i = min((i for i, e in enumerate(slots) if e[2] == richest), key=lambda i: rank(slots[i]))
        if success or not slots[i][0]:
            return [*slots[:i], new, *slots[i + 1 :]]
    else:
        own = [i for i, e in enumerate(slots) if e[2] == task] or list(range(len(slots)))
        i = min(own, key=lambda i: rank(slots[i]))
        if rank(new) > rank(slots[i]):
            return [*slots[:i], new, *slots[i + 1 :]]
    return slots


@pytest.mark.parametrize("use_jit", [False, True])
def test_si_balanced_buffer_keeps_an_earlier_stages_successes(use_jit):
    """Two stages of two tasks: stage 1's successes fill the buffer; stage 2's successes, better
    by return, take slots only until every task holds its share (balanced), where ranking alone
    hands them every slot; a stage-2 failure never displaces a success."""
    obs = {"x": jnp.zeros((1,))}
    kept = {}
    for balance in (False, True):
        buf = si.init_buffer(8, 3, obs, 1)
        for i in range(8):
            buf = _insert_one(buf, 1.0 + i / 10, True, i % 2, balance, use_jit=use_jit)
        buf = _insert_one(buf, 50.0, False, 2, balance, use_jit=use_jit)  # a failure: not kept
        assert not (np.asarray(buf.task_id) == 2).any()
        for i in range(12):
            buf = _insert_one(buf, 10.0 + i, True, 2 + i % 2, balance, use_jit=use_jit)
        kept[balance] = np.bincount(np.asarray(buf.task_id), minlength=4).tolist()
        assert np.asarray(buf.success).all()
    assert kept[False] == [0, 0, 4, 4]
    assert kept[True] == [2, 2, 2, 2]


@pytest.mark.parametrize("use_jit", [False, True])
def test_si_balanced_insert_matches_the_rule_by_hand(use_jit):
    """200 random offers (4 tasks, 6 slots, successes and failures) against the rule written
    over a Python list."""
    rng = np.random.default_rng(3)
    buf = si.init_buffer(6, 3, {"x": jnp.zeros((1,))}, 1)
    ref = []
    for _ in range(200):
        ret = float(np.round(rng.normal(1.0, 2.0), 3))
        success, task = bool(rng.random() < 0.3), int(rng.integers(0, 4))
        buf = _insert_one(buf, ret, success, task, True, use_jit=use_jit)
        ref = _balanced_reference(ref, ret, success, task, 6, 4)
        got = sorted((bool(s), float(r), int(t)) for s, r, t, v in zip(
            buf.success, buf.ret, buf.task_id, buf.valid) if v)  # fmt: skip
        assert got == sorted((s, np.float32(r).item(), t) for s, r, t in ref)


def test_si_long_episode_keeps_its_last_steps_in_order():
    """An episode longer than max_len enters the buffer as its last max_len steps, oldest first
    (the steps that led to the outcome); a short one in the next episode starts at slot 0."""
    obs = {"x": jnp.zeros((1,))}
    buf = si.init_buffer(2, 3, obs, 1)
    store = si.init_store(1, 3, obs, 1)
    lengths = (7, 2)
    for ep, length in enumerate(lengths):
        for t in range(length):
            o = {"x": jnp.full((1, 1), 10.0 * ep + t)}
            prev = jnp.full((1, 1), t, jnp.int32)
            store = si.record_step(store, o, prev, jnp.full((1, 1), t + 1, jnp.int32))
        buf, store = si.finish_episodes(
            buf, store, jnp.array([True]), jnp.array([1.0 + ep]), jnp.array([False]),
            jnp.zeros(1, jnp.int32), 0.0,
        )  # fmt: skip
    slot = {float(r): i for i, r in enumerate(np.asarray(buf.ret))}
    long, short = slot[1.0], slot[2.0]
    np.testing.assert_array_equal(np.asarray(buf.length)[[long, short]], [3, 2])
    np.testing.assert_array_equal(buf.action[long, :, 0], [5, 6, 7])  # steps 4, 5, 6
    np.testing.assert_array_equal(buf.prev_action[long, :, 0], [4, 5, 6])
    np.testing.assert_array_equal(buf.obs["x"][long, :, 0], [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(buf.obs["x"][short, :2, 0], [10.0, 11.0])


def _offer_every_finished_episode(buf, store, done, ret, success, task_id, min_return):
    """The reference: every finished env's episode offered in env order, one `si.insert` each."""
    max_len = store.action.shape[1]
    for i in np.flatnonzero(np.asarray(done)):
        ptr = int(store.ptr[i])
        start = ptr % max_len if ptr > max_len else 0
        order = (start + np.arange(max_len)) % max_len
        buf = si.insert(buf, jax.tree.map(lambda a, i=i, o=order: a[i][o], store.obs),
                        store.prev_action[i][order], store.action[i][order],
                        min(ptr, max_len), ret[i], success[i], task_id[i], min_return)  # fmt: skip
    return buf


def _episodes(buf):
    """The buffer's episodes as a sorted list (the slot layout aside)."""
    rows = []
    for c in np.flatnonzero(np.asarray(buf.valid)):
        rows.append((bool(buf.success[c]), float(buf.ret[c]), int(buf.length[c]),
                     int(buf.task_id[c]), np.asarray(buf.obs["x"][c]).tobytes(),
                     np.asarray(buf.action[c]).tobytes()))  # fmt: skip
    return sorted(rows)


@pytest.mark.parametrize("use_jit", [False, True])
def test_si_finish_offers_only_what_can_stay_and_keeps_what_offering_all_keeps(use_jit):
    """12 envs, a buffer of 3 already holding two episodes: with more qualifying finished episodes
    than slots (ties, a success, returns under min_return, envs still playing, one that never
    stepped), the buffer ends with the episodes that offering every one in env order keeps; with
    fewer, slot for slot the same buffer."""
    n, cap, max_len = 12, 3, 4
    obs = {"x": jnp.zeros((2,))}
    rng = np.random.default_rng(0)
    buf = si.init_buffer(cap, max_len, obs, 1)
    for r in (1.5, 0.7):
        buf = si.insert(buf, {"x": jnp.full((max_len, 2), r)}, jnp.zeros((max_len, 1), jnp.int32),
                        jnp.ones((max_len, 1), jnp.int32), 2, r, False, 0, 0.0)  # fmt: skip
    store = si.init_store(n, max_len, obs, 1)
    for t in range(6):  # env i has played min(6, i) steps; the ring wraps past 4
        live = np.arange(n) >= 6 - t
        o = {"x": jnp.asarray(rng.normal(size=(n, 2)), jnp.float32)}
        a = jnp.asarray(rng.integers(0, 9, (n, 1)), jnp.int32)
        stepped = si.record_step(store, o, a, a + 1)
        store = jax.tree.map(lambda new, old, live=live: jnp.where(
            live.reshape((-1,) + (1,) * (new.ndim - 1)), new, old), stepped, store)  # fmt: skip
    ret = jnp.asarray([2.0, 2.0, 0.1, 3.0, 2.0, 0.5, 4.0, 2.0, -1.0, 2.0, 0.9, 1.0], jnp.float32)
    success = jnp.asarray(np.arange(n) == 8)
    task_id = jnp.asarray(np.arange(n) % 3, jnp.int32)
    finish = jax.jit(si.finish_episodes) if use_jit else si.finish_episodes
    for done_ids in ([0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11], [2, 5, 10]):
        done = jnp.asarray(np.isin(np.arange(n), done_ids))
        got, got_store = finish(buf, store, done, ret, success, task_id, 0.6)
        want = _offer_every_finished_episode(buf, store, done, ret, success, task_id, 0.6)
        assert _episodes(got) == _episodes(want)
        np.testing.assert_array_equal(got_store.ptr, np.where(done, 0, store.ptr))
    # the second case offers one qualifying episode (0.9; 0.1 and 0.5 are not above 0.6), fewer
    # than the slots: the same slots too
    jax.tree.map(np.testing.assert_array_equal, got, want)
    # by hand, the first case: the success (return -1.0), 3.0 and one 2.0 (env 1's: env 0, also
    # 2.0, never stepped) displace the buffer's 1.5 and 0.7; env 6's 4.0 is still playing
    first = finish(buf, store, jnp.asarray(np.arange(n) != 6), ret, success, task_id, 0.6)[0]
    assert [e[:2] for e in _episodes(first)] == [(False, 2.0), (False, 3.0), (True, -1.0)]


def test_si_finish_moves_only_the_offered_rows_between_devices():
    """With the env axis sharded over 4 devices, no collective carries the whole store."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from agents import learner as lrn

    n, cap, max_len = 64, 4, 16
    mesh = lrn.make_mesh(4)
    e, r = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    obs = {"x": jnp.zeros((3,))}
    buf = si.init_buffer(cap, max_len, obs, 1)
    store = si.init_store(n, max_len, obs, 1)
    fn = jax.jit(si.finish_episodes, in_shardings=(r, e, e, e, e, e, r), out_shardings=(r, e))
    z = jnp.zeros(n)
    hlo = fn.lower(buf, store, z > 0, z, z > 0, z.astype(jnp.int32), 0.0).compile().as_text()
    moved = [line for line in hlo.splitlines() if "all-gather(" in line or "all-reduce(" in line]
    assert moved  # the offered rows do cross devices
    assert not [line for line in moved if f"[{n},{max_len}," in line], moved
