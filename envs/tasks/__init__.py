"""MineDojo's tasks: the paper's 12 experiment tasks, the 1,581 programmatic tasks, Playthrough and
the 1,560 Creative tasks, all as ``TaskSpec`` objects with backend-neutral reward and success.

    from envs import tasks
    spec = tasks.get("harvest_1_log")            # a catalogue id
    spec = tasks.get("obtain log")               # or its prompt
    spec = tasks.get("creative:12")              # needs MineDojo's creative_tasks.yaml (see creative.py)
    tasks.list_tasks("combat", backend="voxel")  # ids, filtered
    tasks.backends_for(spec)                     # ("minedojo", "voxel") or ("minedojo",)

Guidance texts and Creative tasks are MineDojo data this project does not ship; they are read from
``$MINEDOJO_TASKS_DIR`` or an installed ``minedojo`` package when present (guidance is "" otherwise).
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Mapping

from envs.tasks.catalogue import CATEGORY_COUNTS, expanded_tasks, kill_stat_name, programmatic_spec
from envs.tasks.creative import (
    CREATIVE_PREFIX,
    TASKS_DIR_ENV,
    CreativeTask,
    DescriptionFileNotFound,
    creative_task,
    load_creative_tasks,
    load_guidance,
)
from envs.tasks.playthrough import PLAYTHROUGH_ID, playthrough_spec
from envs.tasks.spec import (
    CATEGORIES,
    Category,
    InventoryItem,
    SuccessCriterion,
    TaskParams,
    TaskSignals,
    TaskSpec,
    default_success,
    dense_reward,
    stack_params,
    task_reward,
    task_success,
    update_best_distance,
)
from envs.tasks.suite import STARTER_SUITE, SUITE, starter_suite

BACKENDS: tuple[str, ...] = ("minedojo", "voxel")


class UnknownTaskError(KeyError):
    """A task id or prompt that names no task; the message suggests the closest ones."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


def __getattr__(name: str):
    # PAPER_TASKS is imported on first use so that `import envs.tasks.spec` stays light and the
    # paper module may itself import from this package.
    if name == "PAPER_TASKS":
        from envs.tasks.paper import PAPER_TASKS

        return PAPER_TASKS
    raise AttributeError(f"module 'envs.tasks' has no attribute {name!r}")


@functools.cache
def _paper_tasks() -> Mapping[str, TaskSpec]:
    from envs.tasks.paper import PAPER_TASKS

    if isinstance(PAPER_TASKS, Mapping):
        return dict(PAPER_TASKS)
    return {spec.id: spec for spec in PAPER_TASKS}


@functools.cache
def _guidance(tasks_dir: str | None) -> Mapping[str, str]:
    return load_guidance(tasks_dir)


def paper_task_ids() -> tuple[str, ...]:
    """Ids of the paper's 12 experiment tasks (``PAPER_TASKS``)."""
    return tuple(_paper_tasks())


def _catalogue_spec(task_id: str) -> TaskSpec:
    guidance = _guidance(os.environ.get(TASKS_DIR_ENV)).get(task_id, "")
    if task_id == PLAYTHROUGH_ID:
        return playthrough_spec(guidance)
    return programmatic_spec(task_id, guidance)


def creative_spec(task: CreativeTask) -> TaskSpec:
    """A Creative task as a ``TaskSpec``: no programmatic success (MineCLIP judges it)."""
    return TaskSpec(
        id=task.id,
        category="creative",
        prompt=task.prompt,
        guidance=task.guidance,
        success=SuccessCriterion("never"),
    )


@functools.cache
def _prompt_index() -> Mapping[str, str]:
    """Normalised prompt -> id, for paper and catalogue tasks (all prompts are unique)."""
    index = {}
    for task_id, task in expanded_tasks().items():
        index[_normalise_prompt(task.prompt)] = task_id
    for task_id, spec in _paper_tasks().items():
        index[_normalise_prompt(spec.prompt)] = task_id  # the paper's own tasks win a tie
    return index


def _normalise_prompt(text: str) -> str:
    return " ".join(text.lower().strip().rstrip(".").split())


def _suggest(query: str, n: int = 5) -> list[str]:
    ids = [*_paper_tasks(), *expanded_tasks()]
    close = difflib.get_close_matches(query, ids, n=n, cutoff=0.5)
    if len(close) < n:
        by_prompt = difflib.get_close_matches(
            _normalise_prompt(query), list(_prompt_index()), n=n, cutoff=0.6
        )
        close += [_prompt_index()[p] for p in by_prompt if _prompt_index()[p] not in close]
    if not close:  # fall back to ids sharing the query's leading words
        stem = query.split("_")[0]
        close = [task_id for task_id in ids if task_id.startswith(stem)][:n]
    return close[:n]


def get(
    task_id_or_prompt: str | TaskSpec, *, creative_path: str | os.PathLike | None = None
) -> TaskSpec:
    """The project's one task lookup: the ``TaskSpec`` of a paper task (id or prompt), a catalogue
    id or prompt, ``"playthrough"`` or ``"creative:<i>"`` (``creative_path``: MineDojo's
    creative_tasks.yaml or its directory); a ``TaskSpec`` is returned as it is.

    Raises ``UnknownTaskError`` (a ``KeyError``) naming the closest ids for anything else.
    """
    if isinstance(task_id_or_prompt, TaskSpec):
        return task_id_or_prompt
    if not isinstance(task_id_or_prompt, str):
        raise TypeError(
            f"task must be a TaskSpec or a str id / prompt, got {type(task_id_or_prompt).__name__}"
        )
    query = task_id_or_prompt.strip()
    paper = _paper_tasks()
    if query in paper:
        return paper[query]
    if query.startswith(CREATIVE_PREFIX):
        return creative_spec(creative_task(query, creative_path))
    if query in expanded_tasks():
        return _catalogue_spec(query)
    if query.lower() == PLAYTHROUGH_ID:
        return _catalogue_spec(PLAYTHROUGH_ID)
    by_prompt = _prompt_index().get(_normalise_prompt(query))
    if by_prompt is not None:
        return get(by_prompt)
    suggestions = _suggest(query)
    hint = f" Closest: {', '.join(repr(s) for s in suggestions)}." if suggestions else ""
    raise UnknownTaskError(
        f"unknown task {query!r}: not a paper task, catalogue id, prompt, 'playthrough' or 'creative:<i>'."
        f"{hint} See envs.tasks.list_tasks() or docs/tasks.md."
    )


def backends_for(task: str | TaskSpec) -> tuple[str, ...]:
    """Backends that can run ``task``: MineDojo's simulator runs every task; the embedded voxel world
    runs those whose items, mobs and biomes it has (``envs.voxel.support.can_run``)."""
    spec = get(task)
    from envs.voxel.support import can_run  # lazy: the voxel package imports envs.tasks

    runnable, _reason = can_run(spec)
    return ("minedojo", "voxel") if runnable else ("minedojo",)


def list_tasks(
    category: str | None = None,
    backend: str | None = None,
    *,
    include_paper: bool = False,
    creative_path: str | os.PathLike | None = None,
) -> tuple[str, ...]:
    """Task ids, optionally of one ``category`` and runnable on one ``backend``.

    The catalogue (1,581 programmatic + ``playthrough``) always; the paper's 12 tasks with
    ``include_paper``; Creative ids when MineDojo's creative file is found (required, and an error
    if missing, when ``category="creative"``).
    """
    if category is not None and category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; use one of {CATEGORIES}")
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; use one of {BACKENDS}")
    ids: list[str] = []
    if include_paper:
        ids += [
            task_id for task_id, spec in _paper_tasks().items() if category in (None, spec.category)
        ]
    ids += [
        task_id for task_id, task in expanded_tasks().items() if category in (None, task.category)
    ]
    if category in (None, "creative"):
        try:
            ids += [t.id for t in load_creative_tasks(creative_path)]
        except DescriptionFileNotFound:
            if category == "creative":
                raise
    if backend == "voxel":
        ids = [
            task_id
            for task_id in ids
            if "voxel" in backends_for(get(task_id, creative_path=creative_path))
        ]
    return tuple(ids)


__all__ = [
    "BACKENDS",
    "CATEGORIES",
    "CATEGORY_COUNTS",
    "PAPER_TASKS",
    "PLAYTHROUGH_ID",
    "STARTER_SUITE",
    "SUITE",
    "TASKS_DIR_ENV",
    "Category",
    "CreativeTask",
    "DescriptionFileNotFound",
    "InventoryItem",
    "SuccessCriterion",
    "TaskParams",
    "TaskSignals",
    "TaskSpec",
    "UnknownTaskError",
    "backends_for",
    "creative_spec",
    "default_success",
    "dense_reward",
    "get",
    "kill_stat_name",
    "list_tasks",
    "load_creative_tasks",
    "paper_task_ids",
    "stack_params",
    "starter_suite",
    "task_reward",
    "task_success",
    "update_best_distance",
]
