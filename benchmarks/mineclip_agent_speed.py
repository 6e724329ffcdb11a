"""PPO + SI env steps/s with the MineCLIP-mini reward and frozen features vs the manual reward with
the trainable CNN, in one process (Table 1's speed question: is the learned reward affordable?).

    python -m benchmarks.mineclip_agent_speed                   # hunt a cow, 16 envs, 64 steps
    python -m benchmarks.mineclip_agent_speed --num-envs 32 --rounds 3

Both use the agents' own learner (`benchmarks.accelerator.ppo_steps_per_s`): one jitted rollout +
PPO update per iteration, an SI phase every `--si-every`, compilation outside the timing. The
MineCLIP run encodes each 48x64 frame once with the shipped mini ViT (policy features and the
Direct reward's 16-frame window); the manual run trains its CNN on the same frames. The two are
measured in alternation, `--rounds` times each, and the best round of each is compared; the
load average is printed beside every figure.
"""

from __future__ import annotations

import dataclasses
import json

import tyro

from benchmarks.accelerator import ppo_steps_per_s


@dataclasses.dataclass(frozen=True)
class Args:
    """python -m benchmarks.mineclip_agent_speed"""

    task: str = "hunt a cow"  # the task both runs train
    num_envs: int = 16  # parallel envs
    num_steps: int = 64  # rollout length per update
    updates: int = 4  # timed updates per round
    rounds: int = 2  # alternating rounds per configuration (the best is kept)
    cnn: str = "impala"  # the manual run's trainable CNN (impala: the default; nature: cheaper)


def main(args: Args) -> dict:
    common = dict(num_steps=args.num_steps, image_size=(48, 64))
    runs = {
        "mineclip-mini reward + frozen features": dict(reward="mineclip", mineclip_ckpt="mini"),
        f"manual reward + trainable {args.cnn} CNN": dict(reward="manual", cnn=args.cnn),
    }
    best = {name: 0.0 for name in runs}
    for r in range(args.rounds):
        for name, flags in runs.items():
            sps, compile_s = ppo_steps_per_s(args.num_envs, False, args.updates, args.task,
                                             **common, **flags)  # fmt: skip
            load = common.load()[0]
            print(f"round {r}: {name}: {sps:,.0f} env steps/s (compile {compile_s:.0f} s, "
                  f"load {load:.2f})", flush=True)  # fmt: skip
            best[name] = max(best[name], sps)
    (mc, manual) = best.values()
    result = {**best, "ratio mineclip/manual": mc / manual,
              "load": " ".join(f"{x:.2f}" for x in common.load())}  # fmt: skip
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
