"""The project's one video writer: uint8 RGB frames -> an MP4 file (PyAV).

    from envs.video import write_video
    write_video(frames, "runs/episode.mp4", fps=20)   # frames: uint8 [T, H, W, 3]

H.264 (libx264) when the installed FFmpeg has it, MPEG-4 Part 2 otherwise; yuv420p in both, so
the encoded size must be even: an odd height or width is padded by one row / column that
repeats the last one (edge replication), never cropped or rescaled, so every pixel of the input
is in the video. A decoder returns ``[T, H + H % 2, W + W % 2, 3]`` frames, equal to the input
within the codec's loss on the original area.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def padded_size(height: int, width: int) -> tuple[int, int]:
    """The (height, width) ``write_video`` encodes frames of ``height`` x ``width`` at."""
    return height + height % 2, width + width % 2


def _check_frames(frames) -> np.ndarray:
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        raise TypeError(
            f"frames must be uint8 RGB [T, H, W, 3], got dtype {frames.dtype}; convert first, "
            "e.g. np.clip(x * 255, 0, 255).astype(np.uint8) for floats in [0, 1]"
        )
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(
            f"frames must be uint8 RGB [T, H, W, 3], got shape {frames.shape}; add a time axis "
            "with frames[None] for one image, or move channels last for [T, 3, H, W]"
        )
    if 0 in frames.shape[:3]:
        raise ValueError(f"frames must hold at least one 1x1 frame, got shape {frames.shape}")
    return frames


def write_video(frames, path: str | os.PathLike, fps: int = 20) -> Path:
    """Encode uint8 ``[T, H, W, 3]`` RGB ``frames`` at ``fps`` into ``path``; returns the path.

    Odd sizes are padded to even by repeating the last row / column (see the module docstring);
    the parent directory is created.
    """
    import av  # imported here: the envs package does not need PyAV to step a world

    frames = _check_frames(frames)
    if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or fps <= 0:
        raise ValueError(f"fps must be a positive integer, got {fps!r}")
    height, width = padded_size(frames.shape[1], frames.shape[2])
    pad = ((0, 0), (0, height - frames.shape[1]), (0, width - frames.shape[2]), (0, 0))
    if height != frames.shape[1] or width != frames.shape[2]:
        frames = np.pad(frames, pad, mode="edge")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=int(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for frame in frames:
            image = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            container.mux(stream.encode(image))
        container.mux(stream.encode())
    return path
