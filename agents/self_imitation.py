"""Self-imitation (paper App. F, Algorithm 1): a fixed-shape, padded trajectory buffer.

Everything is a `flax.struct.dataclass` of fixed-shape arrays so the insert (inside the rollout
scan) and the SI update compile once.

Sampling priority (paper App. F.3): every successful trajectory has the same weight 1;
unsuccessful ones have weight `unsuccessful_weight * max(R, 0) / max_j max(R_j, 0)` over the
unsuccessful trajectories in the buffer, i.e. proportional to their episodic return and never
above `unsuccessful_weight` (< 1, "lower probability"). Probabilities are weights / sum. With
`balance_tasks`, each task present in the buffer gets the same total probability (the paper's
replay balancing for multi-task training, App. G.3).

Replacement: a finished episode is a candidate if it succeeded or its return exceeds
`min_return`; it replaces the lowest-ranked slot (empty < unsuccessful by return < successful by
return) when it ranks higher. With `balance_tasks` (several tasks), each task also keeps its share
of the slots: a candidate of a task holding at least two slots fewer than the task holding the
most takes that task's lowest-ranked slot whatever its rank, unless it is a failure and the slot
a success; otherwise it competes only with its own task's slots. Why: in multi-stage training
(App. G.3) the first stage's successes fill the buffer and, kept by rank alone, the second
stage's successes would displace them all, and the policy forgets the first stage's tasks. Episodes longer than `max_len` keep their last `max_len` steps,
the ones that led to the outcome (the per-env store is a ring buffer, put in time order when the
episode is offered).

A recurrent policy's carry is stored with every step (`core [.., L, H]`, the carry the step was
acted on, already zeroed at an episode's start; one unused unit for a memoryless policy): the SI update
replays a kept trajectory from the carry at its first kept step, so a long episode's last
`max_len` steps are imitated with the memory the policy had when it played them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class SIBuffer:
    obs: dict  # pytree of [C, L, ...]
    prev_action: jax.Array  # int32 [C, L, K]
    action: jax.Array  # int32 [C, L, K]
    core: jax.Array  # f32 [C, L, H]
    length: jax.Array  # int32 [C]
    ret: jax.Array  # f32 [C]
    success: jax.Array  # bool [C]
    valid: jax.Array  # bool [C]
    task_id: jax.Array  # int32 [C]

    @property
    def capacity(self) -> int:
        return self.length.shape[0]

    @property
    def max_len(self) -> int:
        return self.action.shape[1]


@struct.dataclass
class EpisodeStore:
    """The episode each env is currently playing, written step by step."""

    obs: dict  # pytree of [N, L, ...]
    prev_action: jax.Array  # int32 [N, L, K]
    action: jax.Array  # int32 [N, L, K]
    core: jax.Array  # f32 [N, L, H]
    ptr: jax.Array  # int32 [N]


def init_buffer(capacity: int, max_len: int, obs_example: dict, num_components: int,
                core_size: int = 0) -> SIBuffer:  # fmt: skip
    """Empty buffer; `obs_example` is one observation (no batch axis) giving shapes and dtypes."""
    obs = jax.tree.map(lambda x: jnp.zeros((capacity, max_len) + x.shape, x.dtype), obs_example)
    act = jnp.zeros((capacity, max_len, num_components), jnp.int32)
    return SIBuffer(
        obs=obs,
        prev_action=act,
        action=jnp.zeros_like(act),
        core=jnp.zeros((capacity, max_len, core_size), jnp.float32),
        length=jnp.zeros((capacity,), jnp.int32),
        ret=jnp.zeros((capacity,), jnp.float32),
        success=jnp.zeros((capacity,), bool),
        valid=jnp.zeros((capacity,), bool),
        task_id=jnp.zeros((capacity,), jnp.int32),
    )


def init_store(num_envs: int, max_len: int, obs_example: dict, num_components: int,
               core_size: int = 0) -> EpisodeStore:  # fmt: skip
    obs = jax.tree.map(lambda x: jnp.zeros((num_envs, max_len) + x.shape, x.dtype), obs_example)
    act = jnp.zeros((num_envs, max_len, num_components), jnp.int32)
    core = jnp.zeros((num_envs, max_len, core_size), jnp.float32)
    return EpisodeStore(obs, act, jnp.zeros_like(act), core, jnp.zeros((num_envs,), jnp.int32))


def weights(buf: SIBuffer, unsuccessful_weight: float, num_tasks: int = 1, balance_tasks=False):
    """Unnormalised sampling weights `[C]` (see the module docstring)."""
    pos = jnp.maximum(buf.ret, 0.0)
    unsucc = buf.valid & ~buf.success
    max_r = jnp.max(jnp.where(unsucc, pos, 0.0))
    w_fail = unsuccessful_weight * pos / jnp.maximum(max_r, 1e-8)
    w = jnp.where(buf.success, 1.0, w_fail)
    w = jnp.where(buf.valid, w, 0.0)
    if balance_tasks and num_tasks > 1:
        per_task = jax.ops.segment_sum(w, buf.task_id, num_segments=num_tasks)
        present = jnp.sum(per_task > 0)
        w = w / jnp.maximum(per_task[buf.task_id], 1e-12) / jnp.maximum(present, 1)
    return w


def probabilities(buf: SIBuffer, unsuccessful_weight: float, num_tasks=1, balance_tasks=False):
    """Sampling probabilities `[C]`; all zero when the buffer holds nothing sampleable."""
    w = weights(buf, unsuccessful_weight, num_tasks, balance_tasks)
    return w / jnp.maximum(jnp.sum(w), 1e-12)


def sample(
    key, buf: SIBuffer, batch: int, unsuccessful_weight: float, num_tasks=1, balance_tasks=False
):
    """Indices int32 `[batch]` drawn with replacement by priority, and whether any were sampleable."""
    w = weights(buf, unsuccessful_weight, num_tasks, balance_tasks)
    ok = jnp.sum(w) > 0
    logits = jnp.where(w > 0, jnp.log(jnp.maximum(w, 1e-30)), -jnp.inf)
    logits = jnp.where(ok, logits, 0.0)
    idx = jax.random.categorical(key, logits, shape=(batch,)).astype(jnp.int32)
    return idx, ok


def _tier(success, valid):
    """The first ranking key: empty (-1) < unsuccessful (0) < successful (1); within a tier, the
    return. Two keys, not `1e9 * success + ret`: in float32 that sum cannot tell returns apart
    that differ by less than 64."""
    return jnp.where(valid, jnp.asarray(success).astype(jnp.int32), -1)


def _outranks(tier_a, ret_a, tier_b, ret_b):
    return (tier_a > tier_b) | ((tier_a == tier_b) & (ret_a > ret_b))


def _lowest(tier, ret, pool):
    """The lowest-ranked slot among `pool` (ties: the lowest index)."""
    t = jnp.where(pool, tier, jnp.iinfo(jnp.int32).max)
    low = t == jnp.min(t)
    return jnp.argmin(jnp.where(low & pool, ret, jnp.inf))


def _candidate(success, ret, length, min_return):
    """Whether a finished episode may enter the buffer at all (before comparing ranks)."""
    return (success | (ret > min_return)) & (length > 0)


def _balanced_slot(buf: SIBuffer, tier, success, task_id, num_tasks: int):
    """The slot a candidate of `task_id` may take under task balancing and whether it must
    outrank it (see the module docstring): an empty slot, else the richest task's lowest-ranked
    slot while `task_id` holds at least two fewer (ties: the lower task id), else its own task's
    lowest-ranked slot (any slot when it holds none)."""
    counts = jax.ops.segment_sum(buf.valid.astype(jnp.int32), buf.task_id, num_segments=num_tasks)
    richest = jnp.argmax(counts)
    take_richest = jnp.all(buf.valid) & (counts[task_id] + 1 < counts[richest])
    own = buf.valid & (buf.task_id == task_id)
    pool = jnp.where(take_richest, buf.task_id == richest, jnp.where(jnp.any(own), own, True))
    slot = _lowest(tier, buf.ret, pool | ~buf.valid)
    # balance outranks rank, but never puts a failure in a success's place
    by_balance = take_richest & (success | ~buf.success[slot])
    return slot, by_balance


def insert(buf: SIBuffer, obs, prev_action, action, length, ret, success, task_id, min_return,
           offered=True, core=None, *, num_tasks: int = 1, balance_tasks: bool = False):  # fmt: skip
    """Insert one trajectory (`obs` leaves `[L, ...]`, actions `[L, K]`, carries `[L, H]` or
    None) if it qualifies (and `offered`). Writes one slot whatever the outcome (the old row
    back when it does not qualify) instead of branching: the same cost with and without `vmap` (K seeds), where a
    `lax.cond` would turn into a select over the whole buffer. `num_tasks`, `balance_tasks`
    (static): each task keeps its share of the slots (module docstring)."""
    tier = _tier(buf.success, buf.valid)
    if balance_tasks and num_tasks > 1:
        slot, by_balance = _balanced_slot(buf, tier, success, task_id, num_tasks)
    else:
        slot, by_balance = _lowest(tier, buf.ret, True), False
    higher = _outranks(_tier(success, True), ret, tier[slot], buf.ret[slot])
    qualifies = _candidate(success, ret, length, min_return) & (by_balance | higher)
    qualifies = qualifies & offered
    core = jnp.zeros_like(buf.core[0]) if core is None else core

    def upd(a, v):
        return a.at[slot].set(jnp.where(qualifies, jnp.asarray(v, a.dtype), a[slot]))

    return SIBuffer(
        obs=jax.tree.map(upd, buf.obs, obs),
        prev_action=upd(buf.prev_action, prev_action),
        action=upd(buf.action, action),
        core=upd(buf.core, core),
        length=upd(buf.length, length),
        ret=upd(buf.ret, ret),
        success=upd(buf.success, success),
        valid=upd(buf.valid, True),
        task_id=upd(buf.task_id, task_id),
    )


def record_step(store: EpisodeStore, obs, prev_action, action, core=None) -> EpisodeStore:
    """Write one step for every env (obs leaves `[N, ...]`, actions `[N, K]`, the carry acted
    on `[N, H]`, None for a memoryless policy) at its pointer (modulo `max_len`: a long episode
    overwrites its oldest steps)."""
    n = store.ptr.shape[0]
    max_len = store.action.shape[1]
    idx = store.ptr % max_len
    rows = jnp.arange(n)
    upd = lambda a, v: a.at[rows, idx].set(v)  # noqa: E731
    return EpisodeStore(
        obs=jax.tree.map(upd, store.obs, obs),
        prev_action=upd(store.prev_action, prev_action),
        action=upd(store.action, action),
        core=store.core if core is None else upd(store.core, core),
        ptr=store.ptr + 1,
    )


def finish_episodes(
    buf: SIBuffer,
    store: EpisodeStore,
    done,
    ret,
    success,
    task_id,
    min_return: float,
    *,
    num_tasks: int = 1,
    balance_tasks: bool = False,
) -> tuple[SIBuffer, EpisodeStore]:
    """For envs whose episode ended (`done [N]`), offer it to the buffer and reset its pointer.

    Only the episodes that can enter the buffer are read from the store: the finished ones that
    qualify (success, or a return above `min_return`), at most `capacity` of them per call, the
    highest-ranked (ties: the lower env index), offered in env order. A lower-ranked one could
    not stay: the ones chosen outrank it, so the buffer ends with the same episodes as when every
    finished one is offered in env order (with `balance_tasks`, exactly so while at most
    `capacity` episodes finish in one step; beyond that, the best `capacity` are offered). Why: with the env axis sharded over devices (and
    hosts), reading those rows moves `capacity` episodes between devices, where reading every
    env's row moved the whole `[N, max_len, ...]` store each time an episode ended. Runs the
    inserts only when some env finished (`lax.cond`)."""
    n, max_len = done.shape[0], store.action.shape[1]
    k = min(n, buf.capacity)
    eligible = done & _candidate(success, ret, store.ptr, min_return)
    # eligible first, then by tier and return (ties: the lower env index; lexsort is stable)
    best = jnp.lexsort((-jnp.asarray(ret, jnp.float32), -_tier(success, True), ~eligible))
    chosen = jnp.sort(best[:k])  # the best k, in env order

    def offer_all(b):
        take = lambda a: a[chosen]  # noqa: E731  (k rows: a masked gather + sum when sharded)
        obs, prev, act, core = jax.tree.map(
            take, (store.obs, store.prev_action, store.action, store.core)
        )
        ptrs = store.ptr[chosen]

        def body(j, b):
            # time order: the oldest kept step sits at ptr % max_len once the ring wrapped
            ptr = ptrs[j]
            start = jnp.where(ptr > max_len, ptr % max_len, 0)
            order = (start + jnp.arange(max_len)) % max_len
            row = lambda a: a[j][order]  # noqa: E731
            i = chosen[j]
            return insert(b, jax.tree.map(row, obs), row(prev), row(act),
                          jnp.minimum(ptr, max_len), ret[i], success[i], task_id[i],
                          min_return, offered=eligible[i], core=row(core),
                          num_tasks=num_tasks, balance_tasks=balance_tasks)  # fmt: skip

        return jax.lax.fori_loop(0, k, body, b)

    buf = jax.lax.cond(jnp.any(eligible), offer_all, lambda b: b, buf)
    store = store.replace(ptr=jnp.where(done, 0, store.ptr))
    return buf, store
