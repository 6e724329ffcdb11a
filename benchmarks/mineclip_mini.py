"""MineCLIP-mini on held-out data: recognition, retrieval, reward quality and the Creative judge.

    python benchmarks/mineclip_mini.py --data DS                 # the shipped model ("mini")
    python benchmarks/mineclip_mini.py --data DS --ckpt RUN/model --write-judge RUN/model

DS is the clip directory the model was trained on (`python -m data.synthetic`); only its `test`
split is read (episodes in worlds of another seed than training). World episodes are run fresh
in worlds of yet another seed (`--world-seed`), never seen in training. Prints (and with
`--json` writes):

1. zero-shot act recognition: held-out clips of the 12 acts, scored against the 12 task prompts
   (never a caption); correct when the clip's own task prompt has the highest similarity;
2. text->video and video->text R@1/R@5 among the test clips; a retrieved clip counts as correct
   when its act label (the ground-truth class its caption was generated from, e.g.
   `kill:cow`, `approach:zombie`, `wander`) equals the query's;
3. per task prompt, the ROC-AUC of the episode-mean Direct reward (paper negatives) separating
   success episodes (scripted oracle, success reached) from failure episodes (wandering,
   random actions, circling, the wrong animal; no success), episodes cut at their end;
4. per Animal-Zoo prompt, the Spearman correlation of the per-step Direct reward with
   closeness to the target (minus the distance) over the oracle's approach (before the act);
5. the Creative judge (Table 2 in miniature): per Creative task `--judge-episodes` successes and
   as many failures from scripted and random policies, calibrated ONCE on the calibration half
   and scored by F1 on the held-out half, against the same architecture with random weights.
   Calibration picks the negative set (the other 11 task prompts, alone or with the neutral
   prompts `NEUTRAL_PROMPTS`; the one whose episode-mean Direct reward has the higher ROC-AUC
   on the calibration half) and then delta (K=2 k-means of those scores on the calibration
   half). This once per episode length in `--judge-ticks` (default: each task's own limit,
   200 and 100 ticks), since the score is a mean over the episode; `--write-judge DIR` stores
   each length's delta and negatives with the checkpoint, and the judge uses the calibration
   nearest the judged episodes' length.

Why neutral prompts: the Direct reward is a softmax over a closed set. Among the 12 task
prompts only "find an ocean" names a landscape, so a desert, which matches none of them, gives
most of its probability to the ocean (0.57-0.62 against 0.82-0.90 at sea, shipped model). A
prompt that says nothing happens, as the generator's narrator says it over wandering clips,
gives such frames somewhere else to go. The paper's negatives are "other task descriptions"
with no list; this departs from them only where calibration says it separates better.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import jax
import numpy as np
import tyro

import mineclip_jax as mcj
from data import synthetic as S
from envs import tasks as envs_tasks
from mineclip_jax import evaluator as ev
from mineclip_jax.reward import PAPER_TASK_PROMPTS, MineCLIPReward

ZOO = ("milk a cow", "hunt a cow", "shear a sheep", "hunt a sheep")
CREATIVE = ("find a nether portal", "find an ocean", "dig a hole", "put carpets on the floor")
# The judge's candidate negative sets beyond the other task prompts: none, or the phrases the
# clip generator's narrator uses when nothing in particular happens (its `wander` captions).
NEUTRAL_PROMPTS: tuple[str, ...] = S.PHRASES["wander"]
JUDGE_NEGATIVE_SETS: dict[str, tuple[str, ...]] = {"tasks": (), "tasks+neutral": NEUTRAL_PROMPTS}


@dataclasses.dataclass
class BenchConfig:
    """MineCLIP-mini evaluation: python benchmarks/mineclip_mini.py --data DS"""

    data: str  # clip directory from data.synthetic (its test split is used).
    ckpt: str = "mini"  # model: shipped name or checkpoint directory.
    world_seed: int = 2  # seed of the world pool of the world episodes (train 0, test 1).
    episodes_per_kind: int = 16  # world episodes per task for success and for failure (AUC).
    judge_episodes: int = 100  # successes and failures per Creative task for the judge.
    judge_ticks: tuple[int, ...] = (0, 200, 100)  # game ticks per judge episode, one calibration
    # per length; 0: each task's own episode limit (find an ocean, a portal, carpets 1000, dig
    # 500), what `agents.evaluate` runs by default.
    max_clips: int = 1024  # test clips for retrieval (>= 256).
    seed: int = 0  # seed of the episodes and of the random-weights baseline.
    write_judge: str = ""  # directory to write judge.json into (the checkpoint's), or "".
    json_out: str = ""  # write all results as JSON here, or "".
    skip_judge: bool = False  # skip section 5 (the judge).
    only_judge: bool = False  # run section 5 only (e.g. in a second process).


def roc_auc(pos, neg) -> float:
    """P(score of a positive > score of a negative), ties counting one half (Mann-Whitney)."""
    pos, neg = np.asarray(pos, float).reshape(-1), np.asarray(neg, float).reshape(-1)
    return ev.roc_auc(np.r_[pos, neg], np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)])


def _ranks(x):
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), float)
    ranks[order] = np.arange(len(x))
    for v in np.unique(x):  # ties share their mean rank
        tie = x == v
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(x, y) -> float:
    rx, ry = _ranks(np.asarray(x, float)), _ranks(np.asarray(y, float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / np.sqrt((rx**2).sum() * (ry**2).sum()))


# ------------------------------------------------------------------------------ clip tests
def clip_sections(handle, data: str, max_clips: int) -> dict:
    from mineclip_jax.train import ArraySplit, retrieval_metrics

    test = ArraySplit(Path(data).expanduser(), "test")
    n = min(len(test), max_clips)
    video = []
    for start in range(0, n, 64):
        idx = np.arange(start, min(start + 64, n))
        video.append(np.asarray(handle.encode_video(test.batch(idx)["frames"])))
    video = np.concatenate(video)
    text = np.asarray(handle.encode_text(test.tokens[:n]))
    labels = np.array(test.labels[:n])
    retrieval = retrieval_metrics(video, text, labels=labels)
    exact = retrieval_metrics(video, text)  # only the clip's own caption counts
    # Zero-shot: clips of the 12 acts against the 12 task prompts.
    act_to_prompt = {a: p for p, a in S.TASK_ACTS.items()}
    prompts = list(PAPER_TASK_PROMPTS)
    prompt_emb = np.asarray(handle.encode_text(prompts))
    keep = np.array([lab in act_to_prompt for lab in labels])
    sims = (
        video[keep]
        @ prompt_emb.T
        / (np.linalg.norm(video[keep], axis=1, keepdims=True) * np.linalg.norm(prompt_emb, axis=1))
    )
    truth = np.array([prompts.index(act_to_prompt[lab]) for lab in labels[keep]])
    pred = sims.argmax(1)
    per_task = {p: float(np.mean(pred[truth == i] == i)) for i, p in enumerate(prompts)
                if np.any(truth == i)}  # fmt: skip
    return {
        "zero_shot": {
            "accuracy": float(np.mean(pred == truth)),
            "clips": int(keep.sum()),
            "chance": 1 / len(prompts),
            "per_task": per_task,
        },  # fmt: skip
        "retrieval_equivalent": retrieval,
        "retrieval_exact_caption": exact,
    }


# ------------------------------------------------------------------------- world episodes
def _episodes(task: str, want_success: bool, count: int, seed: int, world_seed: int, cfg):
    """Frames [count, T+1, H, W, 3], truth and lengths of `count` episodes of `task` that
    succeeded (oracle) or failed (other behaviours), simulated batch by batch."""
    if want_success:
        pool = [S.task_oracle(task)]
    else:
        pool = [b for b in S.BEHAVIOURS if b.task == task and (b.controller != 0 or b.target)]
    frames, truth, kinds = [], [], []
    rng = np.random.default_rng([seed, world_seed, PAPER_TASK_PROMPTS.index(task), want_success])
    tries = 0
    while sum(len(f) for f in frames) < count:
        tries += 1
        if tries > 12 * (count // cfg.batch + 1):
            raise RuntimeError(f"could not collect {count} {want_success} episodes of {task!r}")
        b = pool[tries % len(pool)]
        f, t = S.run_episodes(cfg, b, world_seed, int(rng.integers(2**31)))
        ok = t["success"].any(axis=1) == want_success
        frames.append(f[ok])
        truth.append({k: v[ok] for k, v in t.items()})
        kinds += [b.name] * int(ok.sum())
    frames = np.concatenate(frames)[:count]
    truth = {k: np.concatenate([t[k] for t in truth])[:count] for k in truth[0]}
    done = truth["done"]
    # An episode ends at its first done step (the state is frozen after it).
    lengths = np.where(done.any(1), done.argmax(1) + 1, done.shape[1])
    return frames, truth, lengths, kinds[:count]


def _features(handle, frames, lengths, chunk: int = 512):
    """Frame features [E, T+1, D] of the frames before each episode's end (the last one
    repeated after it: the scores only read the first `lengths` steps, and a step's reward only
    sees frames up to it), encoded in fixed-size chunks."""
    e, t = frames.shape[:2]
    valid = np.arange(t)[None, :] < np.asarray(lengths)[:, None]
    flat = frames[valid]
    out = []
    for start in range(0, len(flat), chunk):
        part = flat[start : start + chunk]
        pad = chunk - len(part)
        if pad:
            part = np.concatenate([part, np.zeros((pad, *part.shape[1:]), part.dtype)])
        out.append(np.asarray(handle.encode_frames(part))[: chunk - pad])
    feats = np.zeros((e, t, out[0].shape[-1]), np.float32)
    feats[valid] = np.concatenate(out)
    last = feats[np.arange(e), np.asarray(lengths) - 1]
    return np.where(valid[..., None], feats, last[:, None, :])


def _episode_scores(handle, prompt, feats, lengths, negatives=None):
    reward = MineCLIPReward(handle, prompt, negatives=negatives, kind="direct")
    r, _ = reward.trajectory_rewards(feats)
    r = np.asarray(r)
    return ev.trajectory_scores(r, lengths), r, reward.prompts


def world_sections(handle, cfg: BenchConfig, sim) -> dict:
    auc, rho, per = {}, {}, {}
    for task in PAPER_TASK_PROMPTS:
        fs, ts, ls, _ = _episodes(task, True, cfg.episodes_per_kind, cfg.seed, cfg.world_seed, sim)
        ff, _, lf, kinds = _episodes(
            task, False, cfg.episodes_per_kind, cfg.seed, cfg.world_seed, sim
        )
        s_pos, r_pos, _ = _episode_scores(handle, task, _features(handle, fs, ls), ls)
        s_neg, _, _ = _episode_scores(handle, task, _features(handle, ff, lf), lf)
        auc[task] = roc_auc(s_pos, s_neg)
        per[task] = {"success_mean": float(s_pos.mean()), "failure_mean": float(s_neg.mean()),
                     "failure_kinds": sorted(set(kinds))}  # fmt: skip
        if task in ZOO:
            # Approach: from the start to the first success (the act itself excluded).
            xs, ys = [], []
            for e in range(len(fs)):
                end = int(np.argmax(ts["success"][e]))
                xs.append(r_pos[e, :end])
                ys.append(-ts["target_distance"][e, :end])
            rho[task] = spearman(np.concatenate(xs), np.concatenate(ys))
        print(f"  {task:26s} AUC {auc[task]:.3f}" + (f"  Spearman {rho[task]:+.3f}" if task in rho
              else ""), flush=True)  # fmt: skip
    return {"auc": auc, "auc_at_least_0.9": int(sum(v >= 0.9 for v in auc.values())),
            "spearman_closeness": rho, "episode_means": per}  # fmt: skip


def judge_ticks(task: str, requested: int) -> int:
    """Game ticks of the judge's episodes of `task`: `requested`, or the task's own limit."""
    return requested or envs_tasks.get(task).max_steps


def judge_section(handle, cfg: BenchConfig, sim) -> dict:
    """Per Creative task, one calibration per `--judge-ticks` length (judge.json's layout)."""
    if not cfg.judge_ticks or min(cfg.judge_ticks) < 0:
        raise ValueError(
            f"--judge-ticks needs lengths >= 0 (0: the task's own), got {cfg.judge_ticks}"
        )
    baseline = mcj.create(handle.config, jax.random.key(cfg.seed + 7))
    out = {}
    for task in CREATIVE:
        out[task] = {"calibrations": []}
        for ticks in dict.fromkeys(judge_ticks(task, t) for t in cfg.judge_ticks):
            episodes = dataclasses.replace(sim, episode_ticks=ticks)
            row = _judge_calibration(handle, baseline, task, cfg, episodes)
            out[task]["calibrations"].append(row)
    return out


def _judge_calibration(handle, baseline, task: str, cfg: BenchConfig, sim) -> dict:
    """Calibrate `task`'s judge on labelled episodes of `sim.episode_ticks` ticks; F1 held out."""
    n = cfg.judge_episodes
    fs, truth, ls, _ = _episodes(task, True, n, cfg.seed + 1, cfg.world_seed, sim)
    ff, _, lf, _ = _episodes(task, False, n, cfg.seed + 1, cfg.world_seed, sim)
    feats = {"trained": (_features(handle, fs, ls), _features(handle, ff, lf))}
    feats["random"] = (_features(baseline, fs, ls), _features(baseline, ff, lf))
    labels = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    split = np.random.default_rng([cfg.seed, 3]).permutation(2 * n)
    calib, held = split[:n], split[n:]
    row = {"reward_kind": "direct", "calibration_size": int(calib.size),
           "heldout_size": int(held.size), "episode_ticks": sim.episode_ticks}  # fmt: skip
    for name, model in (("trained", handle), ("random", baseline)):
        # Calibration, on the calibration half alone: the negative set (ROC-AUC), then delta.
        candidates = {}
        for set_name, extra in JUDGE_NEGATIVE_SETS.items():
            negatives = PAPER_TASK_PROMPTS + extra
            s_pos, r_pos, prompts = _episode_scores(model, task, feats[name][0], ls, negatives)
            s_neg, _, _ = _episode_scores(model, task, feats[name][1], lf, negatives)
            candidates[set_name] = (np.r_[s_pos, s_neg], prompts, r_pos)
        chosen, delta, calibration_auc = ev.calibrate_judge(
            {k: v[0][calib] for k, v in candidates.items()}, labels[calib]
        )
        scores, prompts, r_pos = candidates[chosen]
        f1 = ev.binary_metrics(ev.judge(scores[held], delta), labels[held]).f1
        row[f"f1_{name}"] = f1
        if name == "trained":
            row["delta"] = delta
            row["negatives"] = [p for p in prompts if p != task]
            row["negative_set"] = chosen
            row["calibration_auc"] = calibration_auc
            # Diagnostics on the held-out half: how well the scores separate at all, and the
            # F1 of the best threshold there (an upper bound for any threshold rule).
            row["auc_heldout"] = ev.roc_auc(scores[held], labels[held])
            row["f1_best_threshold"], row["best_threshold"] = ev.best_threshold_f1(
                scores[held], labels[held]
            )
            if task == "find a nether portal":
                row["by_portal_distance"] = _portal_distance_breakdown(
                    r_pos, ls, scores[:n], truth, delta
                )
            # The paper's negatives alone, delta calibrated the same way, for comparison.
            paper = candidates["tasks"][0]
            row["f1_tasks_only"] = ev.binary_metrics(
                ev.judge(paper[held], ev.kmeans_threshold(paper[calib])), labels[held]
            ).f1
    aucs = ", ".join(f"{k} {v:.3f}" for k, v in row["calibration_auc"].items())
    print(f"  {task:26s} {sim.episode_ticks:4d} ticks: F1 {row['f1_trained']:.3f} (random weights "
          f"{row['f1_random']:.3f}; task prompts alone {row['f1_tasks_only']:.3f}); negatives "
          f"{row['negative_set']} (calibration AUC {aucs}), delta {row['delta']:.4f}; held-out "
          f"AUC {row['auc_heldout']:.3f}, best threshold {row['best_threshold']:.4f} F1 "
          f"{row['f1_best_threshold']:.3f}", flush=True)  # fmt: skip
    if "by_portal_distance" in row:
        b = row["by_portal_distance"]
        print(
            "    per-step reward of the successes, portal in view, by distance: "
            + ", ".join(f"{k} blocks {v:.3f}" for k, v in b["step_reward_in_view"].items())
        )
        print(
            "    successes scoring <= delta, by distance at the start: "
            + ", ".join(
                f"{k} blocks {v[0]} of {v[1]}" for k, v in b["at_or_below_delta_by_start"].items()
            )
        )
    return row


def _portal_distance_breakdown(step_rewards, lengths, scores, truth, delta: float) -> dict:
    """How the portal's success episodes score against how far the portal is: the mean
    per-step reward while it is in view, by distance, and how many episodes, by their starting
    distance, score at or below delta. Distances in blocks; bins [lo, hi)."""
    r = np.asarray(step_rewards)
    valid = np.arange(r.shape[1])[None, :] < np.asarray(lengths)[:, None]
    dist = np.asarray(truth["portal_distance"])[:, : r.shape[1]]
    in_view = np.asarray(truth["target_visible"], bool)[:, : r.shape[1]] & valid
    steps = {}
    for lo, hi in ((0, 2), (2, 4), (4, 6), (6, 10), (10, 15), (15, 99)):
        m = in_view & (dist >= lo) & (dist < hi)
        if m.any():
            steps[f"{lo}-{hi}"] = float(r[m].mean())
    start, starts = dist[:, 0], {}
    for lo, hi in ((0, 8), (8, 14), (14, 18), (18, 99)):
        m = (start >= lo) & (start < hi)
        starts[f"{lo}-{hi}"] = (int((np.asarray(scores)[m] <= delta).sum()), int(m.sum()))
    return {"step_reward_in_view": steps, "at_or_below_delta_by_start": starts}


def write_judge(directory, tasks: dict, world_seed: int) -> Path:
    """judge.json beside a checkpoint: `judge_section`'s rows, read by `evaluator`."""
    path = Path(directory) / ev.JUDGE_FILE
    path.write_text(json.dumps({
        "protocol": "per task, one calibration per length of the labelled episodes "
                    "(`episode_ticks`; the judge picks the one nearest the judged episodes' "
                    "length): episode-mean Direct reward against "
                    "`negatives` (the other task prompts, with the neutral prompts where they "
                    "separate the calibration split better); delta = mean of the K=2 k-means "
                    "centroids on the calibration split; success = score > delta",
        "world_seed": world_seed, "tasks": tasks}, indent=1) + "\n")  # fmt: skip
    return path


def main(cfg: BenchConfig) -> dict:
    t0 = time.monotonic()
    handle = mcj.load_checkpoint(cfg.ckpt)
    h, w = handle.config.image_size
    sim = S.SyntheticConfig(out="unused", height=h, width=w)
    print(f"MineCLIP {cfg.ckpt}: {handle.num_params:,} params, frames {h}x{w}; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    results = {} if cfg.only_judge else _clip_and_world(handle, cfg, sim)
    if not cfg.skip_judge:
        print("Creative judge (delta calibrated on half, F1 on the held-out half):")
        results["judge"] = judge_section(handle, cfg, sim)
        if cfg.write_judge:
            path = write_judge(cfg.write_judge, results["judge"], cfg.world_seed)
            print(f"wrote {path}")
    results["seconds"] = round(time.monotonic() - t0, 1)
    results["loadavg"] = os.getloadavg()
    print(f"({results['seconds']} s, load {results['loadavg']})")
    if cfg.json_out:
        Path(cfg.json_out).write_text(json.dumps(results, indent=1) + "\n")
    return results


def _clip_and_world(handle, cfg: BenchConfig, sim) -> dict:
    results = clip_sections(handle, cfg.data, cfg.max_clips)
    z, r = results["zero_shot"], results["retrieval_equivalent"]
    print(f"zero-shot act recognition: {z['accuracy']:.3f} over {z['clips']} held-out clips "
          f"(chance {z['chance']:.3f})")  # fmt: skip
    for p, a in z["per_task"].items():
        print(f"  {p:26s} {a:.3f}")
    print(f"retrieval among {r['num_clips']} test clips ({r['num_labels']} act labels): "
          f"t2v R@1 {r['t2v_R@1']:.3f} R@5 {r['t2v_R@5']:.3f}, "
          f"v2t R@1 {r['v2t_R@1']:.3f} R@5 {r['v2t_R@5']:.3f}")  # fmt: skip
    print("world episodes (episode-mean Direct reward, success vs failure):")
    results["world"] = world_sections(handle, cfg, sim)
    print(f"  AUC >= 0.9 on {results['world']['auc_at_least_0.9']} of 12 prompts")
    return results


if __name__ == "__main__":
    main(tyro.cli(BenchConfig))
