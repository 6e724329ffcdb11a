"""Policies: the MineAgent of the paper (App. F.2) and a small MLP actor-critic for vector envs.

Both are linen modules called as `module.apply({"params": p}, obs, prev_action)` and return
`(logits [B, sum(action_dims)], value [B])`; actions are factorised categoricals (see
`agents.losses`). Orthogonal init (gain sqrt(2) hidden, 0.01 policy output, 1.0 value output) and
zero biases, as in the PPO literature and MineCLIP's `build_mlp`.

MineAgent inputs (any subset; keys are sorted before fusion, as in the official
`SimpleFeatureFusion`):

  rgb_feat  f32 [B, 512]     frozen MineCLIP frame feature (computed once per frame outside)
  rgb       uint8 [B,H,W,3]  raw frame -> a small trainable encoder (`cnn`: IMPALA, Nature or patch)
  prompt    f32 [B, 512]     MineCLIP text feature of the env's goal (identity)
  task_id   int32 [B]        learned task embedding, when no MineCLIP text feature is available
  compass   f32 [B, C]       sin/cos of yaw and pitch -> MLP 128-128-128
  gps       f32 [B, 3]       position, pre-scaled -> MLP 128-128-128
  voxels    int32 [B, 27]    3x3x3 block ids -> Embed(num_block_ids, 8) -> flatten -> MLP 128
  state     f32 [B, D]       a vector env's observation (CartPole) -> MLP 128-128-128
  prev_action int32 [B, K]   per-component Embed(n_k, 8)

then concat -> ReLU -> Dense(fusion_dim) -> ReLU -> actor MLP (one per action component, hidden
`actor_hidden` x `actor_depth`) and a separate critic MLP. Training-only input:

  time_left f32 [B, 1]       fraction of the episode's step limit left -> the critic's input
                             only, with critic_time_left (time-limit truncation in its view)
  privileged f32 [B, P]      simulator features (envs.voxel.target_features); with
                             privileged_critic -> MLP 128-128, concatenated to the critic's
                             input only (asymmetric actor-critic); with privileged_actor -> MLP
                             128-128 into the fused features (an oracle-perception ablation)

With `aux_dim > 0` a linear head on the policy's features predicts `aux_dim` targets (the
learner's auxiliary loss); it is sown as `intermediates/aux_pred` and does not change the outputs.

Memory (`core_size > 0`): a GRU over the fused features, between fusion and the heads. The
first-person tasks need it: a cow is in the frame on a few percent of an untrained policy's steps
and leaves it at once, so a memoryless policy forgets where it went (issue 41's measurements:
perception alone bought little, memory of the last sighting most of the rest). Such a MineAgent
is called on sequences: `apply(obs [T, B, ...], prev_action [T, B, K], core [B, H],
start [T, B])` -> `(logits [T, B, A], value [T, B], core [B, H])`, where `start` marks the
first step of an episode (the carry is zeroed there, before the step). `agents.learner.apply_policy`
gives memoryless and recurrent networks that one signature.
"""

from __future__ import annotations

from collections.abc import Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

_ortho = nn.initializers.orthogonal
_zeros = nn.initializers.zeros


def _dense(features: int, gain: float = np.sqrt(2), name=None):
    return nn.Dense(features, kernel_init=_ortho(gain), bias_init=_zeros, name=name)


class MLP(nn.Module):
    hidden: Sequence[int]
    out: int
    out_gain: float = np.sqrt(2)
    activation: str = "relu"
    activate_last: bool = False
    out_bias: Sequence[float] | None = None  # initial output bias (default zeros)

    @nn.compact
    def __call__(self, x):
        act = nn.relu if self.activation == "relu" else nn.tanh
        for h in self.hidden:
            x = act(_dense(h)(x))
        bias_init = _zeros
        if self.out_bias is not None:
            b0 = np.asarray(self.out_bias, np.float32)
            bias_init = lambda key, shape, dtype=jnp.float32: jnp.broadcast_to(  # noqa: E731
                jnp.asarray(b0, dtype), shape
            )
        x = nn.Dense(self.out, kernel_init=_ortho(self.out_gain), bias_init=bias_init)(x)
        return act(x) if self.activate_last else x


class MLPActorCritic(nn.Module):
    """CleanRL/purejaxrl CartPole network: separate tanh MLPs on `obs["state"]`."""

    action_dims: Sequence[int]
    hidden: Sequence[int] = (64, 64)

    @nn.compact
    def __call__(self, obs: dict, prev_action=None):
        del prev_action
        x = obs["state"].astype(jnp.float32)
        logits = MLP(self.hidden, int(sum(self.action_dims)), 0.01, "tanh", name="actor")(x)
        value = MLP(self.hidden, 1, 1.0, "tanh", name="critic")(x)[..., 0]
        return logits, value


class ImpalaCNN(nn.Module):
    """IMPALA-style encoder: per stage conv3x3 -> maxpool/2 -> residual block; then Dense."""

    channels: Sequence[int] = (16, 32, 32)
    out: int = 256

    @nn.compact
    def __call__(self, x):
        x = x.astype(jnp.float32) / 255.0
        for c in self.channels:
            x = nn.Conv(c, (3, 3), kernel_init=_ortho(np.sqrt(2)))(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            r = nn.Conv(c, (3, 3), kernel_init=_ortho(np.sqrt(2)))(nn.relu(x))
            r = nn.Conv(c, (3, 3), kernel_init=_ortho(np.sqrt(2)))(nn.relu(r))
            x = x + r
        x = nn.relu(x).reshape(x.shape[:-3] + (-1,))
        return nn.relu(_dense(self.out)(x))


class NatureCNN(nn.Module):
    """DQN-style encoder (strided convs 4x4/2, 4x4/2, 3x3/1, then Dense): about a quarter of
    the IMPALA encoder's forward+backward cost on small frames, which matters on a CPU."""

    channels: Sequence[int] = (16, 32, 32)
    out: int = 256

    @nn.compact
    def __call__(self, x):
        x = x.astype(jnp.float32) / 255.0
        for i, c in enumerate(self.channels):
            k, s = ((4, 4), (2, 2)) if i < 2 else ((3, 3), (1, 1))
            x = nn.relu(nn.Conv(c, k, strides=s, kernel_init=_ortho(np.sqrt(2)))(x))
        x = x.reshape(x.shape[:-3] + (-1,))
        return nn.relu(_dense(self.out)(x))


class ResetGRU(nn.Module):
    """One GRU step whose carry restarts at zero where `start` is set (an episode's first step).
    Scanned over time by `MineAgent` (`nn.scan`): the same cell in the rollout (T = 1) and in
    the update (T = the rollout length), so both see the same function."""

    size: int

    @nn.compact
    def __call__(self, carry, inputs):
        x, start = inputs
        carry = jnp.where(start[:, None], jnp.zeros_like(carry), carry)
        carry, y = nn.GRUCell(self.size, name="gru")(carry, x)
        return carry, y


class PatchEncoder(nn.Module):
    """A convolutional encoder written as matrix products, for CPUs: two non-overlapping
    patch convolutions (4x4 stride 4, then 2x2 stride 2 over the result: the frame as an
    8x8-patch grid) as reshapes and Dense layers, then a Dense over the flattened grid, which
    keeps where on the screen a thing is (what a policy steers by). XLA's CPU convolutions and
    their gradients are slow at these sizes; its matrix products are not. Frames whose sides
    are not multiples of 8 are cropped at the bottom/right to the nearest multiple."""

    channels: Sequence[int] = (16, 32)
    out: int = 256

    @nn.compact
    def __call__(self, x):
        x = x.astype(jnp.float32) / 255.0
        for c, p in zip(self.channels, (4, 2), strict=False):
            *lead, h, w, ch = x.shape
            h, w = h - h % p, w - w % p
            x = x[..., :h, :w, :].reshape(*lead, h // p, p, w // p, p, ch)
            x = jnp.moveaxis(x, -4, -3).reshape(*lead, h // p, w // p, p * p * ch)
            x = nn.relu(_dense(c)(x))
        x = x.reshape(x.shape[:-3] + (-1,))
        return nn.relu(_dense(self.out)(x))


_ENCODERS = {"impala": ImpalaCNN, "nature": NatureCNN, "patch": PatchEncoder}


class MineAgent(nn.Module):
    """The paper's MineAgent (App. F.2; official layer sizes from mineclip-facts §11)."""

    action_dims: Sequence[int]
    num_tasks: int = 1
    num_block_ids: int = 32
    cnn_channels: Sequence[int] = (16, 32, 32)
    cnn: str = "impala"  # image encoder without MineCLIP: "impala", "nature" or "patch"
    image_dim: int = 512
    fusion_dim: int = 512
    feat_hidden: int = 128
    actor_hidden: int = 256
    actor_depth: int = 3
    critic_hidden: int = 256
    critic_depth: int = 2
    # Initial actor logits per action component (a prior over actions; None: uniform). With
    # orthogonal gain 0.01 on the last layer the initial policy is softmax(prior).
    action_prior: Sequence[Sequence[float]] | None = None
    # Auxiliary head predicting `aux_dim` targets from the policy's features (0: none); its
    # prediction is sown into the "intermediates" collection as "aux_pred" (see agents.learner).
    aux_dim: int = 0
    # Asymmetric actor-critic: feed obs["privileged"] to the critic (training-time simulator
    # features; the actor never sees them).
    privileged_critic: bool = False
    privileged_size: int = 0  # width of obs["privileged"] (for callers that act without it)
    # Oracle-perception ablation: the fused features (actor and critic) include obs["privileged"].
    privileged_actor: bool = False
    # GRU units of the recurrent core (0: memoryless, the paper's agent); see the module doc.
    core_size: int = 0
    # The critic also sees obs["time_left"] [B, 1] (zeros where absent: a deployed actor).
    critic_time_left: bool = False

    @nn.compact
    def __call__(self, obs: dict, prev_action=None, core=None, start=None):
        if self.core_size:
            return self._sequence(obs, prev_action, core, start)
        x = self._fuse(obs, prev_action)
        return self._heads(x, obs)

    def _sequence(self, obs, prev_action, core, start):
        """Recurrent call: inputs `[T, B, ...]`, the carry `[B, H]` at step 0, `start [T, B]`."""
        if core is None or start is None:
            raise ValueError(
                f"MineAgent(core_size={self.core_size}) is recurrent: call it with core [B, "
                f"{self.core_size}] and start [T, B] (agents.learner.apply_policy does)"
            )
        t, b = start.shape
        chex.assert_shape(core, (b, self.core_size))
        flat = lambda x: x.reshape((t * b,) + x.shape[2:])  # noqa: E731
        x = self._fuse(jax.tree.map(flat, obs), None if prev_action is None else flat(prev_action))
        x = x.reshape(t, b, -1)
        scan = nn.scan(ResetGRU, variable_broadcast="params", split_rngs={"params": False})
        core, y = scan(self.core_size, name="core")(core, (x, start))
        logits, value = self._heads(flat(y), jax.tree.map(flat, obs))
        return logits.reshape(t, b, -1), value.reshape(t, b), core

    def _fuse(self, obs: dict, prev_action):
        feats = {}
        if "rgb_feat" in obs:
            feats["rgb"] = obs["rgb_feat"].astype(jnp.float32)
        elif "rgb" in obs:
            if self.cnn not in _ENCODERS:
                raise ValueError(f"MineAgent.cnn must be one of {sorted(_ENCODERS)}, got "
                                 f"{self.cnn!r}")  # fmt: skip
            encoder = _ENCODERS[self.cnn]
            feats["rgb"] = encoder(self.cnn_channels, self.image_dim, name="rgb_cnn")(obs["rgb"])
        if "prompt" in obs:
            feats["prompt"] = obs["prompt"].astype(jnp.float32)
        elif "task_id" in obs:
            feats["prompt"] = nn.Embed(self.num_tasks, 32, name="task_emb")(obs["task_id"])
        h = self.feat_hidden
        if "compass" in obs:
            feats["compass"] = MLP((h, h), h, activate_last=True, name="compass_mlp")(
                obs["compass"].astype(jnp.float32)
            )
        if "gps" in obs:
            feats["gps"] = MLP((h, h), h, activate_last=True, name="gps_mlp")(
                obs["gps"].astype(jnp.float32)
            )
        if "state" in obs:  # a vector env's flat observation (e.g. CartPole)
            feats["state"] = MLP((h, h), h, activate_last=True, name="state_mlp")(
                obs["state"].astype(jnp.float32)
            )
        if "voxels" in obs:
            v = nn.Embed(self.num_block_ids, 8, name="voxel_emb")(
                jnp.clip(obs["voxels"], 0, self.num_block_ids - 1)
            )
            v = v.reshape(v.shape[:-2] + (-1,))
            feats["voxels"] = MLP((h, h), h, activate_last=True, name="voxel_mlp")(v)
        if self.privileged_actor:
            if "privileged" not in obs:
                raise ValueError("MineAgent(privileged_actor=True) needs obs['privileged']")
            feats["privileged"] = MLP((h, h), h, activate_last=True, name="privileged_actor_mlp")(
                obs["privileged"].astype(jnp.float32)
            )
        if prev_action is not None:
            embs = [
                nn.Embed(n, 8, name=f"prev_action_emb_{k}")(prev_action[..., k])
                for k, n in enumerate(self.action_dims)
            ]
            feats["prev_action"] = jnp.concatenate(embs, axis=-1)
        if not feats:
            raise ValueError("MineAgent got no known observation keys; see agents.networks docs")
        x = jnp.concatenate([feats[k] for k in sorted(feats)], axis=-1)
        return nn.relu(_dense(self.fusion_dim, name="fusion")(nn.relu(x)))

    def _heads(self, x, obs: dict):
        h = self.feat_hidden
        hidden = (self.actor_hidden,) * self.actor_depth
        logits = jnp.concatenate(
            [
                MLP(
                    hidden,
                    n,
                    0.01,
                    name=f"actor_head_{k}",
                    out_bias=None if self.action_prior is None else self.action_prior[k],
                )(x)
                for k, n in enumerate(self.action_dims)
            ],
            axis=-1,
        )
        critic_in = x
        if self.privileged_critic:
            if "privileged" not in obs:
                raise ValueError("MineAgent(privileged_critic=True) needs obs['privileged']")
            # Asymmetric actor-critic: simulator features reach the critic only; the actor's
            # logits above depend on the agent's own observations alone.
            priv = MLP((h, h), h, activate_last=True, name="privileged_mlp")(
                obs["privileged"].astype(jnp.float32)
            )
            critic_in = jnp.concatenate([x, priv], axis=-1)
        if self.critic_time_left:
            left = obs.get("time_left", jnp.zeros(x.shape[:-1] + (1,), jnp.float32))
            critic_in = jnp.concatenate([critic_in, left.astype(jnp.float32)], axis=-1)
        value = MLP((self.critic_hidden,) * self.critic_depth, 1, 1.0, name="critic_head")(
            critic_in
        )
        if self.aux_dim:
            self.sow("intermediates", "aux_pred", _dense(self.aux_dim, name="aux_head")(x))
        return logits, value[..., 0]


def reset_policy_head(params, new_params):
    """Multi-stage training (App. G.3): take the policy head(s) (`actor*`) from `new_params`."""
    params = dict(params)
    for k in params:
        if k.startswith("actor"):
            params[k] = new_params[k]
    return params


def count_params(params) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(params)))
