"""Record an episode of the embedded world to an MP4 (``envs.video.write_video``).

    python -m envs.voxel.record --task "hunt a cow" --out episode.mp4
    python -m envs.voxel.record --task find_nether_portal --policy random --steps 200 --out p.mp4

The whole episode (reset, policy, steps, frames) runs as one jitted ``lax.scan``; frames come
from the renderer (``envs.voxel.render``). ``--policy scripted`` uses the privileged oracle of
``envs.voxel.scripted`` (it solves the paper's tasks), ``random`` samples MineDojo actions.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from envs import spaces, tasks
from envs.video import write_video
from envs.voxel import env as E
from envs.voxel import scripted
from envs.voxel.state import VoxelStaticConfig


@dataclasses.dataclass(frozen=True)
class RecordConfig:
    """Record one episode of a task to a video file."""

    task: str = "hunt a cow"  # paper task id or prompt, or a catalogue id / prompt
    out: str = "episode.mp4"  # output video path
    policy: Literal["scripted", "random"] = "scripted"  # who plays
    steps: int = 300  # maximum steps recorded (the video stops when the episode ends)
    seed: int = 0  # world pool and episode seed
    height: int = 160  # frame height
    width: int = 256  # frame width
    fps: int = 20  # video frame rate (the world runs at 20 ticks/s)


@functools.partial(jax.jit, static_argnames=("static", "steps", "random_policy"))
def rollout_frames(key, params, mode, static, steps, random_policy):
    """(frames uint8 [steps + 1, H, W, 3], done flags [steps], success flags [steps])."""
    k_reset, k_run = jax.random.split(key)
    obs, state = E.reset(k_reset, params, static)

    def body(carry, k):
        state, done = carry
        k_act, k_step = jax.random.split(k)
        rand = jax.random.randint(k_act, (8,), 0, jnp.asarray(spaces.ACTION_NVEC))
        rand = rand.at[5].set(
            jnp.where(rand[5] >= 4, spaces.FN_ATTACK, rand[5])
        )  # no inventory ops
        action = rand if random_policy else scripted.oracle_action(state, params, mode)
        obs, new_state, _, term, trunc, info = E.step(k_step, state, action, params, static)
        state = jax.tree.map(lambda a, b: jnp.where(done, a, b), state, new_state)
        frame = E.render_state(state, static)
        return (state, done | term | trunc), (frame, done, info["success"] & ~done)

    (_, _), (frames, dones, success) = jax.lax.scan(
        body, (state, jnp.bool_(False)), jax.random.split(k_run, steps)
    )
    first = E.render_state(state, static)
    return jnp.concatenate([first[None], frames]), dones, success


def record(cfg: RecordConfig) -> dict:
    """Run and write the episode; returns a summary (steps, success, path)."""
    spec = tasks.get(cfg.task)
    static = VoxelStaticConfig(render=True, height=cfg.height, width=cfg.width)
    params = E.make_params(spec, static, seed=cfg.seed)
    frames, dones, success = rollout_frames(
        jax.random.key(cfg.seed), params, jnp.int32(scripted.mode_for(spec)), static, cfg.steps,
        cfg.policy == "random",
    )  # fmt: skip
    dones = np.asarray(dones)
    n = int(np.argmax(dones)) + 1 if dones.any() else cfg.steps + 1  # frames until the end
    write_video(np.asarray(frames[:n]), cfg.out, cfg.fps)
    summary = {
        "path": cfg.out,
        "frames": n,
        "success": bool(np.asarray(success).any()),
        "task": spec.id,
    }
    print(summary)
    return summary


if __name__ == "__main__":
    from mineclip_jax import compile_cache

    cfg = tyro.cli(RecordConfig)
    compile_cache.enable()  # a second recording loads the world's programs from disk
    record(cfg)
