"""TFDS builder: the MineDojo Wiki dump -> one example per page.

    python -m data.wiki --pages ~/.minedojo/wiki_full --out ~/datasets/mc_wiki

Input layout (MineDojo's `wiki_full.zip`/`wiki_samples.zip`, extracted): one folder per page,
anywhere below `--pages`, each with `data.json` (`metadata`, `texts`, `tables`, `images`,
`sprites`), `screenshot.png` and the page's image files (`images[*].path`, relative to the page
folder). The per-element layout inside data.json is not documented, so elements are read
leniently: a text is a string or `{text|content, tag?, bbox?}`; a table has `headers`/`cells`
(cells as strings, dicts or rows of them) or is a list of rows; an image is `{path, caption?,
bbox?}`; a sprite is `{text|name|path, bbox?}`. Bounding boxes are accepted as `[x, y, w, h]`,
`{x, y, width, height}`, `{left, top, right, bottom}` or Selenium's `{location, size}`, and
stored as float32 `[x, y, width, height]` (NaN when a page gives none).

Images are stored as RGB PNG bytes with transparency composited on white, as MineDojo's loader
does (first frame of animations). Unreadable pages or images are counted in the build report.
"""

from __future__ import annotations

import dataclasses
import glob
import io
import json
import math
import os

import numpy as np
import tensorflow_datasets as tfds
import tyro
from PIL import Image, UnidentifiedImageError

from data import tfds_io

NO_BBOX = (math.nan,) * 4


@dataclasses.dataclass(frozen=True)
class WikiBuildConfig:
    """Build the Wiki dataset. Run: python -m data.wiki --pages DIR --out DIR"""

    pages: str  # root of the extracted Wiki dump (folders with data.json + screenshot.png).
    out: str  # output TFDS dataset directory (must be new or empty unless --overwrite).
    overwrite: bool = False  # replace a non-empty --out directory.
    max_pages: int | None = None  # only the first N pages in sorted order (quick builds).


@dataclasses.dataclass
class WikiBuildReport:
    pages_found: int = 0
    pages_written: int = 0
    bad_pages: dict[str, str] = dataclasses.field(default_factory=dict)  # page -> why skipped
    missing_screenshots: list[str] = dataclasses.field(default_factory=list)
    bad_images: dict[str, str] = dataclasses.field(default_factory=dict)  # image path -> why

    def summary(self) -> str:
        lines = [
            f"pages found: {self.pages_found}, written: {self.pages_written}, skipped: "
            f"{len(self.bad_pages)}, missing screenshots: {len(self.missing_screenshots)}, "
            f"unreadable images: {len(self.bad_images)}"
        ]
        lines += [f"  {k}: {v}" for k, v in sorted({**self.bad_pages, **self.bad_images}.items())]
        return "\n".join(lines)


def parse_bbox(element) -> tuple[float, float, float, float]:
    """`[x, y, width, height]` from the bounding-box spellings in the module docstring."""
    if not isinstance(element, dict):
        return NO_BBOX
    box = next(
        (element[k] for k in ("bbox", "bounding_box", "box", "rect") if k in element), element
    )
    if isinstance(box, list | tuple) and len(box) == 4:
        return tuple(float(v) for v in box)
    if isinstance(box, dict):
        if {"location", "size"} <= box.keys():
            box = {**box["location"], **box["size"]}
        if {"x", "y", "width", "height"} <= box.keys():
            return tuple(float(box[k]) for k in ("x", "y", "width", "height"))
        if {"left", "top", "right", "bottom"} <= box.keys():
            left, top = float(box["left"]), float(box["top"])
            return (left, top, float(box["right"]) - left, float(box["bottom"]) - top)
    return NO_BBOX


def _text_of(element, keys=("text", "content", "name", "title")) -> str:
    if isinstance(element, str):
        return element
    if isinstance(element, dict):
        for k in keys:
            if isinstance(element.get(k), str):
                return element[k]
    return ""


def parse_texts(texts) -> list[dict]:
    out = []
    for element in texts or []:
        text = _text_of(element)
        if text.strip():
            tag = element.get("tag", element.get("type", "")) if isinstance(element, dict) else ""
            out.append({"text": text, "tag": str(tag), "bbox": np.float32(parse_bbox(element))})
    return out


def parse_tables(tables) -> list[dict]:
    """Flatten tables into cells `{table, row, text, is_header, bbox}` (row -1 = header row)."""
    cells = []
    for t_index, table in enumerate(tables or []):
        if isinstance(table, dict):
            headers = table.get("headers", table.get("header", []))
            body = table.get("cells", table.get("rows", []))
        else:
            headers, body = [], table
        for cell in headers or []:
            cells.append((t_index, -1, cell, True))
        for r_index, row in enumerate(body or []):
            for cell in row if isinstance(row, list) else [row]:
                cells.append((t_index, r_index, cell, False))
    return [
        {
            "table": np.int32(t),
            "row": np.int32(r),
            "text": _text_of(cell),
            "is_header": bool(header or (isinstance(cell, dict) and cell.get("is_header"))),
            "bbox": np.float32(parse_bbox(cell)),
        }
        for t, r, cell, header in cells
    ]


def to_rgb_png(path: str) -> tuple[bytes, int, int]:
    """Any PIL-readable image -> RGB PNG bytes (transparency on white, first animation frame)."""
    with Image.open(path) as image:
        image.load()
        if image.mode in ("RGBA", "LA", "P"):
            rgba = image.convert("RGBA")
            background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            image = Image.alpha_composite(background, rgba)
        rgb = image.convert("RGB")
    buffer = io.BytesIO()
    rgb.save(buffer, format="PNG")
    return buffer.getvalue(), rgb.height, rgb.width


def page_example(page_dir: str, report: WikiBuildReport, page_id: str) -> dict:
    with open(os.path.join(page_dir, "data.json"), encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError("data.json must be an object with metadata/texts/tables/images/sprites")
    metadata = data.get("metadata") or {}
    screenshot_path = os.path.join(page_dir, "screenshot.png")
    screenshot, shot_h, shot_w = b"", 0, 0
    if os.path.isfile(screenshot_path):
        try:
            screenshot, shot_h, shot_w = to_rgb_png(screenshot_path)
        except (OSError, UnidentifiedImageError) as e:
            report.bad_images[f"{page_id}/screenshot.png"] = str(e)
    else:
        report.missing_screenshots.append(page_id)
    images = []
    for element in data.get("images") or []:
        rel = element.get("path", "") if isinstance(element, dict) else str(element)
        try:
            png, h, w = to_rgb_png(os.path.join(page_dir, rel))
        except (OSError, UnidentifiedImageError) as e:
            report.bad_images[f"{page_id}/{rel}"] = f"unreadable image: {e}"
            continue
        caption = _text_of(element, ("caption", "alt", "title", "text"))
        images.append(
            {
                "path": rel,
                "caption": caption,
                "image": png,
                "height": np.int32(h),
                "width": np.int32(w),
                "bbox": np.float32(parse_bbox(element)),
            }
        )
    sprites = [
        {"text": _text_of(s, ("text", "name", "title", "path")), "bbox": np.float32(parse_bbox(s))}
        for s in data.get("sprites") or []
    ]
    return {
        "page_id": page_id,
        "title": str(metadata.get("title", os.path.basename(page_dir))),
        "url": str(metadata.get("url", metadata.get("link", ""))),
        "metadata_json": json.dumps(metadata, sort_keys=True),
        "screenshot": screenshot,
        "screenshot_height": np.int32(shot_h),
        "screenshot_width": np.int32(shot_w),
        "texts": parse_texts(data.get("texts")),
        "table_cells": parse_tables(data.get("tables")),
        "images": images,
        "sprites": sprites,
    }


def _bbox_feature():
    return tfds.features.Tensor(shape=(4,), dtype=np.float32)


def wiki_features() -> tfds.features.FeaturesDict:
    text, png = tfds.features.Text, lambda: tfds.features.Tensor(shape=(), dtype=np.object_)
    return tfds.features.FeaturesDict(
        {
            "page_id": text(),
            "title": text(),
            "url": text(),
            "metadata_json": text(),
            "screenshot": png(),
            "screenshot_height": tfds.features.Scalar(np.int32),
            "screenshot_width": tfds.features.Scalar(np.int32),
            "texts": tfds.features.Sequence(
                {"text": text(), "tag": text(), "bbox": _bbox_feature()}
            ),
            "table_cells": tfds.features.Sequence(
                {
                    "table": tfds.features.Scalar(np.int32),
                    "row": tfds.features.Scalar(np.int32),
                    "text": text(),
                    "is_header": tfds.features.Scalar(np.bool_),
                    "bbox": _bbox_feature(),
                }
            ),
            "images": tfds.features.Sequence(
                {
                    "path": text(),
                    "caption": text(),
                    "image": png(),
                    "height": tfds.features.Scalar(np.int32),
                    "width": tfds.features.Scalar(np.int32),
                    "bbox": _bbox_feature(),
                }
            ),
            "sprites": tfds.features.Sequence({"text": text(), "bbox": _bbox_feature()}),
        }
    )


def find_pages(root: str) -> list[str]:
    """Page folders (those holding a data.json) below `root`, sorted."""
    return sorted(
        os.path.dirname(p) for p in glob.glob(os.path.join(root, "**", "data.json"), recursive=True)
    )


class MinedojoWiki(tfds_io.LocalBuilder, skip_registration=True):
    """MineDojo Wiki pages: text, tables, images, sprites with bounding boxes, and screenshots."""

    VERSION = tfds.core.Version("1.0.0")

    def __init__(self, *, build_config: WikiBuildConfig, report: WikiBuildReport, **kwargs):
        self._build_config = build_config
        self._report = report
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self, description=self.__doc__, features=wiki_features()
        )

    def _split_generators(self, dl_manager):
        pages = find_pages(self._build_config.pages)[: self._build_config.max_pages]
        self._report.pages_found = len(pages)
        return {"train": self._generate_examples(pages)}

    def _generate_examples(self, pages):
        root = self._build_config.pages
        for page_dir in pages:
            page_id = os.path.relpath(page_dir, root)
            try:
                example = page_example(page_dir, self._report, page_id)
            except (
                OSError,
                ValueError,
                UnicodeDecodeError,
            ) as e:  # JSONDecodeError is a ValueError
                self._report.bad_pages[page_id] = f"unreadable data.json: {e}"
                continue
            self._report.pages_written += 1
            yield page_id, example
        if self._report.pages_written == 0:  # TFDS cannot write an empty split
            raise RuntimeError(f"no readable Wiki page:\n{self._report.summary()}")


def build(config: WikiBuildConfig) -> WikiBuildReport:
    if not os.path.isdir(config.pages):
        raise NotADirectoryError(f"--pages {config.pages} is not a directory")
    if not find_pages(config.pages):
        raise FileNotFoundError(
            f"no data.json below {config.pages}; point --pages at the extracted Wiki dump"
        )
    report = WikiBuildReport()
    tfds_io.build_into(
        lambda data_dir: MinedojoWiki(build_config=config, report=report, data_dir=data_dir),
        config.out,
        overwrite=config.overwrite,
    )
    with open(os.path.join(config.out, "build_report.json"), "w") as f:
        json.dump(dataclasses.asdict(report), f, indent=1)
    return report


def main(config: WikiBuildConfig) -> None:
    report = build(config)
    print(report.summary())
    print(f"wrote {config.out}")


if __name__ == "__main__":
    main(tyro.cli(WikiBuildConfig))
