import numpy as np
import pytest

from data import tokens
from data.clip_sampler import ClipSamplerConfig, grow_text, place_clip, sample_clips
from data.keywords import KEYWORDS, find_keywords, normalize_word
from data.transcripts import Segment, Word, parse_webvtt
from tests.data.fixtures import SPEECH


def _transcript(text, seconds=60.0, cue_words=6):
    words = text.split()
    dt = seconds / len(words)
    segments = []
    for i in range(0, len(words), cue_words):
        ws = tuple(
            Word(w, (i + j) * dt, (i + j + 1) * dt) for j, w in enumerate(words[i : i + cue_words])
        )
        segments.append(Segment(ws[0].start_s, ws[-1].end_s, ws))
    return tuple(segments)


def test_keywords_match_plurals_and_prefer_longest():
    assert {"cow", "diamond pickaxe", "crafting table", "zombie"} <= set(KEYWORDS)
    words = "Two COWS, a diamond pickaxe; wolves and the crafting tables".split()
    assert [k for _, _, k in find_keywords(words)] == [
        "cow",
        "diamond pickaxe",
        "wolf",
        "crafting table",
    ]
    assert find_keywords("hello there my friend".split()) == []
    assert normalize_word("Berries!") == "berry" and normalize_word("glass") == "glass"


def test_grow_text_respects_target_and_contains_match():
    lengths = np.ones(50, np.int32)
    first, end = grow_text(np.random.default_rng(0), lengths, 20, 21, target_tokens=16)
    assert first <= 20 < 21 <= end and (end - first) + 2 == 16
    first, end = grow_text(np.random.default_rng(0), lengths[:5], 2, 3, target_tokens=77)
    assert (first, end) == (0, 5)  # stops when the transcript runs out


def test_place_clip_stays_inside_video_and_contains_centre():
    cfg = ClipSamplerConfig()
    rng = np.random.default_rng(1)
    for _ in range(200):
        center, start, end = place_clip(rng, 95.0, 99.0, 100.0, cfg)
        assert 95.0 <= center <= 99.0 and 0 <= start <= center <= end <= 100.0
        assert 8.0 <= end - start <= 16.0
    assert place_clip(rng, 1.0, 2.0, 5.0, cfg) is None  # video shorter than 8 s


def test_sample_clips_follow_appendix_e1_and_are_deterministic():
    long_speech = " ".join([SPEECH] * 3)
    transcript = _transcript(long_speech, seconds=90.0)
    cfg = ClipSamplerConfig()
    clips = sample_clips("vid", transcript, 90.0, cfg, seed=3)
    assert len(clips) >= 10
    for c in clips:
        assert 16 <= c.num_tokens <= 77
        n = int(np.count_nonzero(tokens.tokenize([c.text])[0]))
        assert n == c.num_tokens  # the token budget matches the real tokenizer
        text_words = {normalize_word(w) for w in c.text.split()}
        assert {normalize_word(w) for w in c.keyword.split()} <= text_words
        assert 8.0 <= c.end_s - c.start_s <= 16.0 and 0 <= c.start_s and c.end_s <= 90.0
        assert c.start_s <= c.center_s <= c.end_s
        assert len(c.timestamps_s) == 16 and c.timestamps_s[0] > c.start_s
    again = sample_clips("vid", transcript, 90.0, cfg, seed=3)
    assert again == clips
    other = sample_clips("vid", transcript, 90.0, cfg, seed=4)
    assert [c.start_s for c in other] != [c.start_s for c in clips]
    capped = sample_clips("vid", transcript, 90.0, ClipSamplerConfig(max_clips_per_video=3), seed=3)
    assert len(capped) == 3


def test_centre_lies_in_the_matched_segment():
    vtt = (
        "WEBVTT\n\n00:00:00.000 --> 00:00:20.000\n" + " ".join(["talking"] * 30) + "\n\n"
        "00:00:30.000 --> 00:00:32.000\nlook a creeper\n\n"
        "00:00:40.000 --> 00:01:00.000\n" + " ".join(["more"] * 30) + "\n"
    )
    (clip,) = sample_clips("v", parse_webvtt(vtt), 60.0, seed=0)
    assert clip.keyword == "creeper" and 30.0 <= clip.center_s <= 32.0
    assert "look a creeper" in clip.text


def test_short_transcripts_give_no_clip():
    assert sample_clips("v", _transcript("a cow"), 60.0) == []
    assert sample_clips("v", (), 60.0) == []


def test_config_validation():
    with pytest.raises(ValueError, match="max_tokens"):
        ClipSamplerConfig(min_tokens=16, max_tokens=100)
    with pytest.raises(ValueError, match="min_clip_s"):
        ClipSamplerConfig(min_clip_s=10, max_clip_s=5)
