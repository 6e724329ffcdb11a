"""Time-aligned transcripts: WebVTT (incl. YouTube's word-timed auto captions) and JSON.

Everything becomes a `Transcript`: a tuple of `Segment`s (a caption cue or a JSON segment), each
with its words and per-word times. When a source has no word times, the segment's span is shared
among its words in proportion to their length, so every word still has a time.

Supported JSON shapes (by what they contain):
  * `{"segments": [{"start", "end", "text", "words": [{"word"|"text", "start", "end"}]}]}`
    (Whisper-style; `words` optional),
  * a list of `{"text", "start", "duration"}` or `{"text", "start", "end"}` (transcript
    API style), or `{"words": [{"word", "start", "end"}, ...]}` (words only; one segment).
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re

TRANSCRIPT_EXTENSIONS = (".en.vtt", ".vtt", ".en.json", ".json")


class TranscriptError(ValueError):
    """A transcript file is malformed; the message names the file and the problem."""


@dataclasses.dataclass(frozen=True)
class Word:
    text: str  # the word as spoken (original case, punctuation attached).
    start_s: float  # when the word starts, seconds from the video start.
    end_s: float  # when the word ends.


@dataclasses.dataclass(frozen=True)
class Segment:
    start_s: float  # cue / segment start, seconds.
    end_s: float  # cue / segment end, seconds.
    words: tuple[Word, ...]  # the segment's words in order, each with its own time.

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)


Transcript = tuple[Segment, ...]


def _words_over_span(text: str, start_s: float, end_s: float) -> tuple[Word, ...]:
    """Spread `text`'s words over [start_s, end_s] in proportion to their character counts."""
    tokens = text.split()
    if not tokens:
        return ()
    weights = [len(t) + 1 for t in tokens]  # +1: the gap after each word takes time too
    total = sum(weights)
    span = max(end_s - start_s, 0.0)
    words, t = [], start_s
    for token, weight in zip(tokens, weights):
        dt = span * weight / total
        words.append(Word(token, t, t + dt))
        t += dt
    return tuple(words)


_VTT_TIME = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{3})")
_VTT_CUE_TIMING = re.compile(rf"^\s*({_VTT_TIME.pattern})\s*-->\s*({_VTT_TIME.pattern})")
_VTT_INLINE_TIME = re.compile(r"<((?:\d+:)?\d{1,2}:\d{2}[.,]\d{3})>")
_VTT_TAG = re.compile(r"</?[^>]*>")


def _vtt_seconds(stamp: str) -> float:
    m = _VTT_TIME.fullmatch(stamp.strip())
    if m is None:
        raise ValueError(f"bad WebVTT timestamp {stamp!r}")
    hours, minutes, seconds, millis = m.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(millis) / 1000


def _vtt_cue_words(payload: str, start_s: float, end_s: float) -> tuple[Word, ...]:
    """Words of one cue, using inline `<hh:mm:ss.mmm>` word timings when present."""
    if not _VTT_INLINE_TIME.search(payload):
        return _words_over_span(html.unescape(_VTT_TAG.sub("", payload)), start_s, end_s)
    # Inline timings mark when the text that follows starts; pieces run to the next mark.
    pieces = _VTT_INLINE_TIME.split(payload)
    starts = [start_s] + [_vtt_seconds(p) for p in pieces[1::2]]
    texts = [html.unescape(_VTT_TAG.sub("", p)) for p in pieces[0::2]]
    words: list[Word] = []
    for i, (text, t0) in enumerate(zip(texts, starts)):
        t1 = starts[i + 1] if i + 1 < len(starts) else end_s
        words.extend(_words_over_span(text, t0, max(t1, t0)))
    return tuple(words)


def parse_webvtt(text: str, source: str = "<string>") -> Transcript:
    """Parse WebVTT text into segments.

    YouTube auto captions repeat the previous line in each cue (rolling captions) and mark the
    new words with inline timings; a cue line already shown by the previous cue is dropped so
    each spoken word appears once.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
        raise TranscriptError(f"{source}: not a WebVTT file (first line must start with WEBVTT)")
    segments: list[Segment] = []
    previous_lines: list[str] = []
    i = 0
    while i < len(lines):
        m = _VTT_CUE_TIMING.match(lines[i])
        if m is None:
            if lines[i].startswith(("NOTE", "STYLE", "REGION")):  # skip the block
                while i < len(lines) and lines[i].strip():
                    i += 1
            i += 1
            continue
        start_s, end_s = _vtt_seconds(m.group(1)), _vtt_seconds(m.group(6))
        if end_s < start_s:
            raise TranscriptError(f"{source}: cue at line {i + 1} ends before it starts")
        i += 1
        payload_lines = []
        while i < len(lines) and lines[i].strip():
            payload_lines.append(lines[i])
            i += 1
        plain = [_VTT_TAG.sub("", ln).strip() for ln in payload_lines]
        kept = [ln for ln, p in zip(payload_lines, plain) if p and p not in previous_lines]
        previous_lines = [p for p in plain if p]
        words = _vtt_cue_words("\n".join(kept), start_s, end_s)
        if words:
            segments.append(Segment(start_s, end_s, words))
    return tuple(segments)


def _json_word(item: dict, source: str) -> Word:
    text = item.get("word", item.get("text"))
    if text is None or "start" not in item or "end" not in item:
        raise TranscriptError(f"{source}: each word needs 'word' (or 'text'), 'start' and 'end'")
    return Word(str(text).strip(), float(item["start"]), float(item["end"]))


def _json_segment(item: dict, source: str) -> Segment:
    if not isinstance(item, dict) or "start" not in item:
        raise TranscriptError(f"{source}: each segment needs a 'start' (seconds)")
    start_s = float(item["start"])
    if "end" in item:
        end_s = float(item["end"])
    elif "duration" in item:
        end_s = start_s + float(item["duration"])
    else:
        raise TranscriptError(f"{source}: segment at {start_s}s needs 'end' or 'duration'")
    if item.get("words"):
        words = tuple(w for w in (_json_word(x, source) for x in item["words"]) if w.text)
    else:
        words = _words_over_span(html.unescape(str(item.get("text", ""))), start_s, end_s)
    return Segment(start_s, end_s, words)


def parse_json_transcript(data, source: str = "<json>") -> Transcript:
    """Parse one of the JSON shapes in the module docstring."""
    if isinstance(data, dict) and "segments" in data:
        items = data["segments"]
    elif isinstance(data, dict) and "words" in data:
        words = tuple(w for w in (_json_word(x, source) for x in data["words"]) if w.text)
        return (Segment(words[0].start_s, words[-1].end_s, words),) if words else ()
    elif isinstance(data, list):
        items = data
    else:
        raise TranscriptError(
            f"{source}: expected a list of segments, {{'segments': [...]}} or {{'words': [...]}}"
        )
    segments = (_json_segment(x, source) for x in items)
    return tuple(sorted((s for s in segments if s.words), key=lambda s: s.start_s))


def load_transcript(path: str | os.PathLike) -> Transcript:
    """Read a `.vtt` or `.json` transcript file."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        content = f.read()
    if path.endswith(".vtt"):
        return parse_webvtt(content, source=path)
    if path.endswith(".json"):
        try:
            data = json.loads(content)
        except json.JSONDecodeError as e:
            raise TranscriptError(f"{path}: invalid JSON ({e})") from e
        return parse_json_transcript(data, source=path)
    raise TranscriptError(f"{path}: unknown transcript format (use .vtt or .json)")


def find_transcript(transcripts_dir: str | os.PathLike, video_id: str) -> str | None:
    """Path of `<video_id>.en.vtt`, `.vtt`, `.en.json` or `.json` in the directory, else None."""
    for ext in TRANSCRIPT_EXTENSIONS:
        candidate = os.path.join(transcripts_dir, video_id + ext)
        if os.path.isfile(candidate):
            return candidate
    return None
