"""TFDS builder: MineDojo Reddit posts with threaded comments -> one example per post.

    python -m data.reddit --posts reddit.json --contents posts/ --out ~/datasets/mc_reddit

`--posts` is MineDojo's `reddit.json` (a list of `{id, type}`). Post contents are read from
`--contents/<id>.json`, each in the shape MineDojo's loader returns: `{id, title, link, score,
num_comments, created_utc, type, content, comments: [{id, parent_id, content}]}`. The build never
touches the network unless the user passes Reddit API credentials (`--client-id`,
`--client-secret`, `--user-agent`; needs `pip install praw`): then posts missing from
`--contents` are fetched through the official API and saved there first.

Comments are stored in thread order (depth-first, each reply after its parent) with their
`depth` and the index of their parent comment (-1 for replies to the post), so threads can be
rebuilt without id lookups. Posts whose content is missing or malformed are counted in the
build report.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import tensorflow_datasets as tfds
import tyro

from data import tfds_io

MAX_COMMENTS = 100  # MineDojo's loader keeps up to 100 comments per post.


@dataclasses.dataclass(frozen=True)
class RedditBuildConfig:
    """Build the Reddit dataset. Run: python -m data.reddit --posts JSON --contents DIR --out DIR"""

    posts: str  # MineDojo reddit.json: a list of {"id", "type"}.
    contents: str  # directory of downloaded posts, <id>.json each.
    out: str  # output TFDS dataset directory (must be new or empty unless --overwrite).
    overwrite: bool = False  # replace a non-empty --out directory.
    max_posts: int | None = None  # only the first N posts of --posts (quick builds).
    client_id: str | None = None  # Reddit API client id; with the two below, fetch missing posts.
    client_secret: str | None = None  # Reddit API client secret.
    user_agent: str | None = None  # Reddit API user agent string.


@dataclasses.dataclass
class RedditBuildReport:
    posts_listed: int = 0
    posts_written: int = 0
    comments_written: int = 0
    posts_fetched: int = 0
    missing_posts: list[str] = dataclasses.field(default_factory=list)
    bad_posts: dict[str, str] = dataclasses.field(default_factory=dict)  # id -> why skipped
    orphan_comments: int = 0  # comments whose parent is not in the post (kept at depth 0)

    def summary(self) -> str:
        lines = [
            f"posts listed: {self.posts_listed}, written: {self.posts_written} "
            f"({self.comments_written} comments), fetched: {self.posts_fetched}, missing: "
            f"{len(self.missing_posts)}, malformed: {len(self.bad_posts)}, orphan comments: "
            f"{self.orphan_comments}"
        ]
        lines += [f"  {k}: {v}" for k, v in sorted(self.bad_posts.items())]
        return "\n".join(lines)


def _bare_id(reddit_id: str | None) -> str:
    """'t1_abc' / 't3_abc' (API fullnames) -> 'abc'."""
    reddit_id = str(reddit_id or "")
    return reddit_id.split("_", 1)[1] if reddit_id[:3] in ("t1_", "t3_") else reddit_id


def thread_comments(post_id: str, comments: list[dict]) -> tuple[list[dict], int]:
    """Order comments depth-first by thread; returns (comments with depth/parent_index, orphans).

    Siblings keep their input order. A comment whose parent is neither the post nor another
    comment of the post is an orphan: kept as a top-level comment and counted.
    """
    by_id = {_bare_id(c.get("id")): c for c in comments}
    children: dict[str, list[dict]] = {}
    roots, orphans = [], 0
    for c in comments:
        parent = _bare_id(c.get("parent_id"))
        if parent in by_id and parent != _bare_id(c.get("id")):
            children.setdefault(parent, []).append(c)
        else:
            orphans += parent not in ("", _bare_id(post_id))
            roots.append(c)
    ordered: list[dict] = []
    stack = [(c, 0, -1) for c in reversed(roots)]
    seen = set()
    while stack:
        comment, depth, parent_index = stack.pop()
        cid = _bare_id(comment.get("id"))
        if cid in seen:  # a cycle in malformed data
            continue
        seen.add(cid)
        index = len(ordered)
        ordered.append(
            {
                "id": cid,
                "parent_id": _bare_id(comment.get("parent_id")),
                "parent_index": np.int32(parent_index),
                "depth": np.int32(depth),
                "content": str(comment.get("content", comment.get("body", "")) or ""),
            }
        )
        for child in reversed(children.get(cid, [])):
            stack.append((child, depth + 1, index))
    return ordered, orphans


def post_example(post: dict, listed_type: str, report: RedditBuildReport) -> dict:
    if not isinstance(post, dict) or "id" not in post:
        raise ValueError("post JSON must be an object with an 'id'")
    comments = post.get("comments") or []
    if not isinstance(comments, list):
        raise ValueError("'comments' must be a list of {id, parent_id, content}")
    ordered, orphans = thread_comments(str(post["id"]), comments[:MAX_COMMENTS])
    report.orphan_comments += orphans
    return {
        "id": str(post["id"]),
        "title": str(post.get("title", "") or ""),
        "link": str(post.get("link", post.get("url", "")) or ""),
        "type": str(post.get("type", listed_type) or listed_type),
        "content": str(post.get("content", "") or ""),
        "score": np.int32(post.get("score") or 0),
        "num_comments": np.int32(post.get("num_comments") or len(comments)),
        "created_utc": np.int64(round(float(post.get("created_utc") or 0))),  # whole seconds
        "comments": ordered,
    }


def reddit_features() -> tfds.features.FeaturesDict:
    text = tfds.features.Text
    return tfds.features.FeaturesDict(
        {
            "id": text(),
            "title": text(),
            "link": text(),
            "type": text(),
            "content": text(),
            "score": tfds.features.Scalar(np.int32),
            "num_comments": tfds.features.Scalar(np.int32),
            "created_utc": tfds.features.Scalar(np.int64),  # float64 would be stored as float32
            "comments": tfds.features.Sequence(
                {
                    "id": text(),
                    "parent_id": text(),
                    "parent_index": tfds.features.Scalar(np.int32),
                    "depth": tfds.features.Scalar(np.int32),
                    "content": text(),
                }
            ),
        }
    )


def load_post_list(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            posts = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read {path}: {e}") from e
    if not isinstance(posts, list) or not all(isinstance(p, dict) and "id" in p for p in posts):
        raise ValueError(f"{path}: expected MineDojo's reddit.json, a list of {{'id', 'type'}}")
    return posts


def fetch_missing_posts(config: RedditBuildConfig, ids: list[str], report: RedditBuildReport):
    """Download posts absent from --contents through the official Reddit API (PRAW)."""
    try:
        import praw
    except ImportError as e:
        raise ImportError("fetching posts needs PRAW: pip install praw") from e
    reddit = praw.Reddit(
        client_id=config.client_id,
        client_secret=config.client_secret,
        user_agent=config.user_agent,
    )
    for post_id in ids:
        path = os.path.join(config.contents, f"{post_id}.json")
        if os.path.exists(path):
            continue
        submission = reddit.submission(id=post_id)
        submission.comments.replace_more(limit=0)
        post = {
            "id": post_id,
            "title": submission.title,
            "link": submission.url,
            "score": submission.score,
            "num_comments": submission.num_comments,
            "created_utc": submission.created_utc,
            "content": submission.selftext,
            "comments": [
                {"id": c.id, "parent_id": c.parent_id, "content": c.body}
                for c in submission.comments.list()[:MAX_COMMENTS]
            ],
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(post, f)
        report.posts_fetched += 1


class MinedojoReddit(tfds_io.LocalBuilder, skip_registration=True):
    """MineDojo r/Minecraft posts with threaded comments."""

    VERSION = tfds.core.Version("1.0.0")

    def __init__(self, *, build_config: RedditBuildConfig, report: RedditBuildReport, **kwargs):
        self._build_config = build_config
        self._report = report
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self, description=self.__doc__, features=reddit_features()
        )

    def _split_generators(self, dl_manager):
        posts = load_post_list(self._build_config.posts)[: self._build_config.max_posts]
        self._report.posts_listed = len(posts)
        return {"train": self._generate_examples(posts)}

    def _generate_examples(self, posts):
        seen = set()
        for listed in posts:
            post_id = str(listed["id"])
            if post_id in seen:
                continue
            seen.add(post_id)
            path = os.path.join(self._build_config.contents, f"{post_id}.json")
            if not os.path.isfile(path):
                self._report.missing_posts.append(post_id)
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    example = post_example(json.load(f), str(listed.get("type", "")), self._report)
            except (OSError, ValueError, TypeError, UnicodeDecodeError) as e:
                self._report.bad_posts[post_id] = str(e)
                continue
            self._report.posts_written += 1
            self._report.comments_written += len(example["comments"])
            yield post_id, example
        if self._report.posts_written == 0:  # TFDS cannot write an empty split
            raise RuntimeError(f"no readable post in --contents:\n{self._report.summary()}")


def build(config: RedditBuildConfig) -> RedditBuildReport:
    if not os.path.isdir(config.contents):
        raise NotADirectoryError(f"--contents {config.contents} is not a directory")
    posts = load_post_list(config.posts)[: config.max_posts]
    credentials = (config.client_id, config.client_secret, config.user_agent)
    if any(credentials) and not all(credentials):
        raise ValueError("pass all of --client-id, --client-secret and --user-agent, or none")
    report = RedditBuildReport()
    if all(credentials):
        fetch_missing_posts(config, [str(p["id"]) for p in posts], report)
    tfds_io.build_into(
        lambda data_dir: MinedojoReddit(build_config=config, report=report, data_dir=data_dir),
        config.out,
        overwrite=config.overwrite,
    )
    with open(os.path.join(config.out, "build_report.json"), "w") as f:
        json.dump(dataclasses.asdict(report), f, indent=1)
    return report


def main(config: RedditBuildConfig) -> None:
    report = build(config)
    print(report.summary())
    print(f"wrote {config.out}")


if __name__ == "__main__":
    main(tyro.cli(RedditBuildConfig))
