"""The Creative-task judge (paper appendix G.4): MineCLIP decides whether an episode succeeded.

    python -m data.judge_episodes --out EPISODES            # labelled episodes, embedded world
    python -m mineclip_jax.judge --episodes EPISODES --ckpt DIR   # calibrate; writes DIR/judge.json
    python -m agents.evaluate --tasks "find an ocean" --mineclip-checkpoint DIR --max-steps 200

An episode succeeds when its mean Direct MineCLIP reward for the task prompt exceeds a threshold
delta. Delta is calibrated ONCE per checkpoint, task and episode length, on labelled episodes
(successes and failures from the simulator's ground truth), split at random into a calibration
half and a held-out half:

1. the negative prompts: the other task prompts (the paper's "other task descriptions"), alone or
   with `NEUTRAL_PROMPTS`; the set whose episode-mean Direct reward separates the calibration
   half better (ROC-AUC) is kept (`evaluator.calibrate_judge`; a tie keeps the task prompts);
2. delta = the mean of the K=2 k-means centroids of those scores (the paper's rule, no labels).

The F1 on the held-out half, and the same for a model of the same architecture with random
weights, are stored beside delta in the checkpoint's `judge.json` (`write_judge`), which
`mineclip_jax.evaluator` reads and `CreativeJudge` applies (`python -m agents.evaluate` does).

The labelled episodes are a dataset format, not an import (DESIGN.md: `mineclip_jax` imports no
other package): a directory with `episodes.json` (`{"world_seed", "seed", "sets": [{"task",
"episode_ticks", "dir"}]}`) and, per set, `success_frames.npy` / `failure_frames.npy` (uint8
[n, T, H, W, 3], frames at the model's image size, one per game tick, frame 0 the reset) and
`success_lengths.npy` / `failure_lengths.npy` (int [n], frames up to each episode's end).
`python -m data.judge_episodes` writes it from the embedded world's scripted behaviours
(`write_episode_set`); any simulator's labelled episodes in this layout calibrate a judge too.

Why neutral prompts: the Direct reward is a softmax over a closed set. Among the 12 task prompts
only "find an ocean" names a landscape, so a desert, which matches none of them, gives most of
its probability to the ocean (0.57-0.62 against 0.82-0.90 at sea, shipped model). A prompt that
says nothing happens gives such frames somewhere else to go. The five are the clip generator's
narrator's words for clips where nothing happens (`data.synthetic.PHRASES["wander"]`, a test
checks they agree), so MineCLIP-mini knows them; calibrate a judge for another model with
prompts that model knows. The paper gives no negative list; this departs from "other task
descriptions" only where the calibration half says it separates better.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mineclip_jax import evaluator as ev

NEUTRAL_PROMPTS: tuple[str, ...] = (
    "walk around",
    "wander around",
    "explore the area",
    "look around",
    "roam about",
)
# The judge's candidate negative sets beyond the other task prompts: none, or the neutral ones.
JUDGE_NEGATIVE_SETS: dict[str, tuple[str, ...]] = {"tasks": (), "tasks+neutral": NEUTRAL_PROMPTS}
EPISODES_FILE = "episodes.json"
CALIBRATE_HINT = (
    "`python -m data.judge_episodes --out EPISODES` then "
    "`python -m mineclip_jax.judge --episodes EPISODES --ckpt DIR` calibrates one"
)


# ---------------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------------


def frame_features(handle, frames, lengths, chunk: int = 512) -> np.ndarray:
    """Frame features [E, T, D] of the frames before each episode's end (the last one repeated
    after it: the scores only read the first `lengths` steps, and a step's reward only sees
    frames up to it), encoded in fixed-size chunks (one compiled program)."""
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


def episode_scores(handle, prompt: str, feats, lengths, negatives=None):
    """(episode-mean Direct reward [E], step rewards [E, T], the reward's prompts)."""
    from mineclip_jax.reward import MineCLIPReward

    reward = MineCLIPReward(handle, prompt, negatives=negatives, kind="direct")
    r, _ = reward.trajectory_rewards(feats)
    r = np.asarray(r)
    return ev.trajectory_scores(r, lengths), r, reward.prompts


def calibrate(
    task: str,
    trained: tuple[Any, np.ndarray, np.ndarray],
    random: tuple[Any, np.ndarray, np.ndarray],
    success_lengths,
    failure_lengths,
    *,
    episode_ticks: int,
    seed: int = 0,
    task_prompts: Sequence[str] | None = None,
) -> tuple[dict, dict]:
    """Calibrate `task`'s judge on n success and n failure episodes (frame features of each,
    for the trained model and for a random-weights baseline: `(handle, success_features,
    failure_features)`), split at random into calibration and held-out halves (`seed`).
    Returns (the judge.json row, details of the trained model's chosen negatives: `scores`
    [2n] successes first, `success_step_rewards` [n, T], `delta`)."""
    from mineclip_jax.reward import PAPER_TASK_PROMPTS

    task_prompts = tuple(task_prompts or PAPER_TASK_PROMPTS)
    n = len(success_lengths)
    if len(failure_lengths) != n or n < 2:
        raise ValueError(
            f"calibration needs as many failure as success episodes (at least 2 each), got "
            f"{n} and {len(failure_lengths)}"
        )
    labels = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    split = np.random.default_rng([seed, 3]).permutation(2 * n)
    calib, held = split[:n], split[n:]
    row = {"reward_kind": "direct", "calibration_size": int(calib.size),
           "heldout_size": int(held.size), "episode_ticks": episode_ticks}  # fmt: skip
    details: dict = {}
    for name, (model, f_pos, f_neg) in (("trained", trained), ("random", random)):
        # Calibration, on the calibration half alone: the negative set (ROC-AUC), then delta.
        candidates = {}
        for set_name, extra in JUDGE_NEGATIVE_SETS.items():
            negatives = task_prompts + extra
            s_pos, r_pos, prompts = episode_scores(model, task, f_pos, success_lengths, negatives)
            s_neg, _, _ = episode_scores(model, task, f_neg, failure_lengths, negatives)
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
            details = {"scores": scores, "success_step_rewards": r_pos, "delta": delta}
            # The paper's negatives alone, delta calibrated the same way, for comparison.
            paper = candidates["tasks"][0]
            row["f1_tasks_only"] = ev.binary_metrics(
                ev.judge(paper[held], ev.kmeans_threshold(paper[calib])), labels[held]
            ).f1
    return row, details


def describe(task: str, row: Mapping[str, Any]) -> str:
    """One line per calibration: F1s, the negatives chosen, delta, the held-out diagnostics."""
    aucs = ", ".join(f"{k} {v:.3f}" for k, v in row["calibration_auc"].items())
    return (f"  {task:26s} {row['episode_ticks']:4d} ticks: F1 {row['f1_trained']:.3f} (random "
            f"weights {row['f1_random']:.3f}; task prompts alone {row['f1_tasks_only']:.3f}); "
            f"negatives {row['negative_set']} (calibration AUC {aucs}), delta {row['delta']:.4f}; "
            f"held-out AUC {row['auc_heldout']:.3f}, best threshold {row['best_threshold']:.4f} "
            f"F1 {row['f1_best_threshold']:.3f}")  # fmt: skip


def write_judge(directory, tasks: dict, world_seed: int) -> Path:
    """judge.json beside a checkpoint: per task `{"calibrations": [row, ...]}` (`calibrate`'s
    rows, one per episode length), read by `mineclip_jax.evaluator`."""
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


# ---------------------------------------------------------------------------------------------
# The labelled-episode directory
# ---------------------------------------------------------------------------------------------


def _set_dir(task: str, episode_ticks: int) -> str:
    return f"{task.replace(' ', '_')}/{episode_ticks}"


def write_episode_set(root, task: str, episode_ticks: int, success_frames, success_lengths,
                      failure_frames, failure_lengths, *, world_seed: int, seed: int) -> Path:  # fmt: skip
    """Add one (task, length) set of labelled episodes to the directory `root`."""
    root = Path(root)
    rel = _set_dir(task, episode_ticks)
    (root / rel).mkdir(parents=True, exist_ok=True)
    for name, array in (("success_frames", success_frames), ("success_lengths", success_lengths),
                        ("failure_frames", failure_frames), ("failure_lengths", failure_lengths)):  # fmt: skip
        np.save(root / rel / f"{name}.npy", np.asarray(array))
    index = root / EPISODES_FILE
    meta = json.loads(index.read_text()) if index.is_file() else {"sets": []}
    meta.update(world_seed=world_seed, seed=seed)
    entry = {"task": task, "episode_ticks": int(episode_ticks), "dir": rel}
    meta["sets"] = [s for s in meta["sets"] if s["dir"] != rel] + [entry]
    index.write_text(json.dumps(meta, indent=1) + "\n")
    return root / rel


def read_episodes(root) -> tuple[dict, list[dict]]:
    """(episodes.json, its sets each with `success_frames`, ... loaded memory-mapped)."""
    root = Path(root).expanduser()
    index = root / EPISODES_FILE
    if not index.is_file():
        raise FileNotFoundError(
            f"{root} has no {EPISODES_FILE}: write labelled episodes with "
            "`python -m data.judge_episodes --out DIR` (see mineclip_jax.judge's docstring)"
        )
    meta = json.loads(index.read_text())
    sets = []
    for entry in meta["sets"]:
        arrays = {
            name: np.load(root / entry["dir"] / f"{name}.npy", mmap_mode="r")
            for name in ("success_frames", "success_lengths", "failure_frames", "failure_lengths")
        }
        sets.append({**entry, **arrays})
    return meta, sets


@dataclasses.dataclass
class JudgeConfig:
    """Calibrate a MineCLIP judge: python -m mineclip_jax.judge --episodes DIR --ckpt CKPT"""

    episodes: str  # labelled-episode directory (`python -m data.judge_episodes --out DIR`).
    ckpt: str = "mini"  # model: shipped name or checkpoint directory.
    out: str = ""  # directory to write judge.json into; "": the checkpoint's own directory.
    seed: int = 0  # seed of the calibration/held-out split and of the random-weights baseline.
    dry_run: bool = False  # print the calibrations, write nothing.


def main(cfg: JudgeConfig) -> dict:
    """Calibrate every (task, length) set of `cfg.episodes`; write judge.json; return its tasks."""
    import jax

    from mineclip_jax.checkpoint import SHIPPED, load_checkpoint, shipped_path
    from mineclip_jax.handle import create

    t0 = time.monotonic()
    handle = load_checkpoint(cfg.ckpt)
    baseline = create(handle.config, jax.random.key(cfg.seed + 7))
    meta, sets = read_episodes(cfg.episodes)
    size = tuple(handle.config.image_size)
    print(f"MineCLIP {cfg.ckpt}: {len(sets)} episode sets; load {os.getloadavg()[0]:.1f}")
    print("Creative judge (delta calibrated on half, F1 on the held-out half):")
    tasks: dict = {}
    for s in sets:
        if tuple(s["success_frames"].shape[2:4]) != size:
            raise ValueError(
                f"{s['dir']}: frames of {s['success_frames'].shape[2:4]} but the model reads "
                f"{size}; write the episodes at its size (--height/--width)"
            )
        ls, lf = np.asarray(s["success_lengths"]), np.asarray(s["failure_lengths"])
        fs, ff = s["success_frames"], s["failure_frames"]
        trained = (handle, frame_features(handle, fs, ls), frame_features(handle, ff, lf))
        random = (baseline, frame_features(baseline, fs, ls), frame_features(baseline, ff, lf))
        row, _ = calibrate(s["task"], trained, random, ls, lf,
                           episode_ticks=s["episode_ticks"], seed=cfg.seed)  # fmt: skip
        print(describe(s["task"], row), flush=True)
        tasks.setdefault(s["task"], {"calibrations": []})["calibrations"].append(row)
    if not cfg.dry_run:
        name = str(cfg.ckpt)
        out = cfg.out or (shipped_path(name) if name in SHIPPED else Path(name).expanduser())
        print(f"wrote {write_judge(out, tasks, meta.get('world_seed', -1))}")
    print(f"({time.monotonic() - t0:.1f} s, load {os.getloadavg()[0]:.1f})")
    return tasks


# ---------------------------------------------------------------------------------------------
# Applying the judge
# ---------------------------------------------------------------------------------------------


def read_human_labels(path: str | os.PathLike) -> dict[tuple[str, int], bool]:
    """Human labels from a CSV with columns ``task_id,episode,label`` (label 1 = success, 0 = failure)."""
    labels: dict[tuple[str, int], bool] = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not {"task_id", "episode", "label"} <= set(reader.fieldnames or ()):
            raise ValueError(f"{path}: a human label file needs the columns task_id,episode,label")
        for row in reader:
            label = row["label"].strip().lower()
            if label not in ("0", "1", "true", "false"):
                raise ValueError(f"{path}: label must be 0/1 or true/false, got {row['label']!r}")
            labels[(row["task_id"], int(row["episode"]))] = label in ("1", "true")
    return labels


# A judge calibration whose held-out F1 is below this agrees too little with the ground truth to
# be trusted (the MineCLIP-mini issue's goal for Table 2 in miniature).
RELIABLE_JUDGE_F1 = 0.9


@dataclasses.dataclass(frozen=True)
class CreativeJudge:
    """MineCLIP as the success judge of Creative tasks (``mineclip_jax.evaluator``, paper G.4).

    An episode succeeds when its mean Direct MineCLIP reward for the task prompt exceeds the
    threshold delta calibrated once, on labelled trajectories, for that checkpoint and prompt
    (stored in the checkpoint's ``judge.json``; ``threshold`` overrides it). Delta is never
    fitted on the judged policy's own episodes: that would call part of any policy's episodes
    successes (a random policy's too) and never all of a perfect policy's."""

    handle: Any  # a loaded MineCLIP (mineclip_jax.MineCLIPHandle)
    labels: Mapping[tuple[str, int], bool] | None = None  # human labels by (task id, episode)
    calibration: Mapping[str, Mapping[str, Any]] | None = None  # judge.json tasks by prompt
    threshold: float | None = None  # a delta given by hand: overrides the calibration

    @classmethod
    def load(
        cls,
        checkpoint: str | os.PathLike,
        labels_path: str | os.PathLike | None = None,
        threshold: float | None = None,
    ) -> CreativeJudge:
        from mineclip_jax import evaluator
        from mineclip_jax.checkpoint import load_checkpoint

        labels = read_human_labels(labels_path) if labels_path is not None else None
        handle = load_checkpoint(checkpoint)
        try:
            calibration = evaluator.judge_entries(handle)
        except (FileNotFoundError, ValueError):
            calibration = None  # an uncalibrated checkpoint: `judge` says what to do
        return cls(handle, labels, calibration, threshold)

    def frame_size_options(self, options: Mapping[str, Any], policy: str) -> dict[str, Any]:
        """Env options with the frame size this judge's model reads (48x64 for the shipped
        mini), as its calibration episodes were rendered; a size the policy or --env-options
        fixed otherwise is refused, since resized frames are not what delta was fitted on."""
        h, w = self.handle.config.image_size
        have = (options.get("height"), options.get("width"))
        if have == (None, None):
            return {**options, "height": h, "width": w}
        if have != (h, w):
            raise ValueError(
                f"the Creative judge's MineCLIP reads {h}x{w} frames, but the episodes would be "
                f"rendered at {have[0]}x{have[1]} (set by the policy {policy!r} or --env-options); "
                f"judge with a MineCLIP checkpoint of that frame size, or evaluate a policy "
                f"trained at {h}x{w} (a random policy renders at the judge's size)"
            )
        return dict(options)

    def frame_features(self, rgb: np.ndarray) -> np.ndarray:
        """Per-frame MineCLIP features of a batch of observations, kept for scoring."""
        return np.asarray(self.handle.encode_frames(rgb), np.float32)

    def _calibration(self, spec, judged_ticks: float | None) -> Mapping[str, Any] | None:
        """The stored calibration for `spec` on episodes nearest `judged_ticks` long."""
        from mineclip_jax import evaluator

        entry = (self.calibration or {}).get(spec.prompt)
        return None if entry is None else evaluator.select_calibration(entry, judged_ticks)

    def _decision(
        self, spec, judged_ticks: float
    ) -> tuple[float, Sequence[str] | None, int | None]:
        """(delta, negatives, episode ticks of the calibration delta comes from; None when
        delta was given by hand) for episodes of `judged_ticks` game ticks on average."""
        entry = self._calibration(spec, judged_ticks)
        negatives = None if entry is None else entry.get("negatives")
        if self.threshold is not None:
            return float(self.threshold), negatives, None
        if entry is None:
            have = sorted(self.calibration) if self.calibration else "none"
            raise ValueError(
                f"{spec.id} ({spec.prompt!r}): this MineCLIP checkpoint has no calibrated judge "
                f"threshold for the prompt (calibrated prompts: {have}); calibrate one on labelled "
                f"trajectories ({CALIBRATE_HINT}) or pass --creative-threshold DELTA"
            )
        return float(entry["delta"]), negatives, entry.get("episode_ticks")

    def calibration_used(
        self, spec, records: Sequence[Any], ticks_per_step: int = 1
    ) -> tuple[float, int | None]:
        """(delta, game ticks per episode of the stored calibration it comes from) that `judge`
        applies to these episodes; the ticks are None for a delta given by hand."""
        delta, _, ticks = self._decision(spec, self.judged_ticks(records, ticks_per_step))
        return delta, ticks

    @staticmethod
    def judged_ticks(records: Sequence[Any], ticks_per_step: int = 1) -> float:
        """Game ticks of the judged episodes, on average: what picks the calibration."""
        return float(np.mean([len(r.features) for r in records])) * ticks_per_step

    def calibration_mismatch(self, spec, records, ticks_per_step: int = 1) -> str | None:
        """Why these episodes are unlike the ones delta was calibrated on, or None. Of the
        stored calibrations (one per episode length, `episode_ticks` in judge.json, one game
        tick per frame) the one nearest the judged episodes' length is used; the score is a
        mean over the episode, so an episode several times longer or shorter than that
        calibration's shows its goal for a different share of its frames, and frames several
        ticks apart change what the reward's 16-frame window sees."""
        if self.threshold is not None or not records:
            return None
        judged = self.judged_ticks(records, ticks_per_step)
        ticks = (self._calibration(spec, judged) or {}).get("episode_ticks")
        if ticks is None:
            return None
        notes = []
        if not 0.5 <= judged / ticks <= 2.0:
            notes.append(f"episodes of {judged:.0f} game ticks on average against {ticks}")
        if ticks_per_step != 1:
            notes.append(f"{ticks_per_step} game ticks per frame against 1")
        if not notes:
            return None
        return (
            f"{spec.id}: the judge's delta was calibrated on other episodes ({'; '.join(notes)}); "
            f"its verdicts may shift. Judge episodes like the calibration's (--max-steps "
            f"{max(ticks // ticks_per_step, 1)}) or recalibrate on episodes like these "
            f"(`python -m data.judge_episodes --out EPISODES --ticks {round(judged)}` then "
            "`python -m mineclip_jax.judge --episodes EPISODES --ckpt DIR`)"
        )

    def weak_calibration(self, spec, records, ticks_per_step: int = 1) -> str | None:
        """Why the calibration used for these episodes is a poor judge, or None: its F1 on its
        own held-out labelled episodes (`f1_trained` in judge.json) is below RELIABLE_JUDGE_F1
        while another stored length's is higher (the shipped mini's carpets: 0.730 on
        1,000-tick episodes, 0.989 on 200-tick ones). Files without held-out F1s say nothing."""
        if self.threshold is not None or not records:
            return None
        used = self._calibration(spec, self.judged_ticks(records, ticks_per_step))
        if used is None or used.get("f1_trained") is None:
            return None
        if used["f1_trained"] >= RELIABLE_JUDGE_F1:
            return None
        from mineclip_jax import evaluator

        rows = evaluator.calibrations(self.calibration[spec.prompt])
        best = max(rows, key=lambda row: row.get("f1_trained", -1.0))
        if best.get("f1_trained", -1.0) <= used["f1_trained"]:
            return None
        ticks = best["episode_ticks"]
        return (
            f"{spec.id}: the judge's {used['episode_ticks']}-tick calibration agreed with the "
            f"simulator's ground truth at F1 {used['f1_trained']:.3f} on its held-out labelled "
            f"episodes, the {ticks}-tick calibration at {best['f1_trained']:.3f}; for verdicts "
            f"you can trust, judge episodes of that length (--max-steps "
            f"{max(ticks // ticks_per_step, 1)})"
        )

    def judge(
        self, spec, records: Sequence[Any], ticks_per_step: int = 1
    ) -> tuple[np.ndarray, float | None]:
        """(success per episode, F1 against the human labels of this task's episodes or None).
        Warns when the episodes are unlike the calibration's (`calibration_mismatch`) or its
        calibration judged its own held-out episodes poorly (`weak_calibration`)."""
        from mineclip_jax import evaluator
        from mineclip_jax.reward import MineCLIPReward

        if any(r.features is None for r in records):
            raise ValueError(
                "Creative judging needs frame features: run the episodes with frame_features"
            )
        for note in (
            self.calibration_mismatch(spec, records, ticks_per_step),
            self.weak_calibration(spec, records, ticks_per_step),
        ):
            if note:
                warnings.warn(note, stacklevel=2)
        if not records:
            raise ValueError(f"{spec.id}: no episodes to judge")
        delta, negatives, _ = self._decision(spec, self.judged_ticks(records, ticks_per_step))
        lengths = np.array([len(r.features) for r in records])
        padded = np.zeros((len(records), lengths.max(), records[0].features.shape[-1]), np.float32)
        for i, r in enumerate(records):
            padded[i, : lengths[i]] = r.features
        reward = MineCLIPReward(self.handle, spec.prompt, negatives=negatives, kind="direct")
        step_rewards, _ = reward.trajectory_rewards(padded)
        scores = evaluator.trajectory_scores(np.asarray(step_rewards), lengths)
        predicted = evaluator.judge(scores, delta)
        f1 = None
        if self.labels is not None:
            labelled = [j for j in range(len(records)) if (spec.id, j) in self.labels]
            if labelled:
                truth = [self.labels[(spec.id, j)] for j in labelled]
                f1 = evaluator.binary_metrics(predicted[labelled], truth).f1
        return np.asarray(predicted, bool), f1


if __name__ == "__main__":
    import tyro

    from mineclip_jax import compile_cache

    cfg = tyro.cli(JudgeConfig)
    compile_cache.enable()  # a rerun loads the scoring programs from disk
    main(cfg)
