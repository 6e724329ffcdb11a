"""Inputs MineCLIP used to take without a word: float frames in [0, 1] (seen as near-black
images, every env scored alike), token ids outside the vocabulary (NaN embeddings or another
token), prompts over the 77-token context (cut silently; OpenAI CLIP raises)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import model as mm
from mineclip_jax.reward import MineCLIPReward


@pytest.fixture(scope="module")
def tiny():
    return mcj.create(mcj.MineCLIPConfig.tiny(pool="avg", image_size=(32, 48)), jax.random.key(0))


def _frames(shape=(2, 32, 48, 3)):
    return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)


def test_float_frames_in_unit_range_are_refused_or_scaled_on_request(tiny):
    u8 = _frames()
    unit = u8.astype(np.float32) / 255.0
    with pytest.raises(ValueError, match=r"look like images scaled to \[0, 1\]"):
        tiny.encode_frames(unit)
    with pytest.raises(ValueError, match=r"look like images scaled to \[0, 1\]"):
        tiny.encode_video(unit[None])
    # unit_range=True scales them: the same features as the uint8 frames
    np.testing.assert_allclose(tiny.encode_frames(unit, unit_range=True), tiny.encode_frames(u8),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    # 0..255 floats are what the model takes
    np.testing.assert_allclose(tiny.encode_frames(u8.astype(np.float32)), tiny.encode_frames(u8),
                               rtol=1e-6, atol=1e-6)  # fmt: skip
    for bad, match in ((u8.astype(np.float32) * 2, r"values in 0\.\.255"),
                       (np.full(u8.shape, np.nan, np.float32), "values in 0..255"),
                       (u8.astype(np.int32) - 1, "values in 0..255"),
                       (u8 > 3, "must be uint8")):  # fmt: skip
        with pytest.raises((ValueError, TypeError), match=match):
            tiny.encode_frames(bad)
    # inside jit the values are unknown: the dtype passes, the model runs as before
    jax.jit(lambda f: mm.check_frame_values(f))(jnp.asarray(unit))


def test_the_reward_refuses_unit_range_frames(tiny):
    reward = MineCLIPReward(tiny, ["hunt a cow"], negatives=["milk a cow"])
    state = reward.init(2)
    u8 = _frames()
    first = np.ones(2, bool)
    reward.step_frames(state, u8, first)
    with pytest.raises(ValueError, match=r"scaled to \[0, 1\]"):
        reward.step_frames(state, u8.astype(np.float32) / 255.0, first)


def test_token_ids_outside_the_vocabulary_are_refused(tiny):
    good = mcj.tokenize(["hunt a cow"])
    tiny.encode_text(good)
    for wrong in (-1, tiny.config.vocab_size):  # a NaN embedding, or a wrapped-around token
        bad = good.copy()
        bad[0, 3] = wrong
        with pytest.raises(ValueError, match=r"token ids must be in 0\.\.49407"):
            tiny.encode_text(bad)
    big = good.copy()
    big[0, 2] = 2**31 - 1
    with pytest.raises(ValueError, match="got ids in"):
        tiny.encode_text(big)


def test_prompts_over_the_context_raise_unless_truncation_is_asked_for():
    long = " ".join(["cow"] * 80)  # 80 ids, 75 fit
    with pytest.raises(ValueError, match="is 80 tokens, over the 75 that fit in 77"):
        mcj.tokenize(["hunt a cow", long])
    rows = mcj.tokenize([long], truncate=True)
    assert rows.shape == (1, 77) and rows[0, -1] == mcj.config.EOT_TOKEN  # cut to SOT+75+EOT
    assert mcj.tokenize([" ".join(["cow"] * 75)]).shape == (1, 77)  # exactly full: fine
    from data import tokens

    np.testing.assert_array_equal(tokens.tokenize([long]), rows)  # transcripts are cut
