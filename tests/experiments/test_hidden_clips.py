"""experiments.table1.hidden_clips: the hidden-target clips appended to a clip directory are the frames of the
`hidden_*` episodes they name (replayed here from the same seeds), every one labelled `wander`,
with the base clips and the test split unchanged."""

import json

import numpy as np
import pytest

from data import synthetic as S
from data import tokens
from experiments.table1 import hidden_clips as H

# the policy-clips test's tiny base build: its compiled world is shared within a worker
BASE = dict(episodes=4, batch=2, test_fraction=0.5, episode_ticks=40, height=16, width=24,
            world_size=16, world_height=24, world_pool=1)  # fmt: skip


def test_hidden_clips_are_the_named_episodes_windows_labelled_wander(tmp_path):
    from mineclip_jax import train as tr

    base = tmp_path / "base"
    S.build(S.SyntheticConfig(out=str(base), **BASE), progress=False)
    cfg = H.HiddenClipsConfig(base=str(base), out=str(tmp_path / "out"), episodes=4, batch=2,
                              clips_per_episode=2, episode_ticks=40, seed=5)  # fmt: skip
    summary = H.build(cfg)

    # replay: the same draws of behaviour and key, in the base build's train worlds and frame
    # size; the windows drawn from the same generator in between, as the build draws them
    sim = S.SyntheticConfig(out="unused", **dict(BASE, batch=2))
    hidden = [b for b in S.BEHAVIOURS if b.hide_target]
    w = np.array([cfg.zoo_weight if b.task in H.ZOO_TASKS else 1.0 for b in hidden])
    rng = np.random.default_rng(5)
    episodes = []
    for _ in range(2):
        b = hidden[rng.choice(len(hidden), p=w / w.sum())]
        rgb, truth = S.run_episodes(sim, b, 0, int(rng.integers(2**31)))
        episodes.append((b, rgb))
        for e in range(2):
            S.episode_clips({k: v[e] for k, v in truth.items()}, b, 2, rng)
    assert episodes[0][0] != episodes[1][0] or not np.array_equal(episodes[0][1], episodes[1][1])

    src = tr.open_split(tmp_path / "out", "train", (16, 24))
    base_src = tr.open_split(base, "train", (16, 24))
    n = len(base_src)
    assert len(src) == n + 8 and summary["hidden_clips"]["count"] == 8
    np.testing.assert_array_equal(src.frames[:n], base_src.frames[:])
    records = [json.loads(x) for x in (tmp_path / "out" / "train_clips.jsonl").open()][n:]
    for k, r in enumerate(records):
        i, e, end = (int(x) for x in r["clip_id"].split("/")[1:4])
        behaviour, rgb = episodes[i]
        assert r["behaviour"] == behaviour.name and r["label"] == "wander"
        np.testing.assert_array_equal(src.frames[n + k], rgb[e, S.window_frames(end, r["stride"])])
    assert src.labels[n:] == ["wander"] * 8
    np.testing.assert_array_equal(src.tokens[n:], tokens.tokenize(src.texts[n:]))
    assert not S.captions_contain_prompt(src.texts[n:])
    test = tr.open_split(tmp_path / "out", "test", (16, 24))
    np.testing.assert_array_equal(test.frames[:], tr.open_split(base, "test", (16, 24)).frames[:])
    assert (
        summary["labels"]["wander"]
        == json.loads((base / "clips.json").read_text())["labels"].get("wander", 0) + 8
    )


def test_hidden_clips_config_errors():
    with pytest.raises(ValueError, match="multiple of --batch 8"):
        H.HiddenClipsConfig(base="b", out="o", episodes=12)
    with pytest.raises(ValueError, match="--zoo-weight"):
        H.HiddenClipsConfig(base="b", out="o", zoo_weight=0)
