"""The MineCLIP learned reward (paper Sec. 4.2, App. F.1) with a per-env frame-feature cache.

Each env step encodes ONE new frame with the image encoder; the last `window` (16) frame
features of every env live in a ring buffer (`FeatureCache`), the temporal aggregator turns the
window into a video embedding, and the reward compares it with precomputed prompt features:

    P_G    = softmax over {goal} + negatives of exp(logit_scale) * cos(video, prompt), at the goal
    Direct = max(P_G - 1 / N_T, 0)          N_T = 1 + number of negatives (chance level)
    Delta  = P_G,t - P_G,t-1                 0 on the first step of an episode
    Peak   = max(Direct_t - max_{s<t} Direct_s, 0)   the rise of the episode's best Direct;
             0 on the first step, so an episode earns max_t Direct_t - Direct_0 in all

Typical use (frame features are shared with the policy, which consumes the same features):

    import mineclip_jax as mcj
    from mineclip_jax.reward import MineCLIPReward
    mc = mcj.load_checkpoint("attn.pth")
    reward = MineCLIPReward(mc, goal="hunt a cow", kind="direct")
    state = reward.init(num_envs=8)
    feats = reward.encode_frames(obs["rgb"])              # [8, 512], also the policy's input
    state, r, p_goal = reward.step(state, feats, is_first)  # is_first: obs came from reset

Multi-task batches: pass several goals, then give each env the index of its goal:

    reward = MineCLIPReward(mc, goal=["hunt a cow", "shear a sheep"])
    state = reward.init(num_envs=4, goal_index=[0, 0, 1, 1])

Inside your own jit use the pure functions with the pytree `reward.spec`:
`reward_step(spec, state, frame_features, is_first)`.

Window at episode start (the documented reset rule): when `is_first[n]` is True the whole
window of env n is refilled with that first frame's feature, i.e. the video the aggregator sees
at step k < 16 of an episode is [f_0] * (16 - k) + [f_1, ..., f_k] -- the first frame
repeated in front, never a frame of the previous episode. `cache.count` says how many distinct
frames of the current episode the window holds (1..16), for callers who want to mask early
rewards. This equals `encode_video` on the same 16 (padded) frames computed from scratch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, Literal, get_args

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from mineclip_jax.model import check_frame_values

RewardKind = Literal["direct", "delta", "peak"]
REWARD_KINDS: tuple[str, ...] = get_args(RewardKind)

# The prompts of the paper's 12 experiment tasks (Sec. 5, App. G.1): Animal-Zoo, Mob-Combat and
# Creative groups. The default negative set for a goal is these prompts minus the goal itself
# (11 negatives for a paper task, so N_T = 12 and chance level 1/12). The paper's exact negative
# list is not public; "other task descriptions" is what it describes.
PAPER_TASK_PROMPTS: tuple[str, ...] = (
    "milk a cow",
    "hunt a cow",
    "shear a sheep",
    "hunt a sheep",
    "combat a spider",
    "combat a zombie",
    "combat a zombie pigman",
    "combat an enderman",
    "find a nether portal",
    "find an ocean",
    "dig a hole",
    "put carpets on the floor",
)
DEFAULT_NEGATIVE_PROMPTS: tuple[str, ...] = PAPER_TASK_PROMPTS

# Paraphrase detection for negatives: a negative that says the goal in other words would
# compete with it and suppress its reward ("combat a pigman" vs "combat a zombie pigman").
# Prompts are compared after mapping verbs of one act to one word, mob aliases to one name,
# dropping articles and a plural "s".
_VERB_CLASSES = {
    "kill": ("hunt", "kill", "slay", "combat", "fight", "attack", "defeat", "battle"),
    "find": ("find", "reach", "locate", "discover", "search"),
    "put": ("put", "place", "lay", "set"),
}
_VERB = {v: k for k, vs in _VERB_CLASSES.items() for v in vs}
_ALIASES = ((r"\bzombified piglins?\b", "zombie pigman"), (r"(?<!zombie )\bpigm[ae]n\b", "zombie pigman"),
            (r"\bzombie pig ?m[ae]n\b", "zombie pigman"))  # fmt: skip
_ARTICLES = {"a", "an", "the", "some"}
DEFAULT_WINDOW = 16  # frames per video window, as MineCLIP was trained (paper App. E.3).


# ------------------------------------------------------------------------------ the cache
@struct.dataclass
class FeatureCache:
    """Per-env ring buffer of the last `window` frame features of the current episode."""

    features: jax.Array  # float32 [N, W, D]: ring buffer slots (not in time order).
    position: jax.Array  # int32 [N]: the slot the next frame is written to (= oldest slot).
    count: jax.Array  # int32 [N]: distinct frames of the current episode held (0 = empty).

    @property
    def num_envs(self) -> int:
        return self.features.shape[0]

    @property
    def window(self) -> int:
        return self.features.shape[1]

    @property
    def dim(self) -> int:
        return self.features.shape[2]


def init_cache(num_envs: int, dim: int, window: int = DEFAULT_WINDOW) -> FeatureCache:
    """An empty cache; the first `update` of each env fills its window (see module docstring)."""
    if num_envs < 1 or dim < 1 or window < 1:
        raise ValueError(
            f"init_cache needs num_envs, dim and window >= 1, got {num_envs}, {dim}, {window}"
        )
    return FeatureCache(
        features=jnp.zeros((num_envs, window, dim), jnp.float32),
        position=jnp.zeros((num_envs,), jnp.int32),
        count=jnp.zeros((num_envs,), jnp.int32),
    )


def _update_rows(features, position, count, new, is_first):
    """Ring-buffer update of full rows: features [M, W, D], new [M, D], is_first [M]."""
    window = features.shape[1]
    # An env never updated before (count 0) starts an episode whatever is_first says.
    start = jnp.logical_or(is_first, count == 0)
    slot = jax.nn.one_hot(position, window, dtype=jnp.bool_)  # [M, W]
    write = jnp.logical_or(start[:, None], slot)  # episode start: every slot gets the frame
    features = jnp.where(write[:, :, None], new[:, None, :].astype(features.dtype), features)
    position = jnp.where(start, 0, (position + 1) % window).astype(jnp.int32)
    count = jnp.where(start, 1, jnp.minimum(count + 1, window)).astype(jnp.int32)
    return features, position, count


def update(
    cache: FeatureCache,
    frame_features: jax.Array,
    is_first: jax.Array,
    env_ids: jax.Array | None = None,
) -> FeatureCache:
    """Push one frame feature per env.

    frame_features: [N, D] (or [M, D] with `env_ids` [M], for envs stepped asynchronously);
    is_first: bool [N] (or [M]), True where the frame is the first observation of an episode
    (the observation returned by reset). Pure; jit- and vmap-friendly.
    """
    n, w, d = cache.features.shape
    is_first = jnp.asarray(is_first, jnp.bool_)
    if env_ids is None:
        chex.assert_shape(frame_features, (n, d))
        chex.assert_shape(is_first, (n,))
        f, p, c = _update_rows(
            cache.features, cache.position, cache.count, frame_features, is_first
        )
        return FeatureCache(features=f, position=p, count=c)
    env_ids = jnp.asarray(env_ids, jnp.int32)
    m = env_ids.shape[0]
    chex.assert_shape(frame_features, (m, d))
    chex.assert_shape(is_first, (m,))
    f, p, c = _update_rows(
        cache.features[env_ids],
        cache.position[env_ids],
        cache.count[env_ids],
        frame_features,
        is_first,
    )
    return FeatureCache(
        features=cache.features.at[env_ids].set(f),
        position=cache.position.at[env_ids].set(p),
        count=cache.count.at[env_ids].set(c),
    )


def window_features(cache: FeatureCache, env_ids: jax.Array | None = None) -> jax.Array:
    """The window of every env (or of `env_ids`) in time order, oldest first: [N, W, D]."""
    features, position = cache.features, cache.position
    if env_ids is not None:
        env_ids = jnp.asarray(env_ids, jnp.int32)
        features, position = features[env_ids], position[env_ids]
    w = features.shape[1]
    order = (position[:, None] + jnp.arange(w, dtype=jnp.int32)[None, :]) % w  # [N, W]
    return jnp.take_along_axis(features, order[:, :, None], axis=1)


# ----------------------------------------------------------------------------- the maths
def goal_probability(logits: jax.Array, goal_prompt: jax.Array, candidates: jax.Array):
    """P_G per env: softmax over the env's candidate prompts, read at its goal.

    logits [N, P] (logit scale applied); goal_prompt int [N] (column of each env's goal);
    candidates bool [N, P] (goal + negatives of each env). Returns (P_G [N], N_T [N]).
    """
    chex.assert_rank(logits, 2)
    chex.assert_equal_shape([logits, candidates])
    masked = jnp.where(candidates, logits.astype(jnp.float32), -jnp.inf)
    probs = jax.nn.softmax(masked, axis=-1)
    p_goal = jnp.take_along_axis(probs, goal_prompt[:, None], axis=1)[:, 0]
    return p_goal, candidates.sum(axis=-1).astype(jnp.float32)


def direct_reward(p_goal: jax.Array, num_prompts: jax.Array | float) -> jax.Array:
    """Direct: max(P_G - 1/N_T, 0); 1/N_T is chance level among N_T prompts."""
    return jnp.maximum(p_goal - 1.0 / num_prompts, 0.0)


def delta_reward(p_goal: jax.Array, prev_p_goal: jax.Array, is_first: jax.Array) -> jax.Array:
    """Delta: P_G,t - P_G,t-1, defined as 0 on the first step of an episode."""
    return jnp.where(jnp.asarray(is_first, jnp.bool_), 0.0, p_goal - prev_p_goal)


def peak_reward(direct: jax.Array, best_direct: jax.Array, is_first: jax.Array):
    """Peak: how far Direct rises above the episode's best so far -> (reward, new best).

    Direct pays every step the target looks near, so an episode that lingers by the target
    earns more than one that ends in a quick success; Peak pays only new highs, so an episode
    earns at most max_t Direct_t - Direct_0 however long it lasts. 0 on the first step (the
    spawn view is no act of the policy's), which only sets the best."""
    is_first = jnp.asarray(is_first, jnp.bool_)
    best = jnp.where(is_first, direct, best_direct)
    return jnp.maximum(direct - best, 0.0), jnp.maximum(best, direct)


# --------------------------------------------------------------------------- reward spec
@struct.dataclass
class RewardSpec:
    """Everything the reward needs inside jit: MineCLIP params (only the video path and the
    logit scale are used), precomputed prompt features and which prompts each goal competes
    against. Static parts (module, kind, prompt strings) are not pytree leaves."""

    params: Any  # MineCLIP params.
    text_features: jax.Array  # float32 [P, D]: encode_text of every prompt in `prompts`.
    goal_prompt: jax.Array  # int32 [G]: column of goal g in the prompt table.
    candidates: jax.Array  # bool [G, P]: goal g's own column + its negatives.
    module: nn.Module = struct.field(pytree_node=False)
    kind: str = struct.field(pytree_node=False, default="direct")
    window: int = struct.field(pytree_node=False, default=DEFAULT_WINDOW)
    prompts: tuple[str, ...] = struct.field(pytree_node=False, default=())
    goals: tuple[str, ...] = struct.field(pytree_node=False, default=())


@struct.dataclass
class RewardState:
    """Per-env reward state carried across env steps."""

    cache: FeatureCache
    prev_p_goal: jax.Array  # float32 [N]: P_G of the previous step (Delta).
    goal_index: jax.Array  # int32 [N]: index into the spec's goals of each env's goal.


@struct.dataclass
class PeakRewardState(RewardState):
    """The Peak reward's state: `RewardState` plus the episode's best Direct reward so far (a
    class of its own, so that Direct and Delta states keep the leaves their checkpoints hold)."""

    best_direct: jax.Array  # float32 [N]: the episode's highest Direct reward so far.


def _new_state(spec: RewardSpec, cache: FeatureCache, goal_index: jax.Array) -> RewardState:
    """The state of a reward whose envs all start an episode at their next step."""
    zeros = jnp.zeros(goal_index.shape, jnp.float32)
    if spec.kind == "peak":
        return PeakRewardState(cache=cache, prev_p_goal=zeros, goal_index=goal_index,
                               best_direct=zeros)  # fmt: skip
    return RewardState(cache=cache, prev_p_goal=zeros, goal_index=goal_index)


def init_state(spec: RewardSpec, num_envs: int, goal_index=None) -> RewardState:
    """Fresh state for `num_envs` envs; `goal_index` [N] picks each env's goal (default 0)."""
    num_goals = len(spec.goals)
    if goal_index is None:
        goal_index = np.zeros((num_envs,), np.int32)
    goal_index = np.asarray(goal_index)
    if goal_index.shape != (num_envs,):
        raise ValueError(f"goal_index must have shape ({num_envs},), got {goal_index.shape}")
    if goal_index.size and (goal_index.min() < 0 or goal_index.max() >= num_goals):
        raise ValueError(
            f"goal_index values must lie in [0, {num_goals}) (the goals {spec.goals}), "
            f"got {goal_index.tolist()}"
        )
    cache = init_cache(num_envs, spec.text_features.shape[-1], spec.window)
    return _new_state(spec, cache, jnp.asarray(goal_index, jnp.int32))


def score_windows(spec: RewardSpec, windows: jax.Array, goal_index: jax.Array):
    """Video windows of frame features [N, T, D] -> (P_G [N], N_T [N])."""
    video = spec.module.apply({"params": spec.params}, windows, method="aggregate")
    logits = spec.module.apply({"params": spec.params}, video, spec.text_features, method="logits")
    goal_index = jnp.asarray(goal_index, jnp.int32)
    return goal_probability(logits, spec.goal_prompt[goal_index], spec.candidates[goal_index])


def reward_step(spec: RewardSpec, state: RewardState, frame_features: jax.Array, is_first):
    """One env step for all envs: push the new frame features [N, D], score each env's window.

    Returns (new_state, reward [N], P_G [N]); the reward kind is `spec.kind`. Pure."""
    is_first = jnp.asarray(is_first, jnp.bool_)
    cache = update(state.cache, frame_features, is_first)
    p_goal, num_prompts = score_windows(spec, window_features(cache), state.goal_index)
    direct = direct_reward(p_goal, num_prompts)
    # An env whose cache was empty starts an episode too (see `update`).
    first = jnp.logical_or(is_first, state.cache.count == 0)
    new_state = state.replace(cache=cache, prev_p_goal=p_goal)
    if spec.kind == "direct":
        reward = direct
    elif spec.kind == "delta":
        reward = delta_reward(p_goal, state.prev_p_goal, first)
    else:
        reward, best_direct = peak_reward(direct, state.best_direct, first)
        new_state = new_state.replace(best_direct=best_direct)
    return new_state, reward, p_goal


def trajectory_rewards(spec: RewardSpec, frame_features: jax.Array, goal_index=None):
    """Step-wise rewards of whole trajectories [B, T, D] (each starting at t=0 as an episode
    start), computed with the same cache as online RL. Returns (reward [B, T], P_G [B, T])."""
    b, t, _ = frame_features.shape
    goal_index = jnp.zeros((b,), jnp.int32) if goal_index is None else goal_index
    cache = init_cache(b, frame_features.shape[-1], spec.window)
    state = _new_state(spec, cache, jnp.asarray(goal_index, jnp.int32))
    first = jnp.arange(t) == 0

    def body(state, inputs):
        feats, is_first = inputs
        state, r, p = reward_step(spec, state, feats, jnp.broadcast_to(is_first, (b,)))
        return state, (r, p)

    _, (r, p) = jax.lax.scan(body, state, (jnp.swapaxes(frame_features, 0, 1), first))
    return jnp.swapaxes(r, 0, 1), jnp.swapaxes(p, 0, 1)


@jax.jit
def _jit_reward_step(spec, state, frame_features, is_first):
    return reward_step(spec, state, frame_features, is_first)


@jax.jit
def _jit_trajectory_rewards(spec, frame_features, goal_index):
    return trajectory_rewards(spec, frame_features, goal_index)


@functools.partial(jax.jit, static_argnums=0)
def _jit_step_frames(module, spec, state, frames, is_first):
    feats = module.apply({"params": spec.params}, frames, method="encode_frames")
    state, r, p = reward_step(spec, state, feats, is_first)
    return state, r, p, feats


# ------------------------------------------------------------------------ the convenience
def _normalise_prompt(prompt: str) -> str:
    # The CLIP tokenizer lower-cases and collapses whitespace, so these prompts are identical.
    return re.sub(r"\s+", " ", prompt.strip()).lower()


def prompt_meaning(prompt: str) -> tuple[str, ...]:
    """A canonical form of a prompt: two prompts with the same form are paraphrases."""
    text = _normalise_prompt(prompt)
    for pattern, name in _ALIASES:
        text = re.sub(pattern, name, text)
    words = []
    for w in re.findall(r"[a-z]+", text):
        if w in _ARTICLES:
            continue
        w = _VERB.get(w, w)
        words.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return tuple(words)


def build_prompt_table(goals: Sequence[str], negatives: Sequence[str]):
    """Prompt table, goal columns and candidate masks for several goals sharing one negative
    set. A negative equal to a goal or a paraphrase of it (same `prompt_meaning`) is dropped
    for that goal; other goals are candidates of a goal only if they are also listed as
    negatives."""
    prompts: list[str] = []
    column: dict[str, int] = {}
    for text in (*goals, *negatives):
        key = _normalise_prompt(text)
        if not key:
            raise ValueError("prompts must be non-empty strings")
        if key not in column:
            column[key] = len(prompts)
            prompts.append(text)
    goal_prompt = np.array([column[_normalise_prompt(g)] for g in goals], np.int32)
    negative_cols = sorted({column[_normalise_prompt(n)] for n in negatives})
    candidates = np.zeros((len(goals), len(prompts)), bool)
    meanings = [prompt_meaning(p) for p in prompts]
    for g, col in enumerate(goal_prompt):
        candidates[g, negative_cols] = True
        for c in negative_cols:
            if meanings[c] == meanings[col]:
                candidates[g, c] = False  # a paraphrase of the goal is no negative
        candidates[g, col] = True
        if candidates[g].sum() < 2:
            raise ValueError(
                f"goal {goals[g]!r} has no negative prompts (all negatives equal or paraphrase "
                f"it); pass "
                f"negatives=[...] with at least one other prompt"
            )
    return tuple(prompts), goal_prompt, candidates


class MineCLIPReward:
    """MineCLIP reward for a batch of envs: `MineCLIPReward(handle, goal, negatives, kind)`.

    goal: one prompt, or a list of prompts (multi-task; each env picks one by `goal_index`).
    negatives: the prompts each goal competes against (default: the paper's 12 task prompts,
    `DEFAULT_NEGATIVE_PROMPTS`, minus the goal). kind: "direct", "delta" or "peak".
    Text features are computed once here. `spec` is the pytree for pure use in your own jit.
    """

    def __init__(
        self,
        handle,
        goal: str | Sequence[str],
        negatives: Sequence[str] | None = None,
        kind: RewardKind = "direct",
        window: int = DEFAULT_WINDOW,
    ):
        if kind not in REWARD_KINDS:
            raise ValueError(f"kind must be one of {REWARD_KINDS}, got {kind!r}")
        goals = (goal,) if isinstance(goal, str) else tuple(goal)
        if not goals or not all(isinstance(g, str) for g in goals):
            raise ValueError(f"goal must be a prompt or a non-empty list of prompts, got {goal!r}")
        if isinstance(negatives, str):
            raise TypeError("negatives must be a list of prompts, not a single string")
        negatives = DEFAULT_NEGATIVE_PROMPTS if negatives is None else tuple(negatives)
        cfg = handle.config
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if cfg.pool == "attn" and window > cfg.max_seq_len:
            raise ValueError(
                f"window {window} exceeds the attn aggregator's max_seq_len {cfg.max_seq_len}"
            )
        prompts, goal_prompt, candidates = build_prompt_table(goals, negatives)
        self.handle = handle
        self.spec = RewardSpec(
            params=handle.params,
            text_features=jnp.asarray(handle.encode_text(list(prompts)), jnp.float32),
            goal_prompt=jnp.asarray(goal_prompt),
            candidates=jnp.asarray(candidates),
            module=handle.module,
            kind=kind,
            window=window,
            prompts=prompts,
            goals=goals,
        )

    @property
    def goals(self) -> tuple[str, ...]:
        return self.spec.goals

    @property
    def prompts(self) -> tuple[str, ...]:
        return self.spec.prompts

    @property
    def kind(self) -> str:
        return self.spec.kind

    def init(self, num_envs: int, goal_index=None) -> RewardState:
        return init_state(self.spec, num_envs, goal_index)

    def set_goals(self, state: RewardState, goal_index) -> RewardState:
        """Reassign each env's goal (takes effect at the next step; pair with is_first)."""
        goal_index = jnp.asarray(goal_index, jnp.int32)
        chex.assert_shape(goal_index, state.goal_index.shape)
        return state.replace(goal_index=goal_index)

    def encode_frames(self, frames) -> jax.Array:
        """uint8 [..., H, W, 3] -> [..., D]: the per-frame features to share with the policy."""
        return self.handle.encode_frames(frames)

    def step(self, state: RewardState, frame_features, is_first):
        """(state, frame features [N, D], is_first [N]) -> (state, reward [N], P_G [N])."""
        return _jit_reward_step(
            self.spec, state, jnp.asarray(frame_features), jnp.asarray(is_first)
        )

    def step_frames(self, state: RewardState, frames, is_first):
        """Encode frames [N, H, W, 3] and step, in one jit: -> (state, reward, P_G, features).
        Frames are uint8 (or 0..255 floats: [0, 1] floats are refused, `check_frame_values`)."""
        frames = check_frame_values(jnp.asarray(frames))
        return _jit_step_frames(self.spec.module, self.spec, state, frames, jnp.asarray(is_first))

    def trajectory_rewards(self, frame_features, goal_index=None):
        """Whole trajectories [B, T, D] -> (reward [B, T], P_G [B, T])."""
        frame_features = jnp.asarray(frame_features)
        if goal_index is None:
            goal_index = np.zeros((frame_features.shape[0],), np.int32)
        return _jit_trajectory_rewards(self.spec, frame_features, jnp.asarray(goal_index))
