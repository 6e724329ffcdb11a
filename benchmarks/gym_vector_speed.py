"""The Gymnasium path against the world's own loop: `envs.make_vector(task, N)` stepped with
`vec.action_space.sample()`, as a user writes it, against the jitted, batched step loop of
`benchmarks.voxel_throughput` (random actions and same-step autoreset inside one `lax.scan`,
nothing crosses to the host), in one process.

    python -m benchmarks.gym_vector_speed                            # 64 envs, 160x256 frames
    python -m benchmarks.gym_vector_speed --num-envs 16 --height 48 --width 64 --rounds 5
    python -m benchmarks.gym_vector_speed --max-steps 32 --stagger  # 2 of 64 envs end per step

Three implementations, timed in alternating rounds (order reversed every round, compilation
outside the timing), each round `--steps` env steps of the batch:
- `world loop`: the world's own figure (`voxel_throughput.voxel_rollout` over the same devices,
  every round from the same start states; its autoreset is `E.step_autoreset_batch`, which
  renders the whole batch again on a step where any env finished, so it falls behind the
  vector env with `--stagger`);
- `gym (now)`: `VoxelVectorEnv.step` as it is;
- `gym (before)`: the step of the vector env before issue 41's pass (`_old_step` below, a copy:
  per-env keys split on the host, params copied to the devices on every step, every step
  rendering the stepped frames and, whenever an env finished, the whole batch's reset frames).
Printed: steps/s of each (median over rounds), the ratios, and the load average: on the shared
2-core CPU only the ratios mean anything.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import statistics

import jax
import numpy as np
import tyro

from benchmarks import common
from envs.voxel import parallel


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m benchmarks.gym_vector_speed"""

    task: str = "hunt a cow"  # task of every env
    num_envs: int = 64  # envs in the batch
    height: int = 160  # rendered frame height
    width: int = 256  # rendered frame width
    steps: int = 10  # env steps of the batch per timed round
    rounds: int = 3  # alternating rounds (the median is reported)
    max_steps: int = 0  # episode limit (0: the task's); a small one makes autoresets frequent
    stagger: bool = False  # start env i at step i % max_steps: episodes end at different steps
    cpu_devices: int = 0  # CPU cores exposed as JAX devices (0: all, as make_vector does; 1: one)
    old: bool = True  # also time the vector env's step as it was before issue 41's pass
    world: bool = True  # also time the world's own jitted loop


def _old_step(vec, actions):
    """`VoxelVectorEnv.step` as it was before issue 41's pass (commit 32e115a), for the ratio."""
    from envs import spaces
    from envs.checks import check_action
    from envs.voxel import gym_env as G

    if vec.validate_actions:
        actions = check_action(
            vec.single_action_space, actions, batch=vec.num_envs, names=spaces.ACTION_COMPONENTS
        )
    actions = np.asarray(actions)
    vec._key, k = jax.random.split(vec._key)
    keys = jax.random.split(k, vec.num_envs)
    actions = jax.numpy.asarray(actions, jax.numpy.int32)
    if vec.mesh.devices.size > 1:
        out = _old_sharded(vec.mesh, vec.static)(keys, vec._states, actions, vec.params)
    else:
        out = _old_step_batch(keys, vec._states, actions, vec.params, vec.static)
    obs, vec._states, rew, term, trunc, info, final_obs = out
    rew, term, trunc = np.asarray(rew), np.asarray(term), np.asarray(trunc)
    infos = G._to_numpy(G._signals_info(info))
    done = term | trunc
    if done.any():
        infos["final_obs"] = G._to_numpy(final_obs)
        infos["_final_obs"] = done
        infos["final_info"] = {
            k: v for k, v in infos.items() if k not in ("final_obs", "_final_obs")
        }
        infos["_final_info"] = done
    return G._to_numpy(obs), rew, term, trunc, infos


@functools.cache
def _old_sharded(mesh, static):
    from jax.sharding import PartitionSpec as P

    from envs.voxel import env as E

    def local(keys, states, actions, params):
        return E.step_autoreset_batch(keys, states, actions, params, static)

    env, rep = P(parallel.AXIS), P()
    f = jax.shard_map(local, mesh=mesh, in_specs=(env, env, env, rep), out_specs=env,
                      check_vma=False)  # fmt: skip
    return jax.jit(f, donate_argnums=(1,))


def _old_step_batch(*args):
    from envs.voxel import env as E

    return jax.jit(E.step_autoreset_batch, static_argnames="static", donate_argnums=(1,))(*args)


def _staggered(args: Args, states, sharding=None):
    """With `--stagger`: env i starts its episode at step i % max_steps, as in a long run where
    episodes of different lengths have spread the envs' time limits apart."""
    if not args.stagger:
        return states
    import jax.numpy as jnp

    steps = jnp.arange(args.num_envs, dtype=jnp.int32) % args.max_steps
    return states.replace(steps=steps if sharding is None else jax.device_put(steps, sharding))


def _world_loop(args: Args, static, params, devices: int):
    """The world's own loop over `devices`: a callable running `args.steps` steps."""
    from benchmarks.voxel_throughput import _on_devices, voxel_rollout
    from envs.voxel import env as E

    keys = jax.random.split(jax.random.key(0), args.num_envs)
    _, states = jax.jit(jax.vmap(E.reset, in_axes=(0, None, None)), static_argnames="static")(
        keys, params, static
    )
    states = _staggered(args, states)
    rollout = functools.partial(voxel_rollout, static=static, steps=args.steps)
    run = _on_devices(rollout, parallel.env_mesh(args.num_envs, jax.local_devices()[:devices]))
    calls = iter(range(1, 1 << 30))
    return lambda: run(jax.random.split(jax.random.key(next(calls)), devices), states, params)


def main(args: Args) -> dict:
    import envs

    if args.stagger and not args.max_steps:
        raise SystemExit("--stagger needs --max-steps (the limit the envs are spread over)")
    kw = dict(height=args.height, width=args.width, devices=args.cpu_devices or None)
    if args.max_steps:
        kw["max_steps"] = args.max_steps
    vecs = {"gym (now)": envs.make_vector(args.task, args.num_envs, **kw)}
    if args.old:
        vecs["gym (before)"] = envs.make_vector(args.task, args.num_envs, **kw)
    devices = vecs["gym (now)"].mesh.devices.size
    calls = {}
    if args.world:
        v = vecs["gym (now)"]
        calls["world loop"] = _world_loop(args, v.static, v.params, devices)
    for name, vec in vecs.items():
        vec.reset(seed=0)
        vec._states = _staggered(args, vec._states, vec._states.steps.sharding)
        step = vec.step if name == "gym (now)" else functools.partial(_old_step, vec)

        def run(vec=vec, step=step):
            for _ in range(args.steps):
                step(vec.action_space.sample())

        calls[name] = run
    print(f"{args.num_envs} envs of {args.task!r}, {args.height}x{args.width} frames, "
          f"{devices} device(s) {jax.devices()[0].platform}"
          f"{f', max_steps {args.max_steps}' if args.max_steps else ''}"
          f"{' staggered' if args.stagger else ''}; {common.load_text()}", flush=True)  # fmt: skip
    out = common.alternate(calls, rounds=args.rounds, repeats=1)
    sps = {n: args.num_envs * args.steps / statistics.median(w for w, _, _ in r)
           for n, r in out.items()}  # fmt: skip
    loads = [x for r in out.values() for _, _, x in r]
    for name, v in sps.items():
        print(f"{name:>14}: {v:8.1f} env steps/s")
    result = {"steps_per_s": sps, "load_1min": [min(loads), max(loads)]}
    pairs = [("gym (now)", "world loop"), ("gym (before)", "world loop"),
             ("gym (now)", "gym (before)")]  # fmt: skip
    for a, b in pairs:
        if a in sps and b in sps:
            result[f"{a} / {b}"] = sps[a] / sps[b]
            print(common.ratio_text(sps[a] / sps[b], f"{a} / {b}:"))
    print(f"{args.rounds} rounds of {args.steps} steps; 1-min load during the rounds "
          f"{min(loads):.2f}-{max(loads):.2f}; {common.load_text()}")  # fmt: skip
    print(json.dumps(result))
    return result


def cli(argv=None) -> dict:
    args = tyro.cli(Args, args=argv)
    # Before JAX runs anything, as envs.make_vector would: every core a device (on a CPU).
    parallel.use_cpu_cores(args.cpu_devices or None)
    return main(args)


if __name__ == "__main__":
    cli()
