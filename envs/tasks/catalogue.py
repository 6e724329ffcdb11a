"""Expand the templates into MineDojo's 1,581 programmatic tasks plus ``playthrough``.

Expansion follows MineDojo's rule: every ``{variable}`` found in a template's id or string fields is
filled from ``VARIABLES`` with the cartesian product of the values; ``target_quantities`` becomes
an int; and, for templates that had variables, the prompt's underscores become spaces and
``" 1"`` is deleted ("obtain 1 iron_ore" -> "obtain iron ore"). Templates without variables keep
their prompt verbatim (so "hunt a mooshroom in mushroom_island" keeps its underscore, as in
MineDojo). Ids and prompts match MineDojo's ``programmatic_tasks.yaml`` except the fixed defects
listed in ``docs/tasks.md``. Order: templates in ``TEMPLATES`` order, each product with the
variables in order of first appearance (MineDojo's own order depends on Python's string hashing).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Iterator, Mapping

from envs.tasks.playthrough import playthrough_spec
from envs.tasks.spec import InventoryItem, TaskSpec, default_success
from envs.tasks.templates import (
    KILL_STAT_NAMES,
    MC_TICKS_PER_DAY,
    TEMPLATES,
    VARIABLES,
    SlotItem,
    Template,
)

CATEGORY_COUNTS: Mapping[str, int] = {"harvest": 895, "combat": 471, "techtree": 213, "survival": 2}
NUM_PROGRAMMATIC = sum(CATEGORY_COUNTS.values())  # 1581
# MineDojo leaves episode length to the user; this is our default for harvest/combat/techtree
# (the TaskSpec default), overridable per evaluation run.
DEFAULT_MAX_STEPS = 500

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def template_variables(template: Template) -> tuple[str, ...]:
    """Names of the variables a template uses, in order of first appearance (id first)."""
    found: dict[str, None] = {}
    for text in _strings(template):
        for name in _PLACEHOLDER.findall(text):
            found.setdefault(name, None)
    unknown = [name for name in found if name not in VARIABLES]
    if unknown:
        raise KeyError(
            f"template {template.id!r} uses undefined variables {unknown}; add them to VARIABLES"
        )
    return tuple(found)


def _strings(template: Template) -> Iterator[str]:
    for field in dataclasses.fields(template):
        value = getattr(template, field.name)
        if isinstance(value, str):
            yield value
    for item in template.inventory:
        yield item.name


def _fill(text: str | None, values: Mapping[str, str | int]) -> str | None:
    return None if text is None else text.format(**values)


def _prompt(prompt: str) -> str:
    return prompt.replace("_", " ").replace(" 1", "")


def expand(template: Template) -> Iterator[Template]:
    """Every concrete task of one template (a ``Template`` with no placeholders left)."""
    names = template_variables(template)
    if not names:
        yield template
        return
    for combo in itertools.product(*(VARIABLES[name] for name in names)):
        values = dict(zip(names, combo, strict=True))
        yield dataclasses.replace(
            template,
            id=template.id.format(**values),
            prompt=_prompt(template.prompt.format(**values)),
            target=_fill(template.target, values),
            quantity=int(_fill(template.quantity, values))
            if isinstance(template.quantity, str)
            else template.quantity,
            mob=_fill(template.mob, values),
            inventory=tuple(
                dataclasses.replace(item, name=item.name.format(**values))
                for item in template.inventory
            ),
            biome=_fill(template.biome, values),
            tech_item=_fill(template.tech_item, values),
        )


@functools.cache
def expanded_tasks() -> Mapping[str, Template]:
    """All 1,582 concrete tasks (1,581 programmatic + ``playthrough``) by id, in expansion order."""
    tasks: dict[str, Template] = {}
    for template in TEMPLATES:
        for task in expand(template):
            if task.id in tasks:
                raise ValueError(
                    f"task id {task.id!r} is generated twice (second time by {template.id!r})"
                )
            tasks[task.id] = task
    return tasks


# Class defaults of MineDojo's meta tasks for fields a template leaves unset.
_CLASS_DEFAULTS: Mapping[str, Mapping[str, bool]] = {
    "combat": {"start_at_night": True, "always_night": False, "allow_mob_spawn": True},
    "harvest": {"start_at_night": False, "always_night": False, "allow_mob_spawn": True},
}
_FALLBACK_DEFAULTS: Mapping[str, bool] = {
    "start_at_night": False,
    "always_night": False,
    "allow_mob_spawn": True,
}


def to_spec(task: Template, guidance: str = "") -> TaskSpec:
    """The ``TaskSpec`` of one expanded task (``expand`` output), with MineDojo's class defaults."""
    if template_variables(task):
        raise ValueError(f"{task.id!r} still has placeholders; expand() the template first")
    if task.category == "playthrough":
        return playthrough_spec(guidance)
    defaults = _CLASS_DEFAULTS.get(task.category, _FALLBACK_DEFAULTS)
    flags = {
        name: default if getattr(task, name) is None else getattr(task, name)
        for name, default in defaults.items()
    }
    if task.category == "techtree":
        # One tech item per catalogue task: +1 per unit obtained, +10 per use, success on first use.
        targets, quantities = (task.tech_item,), (1,)
    elif task.target is not None:
        targets, quantities = (task.target,), (int(task.quantity),)
    else:
        targets, quantities = (), ()
    spawn = {}
    if task.mob_spawn_radius is not None:
        r = task.mob_spawn_radius
        spawn = {
            "initial_mob_spawn_range_low": (-r, 1, -r),
            "initial_mob_spawn_range_high": (r, 1, r),
        }
    spec = TaskSpec(
        id=task.id,
        category=task.category,
        prompt=task.prompt,
        guidance=guidance,
        target_names=targets,
        target_quantities=quantities,
        reward_weights=(1.0,) * len(targets) if task.category in ("harvest", "combat") else (),
        initial_mobs=(task.mob,) if task.mob else (),
        initial_inventory=tuple(
            InventoryItem(item.slot, item.name, item.quantity) for item in task.inventory
        ),
        specified_biome=task.biome,
        tech_item=task.tech_item,
        target_days=task.target_days or 0,
        # Survival needs target_days of game time; the limit must leave room for it.
        max_steps=task.target_days * MC_TICKS_PER_DAY if task.target_days else DEFAULT_MAX_STEPS,
        **flags,
        **spawn,
    )
    return dataclasses.replace(spec, success=default_success(spec))


def kill_stat_name(mob: str) -> str:
    """The name under which Minecraft 1.11 statistics count kills of ``mob`` (its summon id)."""
    return KILL_STAT_NAMES.get(mob, mob)


@functools.cache
def programmatic_spec(task_id: str, guidance: str = "") -> TaskSpec:
    """The spec of one catalogue task id (``KeyError`` if it is not one)."""
    return to_spec(expanded_tasks()[task_id], guidance)


__all__ = [
    "CATEGORY_COUNTS",
    "DEFAULT_MAX_STEPS",
    "programmatic_spec",
    "to_spec",
    "NUM_PROGRAMMATIC",
    "SlotItem",
    "expand",
    "expanded_tasks",
    "kill_stat_name",
    "template_variables",
]
