"""TFDS builder: MineDojo YouTube videos + transcripts -> MineCLIP training clips.

    python -m data.youtube --metadata youtube_full.json --videos videos/ \
        --transcripts transcripts/ --out ~/datasets/mc_youtube

Inputs: MineDojo's video metadata JSON (a list of `{id, title, link, view_count, like_count,
duration, fps}`; only `id` is required), a directory of locally downloaded videos named
`<id>.mp4|.webm|.mkv|...`, and a directory of time-aligned transcripts `<id>.en.vtt|.vtt|.json`.
Clips are sampled as in appendix E.1 (`data.clip_sampler`) and decoded with PyAV to 16 frames of
160x256. Videos go wholly to `train` or `test` (no clip of a test video is trained on).

Missing or corrupt videos and transcripts are skipped, counted and listed at the end in a
`BuildReport`, which is also written as `build_report.json` next to the dataset.
"""

from __future__ import annotations

import dataclasses
import json
import os
import zlib
from collections.abc import Iterator

import tensorflow_datasets as tfds
import tyro

from data import tfds_io, tokens
from data.clip_sampler import ClipSamplerConfig, sample_clips
from data.transcripts import find_transcript, load_transcript
from data.video import VideoDecodeError, decode_frames, find_video, video_duration


@dataclasses.dataclass(frozen=True)
class YouTubeBuildConfig:
    """Build the YouTube clip dataset. Run: python -m data.youtube --metadata M --videos V --transcripts T --out O"""

    metadata: str  # MineDojo video metadata JSON (a list of entries with an "id").
    videos: str  # directory of downloaded videos named <id>.<ext>.
    transcripts: str  # directory of transcripts named <id>.en.vtt, <id>.vtt or <id>.json.
    out: str  # output TFDS dataset directory (must be new or empty unless --overwrite).
    seed: int = 0  # seed of the clip sampler and the train/test split.
    test_fraction: float = 0.05  # fraction of videos held out for the test split.
    max_videos: int | None = None  # only the first N metadata entries (quick builds).
    overwrite: bool = False  # replace a non-empty --out directory.
    sampler: ClipSamplerConfig = ClipSamplerConfig()  # appendix E.1 sampling parameters.


@dataclasses.dataclass
class BuildReport:
    """What a build did with each input; `problems` lists every skipped input and why."""

    videos_in_metadata: int = 0
    videos_used: int = 0
    missing_videos: list[str] = dataclasses.field(default_factory=list)
    corrupt_videos: list[str] = dataclasses.field(default_factory=list)
    missing_transcripts: list[str] = dataclasses.field(default_factory=list)
    bad_transcripts: list[str] = dataclasses.field(default_factory=list)
    videos_without_clips: list[str] = dataclasses.field(default_factory=list)
    clips: dict[str, int] = dataclasses.field(default_factory=lambda: {"train": 0, "test": 0})
    problems: dict[str, str] = dataclasses.field(default_factory=dict)

    def summary(self) -> str:
        lines = [
            f"videos in metadata: {self.videos_in_metadata}, used: {self.videos_used}",
            f"clips: train {self.clips['train']}, test {self.clips['test']}",
            f"missing videos: {len(self.missing_videos)}, corrupt videos: "
            f"{len(self.corrupt_videos)}, missing transcripts: {len(self.missing_transcripts)}, "
            f"bad transcripts: {len(self.bad_transcripts)}, videos without keyword clips: "
            f"{len(self.videos_without_clips)}",
        ]
        lines += [f"  {vid}: {why}" for vid, why in sorted(self.problems.items())]
        return "\n".join(lines)


def load_metadata(path: str) -> list[dict]:
    """MineDojo's YouTube metadata: a JSON list of entries, each with at least an `id`."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read metadata {path}: {e}") from e
    if isinstance(data, dict):  # tolerate {"videos": [...]} wrappers
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else None
    if not isinstance(data, list) or not all(isinstance(e, dict) and "id" in e for e in data):
        raise ValueError(
            f"{path}: expected a JSON list of video entries each with an 'id' "
            "(MineDojo's youtube_full.json format)"
        )
    return data


def split_of(video_id: str, seed: int, test_fraction: float) -> str:
    """Deterministic per-video split from a hash of (seed, id)."""
    h = zlib.crc32(f"{seed}:{video_id}".encode()) / 2**32
    return "test" if h < test_fraction else "train"


def assign_splits(video_ids: list[str], seed: int, test_fraction: float) -> dict[str, str]:
    """Per-video split; with >= 2 videos and test_fraction > 0, at least one goes to test."""
    splits = {v: split_of(v, seed, test_fraction) for v in video_ids}
    if test_fraction > 0 and len(video_ids) >= 2 and "test" not in splits.values():
        lowest = min(video_ids, key=lambda v: zlib.crc32(f"{seed}:{v}".encode()))
        splits[lowest] = "test"
    if len(video_ids) >= 2 and "train" not in splits.values():
        highest = max(video_ids, key=lambda v: zlib.crc32(f"{seed}:{v}".encode()))
        splits[highest] = "train"
    return splits


def video_examples(
    video_id: str, config: YouTubeBuildConfig, report: BuildReport
) -> list[tuple[str, dict]]:
    """All contract examples of one video; problems are recorded in `report`, never raised."""
    video_path = find_video(config.videos, video_id)
    if video_path is None:
        report.missing_videos.append(video_id)
        report.problems[video_id] = f"no video file {video_id}.<ext> in {config.videos}"
        return []
    transcript_path = find_transcript(config.transcripts, video_id)
    if transcript_path is None:
        report.missing_transcripts.append(video_id)
        report.problems[video_id] = f"no transcript {video_id}.vtt/.json in {config.transcripts}"
        return []
    try:
        transcript = load_transcript(transcript_path)
    except (ValueError, OSError, UnicodeDecodeError) as e:  # TranscriptError is a ValueError
        report.bad_transcripts.append(video_id)
        report.problems[video_id] = f"bad transcript: {e}"
        return []
    try:
        duration = video_duration(video_path)
        clips = sample_clips(video_id, transcript, duration, config.sampler, config.seed)
        frames = [decode_frames(video_path, c.timestamps_s) for c in clips]
    except VideoDecodeError as e:
        report.corrupt_videos.append(video_id)
        report.problems[video_id] = f"corrupt video: {e}"
        return []
    if not clips:
        report.videos_without_clips.append(video_id)
        report.problems[video_id] = "no keyword match with enough transcript and video around it"
        return []
    token_ids = tokens.tokenize([c.text for c in clips])
    report.videos_used += 1
    return [
        (
            c.clip_id,
            tfds_io.check_clip_example(
                {
                    "frames": f,
                    "tokens": t,
                    "text": c.text,
                    "clip_id": c.clip_id,
                    "start_s": c.start_s,
                    "end_s": c.end_s,
                }
            ),
        )
        for c, f, t in zip(clips, frames, token_ids)
    ]


class MinedojoYoutubeClips(tfds_io.LocalBuilder, skip_registration=True):
    """MineCLIP training clips from MineDojo YouTube videos (appendix E.1 sampling)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "16 frames at 160x256, 16-77 CLIP tokens, per-video splits."}

    def __init__(self, *, build_config: YouTubeBuildConfig, report: BuildReport, **kwargs):
        self._build_config = build_config
        self._report = report
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description=self.__doc__,
            features=tfds_io.clip_features(),
            supervised_keys=None,
        )

    def _split_generators(self, dl_manager):
        cfg = self._build_config
        entries = load_metadata(cfg.metadata)
        if cfg.max_videos is not None:
            entries = entries[: cfg.max_videos]
        ids = list(dict.fromkeys(str(e["id"]) for e in entries))  # unique, in order
        self._report.videos_in_metadata = len(ids)
        splits = assign_splits(ids, cfg.seed, cfg.test_fraction)
        test_ids = [v for v in ids if splits[v] == "test"]
        train_ids = [v for v in ids if splits[v] == "train"]
        moved: set[str] = set()
        # TFDS writes the splits in this order: test first, so that when every test video turns
        # out unusable, a train video can still be moved over (an empty split cannot be written).
        return {
            "test": self._generate_test(test_ids, train_ids, moved),
            "train": self._generate_examples(train_ids, "train", skip=moved),
        }

    def _generate_test(self, test_ids, train_ids, moved: set[str]):
        yield from self._generate_examples(test_ids, "test", require=False)
        if self._report.clips["test"] == 0 and self._build_config.test_fraction > 0:
            for video_id in reversed(train_ids):  # deterministic: the last train video first
                moved.add(video_id)
                yield from self._generate_examples([video_id], "test", require=False)
                if self._report.clips["test"]:
                    break
        if self._report.clips["test"] == 0:
            raise RuntimeError(self._no_clips("test"))

    def _generate_examples(
        self, video_ids: list[str], split: str, skip=(), require: bool = True
    ) -> Iterator[tuple[str, dict]]:
        for video_id in video_ids:
            if video_id in skip:
                continue
            for key, example in video_examples(video_id, self._build_config, self._report):
                self._report.clips[split] += 1
                yield key, example
        if require and self._report.clips[split] == 0:
            raise RuntimeError(self._no_clips(split))

    def _no_clips(self, split: str) -> str:
        return (
            f"no usable clip for the {split!r} split (a split needs at least one video with a "
            f"readable video file, transcript and keyword match); build so far:\n"
            f"{self._report.summary()}"
        )


def build(config: YouTubeBuildConfig) -> BuildReport:
    """Build the dataset into `config.out`; returns (and writes) the build report."""
    for name in ("videos", "transcripts"):
        if not os.path.isdir(getattr(config, name)):
            raise NotADirectoryError(f"--{name} {getattr(config, name)} is not a directory")
    load_metadata(config.metadata)  # fail fast on a bad metadata file
    report = BuildReport()
    tfds_io.build_into(
        lambda data_dir: MinedojoYoutubeClips(
            build_config=config, report=report, data_dir=data_dir
        ),
        config.out,
        overwrite=config.overwrite,
    )
    with open(os.path.join(config.out, "build_report.json"), "w") as f:
        json.dump(dataclasses.asdict(report), f, indent=1)
    return report


def main(config: YouTubeBuildConfig) -> None:
    report = build(config)
    print(report.summary())
    print(f"wrote {config.out}")


if __name__ == "__main__":
    main(tyro.cli(YouTubeBuildConfig))
