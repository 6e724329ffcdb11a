"""Episode videos of a policy on the embedded world: `record_video` rolls one env with the policy
inside one jitted `lax.scan`; `write_video` is agents' one MP4 writer (the training loop's
periodic videos and `agents.evaluate`'s sample episodes both call it)."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from agents import losses


def record_video(built, params, key, steps: int) -> np.ndarray | None:
    """Roll env 0 of `built` (`agents.build.Built`) for `steps` steps with the policy `params`;
    uint8 frames `[T, H, W, 3]`, or None when the env renders no frames."""
    env, L = built.env, built.learner
    if not getattr(env.static, "render", False):
        return None
    dims = L.action_dims
    one = jax.tree.map(lambda x: x[:1], env.params)
    tid = jnp.asarray(env.task_ids[:1])
    noop = L.noop_action[None]

    @jax.jit
    def run(params, consts, key):
        k0, key = jax.random.split(key)
        raw, state = jax.vmap(env.reset, in_axes=(0, 0, None))(k0[None], one, env.static)

        def body(carry, k):
            raw, state, prev = carry
            obs = L.policy_obs_batch(consts, raw, tid)
            logits, _ = L.apply(params, obs, prev)
            ka, ks = jax.random.split(k)
            a = losses.sample(ka, logits, dims)
            raw2, state, _, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, 0, None))(
                ks[None], state, jax.vmap(env.to_env_action)(a), one, env.static
            )
            prev = jnp.where((term | trunc)[:, None], noop, a)
            return (raw2, state, prev), raw["rgb"][0]

        _, frames = jax.lax.scan(body, (raw, state, noop), jax.random.split(key, steps))
        return frames

    return np.asarray(run(params, L.consts, key))


def write_video(frames: np.ndarray, path: str | os.PathLike, fps: int = 20) -> Path:
    """Write uint8 ``[T, H, W, 3]`` frames as an H.264 MP4 (MPEG-4 Part 2 if x264 is missing)."""
    import av

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = np.asarray(frames, np.uint8)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"frames must be uint8 [T, H, W, 3], got shape {frames.shape}")
    # yuv420p needs even sizes; crop a trailing row/column rather than rescale.
    height, width = frames.shape[1] // 2 * 2, frames.shape[2] // 2 * 2
    codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for frame in frames:
            packet_frame = av.VideoFrame.from_ndarray(
                np.ascontiguousarray(frame[:height, :width]), format="rgb24"
            )
            container.mux(stream.encode(packet_frame))
        container.mux(stream.encode())
    return path
