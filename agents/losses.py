"""Pure loss pieces of PPO + self-imitation (rlax style: small, shape-asserted, jit-agnostic).

Actions are factorised categoricals: `action_dims = (n_1, ..., n_K)`; logits are the concatenation
`[..., sum(n_k)]` and an action is int32 `[..., K]`. The compact discrete set is K = 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np


def _split(logits: jax.Array, action_dims: Sequence[int]) -> list[jax.Array]:
    chex.assert_axis_dimension(logits, -1, int(sum(action_dims)))
    return jnp.split(logits, np.cumsum(action_dims)[:-1].tolist(), axis=-1)


def log_prob(logits: jax.Array, action: jax.Array, action_dims: Sequence[int]) -> jax.Array:
    """Sum over components of log pi(a_k): logits `[..., sum n]`, action `[..., K]` -> `[...]`."""
    chex.assert_axis_dimension(action, -1, len(action_dims))
    out = 0.0
    for k, lg in enumerate(_split(logits, action_dims)):
        lp = jax.nn.log_softmax(lg)
        out = out + jnp.take_along_axis(lp, action[..., k : k + 1], axis=-1)[..., 0]
    return out


def entropy(logits: jax.Array, action_dims: Sequence[int]) -> jax.Array:
    """Sum over components of the categorical entropies: `[..., sum n] -> [...]`."""
    out = 0.0
    for lg in _split(logits, action_dims):
        lp = jax.nn.log_softmax(lg)
        out = out - jnp.sum(jnp.exp(lp) * lp, axis=-1)
    return out


def entropy_regularizer(
    logits: jax.Array, action_dims: Sequence[int], prior_logits: jax.Array | None = None
) -> jax.Array:
    """The term the entropy coefficient multiplies in the loss (to be minimised): `[...]`.

    Without a prior it is the negative entropy. With an action prior p0 (initial logits of the
    policy) it is KL(pi || p0) = -H(pi) - E_pi[log p0]: the entropy bonus measured against the
    prior, so the regulariser keeps the policy near p0 instead of pulling it toward uniform
    (for a uniform p0 it equals log n - H(pi), the same gradient as the plain bonus).
    """
    if prior_logits is None:
        return -entropy(logits, action_dims)
    return kl(logits, jnp.broadcast_to(prior_logits, logits.shape), action_dims)


def kl(logits_p: jax.Array, logits_q: jax.Array, action_dims: Sequence[int]) -> jax.Array:
    """KL(p || q) of two factorised categoricals (sum over components): `[...]`."""
    out = 0.0
    for lp_, lq_ in zip(_split(logits_p, action_dims), _split(logits_q, action_dims)):
        lp, lq = jax.nn.log_softmax(lp_), jax.nn.log_softmax(lq_)
        out = out + jnp.sum(jnp.exp(lp) * (lp - lq), axis=-1)
    return out


def sample(key: jax.Array, logits: jax.Array, action_dims: Sequence[int]) -> jax.Array:
    """One action per leading index: `[..., sum n] -> int32 [..., K]`."""
    keys = jax.random.split(key, len(action_dims))
    parts = [
        jax.random.categorical(k, lg, axis=-1) for k, lg in zip(keys, _split(logits, action_dims))
    ]
    return jnp.stack(parts, axis=-1).astype(jnp.int32)


def mode(logits: jax.Array, action_dims: Sequence[int]) -> jax.Array:
    """Per-component argmax: `[..., sum n] -> int32 [..., K]`."""
    parts = [jnp.argmax(lg, axis=-1) for lg in _split(logits, action_dims)]
    return jnp.stack(parts, axis=-1).astype(jnp.int32)


def gae(
    rewards: jax.Array,
    values: jax.Array,
    dones: jax.Array,
    last_value: jax.Array,
    gamma: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """GAE(lambda) by a reverse `lax.scan` over time.

    rewards, values, dones: `[T, N]`; `dones[t]` is True when the episode ended at step t (so
    there is no bootstrap from `values[t + 1]`); last_value `[N]` is V(s_T).
    Returns (advantages, returns), both `[T, N]`, returns = advantages + values.
    """
    chex.assert_equal_shape([rewards, values, dones])
    chex.assert_shape(last_value, rewards.shape[1:])
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)

    def body(carry, x):
        r, v, nv, d = x
        nonterm = 1.0 - d.astype(jnp.float32)
        delta = r + gamma * nv * nonterm - v
        carry = delta + gamma * lam * nonterm * carry
        return carry, carry

    _, adv = jax.lax.scan(
        body, jnp.zeros_like(last_value), (rewards, values, next_values, dones), reverse=True
    )
    return adv, adv + values


def policy_loss(
    new_logp: jax.Array, old_logp: jax.Array, advantages: jax.Array, clip_eps: float, mask=None
) -> tuple[jax.Array, jax.Array]:
    """Clipped surrogate: mean(max(-A r, -A clip(r, 1-eps, 1+eps))). Returns (loss, clip fraction)."""
    chex.assert_equal_shape([new_logp, old_logp, advantages])
    ratio = jnp.exp(new_logp - old_logp)
    loss = jnp.maximum(
        -advantages * ratio, -advantages * jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps)
    )
    clipped = (jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32)
    return masked_mean(loss, mask), masked_mean(clipped, mask)


def value_loss(
    new_values: jax.Array,
    old_values: jax.Array,
    returns: jax.Array,
    clip_eps: float | None,
    mask=None,
) -> jax.Array:
    """0.5 * mean((V - R)^2), or with clipping 0.5 * mean(max((V-R)^2, (V_clip-R)^2)),
    V_clip = V_old + clip(V - V_old, -eps, eps). `clip_eps=None` disables clipping."""
    chex.assert_equal_shape([new_values, old_values, returns])
    err = (new_values - returns) ** 2
    if clip_eps is not None:
        v_clip = old_values + jnp.clip(new_values - old_values, -clip_eps, clip_eps)
        err = jnp.maximum(err, (v_clip - returns) ** 2)
    return 0.5 * masked_mean(err, mask)


def action_smoothing_loss(
    logits: jax.Array, episode_ids: jax.Array, window: int, action_dims: Sequence[int], mask=None
) -> jax.Array:
    """The paper's action-smoothing term (App. G.3) over a sliding window of size |W| = `window`.

    Our formula (the paper's equation is lost from the text copy):

        L_smooth = mean_{t, n} [ 1/(|W|-1) * sum_{k=1}^{|W|-1} m_{t,k} KL(pi(.|s_{t-k}) || pi(.|s_t)) ]

    where m_{t,k} = 1 if step t-k lies in the rollout and in the same episode as t, else 0. Both
    distributions come from the current parameters, so the gradient pulls consecutive
    distributions toward each other.
    logits `[T, N, sum n]`, episode_ids int `[T, N]` (equal within one episode). Returns a scalar.
    """
    chex.assert_rank(logits, 3)
    chex.assert_shape(episode_ids, logits.shape[:2])
    if window < 2:
        return jnp.zeros((), jnp.float32)
    t_len = logits.shape[0]
    total = jnp.zeros(logits.shape[:2], jnp.float32)
    for k in range(1, window):
        if k >= t_len:
            break
        past = logits[:-k]
        cur = logits[k:]
        same = (episode_ids[:-k] == episode_ids[k:]).astype(jnp.float32)
        term = kl(past, cur, action_dims) * same
        total = total.at[k:].add(term)
    return masked_mean(total / (window - 1), mask)


def imitation_loss(logits: jax.Array, actions: jax.Array, action_dims, mask) -> jax.Array:
    """Self-imitation behaviour cloning: masked mean of -log pi(a | s) (sum over components)."""
    return masked_mean(-log_prob(logits, actions, action_dims), mask)


def masked_mean(x: jax.Array, mask=None) -> jax.Array:
    if mask is None:
        return jnp.mean(x)
    m = mask.astype(x.dtype)
    return jnp.sum(x * m) / jnp.maximum(jnp.sum(m), 1.0)


# ----------------------------------------------------------------------------- return scale
def init_return_stats() -> jax.Array:
    """Running statistics of the value targets: f32 `[3]` = (mean, variance, count). The
    count starts near zero, so the first batch sets the scale."""
    return jnp.asarray([0.0, 1.0, 1e-4], jnp.float32)


def return_mean_std(stats: jax.Array) -> tuple[jax.Array, jax.Array]:
    return stats[0], jnp.sqrt(jnp.maximum(stats[1], 1e-8))


def update_return_stats(stats: jax.Array, returns: jax.Array, mask=None) -> jax.Array:
    """Merge a batch of returns (masked) into `stats` (Chan et al.'s parallel mean/variance:
    the same result as one pass over every return seen)."""
    chex.assert_shape(stats, (3,))
    m = jnp.ones_like(returns) if mask is None else mask.astype(returns.dtype)
    n_b = jnp.sum(m)
    mean_b = jnp.sum(returns * m) / jnp.maximum(n_b, 1.0)
    var_b = jnp.sum(m * (returns - mean_b) ** 2) / jnp.maximum(n_b, 1.0)
    mean, var, n = stats[0], stats[1], stats[2]
    total = n + n_b
    delta = mean_b - mean
    new_mean = mean + delta * n_b / total
    new_var = (var * n + var_b * n_b + delta**2 * n * n_b / total) / total
    return jnp.stack([new_mean, new_var, total]).astype(jnp.float32)
