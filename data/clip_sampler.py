"""The paper's clip sampler (appendix E.1): transcript keyword match -> (text, video clip).

For every transcript segment that mentions a Minecraft keyword:
  1. start from the matched words and randomly grow the text word by word, left or right, to a
     target length drawn uniformly from [min_tokens, max_tokens] CLIP tokens (SOT/EOT included,
     so 77 is CLIP's whole context);
  2. draw the clip centre uniformly inside the matched segment's time span;
  3. draw the clip length uniformly from [min_clip_s, max_clip_s] and place the centre at a
     uniform fraction of it (the clip is grown from the centre to both sides), shifted to lie
     inside the video;
  4. sample `num_frames` timestamps uniformly over the clip.
Everything is a pure function of (transcript, duration, config, seed, video id).
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

from data import keywords as kw
from data import tokens
from data.transcripts import Transcript
from data.video import uniform_timestamps


@dataclasses.dataclass(frozen=True)
class ClipSamplerConfig:
    """Parameters of the appendix E.1 sampler."""

    min_tokens: int = 16  # shortest text, in CLIP tokens including SOT and EOT.
    max_tokens: int = 77  # longest text, in CLIP tokens including SOT and EOT (CLIP context).
    min_clip_s: float = 8.0  # shortest clip, seconds.
    max_clip_s: float = 16.0  # longest clip, seconds.
    num_frames: int = 16  # frames sampled uniformly over each clip.
    max_clips_per_video: int = 64  # cap on clips from one video (random subset of the matches).

    def __post_init__(self):
        if not 2 < self.min_tokens <= self.max_tokens <= tokens.CONTEXT_LENGTH:
            raise ValueError(
                f"need 2 < min_tokens <= max_tokens <= {tokens.CONTEXT_LENGTH}, got "
                f"{self.min_tokens}..{self.max_tokens}"
            )
        if not 0 < self.min_clip_s <= self.max_clip_s:
            raise ValueError(
                f"need 0 < min_clip_s <= max_clip_s, got {self.min_clip_s}..{self.max_clip_s}"
            )
        if self.num_frames < 1 or self.max_clips_per_video < 1:
            raise ValueError("num_frames and max_clips_per_video must be positive")


@dataclasses.dataclass(frozen=True)
class ClipSpec:
    """One sampled (text, clip) pair before decoding."""

    video_id: str  # source video.
    keyword: str  # the keyword that matched.
    text: str  # transcript text paired with the clip, 16-77 CLIP tokens.
    num_tokens: int  # CLIP tokens of `text` including SOT and EOT.
    center_s: float  # the clip centre, inside the matched segment.
    start_s: float  # clip start, seconds.
    end_s: float  # clip end, seconds.
    timestamps_s: tuple[float, ...]  # the frame times, uniform over [start_s, end_s].

    @property
    def clip_id(self) -> str:
        return f"{self.video_id}@{self.start_s:.3f}-{self.end_s:.3f}"


def video_rng(seed: int, video_id: str) -> np.random.Generator:
    """A generator that depends only on (seed, video id): stable across runs and orderings."""
    return np.random.default_rng([seed, zlib.crc32(video_id.encode("utf-8"))])


def grow_text(
    rng: np.random.Generator,
    word_lengths: np.ndarray,
    first: int,
    end: int,
    target_tokens: int,
) -> tuple[int, int]:
    """Grow the word span [first, end) randomly left/right while it fits `target_tokens`.

    `word_lengths[i]` is word i's BPE length; a span costs sum(lengths) + 2 (SOT, EOT).
    Returns the grown span; it stops when the next word would overflow or no word is left.
    """
    total = int(word_lengths[first:end].sum()) + 2
    while True:
        options = []
        if first > 0 and total + word_lengths[first - 1] <= target_tokens:
            options.append(-1)
        if end < len(word_lengths) and total + word_lengths[end] <= target_tokens:
            options.append(+1)
        if not options:
            return first, end
        if options[int(rng.integers(len(options)))] < 0:
            first -= 1
            total += int(word_lengths[first])
        else:
            total += int(word_lengths[end])
            end += 1


def place_clip(
    rng: np.random.Generator,
    segment_start_s: float,
    segment_end_s: float,
    duration_s: float,
    config: ClipSamplerConfig,
) -> tuple[float, float, float] | None:
    """(centre, start, end) of a clip for a segment, or None when the video is too short."""
    if duration_s < config.min_clip_s:
        return None
    lo, hi = max(0.0, segment_start_s), min(duration_s, max(segment_start_s, segment_end_s))
    if hi < lo:  # the segment lies past the video's end (transcript longer than the video)
        return None
    center = float(rng.uniform(lo, hi)) if hi > lo else lo
    length = float(rng.uniform(config.min_clip_s, min(config.max_clip_s, duration_s)))
    start = center - float(rng.uniform(0.0, 1.0)) * length
    start = min(max(start, 0.0), duration_s - length)  # shift inside the video, keep the length
    return center, start, start + length


def sample_clips(
    video_id: str,
    transcript: Transcript,
    duration_s: float,
    config: ClipSamplerConfig = ClipSamplerConfig(),
    seed: int = 0,
    keywords: tuple[str, ...] = kw.KEYWORDS,
) -> list[ClipSpec]:
    """All clips of one video (at most `config.max_clips_per_video`), in time order."""
    words = [w for segment in transcript for w in segment.words]
    if not words:
        return []
    # Index of each segment's first word in the flat word list.
    offsets = np.cumsum([0] + [len(s.words) for s in transcript])
    texts = [w.text for w in words]
    word_lengths = tokens.bpe_lengths(texts)
    rng = video_rng(seed, video_id)

    candidates = []  # (segment index, first word, end word, keyword)
    for s_index, segment in enumerate(transcript):
        seg_texts = [w.text for w in segment.words]
        for first, end, keyword in kw.find_keywords(seg_texts, keywords):
            candidates.append((s_index, offsets[s_index] + first, offsets[s_index] + end, keyword))
    if len(candidates) > config.max_clips_per_video:
        keep = rng.choice(len(candidates), config.max_clips_per_video, replace=False)
        candidates = [candidates[i] for i in sorted(keep)]

    clips = []
    for s_index, first, end, keyword in candidates:
        target = int(rng.integers(config.min_tokens, config.max_tokens + 1))
        first, end = grow_text(rng, word_lengths, int(first), int(end), target)
        num_tokens = int(word_lengths[first:end].sum()) + 2
        segment = transcript[s_index]
        placed = place_clip(rng, segment.start_s, segment.end_s, duration_s, config)
        if num_tokens < config.min_tokens or num_tokens > tokens.CONTEXT_LENGTH or placed is None:
            continue  # transcript too short around the match, or video too short for a clip
        center, start, end_s = placed
        clips.append(
            ClipSpec(
                video_id=video_id,
                keyword=keyword,
                text=" ".join(texts[first:end]),
                num_tokens=num_tokens,
                center_s=center,
                start_s=start,
                end_s=end_s,
                timestamps_s=tuple(uniform_timestamps(start, end_s, config.num_frames).tolist()),
            )
        )
    return sorted(clips, key=lambda c: (c.start_s, c.text))
