"""Inventory and crafting: stacks, durability, recipes, and the block interactions that move
items (place, mine, use: shear, milk, eat, buckets).

Main slots are 0..35 (0 is the main hand), 36..39 armour, 40 the offhand. Inventory changes of
one step are collected in a ``Txn`` and applied once (removals first).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs import spaces
from envs.voxel import tables as T
from envs.voxel.physics import (
    F32,
    I32,
    LIQUID,
    PLAYER_HALF_WIDTH,
    PLAYER_HEIGHT,
    SOLID,
    B,
    Table,
    cell_value,
    eye_position,
    in_bounds,
    set_block,
)
from envs.voxel.state import Inventory, VoxelState

MAX_STACK = Table(T.ITEM_MAX_STACK)
MAX_DURABILITY = Table(T.ITEM_MAX_DURABILITY)


def inv_add(inv: Inventory, item, n):
    """Add ``n`` of ``item`` to the main slots: fill matching stacks, then empty slots."""
    n = jnp.where(item > 0, n, 0)
    cap = MAX_STACK[item]
    items, counts = inv.item[:36], inv.count[:36]
    room = jnp.where((items == item) & (counts < cap), cap - counts, 0)
    take = jnp.clip(n - (jnp.cumsum(room) - room), 0, room)
    counts = counts + take
    left = n - take.sum()
    room2 = jnp.where(items == 0, cap, 0)
    take2 = jnp.clip(left - (jnp.cumsum(room2) - room2), 0, room2)
    new_slot = take2 > 0
    items = jnp.where(new_slot, item, items)
    counts = counts + take2
    dur = jnp.where(new_slot, MAX_DURABILITY[item], inv.durability[:36])
    return Inventory(
        item=inv.item.at[:36].set(items),
        count=inv.count.at[:36].set(counts),
        durability=inv.durability.at[:36].set(dur),
    )


def inv_remove(inv: Inventory, item, n):
    """Remove ``n`` of ``item`` from the main slots (first slots first)."""
    items, counts = inv.item[:36], inv.count[:36]
    have = jnp.where(items == item, counts, 0)
    take = jnp.clip(n - (jnp.cumsum(have) - have), 0, have)
    counts = counts - take
    empty = counts <= 0
    return Inventory(
        item=inv.item.at[:36].set(jnp.where(empty, 0, items)),
        count=inv.count.at[:36].set(jnp.where(empty, 0, counts)),
        durability=inv.durability.at[:36].set(jnp.where(empty, -1, inv.durability[:36])),
    )


class Txn:
    """Inventory changes collected during a step and applied once (removals first).

    At most one functional action acts per step, so the changes never depend on each other's
    order; applying them in two ``lax.scan`` loops keeps the compiled step small.
    """

    def __init__(self):
        self.removes: list = []
        self.adds: list = []

    def remove(self, item, n):
        self.removes.append(jnp.stack([jnp.asarray(item, I32), jnp.asarray(n, I32)]))

    def add(self, item, n):
        self.adds.append(jnp.stack([jnp.asarray(item, I32), jnp.asarray(n, I32)]))

    def apply(self, inv: Inventory) -> Inventory:
        for ops, fn in ((self.removes, inv_remove), (self.adds, inv_add)):
            if ops:
                inv, _ = jax.lax.scan(
                    lambda v, x, fn=fn: (fn(v, x[0], x[1]), None), inv, jnp.stack(ops)
                )
        return inv


def inv_counts(inv: Inventory):
    """f32 [NUM_ITEMS]: total count of each item over all 41 slots (air = 0)."""
    c = jnp.zeros(spaces.NUM_ITEMS, F32).at[inv.item].add(inv.count.astype(F32))
    return c.at[0].set(0.0)


def damage_held(inv: Inventory, amount):
    """Wear the main-hand item by ``amount``; it breaks at 0 durability."""
    dur = inv.durability[0]
    damageable = dur >= 0
    new = jnp.where(damageable, dur - amount, dur)
    broken = damageable & (new <= 0)
    return Inventory(
        item=inv.item.at[0].set(jnp.where(broken, 0, inv.item[0])),
        count=inv.count.at[0].set(jnp.where(broken, 0, inv.count[0])),
        durability=inv.durability.at[0].set(jnp.where(broken, -1, new)),
    )


def armor_points(inv: Inventory):
    return jnp.asarray(T.ITEM_ARMOR)[inv.item[36:40]].sum()


def station_nearby(state: VoxelState, pos_field, block):
    cell = pos_field
    ok = (cell[0] >= 0) & (cell_value(state.blocks, cell) == block)
    d = jnp.linalg.norm(cell.astype(F32) + 0.5 - eye_position(state.player))
    return ok & (d <= 5.0)


def recipe_ok(counts, table_ok, furnace_ok):
    """bool [NUM_RECIPES]: ingredients, station and (for smelting) fuel available."""
    need = jnp.asarray(T.RECIPE_IN_N)
    have = counts[jnp.asarray(T.RECIPE_IN)]
    ingredients = jnp.all(have >= need, axis=-1)
    station = jnp.asarray(T.RECIPE_STATION)
    fuel_items = jnp.asarray(T.FUEL_ITEMS)
    # Fuel must be available beyond what the recipe itself consumes (e.g. smelting a log).
    uses_fuel = (jnp.asarray(T.RECIPE_IN)[:, :, None] == fuel_items[None, None, :]) * need[
        :, :, None
    ]
    fuel_left = counts[fuel_items][None, :] - uses_fuel.sum(1)
    has_fuel = jnp.any(fuel_left >= 1, axis=-1)
    station_ok = jnp.select(
        [station == T.STATION_TABLE, station == T.STATION_FURNACE],
        [table_ok, furnace_ok & has_fuel],
        True,
    )
    return ingredients & station_ok


def craft(state: VoxelState, arg, enable, txn: Txn):
    inv = state.inv
    counts = inv_counts(inv)
    table_ok = station_nearby(state, state.table_pos, B["crafting_table"])
    furnace_ok = station_nearby(state, state.furnace_pos, B["furnace"])
    r = jnp.asarray(T.CRAFT_ARG_TO_RECIPE)[arg]
    rc = jnp.maximum(r, 0)
    ok = enable & (r >= 0) & recipe_ok(counts, table_ok, furnace_ok)[rc]
    out = jnp.asarray(T.RECIPE_OUT)[rc]
    n_out = jnp.asarray(T.RECIPE_COUNT)[rc]
    for k in range(T.MAX_INGREDIENTS):
        txn.remove(jnp.asarray(T.RECIPE_IN)[rc, k],
                          jnp.where(ok, jnp.asarray(T.RECIPE_IN_N)[rc, k], 0))  # fmt: skip
    # Smelting burns one unit of the first fuel available (coal, then log, then planks).
    is_smelt = jnp.asarray(T.RECIPE_STATION)[rc] == T.STATION_FURNACE
    fuel_items = jnp.asarray(T.FUEL_ITEMS)
    ins, ns = jnp.asarray(T.RECIPE_IN)[rc], jnp.asarray(T.RECIPE_IN_N)[rc]
    eaten = jnp.sum((ins[:, None] == fuel_items[None, :]) * ns[:, None], axis=0)
    have_fuel = counts[fuel_items] - eaten >= 1  # fuel left after the ingredients
    fuel = fuel_items[jnp.argmax(have_fuel)]
    txn.remove(fuel, jnp.where(ok & is_smelt, 1, 0))
    txn.add(out, jnp.where(ok, n_out, 0))
    crafts = state.stats_crafts.at[out].add(jnp.where(ok, n_out, 0).astype(F32))
    return state.replace(inv=inv, stats_crafts=crafts)


def craft_apply(state: VoxelState, arg):
    """Craft argument ``arg`` now if possible (``craft`` with its inventory changes applied)."""
    txn = Txn()
    state = craft(state, arg, True, txn)
    return state.replace(inv=txn.apply(state.inv))


def equip(inv: Inventory, slot, enable):
    item = inv.item[slot]
    armor_slot = jnp.asarray(T.ITEM_ARMOR_SLOT)[item]
    dest = jnp.where(armor_slot >= 0, 36 + armor_slot, 0)
    ok = enable & (item > 0) & (slot != dest)

    def swap(a):
        a_slot, a_dest = a[slot], a[dest]
        a = a.at[slot].set(jnp.where(ok, a_dest, a_slot))
        return a.at[dest].set(jnp.where(ok, a_slot, a_dest))

    return Inventory(item=swap(inv.item), count=swap(inv.count), durability=swap(inv.durability))


def place(state: VoxelState, slot, target_hit, place_cell, enable):
    """Place the block item in ``slot`` into ``place_cell`` (the free cell at the hit face)."""
    inv = state.inv
    item = inv.item[slot]
    block = jnp.asarray(T.ITEM_PLACES)[item]
    current = cell_value(state.blocks, place_cell)
    solid = SOLID[block]
    # A solid block may not be placed into the player's box or a mob's cell.
    cell_lo = place_cell.astype(F32)
    p = state.player.pos
    player_overlap = jnp.all(
        (cell_lo < p + jnp.array([PLAYER_HALF_WIDTH, PLAYER_HEIGHT, PLAYER_HALF_WIDTH]))
        & (cell_lo + 1.0 > p - jnp.array([PLAYER_HALF_WIDTH, 0.0, PLAYER_HALF_WIDTH]))
    )
    mob_cells = jnp.floor(state.mobs.pos).astype(I32)
    mob_overlap = jnp.any(state.mobs.alive & jnp.all(mob_cells == place_cell[None, :], axis=-1))
    # Non-solid attachments (carpet, torch, flowers) need solid ground below.
    below = cell_value(state.blocks, place_cell - jnp.array([0, 1, 0]))
    supported = solid | SOLID[below]
    ok = (
        enable & target_hit & (block > 0) & (inv.count[slot] > 0)
        & jnp.asarray(T.BLOCK_REPLACEABLE)[current] & in_bounds(state.blocks, place_cell)
        & ~(solid & (player_overlap | mob_overlap)) & supported
    )  # fmt: skip
    blocks = set_block(state.blocks, place_cell, block, ok)
    count = inv.count.at[slot].add(jnp.where(ok, -1, 0))
    emptied = count[slot] <= 0
    inv = Inventory(
        item=inv.item.at[slot].set(jnp.where(emptied, 0, inv.item[slot])),
        count=count.at[slot].set(jnp.maximum(count[slot], 0)),
        durability=inv.durability.at[slot].set(jnp.where(emptied, -1, inv.durability[slot])),
    )
    add = jnp.where(ok, 1.0, 0.0)
    return state.replace(
        blocks=blocks,
        inv=inv,
        stats_places=state.stats_places.at[item].add(add),
        stats_uses=state.stats_uses.at[item].add(add),
        table_pos=jnp.where(ok & (block == B["crafting_table"]), place_cell, state.table_pos),
        furnace_pos=jnp.where(ok & (block == B["furnace"]), place_cell, state.furnace_pos),
    ), ok


def mine(state: VoxelState, hit, cell, enable, txn: Txn):
    """One tick of mining ``cell``; the block breaks when progress reaches 1."""
    block = cell_value(state.blocks, cell)
    held = state.inv.item[0]
    tool_cls = jnp.asarray(T.ITEM_TOOL_CLASS)[held]
    need_cls = jnp.asarray(T.BLOCK_TOOL)[block]
    right_tool = (need_cls > 0) & (tool_cls == need_cls)
    tier = jnp.asarray(T.ITEM_TIER)[held]
    min_tier = jnp.asarray(T.BLOCK_MIN_TIER)[block]
    harvest = (min_tier == 0) | (right_tool & (tier >= min_tier))
    speed = jnp.where(right_tool, jnp.asarray(T.ITEM_SPEED)[held], 1.0)
    hardness = jnp.asarray(T.BLOCK_HARDNESS)[block]
    per_tick = jnp.where(
        hardness <= 0, 1.0, speed / jnp.maximum(hardness, 1e-6) / jnp.where(harvest, 30.0, 100.0)
    )
    breakable = jnp.asarray(T.BLOCK_BREAKABLE)[block]
    active = enable & hit & breakable
    same = jnp.all(cell == state.mine_target)
    progress = jnp.where(active, jnp.where(same, state.mine_progress, 0.0) + per_tick, 0.0)
    breaks = active & (progress >= 1.0 - 1e-5)  # float32 sums of 1/n reach 1 - ulp
    blocks = set_block(state.blocks, cell, B["air"], breaks)
    # A plant, carpet or torch standing on the broken block goes with it.
    above = cell + jnp.array([0, 1, 0])
    above_block = cell_value(blocks, above)
    attached = ~SOLID[above_block] & ~LIQUID[above_block] & (above_block != B["air"])
    attached = attached & (above_block != B["portal"])
    blocks = set_block(blocks, above, B["air"], breaks & attached)
    drop = jnp.asarray(T.BLOCK_DROP)[block]
    n = jnp.where(breaks & harvest, jnp.asarray(T.BLOCK_DROP_COUNT)[block], 0)
    txn.add(drop, n)
    inv = state.inv
    damageable = inv.durability[0] >= 0
    inv = damage_held(inv, jnp.where(breaks & damageable & (hardness > 0), 1, 0))
    block_item = jnp.asarray(BLOCK_ITEM)[block]
    mines = state.stats_mines.at[block_item].add(jnp.where(breaks, 1.0, 0.0))
    uses = state.stats_uses.at[held].add(
        jnp.where(breaks & damageable & (held > 0) & (hardness > 0), 1.0, 0.0)
    )
    player = state.player.replace(
        exhaustion=state.player.exhaustion + jnp.where(breaks, 0.005, 0.0)
    )
    return state.replace(
        blocks=blocks,
        inv=inv,
        mine_target=jnp.where(active & ~breaks, cell, jnp.full(3, -1, I32)),
        mine_progress=jnp.where(breaks, 0.0, progress),
        stats_mines=mines,
        stats_uses=uses,
        player=player,
    )


# Block id -> item id of the block's own name (for mine_block statistics; 0 if not an item).
BLOCK_ITEM = np.array(
    [spaces.item_id(n) if n in spaces.ITEMS else 0 for n in T.BLOCK_NAMES], np.int32
)


def use(state: VoxelState, u, ent_hit, ent_idx, blk_hit, blk_cell, blk_prev, water_hit, water_cell,
         enable, txn: Txn):  # fmt: skip
    """Right click: shear / milk the targeted mob, eat, fill / empty a bucket, or place."""
    inv = state.inv
    held = inv.item[0]
    mobs = state.mobs
    t = mobs.mob_type[ent_idx]
    i_shears, i_bucket = spaces.item_id("shears"), spaces.item_id("bucket")
    i_milk, i_water = spaces.item_id("milk_bucket"), spaces.item_id("water_bucket")
    shear = (
        enable & ent_hit & (held == i_shears) & (t == T.M["sheep"]) & (mobs.variant[ent_idx] == 0)
    )
    milk = enable & ent_hit & (held == i_bucket) & (t == T.M["cow"])
    # Shearing: 1-3 wool, the sheep regrows it after a while.
    n_wool = 1 + jnp.floor(u * 3).astype(I32)
    txn.add(spaces.item_id("wool"), jnp.where(shear, n_wool, 0))
    inv = damage_held(inv, jnp.where(shear, 1, 0))
    mobs = mobs.replace(
        variant=mobs.variant.at[ent_idx].set(jnp.where(shear, 1, mobs.variant[ent_idx])),
        regrow=mobs.regrow.at[ent_idx].set(jnp.where(shear, 1200, mobs.regrow[ent_idx])),
    )
    # Milking: one empty bucket becomes a milk bucket.
    txn.remove(i_bucket, jnp.where(milk, 1, 0))
    txn.add(i_milk, jnp.where(milk, 1, 0))
    done = shear | milk | (enable & ent_hit)
    # Bucket on water.
    fill = enable & ~done & water_hit & (held == i_bucket)
    txn.remove(i_bucket, jnp.where(fill, 1, 0))
    txn.add(i_water, jnp.where(fill, 1, 0))
    blocks = set_block(state.blocks, water_cell, B["air"], fill)
    done = done | fill
    # Eating (instant) when hungry; drinking milk gives the bucket back.
    food_v = jnp.asarray(T.ITEM_FOOD)[held]
    is_food = (food_v > 0) | (held == i_milk)
    eat = enable & ~done & is_food & ((state.player.food < 20.0) | (held == i_milk))
    player = state.player.replace(
        food=jnp.where(eat, jnp.minimum(20.0, state.player.food + food_v), state.player.food),
        saturation=jnp.where(
            eat,
            jnp.minimum(
                state.player.food + food_v,
                state.player.saturation + jnp.asarray(T.ITEM_SATURATION)[held],
            ),
            state.player.saturation,
        ),  # fmt: skip
    )
    txn.remove(held, jnp.where(eat, 1, 0))
    txn.add(i_bucket, jnp.where(eat & (held == i_milk), 1, 0))
    done = done | eat
    # Emptying a water bucket.
    pour_cell_free = jnp.asarray(T.BLOCK_REPLACEABLE)[cell_value(blocks, blk_prev)]
    pour = enable & ~done & blk_hit & (held == i_water) & pour_cell_free
    blocks = set_block(blocks, blk_prev, B["water"], pour)
    txn.remove(i_water, jnp.where(pour, 1, 0))
    txn.add(i_bucket, jnp.where(pour, 1, 0))
    done = done | pour
    used = shear | milk | fill | eat | pour
    uses = state.stats_uses.at[held].add(jnp.where(used, 1.0, 0.0))
    state = state.replace(inv=inv, mobs=mobs, blocks=blocks, player=player, stats_uses=uses)
    return state, done
