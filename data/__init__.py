"""Data pipelines: TFDS builders for MineDojo's knowledge base and synthetic MineCLIP clips.

Every builder writes array_record files through TFDS without TensorFlow, into the directory the
user names (which then holds `dataset_info.json`; read it with `tfds.builder_from_directory`).

    python -m data.youtube   --metadata M.json --videos V/ --transcripts T/ --out DIR  # clips
    python -m data.synthetic --episodes N --out DIR      # clips (array clip directory, 48x64)
    python -m data.wiki      --pages WIKI/ --out DIR
    python -m data.reddit    --posts reddit.json --contents POSTS/ --out DIR

Clip datasets follow the MineCLIP training-data contract (docs/interfaces.md): `frames` uint8
[16, 160, 256, 3], `tokens` int32 [77], `text`, `clip_id`, `start_s`, `end_s`; splits `train` and
`test`. Modules: `video` (PyAV decoding), `transcripts` (WebVTT / JSON timings), `keywords`,
`clip_sampler` (paper appendix E.1), `augment` (temporally consistent random resized crop),
`loader` (mesh-sharded device batches), `tfds_io` (shared TFDS plumbing).
"""
