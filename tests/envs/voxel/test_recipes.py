"""Every recipe of the world: exact ingredients craft it, one short or no station does not."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import spaces
from envs.voxel import env as E
from envs.voxel import inventory
from envs.voxel import tables as T
from tests.envs.voxel import helpers as H

# Minecraft 1.11 recipes of the tool tree, written out independently of envs.voxel.tables.
MC_RECIPES = {
    "planks": (4, {"log": 1}, T.STATION_NONE),
    "stick": (4, {"planks": 2}, T.STATION_NONE),
    "crafting_table": (1, {"planks": 4}, T.STATION_NONE),
    "wooden_pickaxe": (1, {"planks": 3, "stick": 2}, T.STATION_TABLE),
    "stone_pickaxe": (1, {"cobblestone": 3, "stick": 2}, T.STATION_TABLE),
    "iron_pickaxe": (1, {"iron_ingot": 3, "stick": 2}, T.STATION_TABLE),
    "stone_sword": (1, {"cobblestone": 2, "stick": 1}, T.STATION_TABLE),
    "furnace": (1, {"cobblestone": 8}, T.STATION_TABLE),
    "bucket": (1, {"iron_ingot": 3}, T.STATION_TABLE),
    "shears": (1, {"iron_ingot": 2}, T.STATION_NONE),
    "torch": (4, {"coal": 1, "stick": 1}, T.STATION_NONE),
    "carpet": (3, {"wool": 2}, T.STATION_NONE),
    "iron_ingot": (1, {"iron_ore": 1}, T.STATION_FURNACE),
    "cooked_beef": (1, {"beef": 1}, T.STATION_FURNACE),
}


@pytest.mark.parametrize("name", sorted(MC_RECIPES))
def test_recipe_table_matches_minecraft(name):
    assert T.recipe(name) == MC_RECIPES[name]


@jax.jit
def _craft_batch(states, args):
    def one(state, arg):
        mask = E.craft_mask(state)
        return inventory.craft_apply(state, arg), mask[arg]

    return jax.vmap(one)(states, args)


def _state_with(base, items: dict[str, int], station: int, near: bool):
    inv_item = np.zeros(41, np.int32)
    inv_count = np.zeros(41, np.int32)
    for k, (name, n) in enumerate(items.items()):
        inv_item[k] = spaces.item_id(name)
        inv_count[k] = n
    state = base.replace(
        inv=base.inv.replace(
            item=jnp.asarray(inv_item), count=jnp.asarray(inv_count),
            durability=jnp.full(41, -1, jnp.int32),
        )
    )  # fmt: skip
    if near:
        cell = np.array([int(base.player.pos[0]) + 2, H.GROUND + 1, int(base.player.pos[2])])
        block = "crafting_table" if station == T.STATION_TABLE else "furnace"
        state = H.set_block(state, tuple(cell), block)
        field = "table_pos" if station == T.STATION_TABLE else "furnace_pos"
        state = state.replace(**{field: jnp.asarray(cell, jnp.int32)})
    return state


def test_every_recipe_crafts_exactly():
    params = H.params_for(H.spec(), passive_mobs=0)
    _, base = H.reset(jax.random.key(0), params, H.STATIC)
    base = H.place_player(H.clear_mobs(base), [16.5, H.GROUND + 1.0, 16.5])
    cases = []  # (recipe, items, near station, expect success)
    for r, out in enumerate(T.RECIPE_NAMES):
        need = {spaces.ITEMS[i]: int(n) for i, n in zip(T.RECIPE_IN[r], T.RECIPE_IN_N[r]) if n > 0}
        station = int(T.RECIPE_STATION[r])
        exact = dict(need)
        if station == T.STATION_FURNACE:
            fuel = "planks" if ("coal" in need or out == "coal") else "coal"
            exact[fuel] = exact.get(fuel, 0) + 1
        cases.append((r, exact, True, True))
        short = dict(exact)
        first = next(iter(need))
        short[first] -= 1
        cases.append((r, {k: v for k, v in short.items() if v > 0}, True, False))
        if station != T.STATION_NONE:
            cases.append((r, exact, False, False))
    states = [
        _state_with(base, items, int(T.RECIPE_STATION[r]), near) for r, items, near, _ in cases
    ]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    args = jnp.asarray([spaces.craft_index(T.RECIPE_NAMES[r]) for r, *_ in cases])
    after, masked_ok = _craft_batch(stacked, args)
    for k, (r, items, near, expect) in enumerate(cases):
        out = T.RECIPE_NAMES[r]
        inv_item = np.asarray(after.inv.item[k])
        inv_count = np.asarray(after.inv.count[k])
        got = int(inv_count[inv_item == spaces.item_id(out)].sum())
        had = items.get(out, 0)
        label = f"{out} near={near} expect={expect}"
        assert bool(masked_ok[k]) == expect, label
        if expect:
            assert got == had + int(T.RECIPE_COUNT[r]), label
            # Every ingredient (and the fuel) is used up; nothing else is left.
            left = {spaces.ITEMS[i]: int(c) for i, c in zip(inv_item, inv_count) if c > 0}
            assert left == {out: got}, label
            assert float(after.stats_crafts[k][spaces.item_id(out)]) == T.RECIPE_COUNT[r]
        else:
            assert got == had, label
            assert float(after.stats_crafts[k].sum()) == 0.0, label


def test_craft_targets_outside_the_world_are_masked():
    assert (T.CRAFT_ARG_TO_RECIPE >= 0).sum() == T.NUM_RECIPES
    assert T.CRAFT_ARG_TO_RECIPE[spaces.craft_index("beacon")] == -1
