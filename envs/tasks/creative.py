"""MineDojo's description files: the 1,560 Creative tasks and the guidance texts.

These files are MineDojo's data (MIT licence) and are not shipped with this project. They are found,
in this order, at:

1. an explicit ``path`` argument (the file itself or the directory holding it);
2. the directory named by the environment variable ``MINEDOJO_TASKS_DIR``;
3. ``minedojo/tasks/description_files/`` of an installed ``minedojo`` package (located without
   importing it: importing ``minedojo`` starts network calls).

``creative_tasks.yaml`` maps ``"creative:<i>"`` to ``{collection, prompt, guidance, source}``;
``programmatic_tasks.yaml`` and ``playthrough_task.yaml`` give the guidance of the other tasks.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml

TASKS_DIR_ENV = "MINEDOJO_TASKS_DIR"
CREATIVE_FILE = "creative_tasks.yaml"
PROGRAMMATIC_FILE = "programmatic_tasks.yaml"
PLAYTHROUGH_FILE = "playthrough_task.yaml"
NUM_CREATIVE = 1560
CREATIVE_PREFIX = "creative:"

Collection = Literal["youtube", "gpt3", "manual"]


class DescriptionFileNotFound(FileNotFoundError):
    """A MineDojo description file is needed and none of the known places has it."""


@dataclasses.dataclass(frozen=True)
class YouTubeSource:
    """The video segment a YouTube-collected Creative task was written from (seconds)."""

    youtube_id: str
    start: float
    end: float


@dataclasses.dataclass(frozen=True)
class CreativeTask:
    """One Creative task as MineDojo describes it."""

    id: str  # "creative:<index>"
    index: int
    collection: Collection
    prompt: str
    guidance: str  # "" where MineDojo has none (1,049 tasks)
    source: YouTubeSource | None


def _installed_minedojo_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("minedojo")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root) / "tasks" / "description_files"
        if candidate.is_dir():
            return candidate
    return None


def find_description_file(name: str, path: str | os.PathLike | None = None) -> Path:
    """Locate MineDojo description file ``name`` (see the module docstring for the search order)."""
    tried: list[str] = []
    candidates: list[tuple[str, Path]] = []
    if path is not None:
        given = Path(path).expanduser()
        candidates.append(
            ("path argument", given if given.suffix in (".yaml", ".yml") else given / name)
        )
    env_dir = os.environ.get(TASKS_DIR_ENV)
    if env_dir:
        candidates.append((f"${TASKS_DIR_ENV}", Path(env_dir).expanduser() / name))
    installed = _installed_minedojo_dir()
    if installed is not None:
        candidates.append(("installed minedojo package", installed / name))
    for where, candidate in candidates:
        if candidate.is_file():
            return candidate
        tried.append(f"{where}: {candidate}")
    # An explicit path that does not exist is the user's mistake: say so rather than fall through.
    if path is not None:
        raise DescriptionFileNotFound(f"{name} not found at the given path {candidates[0][1]}")
    raise DescriptionFileNotFound(
        f"MineDojo's {name} is needed but was not found"
        + (f" (looked at: {'; '.join(tried)})" if tried else "")
        + f". It is MineDojo data, not shipped with this project. Fix: pass its path, set {TASKS_DIR_ENV}"
        " to the directory holding MineDojo's description files (minedojo/tasks/description_files/"
        " in github.com/MineDojo/MineDojo), or `pip install minedojo`."
    )


@functools.cache
def _load_yaml(resolved: Path) -> Mapping:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(resolved, encoding="utf-8") as f:
        data = yaml.load(f, Loader=loader)
    if not isinstance(data, dict):
        raise ValueError(
            f"{resolved} is not a MineDojo description file: expected a mapping at the top level"
        )
    return data


def _source(raw: object, task_id: str) -> YouTubeSource | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not {"youtube_id", "start", "end"} <= raw.keys():
        raise ValueError(
            f"{task_id}: source must be null or {{youtube_id, start, end}}, got {raw!r}"
        )
    return YouTubeSource(str(raw["youtube_id"]), float(raw["start"]), float(raw["end"]))


@functools.cache
def _creative_tasks(resolved: Path) -> tuple[CreativeTask, ...]:
    raw = _load_yaml(resolved)
    tasks = []
    for key, entry in raw.items():
        if not (
            isinstance(key, str)
            and key.startswith(CREATIVE_PREFIX)
            and key[len(CREATIVE_PREFIX) :].isdigit()
        ):
            raise ValueError(
                f"{resolved}: unexpected key {key!r}; Creative task ids look like 'creative:12'"
            )
        index = int(key[len(CREATIVE_PREFIX) :])
        tasks.append(
            CreativeTask(
                id=key,
                index=index,
                collection=entry["collection"],
                prompt=entry["prompt"],
                guidance=entry.get("guidance") or "",
                source=_source(entry.get("source"), key),
            )
        )
    tasks.sort(key=lambda t: t.index)
    if [t.index for t in tasks] != list(range(len(tasks))):
        raise ValueError(
            f"{resolved}: Creative task indices are not 0..{len(tasks) - 1} without gaps"
        )
    return tuple(tasks)


def load_creative_tasks(path: str | os.PathLike | None = None) -> tuple[CreativeTask, ...]:
    """All Creative tasks, indexed by position (``result[i].id == f"creative:{i}"``)."""
    return _creative_tasks(find_description_file(CREATIVE_FILE, path).resolve())


def creative_task(task_id: str, path: str | os.PathLike | None = None) -> CreativeTask:
    """One Creative task by id, e.g. ``"creative:12"``."""
    suffix = task_id[len(CREATIVE_PREFIX) :] if task_id.startswith(CREATIVE_PREFIX) else ""
    if not suffix.isdigit():
        raise KeyError(
            f"{task_id!r} is not a Creative task id; they look like 'creative:0' .. 'creative:1559'"
        )
    tasks = load_creative_tasks(path)
    index = int(suffix)
    if index >= len(tasks):
        raise KeyError(
            f"{task_id!r}: there are {len(tasks)} Creative tasks, 'creative:0' .. 'creative:{len(tasks) - 1}'"
        )
    return tasks[index]


def load_guidance(path: str | os.PathLike | None = None) -> Mapping[str, str]:
    """Guidance text of the programmatic tasks and ``playthrough`` by id ({} when the files are absent).

    Guidance is optional context (the paper's agents never read it), so its absence is not an error.
    """
    out: dict[str, str] = {}
    for name in (PROGRAMMATIC_FILE, PLAYTHROUGH_FILE):
        try:
            resolved = find_description_file(name, path).resolve()
        except DescriptionFileNotFound:
            continue
        for task_id, entry in _load_yaml(resolved).items():
            out[str(task_id)] = (entry or {}).get("guidance") or ""
    return out
