import io
import json
import math
import os

import numpy as np
import pytest
from PIL import Image

from data import reddit, wiki
from data.tfds_io import load_split


def _png(path, size=(12, 8), color=(255, 0, 0, 128), mode="RGBA"):
    Image.new(mode, size, color[: len(mode)]).save(path)


@pytest.fixture(scope="module")
def wiki_dump(tmp_path_factory):
    root = tmp_path_factory.mktemp("wiki")
    cow = root / "pages" / "Cow"
    os.makedirs(cow)
    _png(cow / "screenshot.png", size=(40, 90), mode="RGB", color=(10, 20, 30))
    _png(cow / "cow.png")  # half-transparent red -> composited on white
    (cow / "broken.gif").write_bytes(b"GIF89a not really")
    data = {
        "metadata": {"title": "Cow", "url": "https://minecraft.wiki/w/Cow"},
        "texts": [
            {"text": "Cows are passive mobs.", "tag": "p", "bbox": [1, 2, 30, 4]},
            "A bare string paragraph",
            {"content": "   "},
        ],
        "tables": [
            {
                "headers": [{"text": "Drop", "rect": {"x": 0, "y": 50, "width": 10, "height": 2}}],
                "cells": [[{"text": "Leather", "bbox": [0, 52, 10, 2]}, "0-2"]],
            },
            [["Raw Beef", "1-3"]],
        ],
        "images": [
            {
                "path": "cow.png",
                "caption": "A cow",
                "bbox": {"left": 5, "top": 6, "right": 17, "bottom": 14},
            },
            {"path": "broken.gif"},
            {"path": "missing.png"},
        ],
        "sprites": [
            {"name": "Leather", "location": {"x": 3, "y": 4}, "size": {"width": 16, "height": 16}}
        ],
    }
    (cow / "data.json").write_text(json.dumps(data))
    pig = root / "pages" / "nested" / "Pig"
    os.makedirs(pig)
    (pig / "data.json").write_text(json.dumps({"metadata": {"title": "Pig"}, "texts": ["Oink"]}))
    bad = root / "pages" / "Bad"
    os.makedirs(bad)
    (bad / "data.json").write_text("{truncated")
    return str(root / "pages")


def test_wiki_build(wiki_dump, tmp_path):
    out = str(tmp_path / "wiki_ds")
    report = wiki.build(wiki.WikiBuildConfig(pages=wiki_dump, out=out))
    assert (report.pages_found, report.pages_written) == (3, 2)
    assert list(report.bad_pages) == ["Bad"]
    assert report.missing_screenshots == ["nested/Pig"]
    assert sorted(report.bad_images) == ["Cow/broken.gif", "Cow/missing.png"]
    source = load_split(out, "train")
    pages = {source[i]["page_id"].decode(): source[i] for i in range(len(source))}
    cow = pages["Cow"]
    assert cow["title"] == b"Cow" and json.loads(cow["metadata_json"])["url"].endswith("/Cow")
    shot = np.asarray(Image.open(io.BytesIO(cow["screenshot"])))
    assert shot.shape == (90, 40, 3) and tuple(shot[0, 0]) == (10, 20, 30)
    assert [t.decode() for t in cow["texts"]["text"]] == [
        "Cows are passive mobs.",
        "A bare string paragraph",
    ]
    np.testing.assert_array_equal(cow["texts"]["bbox"][0], [1, 2, 30, 4])
    assert all(math.isnan(v) for v in cow["texts"]["bbox"][1])
    cells = cow["table_cells"]
    assert [c.decode() for c in cells["text"]] == ["Drop", "Leather", "0-2", "Raw Beef", "1-3"]
    assert list(cells["is_header"]) == [True, False, False, False, False]
    assert list(cells["table"]) == [0, 0, 0, 1, 1] and list(cells["row"]) == [-1, 0, 0, 0, 0]
    np.testing.assert_array_equal(cells["bbox"][0], [0, 50, 10, 2])
    (image,) = cow["images"]["image"]
    rgb = np.asarray(Image.open(io.BytesIO(image)))
    assert rgb.shape == (8, 12, 3) and tuple(rgb[0, 0]) == (255, 127, 127)  # red over white
    np.testing.assert_array_equal(cow["images"]["bbox"][0], [5, 6, 12, 8])
    np.testing.assert_array_equal(cow["sprites"]["bbox"][0], [3, 4, 16, 16])
    assert (
        pages["nested/Pig"]["screenshot"] == b""
        and len(pages["nested/Pig"]["images"]["image"]) == 0
    )


def test_wiki_input_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="data.json"):
        wiki.build(wiki.WikiBuildConfig(pages=str(tmp_path), out=str(tmp_path / "o")))


def _comment(cid, parent, text):
    return {"id": cid, "parent_id": parent, "content": text}


def test_comment_threading():
    comments = [
        _comment("c1", "t3_p", "first"),
        _comment("c2", "t1_c1", "reply to first"),
        _comment("c3", "t3_p", "second"),
        _comment("c4", "t1_c2", "deep reply"),
        _comment("c5", "t1_gone", "orphan"),
        _comment("c6", "t1_c1", "another reply to first"),
    ]
    ordered, orphans = reddit.thread_comments("p", comments)
    assert [c["id"] for c in ordered] == ["c1", "c2", "c4", "c6", "c3", "c5"]
    assert [int(c["depth"]) for c in ordered] == [0, 1, 2, 1, 0, 0]
    assert [int(c["parent_index"]) for c in ordered] == [-1, 0, 1, 0, -1, -1]
    assert orphans == 1


def test_reddit_build_offline(tmp_path, capsys):
    contents = tmp_path / "posts"
    contents.mkdir()
    listing = [
        {"id": "p1", "type": "text"},
        {"id": "p2", "type": "image"},
        {"id": "gone", "type": "text"},
        {"id": "bad", "type": "link"},
    ]
    (tmp_path / "reddit.json").write_text(json.dumps(listing))
    (contents / "p1.json").write_text(
        json.dumps(
            {
                "id": "p1",
                "title": "How do I find diamonds?",
                "link": "https://reddit.com/r/Minecraft/p1",
                "score": 42,
                "num_comments": 2,
                "created_utc": 1600000000.0,
                "type": "text",
                "content": "Been digging for hours",
                "comments": [
                    _comment("a", "t3_p1", "go to y=-58"),
                    _comment("b", "t1_a", "thanks!"),
                ],
            }
        )
    )
    (contents / "p2.json").write_text(
        json.dumps({"id": "p2", "title": "My castle", "comments": []})
    )
    (contents / "bad.json").write_text(json.dumps({"id": "bad", "comments": "not a list"}))
    out = str(tmp_path / "reddit_ds")
    reddit.main(
        reddit.RedditBuildConfig(
            posts=str(tmp_path / "reddit.json"), contents=str(contents), out=out
        )
    )
    assert "written: 2 (2 comments)" in capsys.readouterr().out
    report = json.load(open(os.path.join(out, "build_report.json")))
    assert report["missing_posts"] == ["gone"] and list(report["bad_posts"]) == ["bad"]
    assert report["posts_fetched"] == 0  # no credentials: no network
    source = load_split(out, "train")
    posts = {source[i]["id"].decode(): source[i] for i in range(len(source))}
    p1 = posts["p1"]
    assert p1["score"] == 42 and p1["created_utc"] == 1600000000
    assert [c.decode() for c in p1["comments"]["content"]] == ["go to y=-58", "thanks!"]
    assert list(p1["comments"]["parent_index"]) == [-1, 0]
    assert posts["p2"]["type"] == b"image"  # from the listing when the post lacks it


def test_reddit_without_any_post_content_is_a_clear_error(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps([{"id": "p1", "type": "text"}]))
    cfg = reddit.RedditBuildConfig(posts=str(tmp_path / "r.json"), contents=str(tmp_path),
                                   out=str(tmp_path / "o"))  # fmt: skip
    with pytest.raises(RuntimeError, match="missing: 1"):
        reddit.build(cfg)


def test_reddit_partial_credentials_are_refused(tmp_path):
    (tmp_path / "r.json").write_text("[]")
    cfg = reddit.RedditBuildConfig(
        posts=str(tmp_path / "r.json"),
        contents=str(tmp_path),
        out=str(tmp_path / "o"),
        client_id="x",
    )
    with pytest.raises(ValueError, match="--client-secret"):
        reddit.build(cfg)
