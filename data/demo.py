"""The MineCLIP demo on a clip of the embedded world: the scripted oracle doing a task.

    python -m data.demo --world "milk a cow"            # the shipped MineCLIP-mini
    python -m data.demo --world "dig a hole" --prompts "dig a hole" "find an ocean" "hunt a cow"

The flags are `python -m mineclip_jax.demo`'s (`mineclip_jax.demo.DemoConfig`); this module adds
the clip source `mineclip_jax` cannot import: `world_clip` runs the scripted oracle of
`data.synthetic` in a world of a seed MineCLIP-mini never trained on (about 30 s, most of it
compiling the world).
"""

from __future__ import annotations

import numpy as np

from data import synthetic as S
from mineclip_jax import compile_cache
from mineclip_jax.demo import NUM_FRAMES, DemoConfig, run

WORLD_SEED = 2  # worlds of this seed were never in MineCLIP-mini's training clips (seed 0)
WORLD_TICKS = 48


def world_clip(task: str, image_size: tuple[int, int], seed: int = 0):
    """(uint8 [16, H, W, 3], description): the embedded world's scripted oracle doing `task`
    (a paper task prompt), the 16 frames up to 2 ticks after its first success (the last 16
    when neither of the two episodes run succeeds, which the description then says)."""
    try:
        oracle = S.task_oracle(task)
    except ValueError as e:
        raise ValueError(f"--world {e}") from None
    h, w = image_size
    config = S.SyntheticConfig(out="unused", batch=2, episode_ticks=WORLD_TICKS, height=h, width=w)
    frames, truth = S.run_episodes(config, oracle, WORLD_SEED, seed)
    success = np.asarray(truth["success"], bool)
    episode = int(np.argmax(success.any(1)))
    last = frames.shape[1] - 1
    if success[episode].any():
        first = int(np.argmax(success[episode]))
        end = min(max(first + 2, NUM_FRAMES - 1), last)
        what = f"ticks {end - NUM_FRAMES + 1}-{end}, its first success at tick {first}"
    else:
        end, what = last, "its last 16 ticks (it did not succeed)"
    clip = frames[episode, end - NUM_FRAMES + 1 : end + 1]
    return clip, f"the embedded world's oracle doing {task!r}, {what}"


def main(argv=None):
    import tyro

    cfg = tyro.cli(DemoConfig, args=argv)
    compile_cache.enable()  # a second demo loads the world's compiled programs from disk
    return run(cfg, world_clip=world_clip)


if __name__ == "__main__":
    main()
