"""Captioned clips of trained policies' own play: the frames a learned reward meets in RL.

    python -m experiments.table1.policy_clips --runs runs/table1/hunt_a_cow/mineclip/seed0 \\
        --base ~/mineclip_mini/clips --out ~/mineclip_mini/clips_policy

A MineCLIP reward trained on scripted clips only is exploited by the policy it trains: the
hunt-a-cow policy of `experiments.table1.table1` learns to walk with the camera pitched down over grass,
frames the reward pays like a hunt although no cow is in view (`experiments.table1.reward_probe`). The
remedy used against exploited learned rewards is to add the exploiting policy's own frames to the
reward's training data, labelled by what really happened. This module plays the trained policy
of each given `agents.ppo` run (and the untrained policy of the first one), records every frame
with the simulator's ground truth, cuts 16-frame windows (one frame per agent step, i.e. every
`--action-repeat` ticks), labels each from ground truth alone with `data.synthetic`'s act labels
(`kill:<mob>`, `hit:<target>`, `near:<target>`, `wander`) and captions it with the same
phrasings. The output is an array clip directory: the `--base` directory's clips plus these in
the train split; the test split stays the base one, so held-out figures stay comparable.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import tyro

from data import synthetic, tokens


@dataclasses.dataclass(frozen=True)
class PolicyClipsConfig:
    """python -m experiments.table1.policy_clips --runs RUN [RUN ...] --base CLIPS --out OUT"""

    runs: tuple[str, ...]  # agents.ppo run directories whose latest policies play.
    base: str  # array clip directory (data.synthetic) the new clips are added to.
    out: str  # output clip directory (base clips + policy clips in the train split).
    episodes: int = 256  # episodes per policy (a multiple of the runs' --num-envs).
    untrained: bool = True  # also play the untrained policy of the first run.
    clips_per_episode: int = 4  # windows cut per episode (distinct ends, at random).
    seed: int = 0  # seed of the episodes (key of the worlds and actions) and of the captions.
    overwrite: bool = False  # replace an existing --out directory.

    def __post_init__(self):
        if not self.runs:
            raise ValueError("--runs needs at least one agents.ppo run directory")
        if self.episodes < 1 or self.clips_per_episode < 1:
            raise ValueError("--episodes and --clips-per-episode must be >= 1")


def record(run_dir, params_by_policy: dict, episodes: int, seed: int, loaded=None) -> dict:
    """Each policy's `episodes` episodes in the run's env (no auto-reset: every env's first
    episode) -> {policy: arrays}, E episodes, T = the run's episode steps:

    - "rgb" uint8 [E, T + 1, H, W, 3]: the MineCLIP frames, the reset frame first;
    - "kills" int32 [E, T + 1, K]: kills per entity so far, at each frame;
    - "visible", "hit", "live", "done" bool [E, T]; "distance", "reward" float32 [E, T];
      "biome", "world_time" int32 [E, T]: at step t = 1..T (after which frame t is drawn).
      `live` marks the steps of the first episode (its last, done step included), `hit` an
      attack that struck the task's target, `reward` the run's own training reward.

    `loaded`: the run's `agents.checkpoints.load_run(run_dir)` when the caller has it already.
    """
    import jax
    import jax.numpy as jnp

    from agents import losses
    from agents.checkpoints import load_run

    cfg, built, runner = loaded or load_run(run_dir)
    L = built.learner
    env, hooks = L.env, L.hooks
    n = int(jax.tree.leaves(runner.env_params)[0].shape[0])
    if episodes % n:
        raise ValueError(f"episodes={episodes} must be a multiple of the run's {n} envs")
    tid = jnp.zeros(n, jnp.int32)
    steps = int(cfg.max_episode_steps)
    step = env.step_no_reset or env.step

    def play(params, consts, env_params, key):
        k_reset, k_env, k_act = jax.random.split(key, 3)
        raw, es = jax.vmap(env.reset, in_axes=(0, 0, None))(
            jax.random.split(k_reset, n), env_params, env.static
        )
        kills0 = es.stats_kills
        obs = L.policy_obs_batch(consts, raw, tid)
        rs = hooks.init(consts, n, np.zeros(n, np.int32)) if hooks.init is not None else None
        if hooks.start is not None:
            rs = hooks.start(consts, rs, obs)

        def body(c, t):
            es, obs, prev, rs, over, core = c
            # one episode per env: its first step opens it (a recurrent policy's carry zeroed)
            logits, core = L.policy_logits(params, obs, prev, core, jnp.broadcast_to(t == 0, (n,)))
            a = losses.sample(jax.random.fold_in(k_act, t), logits, L.action_dims)
            raw, es, r_env, term, trunc, info = jax.vmap(step, in_axes=(0, 0, 0, 0, None))(
                jax.random.split(jax.random.fold_in(k_env, t), n), es,
                jax.vmap(env.to_env_action)(a), env_params, env.static)  # fmt: skip
            done = term | trunc
            obs = L.policy_obs_batch(consts, raw, tid)
            if hooks.step is not None:
                rs, rew = hooks.step(consts, rs, obs, done, r_env, info)
            else:
                rew = jax.vmap(env.reward_fn)(r_env, info)
            sig = info["signals"]
            out = {"rgb": raw["rgb"], "visible": sig.target_visible, "live": ~over,
                   "distance": sig.target_distance, "reward": rew, "done": done,
                   "hit": sig.attack_hit_target, "kills": es.stats_kills,
                   "biome": sig.biome_id.astype(jnp.int32),
                   "world_time": es.world_time.astype(jnp.int32)}  # fmt: skip
            prev = jnp.where(done[:, None], L.noop_action, a)
            return (es, obs, prev, rs, over | done, core), out

        c0 = (es, obs, jnp.tile(L.noop_action, (n, 1)), rs, jnp.zeros(n, bool), L.initial_core(n))
        out = jax.lax.scan(body, c0, jnp.arange(steps))[1]
        out["rgb"] = jnp.concatenate([raw["rgb"][None], out["rgb"]])
        out["kills"] = jnp.concatenate([kills0[None], out["kills"]]).astype(jnp.int32)
        return out

    fn = jax.jit(play)
    host = jax.device_get((L.consts, runner.env_params))
    out = {}
    for name, params in params_by_policy.items():
        chunks = [jax.device_get(fn(jax.device_get(params), *host,
                                    jax.random.fold_in(jax.random.PRNGKey(seed), i)))
                  for i in range(episodes // n)]  # fmt: skip
        out[name] = {k: np.concatenate([np.swapaxes(c[k], 0, 1) for c in chunks])
                     for k in chunks[0]}  # fmt: skip
    return out


def window_label(ep: dict, end: int, target: str) -> str:
    """The act label of the 16-frame window ending at frame `end` (frames end-15..end) of one
    recorded episode, from ground truth only, in `data.synthetic.act_label`'s order: a kill
    in the window, else a hit on the target, else the target visible and near at the end,
    else wander."""
    from envs import spaces

    first = end - (synthetic.NUM_FRAMES - 1)
    if first < 0:
        raise ValueError(f"window end {end} leaves fewer than {synthetic.NUM_FRAMES} frames")
    kills = ep["kills"][end] - ep["kills"][first]
    if kills.max() > 0:
        return "kill:" + spaces.ENTITIES[int(np.argmax(kills))]
    if target and ep["hit"][first:end].any():  # steps first..end-1 draw frames first+1..end
        return "hit:" + target
    if target and ep["visible"][end - 1] and ep["distance"][end - 1] < synthetic.NEAR_DISTANCE:
        return "near:" + target
    return "wander"


def cut_clips(rec: dict, task: str, per_episode: int, rng) -> list[tuple[int, int, str]]:
    """(episode, window end frame, act label) of up to `per_episode` distinct windows per
    episode, chosen at random among windows inside the episode's live frames."""
    from envs import tasks

    mobs = tasks.get(task).initial_mobs
    target = mobs[0] if mobs else ""
    out = []
    for e in range(rec["rgb"].shape[0]):
        last = int(rec["live"][e].sum())  # frames 0..last belong to the first episode
        ends = np.arange(synthetic.NUM_FRAMES - 1, last + 1)
        if len(ends) == 0:
            continue
        ep = {k: rec[k][e] for k in ("kills", "hit", "visible", "distance")}
        for end in rng.choice(ends, size=min(per_episode, len(ends)), replace=False):
            out.append((e, int(end), window_label(ep, int(end), target)))
    return out


def clips_from_recording(
    rec: dict, task: str, stride: int, per_episode: int, rng, source: str
) -> tuple[list[np.ndarray], list[dict]]:
    """Windows of one policy's recording (`record`) -> (frames uint8 [16, H, W, 3] per clip,
    clip records as `data.synthetic` writes them), captioned from their ground-truth labels."""
    frames, records = [], []
    for e, end, label in cut_clips(rec, task, per_episode, rng):
        step = end - 1  # the step that drew the window's last frame
        text = synthetic.caption(label, rec["biome"][e, step], rec["world_time"][e, step], rng)
        frames.append(rec["rgb"][e, end - synthetic.NUM_FRAMES + 1 : end + 1])
        records.append({
            "text": text, "label": label, "task": task, "behaviour": "policy:" + source,
            "stride": int(stride), "clip_id": f"policy/{source}/{e}/{end}",
            "target_distance": float(rec["distance"][e, step]),
        })  # fmt: skip
    return frames, records


def write_clip_dir(
    base,
    out,
    frames: list[np.ndarray],
    records: list[dict],
    overwrite: bool = False,
    note: dict | None = None,
    kind: str = "policy_clips",
) -> dict:
    """`base`'s clips with `frames`/`records` appended to its train split -> the array clip
    directory `out` (the test split copied unchanged); returns its summary (clips.json), whose
    `kind` entry describes the appended clips."""
    base, out = Path(base).expanduser(), Path(out).expanduser()
    meta = json.loads((base / "clips.json").read_text())
    if meta.get("format") != synthetic.ARRAY_FORMAT:
        raise ValueError(f"{base} is not an array clip directory (data.synthetic writes one)")
    if len(frames) != len(records) or not records:
        raise ValueError(f"need as many clips as records, at least one ({len(frames)} vs "
                         f"{len(records)})")  # fmt: skip
    shape = tuple(meta["frame_shape"])
    if any(f.shape != shape for f in frames):
        got = next(f.shape for f in frames if f.shape != shape)
        raise ValueError(f"the new clips are {list(got)}, the base clips {list(shape)}: "
                         f"record them at the base clips' frame size")  # fmt: skip
    bad = synthetic.captions_contain_prompt([r["text"] for r in records])
    if bad:  # the phrasings are tested never to contain a prompt; this guards other captions
        raise ValueError(f"captions contain task prompts verbatim: {bad[:3]}")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} is not empty; pass --overwrite to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)

    base_train = np.load(base / "train_frames.npy", mmap_mode="r")
    n_base, n_new = base_train.shape[0], len(frames)
    dst = np.lib.format.open_memmap(out / "train_frames.npy", "w+", np.uint8,
                                    (n_base + n_new, *shape))  # fmt: skip
    for i in range(0, n_base, 512):
        j = min(i + 512, n_base)
        dst[i:j] = base_train[i:j]
    dst[n_base:] = np.stack(frames)
    dst.flush()
    new_tokens = tokens.tokenize([r["text"] for r in records]).astype(np.int32)
    np.save(out / "train_tokens.npy", np.concatenate([np.load(base / "train_tokens.npy"),
                                                      new_tokens]))  # fmt: skip
    with open(base / "train_clips.jsonl") as f_in, open(out / "train_clips.jsonl", "w") as f_out:
        shutil.copyfileobj(f_in, f_out)
        for r in records:
            f_out.write(json.dumps(r) + "\n")
    for name in ("test_frames.npy", "test_tokens.npy", "test_clips.jsonl"):
        shutil.copyfile(base / name, out / name)

    labels: dict[str, int] = {}
    for r in records:
        labels[r["label"]] = labels.get(r["label"], 0) + 1
    summary = dict(meta)
    summary["clips"] = {"train": n_base + n_new, "test": meta["clips"]["test"]}
    summary["labels"] = {k: meta["labels"].get(k, 0) + labels.get(k, 0)
                         for k in sorted(set(meta["labels"]) | set(labels))}  # fmt: skip
    summary[kind] = {"count": n_new, "labels": dict(sorted(labels.items())),
                     "base": str(base), **(note or {})}  # fmt: skip
    with open(out / "clips.json", "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def build(cfg: PolicyClipsConfig) -> dict:
    """Play every run's policy, cut and caption its windows, write the clip directory."""
    import jax

    from agents.checkpoints import load_run

    rng = np.random.default_rng([cfg.seed, 7])
    frames, records = [], []
    for r, run in enumerate(cfg.runs):
        loaded = load_run(run)
        run_cfg, built, runner = loaded
        policies = {f"trained{r}": runner.params}
        if cfg.untrained and r == 0:
            policies["untrained"] = built.learner.init_params_only(jax.random.PRNGKey(run_cfg.seed))
        for name, rec in record(run, policies, cfg.episodes, cfg.seed, loaded).items():
            f, recs = clips_from_recording(rec, run_cfg.task, run_cfg.action_repeat,
                                           cfg.clips_per_episode, rng, name)  # fmt: skip
            frames += f
            records += recs
    return write_clip_dir(cfg.base, cfg.out, frames, records, cfg.overwrite,
                          {"config": dataclasses.asdict(cfg)})  # fmt: skip


def main(cfg: PolicyClipsConfig) -> None:
    summary = build(cfg)
    pc = summary["policy_clips"]
    print(f"{pc['count']} policy clips added to {summary['clips']['train'] - pc['count']} base "
          f"train clips -> {cfg.out}; labels {pc['labels']}")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(PolicyClipsConfig))
