"""Small real inputs for the data tests: PyAV-encoded videos, transcripts, metadata JSON."""

from __future__ import annotations

import json
import os

import numpy as np

from envs.video import write_video

FIXTURE_FPS = 4


def time_coded_frames(seconds: float, fps: int = FIXTURE_FPS, height: int = 48, width: int = 80):
    """Frames whose red/green channels encode the frame index in base 16 (levels 16 apart, which
    survives yuv420 coding and resizing)."""
    n = int(round(seconds * fps))
    if n > 256:
        raise ValueError("time-coded fixtures hold at most 256 frames")
    index = np.arange(n)
    frames = np.zeros((n, height, width, 3), np.uint8)
    frames[..., 0] = (index % 16 * 16 + 8)[:, None, None]
    frames[..., 1] = (index // 16 * 16 + 8)[:, None, None]
    frames[:, : height // 2, : width // 2, 2] = 255  # a quadrant, to see crops/resizes
    return frames


def frame_index_of(decoded: np.ndarray) -> np.ndarray:
    """Inverse of `time_coded_frames` on decoded frames `[T, H, W, 3]` (centre pixel)."""
    h, w = decoded.shape[1] // 2, decoded.shape[2] * 3 // 4
    red, green = (np.rint((decoded[:, h, w, c] - 8.0) / 16).astype(np.int32) for c in (0, 1))
    return red + 16 * green


def write_fixture_video(path: str, seconds: float = 24.0, fps: int = FIXTURE_FPS) -> str:
    write_video(time_coded_frames(seconds, fps), path, fps=fps)
    return path


SPEECH = (
    "hey guys welcome back today we are going to go mining for some diamonds with our new iron "
    "pickaxe and then we will build a little house out of oak planks and cobblestone so that "
    "the zombies and creepers cannot get us at night and we can sleep in our bed"
)


def write_vtt(path: str, text: str = SPEECH, seconds: float = 24.0, cue_s: float = 4.0) -> str:
    words = text.split()
    num_cues = int(seconds // cue_s)
    per_cue = int(np.ceil(len(words) / num_cues))
    lines = ["WEBVTT", "Kind: captions", "Language: en", ""]
    for i in range(num_cues):
        cue = words[i * per_cue : (i + 1) * per_cue]
        if not cue:
            break
        t0, t1 = i * cue_s, (i + 1) * cue_s
        lines += [f"00:00:{t0:06.3f} --> 00:00:{t1:06.3f}", " ".join(cue), ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def write_json_transcript(path: str, text: str = SPEECH, seconds: float = 24.0) -> str:
    words = text.split()
    dt = seconds / len(words)
    segments = []
    for i in range(0, len(words), 8):
        chunk = [
            {"word": w, "start": (i + j) * dt, "end": (i + j + 1) * dt}
            for j, w in enumerate(words[i : i + 8])
        ]
        segments.append(
            {"start": chunk[0]["start"], "end": chunk[-1]["end"], "text": "", "words": chunk}
        )
    with open(path, "w") as f:
        json.dump({"segments": segments}, f)
    return path


def write_youtube_inputs(root: str) -> dict[str, str]:
    """Metadata for 6 videos: 3 good (2 VTT, 1 JSON), 1 corrupt file, 1 missing file and 1
    with a malformed transcript."""
    videos, transcripts = os.path.join(root, "videos"), os.path.join(root, "transcripts")
    os.makedirs(videos), os.makedirs(transcripts)
    for vid in ("good_a", "good_b"):
        write_fixture_video(os.path.join(videos, f"{vid}.mp4"))
        write_vtt(os.path.join(transcripts, f"{vid}.en.vtt"))
    write_fixture_video(os.path.join(videos, "good_c.mp4"), seconds=20.0)
    write_json_transcript(os.path.join(transcripts, "good_c.json"), seconds=20.0)
    with open(os.path.join(videos, "corrupt.mp4"), "wb") as f:
        f.write(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8)  # header, then garbage
    write_vtt(os.path.join(transcripts, "corrupt.vtt"))
    write_vtt(os.path.join(transcripts, "missing.vtt"))
    write_fixture_video(os.path.join(videos, "bad_transcript.mp4"), seconds=1.0)
    with open(os.path.join(transcripts, "bad_transcript.json"), "w") as f:
        json.dump([{"text": "a cow", "start": "soon", "end": 3}], f)  # start is not a number
    metadata = [
        {"id": vid, "title": f"video {vid}", "link": f"https://youtu.be/{vid}", "duration": 24}
        for vid in ("good_a", "good_b", "good_c", "corrupt", "missing", "bad_transcript")
    ]
    meta_path = os.path.join(root, "youtube.json")
    with open(meta_path, "w") as f:
        json.dump(metadata, f)
    return {"metadata": meta_path, "videos": videos, "transcripts": transcripts}
