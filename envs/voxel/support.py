"""Which tasks the embedded world can run: ``can_run(spec) -> (ok, reason)``.

A task runs when every name it relies on exists in the world: its target items can be obtained
(mined, dropped by a simulated mob, crafted or smelted from the world's recipes, or given in the
initial inventory), its mobs are simulated, its biome is generated, and its success test is one
the world can evaluate.
"""

from __future__ import annotations

from envs import spaces
from envs.tasks.spec import TaskSpec
from envs.voxel import tables as T

SUPPORTED_MOBS: frozenset[str] = frozenset(T.MOB_NAMES)
SUPPORTED_BIOMES: frozenset[str] = frozenset(T.WORLD_BIOMES) | {"sunflower_plains"}
REACHABLE_BLOCKS: frozenset[str] = frozenset({"portal", "water", "obsidian", "crafting_table"})


def _obtainable_items() -> frozenset[str]:
    items = {spaces.ITEMS[i] for i in T.BLOCK_DROP if i > 0}
    items |= {spaces.ITEMS[i] for i in T.MOB_DROP_ITEM.ravel() if i > 0}
    items |= {"wool", "milk_bucket", "water_bucket"}  # shearing, milking, bucket on water
    # Close under the recipe table.
    recipes = [
        (spaces.ITEMS[out], {spaces.ITEMS[i] for i, n in zip(ins, ns) if n > 0})
        for out, ins, ns in zip(T.RECIPE_OUT, T.RECIPE_IN, T.RECIPE_IN_N)
    ]
    changed = True
    while changed:
        changed = False
        for out, ins in recipes:
            if out not in items and ins <= items:
                items.add(out)
                changed = True
    return frozenset(items)


OBTAINABLE_ITEMS: frozenset[str] = _obtainable_items()


def can_run(spec: TaskSpec) -> tuple[bool, str]:
    """(True, "") if the voxel world can run ``spec``; else (False, what is missing)."""
    given = {e.name for e in spec.initial_inventory}
    missing_mobs = sorted(set(spec.initial_mobs) - SUPPORTED_MOBS)
    if spec.category == "combat":
        missing_mobs += sorted(set(spec.target_names) - SUPPORTED_MOBS - set(missing_mobs))
    if missing_mobs:
        return (
            False,
            f"mobs not simulated: {', '.join(missing_mobs)} (has {sorted(SUPPORTED_MOBS)})",
        )
    if spec.specified_biome is not None and spec.specified_biome not in SUPPORTED_BIOMES:
        return False, (
            f"biome {spec.specified_biome!r} not generated (has {sorted(SUPPORTED_BIOMES)})"
        )
    if spec.category in ("harvest", "techtree"):
        missing = [n for n in spec.target_names if n not in OBTAINABLE_ITEMS | given]
        if spec.category == "harvest" and len(missing) == len(spec.target_names) and missing:
            return False, f"items not obtainable in the world: {', '.join(missing)}"
        if spec.category == "techtree" and missing:
            return False, f"tech items not obtainable in the world: {', '.join(missing)}"
    crit = spec.success
    if crit.kind == "reach" and not set(crit.names) <= REACHABLE_BLOCKS:
        return (
            False,
            f"reach targets {crit.names} not in the world (has {sorted(REACHABLE_BLOCKS)})",
        )
    if crit.kind == "biome" and not set(crit.names) & SUPPORTED_BIOMES:
        return False, f"biomes {crit.names} not generated"
    if crit.kind in ("inventory", "use_all", "place"):
        missing = [n for n in crit.names if n not in OBTAINABLE_ITEMS | given]
        if missing and (crit.kind != "inventory" or len(missing) == len(crit.names)):
            return False, f"success items not obtainable in the world: {', '.join(missing)}"
    if crit.kind == "kill" and not set(crit.names) <= SUPPORTED_MOBS:
        return False, f"kill targets {crit.names} not simulated"
    if spec.category == "playthrough":
        return False, "the playthrough (kill the ender dragon) needs the End, which the world lacks"
    return True, ""
