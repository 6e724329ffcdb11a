"""The task format every backend shares: specs, their array form, signals, reward and success.

A task is a frozen ``TaskSpec`` (prompt, initial conditions, what counts as success). Backends
turn it into ``TaskParams`` (arrays, traced under jit, so one compiled step serves a batch of
different tasks) and report what happened in each step as ``TaskSignals`` (backend-neutral state:
inventory counts, kill / use / craft / mine / place statistics, time alive, position, biome,
privileged distance to the nearest target). Reward and success are pure functions of those:

* ``task_reward(params, initial, previous, current)``: MineDojo's programmatic reward
  (``minedojo/tasks/meta``): harvest +weight per unit an inventory target rises (and -weight per
  unit it falls); combat +weight per kill; techtree +1 per unit a tech item's count rises and
  +10 per use; survival +1 per new full day alive and +100 once the target day count is reached.
* ``task_success(params, initial, current)``: MineDojo's criteria, measured against the signals
  at reset: harvest / combat / place succeed when ANY target reaches its quantity (``any()``, as
  at MineDojo HEAD), techtree when every tech item has been used, survival at the target day
  count. For the paper's creative tasks the embedded world can check, also: reach a block type
  within a distance (``reach``), stand in a biome (``biome``), dig a given depth below the start
  (``depth``). ``never`` is MineDojo's creative/playthrough (no success).
* ``dense_reward(params, previous, current)``: the paper's manual dense shaping (MineCLIP repo
  ``dense_reward/``): navigation ``nav_scale * max(0, best-so-far distance - current distance)``
  when the target is in sight, plus ``attack_bonus`` for a valid attack on a target, minus
  ``step_penalty``. The full manual reward of the paper's baseline is
  ``task_reward + dense_reward``. The best-so-far distance is carried in the signals
  (``best_target_distance``); backends update it with ``update_best_distance``.

All three functions take NumPy or JAX arrays (they dispatch on the input type), work under
``jax.jit`` / ``jax.vmap``, and accept leading batch dimensions on signals (params broadcast).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs import spaces

Category = Literal["harvest", "combat", "techtree", "survival", "creative", "playthrough"]
CATEGORIES: tuple[str, ...] = (
    "harvest",
    "combat",
    "techtree",
    "survival",
    "creative",
    "playthrough",
)
SuccessKind = Literal[
    "inventory", "kill", "use_all", "survive", "place", "reach", "biome", "depth", "never"
]
SUCCESS_KINDS: tuple[str, ...] = (
    "inventory", "kill", "use_all", "survive", "place", "reach", "biome", "depth", "never"
)  # fmt: skip

TICKS_PER_DAY = 24000  # Minecraft day length in game ticks (20 ticks/s)
FAR = 1.0e6  # distance reported when no target exists
SLOT_NAMES = {"mainhand": 0, "offhand": 40, "head": 39, "chest": 38, "legs": 37, "feet": 36}


# ---------------------------------------------------------------------------------------------
# Specs (static, hashable)
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class InventoryItem:
    """One initial inventory entry (MineDojo's ``InventoryItem``)."""

    slot: int | str  # 0-35 inventory (0 = main hand), 36-40 feet/legs/chest/head/offhand, or a name
    name: str  # MineDojo item name, e.g. "diamond_sword"
    quantity: int = 1  # stack size, 1..64
    variant: int = 0  # item metadata (e.g. wool colour)

    def __post_init__(self):
        spaces.item_id(self.name)  # raises a clear KeyError on unknown names
        if self.name == "air":
            raise ValueError("initial inventory entries must name an item, not 'air'")
        if not 1 <= self.quantity <= 64:
            raise ValueError(f"quantity of {self.name!r} must be in [1, 64], got {self.quantity}")
        _ = self.slot_index  # validates the slot

    @property
    def slot_index(self) -> int:
        """Raw MineDojo slot number 0..40."""
        if isinstance(self.slot, str):
            if self.slot not in SLOT_NAMES:
                raise ValueError(
                    f"unknown slot name {self.slot!r}; use one of {sorted(SLOT_NAMES)}"
                )
            return SLOT_NAMES[self.slot]
        if not 0 <= int(self.slot) <= 40:
            raise ValueError(f"slot must be in [0, 40], got {self.slot}")
        return int(self.slot)


@dataclasses.dataclass(frozen=True)
class SuccessCriterion:
    """What ends a task successfully, measured against the signals at reset.

    ``names`` are item names (inventory, use_all, place), entity names (kill), biome names
    (biome) or block names (reach); ``quantities`` align with ``names`` (default 1 each).
    """

    kind: SuccessKind = "never"  # which test (see module docstring)
    names: tuple[str, ...] = ()  # targets of the test
    quantities: tuple[float, ...] = ()  # amount needed per target (empty: 1 each)
    distance: float = 2.0  # reach: success when the nearest target block is this close (blocks)
    depth: float = 0.0  # depth: success when this many blocks below the start height
    days: float = 0.0  # survive: days alive needed

    def __post_init__(self):
        if self.kind not in SUCCESS_KINDS:
            raise ValueError(f"unknown success kind {self.kind!r}; use one of {SUCCESS_KINDS}")
        object.__setattr__(self, "names", tuple(self.names))
        quantities = tuple(float(q) for q in self.quantities) or (1.0,) * len(self.names)
        object.__setattr__(self, "quantities", quantities)
        if len(self.quantities) != len(self.names):
            raise ValueError(
                f"success quantities {self.quantities} do not align with names {self.names}"
            )
        lookup = {
            "inventory": spaces.item_id,
            "use_all": spaces.item_id,
            "place": spaces.item_id,
            "kill": spaces.entity_id,
            "biome": spaces.biome_id,
            "reach": spaces.block_id,
        }.get(self.kind)
        if lookup is not None:
            if not self.names:
                raise ValueError(f"success kind {self.kind!r} needs at least one target name")
            for n in self.names:
                lookup(n)
        if self.kind == "depth" and self.depth <= 0:
            raise ValueError("success kind 'depth' needs depth > 0 (blocks below the start)")
        if self.kind == "survive" and self.days <= 0:
            raise ValueError("success kind 'survive' needs days > 0")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One task: prompt, initial conditions and success, with MineDojo's spec fields."""

    id: str  # task id, e.g. "harvest_milk_with_empty_bucket_and_cow"
    category: Category  # harvest|combat|techtree|survival|creative|playthrough
    prompt: str  # language goal, e.g. "milk a cow"
    guidance: str = ""  # MineDojo's free-text guidance
    target_names: tuple[str, ...] = ()  # items (harvest/techtree) or entities (combat)
    target_quantities: tuple[int, ...] = ()  # count needed per target
    reward_weights: tuple[float, ...] = ()  # reward per unit per target (empty: 1 each)
    initial_mobs: tuple[str, ...] = ()  # mobs summoned at reset
    initial_mob_spawn_range_low: tuple[int, int, int] = (-7, 1, -7)  # offset from the agent
    initial_mob_spawn_range_high: tuple[int, int, int] = (7, 1, 7)  # offset from the agent
    initial_inventory: tuple[InventoryItem, ...] = ()  # items given at reset
    specified_biome: str | None = None  # single-biome world, MineDojo biome name
    allow_mob_spawn: bool = True  # natural spawning
    start_at_night: bool = False  # start at tick 13000 (combat) instead of day
    always_night: bool = False  # time frozen at 18000
    tech_item: str | None = None  # techtree: the tech (group) unlocked
    target_days: int = 0  # survival: days to survive
    success: SuccessCriterion = SuccessCriterion()  # success test
    max_steps: int = 500  # episode length limit (agent steps)
    use_reward_weight: float = 10.0  # techtree: reward per use of a tech item
    obtain_reward_weight: float = 1.0  # techtree: reward per unit of a tech item obtained
    day_reward_weight: float = 1.0  # survival: reward per new full day
    survive_bonus: float = 100.0  # survival: reward when the target is reached
    nav_scale: float = 0.1  # dense reward: per block of progress toward the target
    attack_bonus: float = 1.0  # dense reward: per valid attack on a target
    step_penalty: float = 0.0  # dense reward: per step
    end_on_any_kill: bool = False  # episode ends when any mob is killed (paper's Animal-Zoo hunts)

    def __post_init__(self):
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}; use one of {CATEGORIES}")
        for f in ("target_names", "target_quantities", "reward_weights", "initial_mobs",
                  "initial_inventory"):  # fmt: skip
            object.__setattr__(self, f, tuple(getattr(self, f)))
        object.__setattr__(self, "initial_mob_spawn_range_low",
                           tuple(self.initial_mob_spawn_range_low))  # fmt: skip
        object.__setattr__(self, "initial_mob_spawn_range_high",
                           tuple(self.initial_mob_spawn_range_high))  # fmt: skip
        n = len(self.target_names)
        if self.target_quantities and len(self.target_quantities) != n:
            raise ValueError(
                f"task {self.id!r}: target_quantities {self.target_quantities} do not align "
                f"with target_names {self.target_names}"
            )
        if self.reward_weights and len(self.reward_weights) != n:
            raise ValueError(
                f"task {self.id!r}: reward_weights {self.reward_weights} do not align with "
                f"target_names {self.target_names}"
            )
        target_lookup = spaces.entity_id if self.category == "combat" else spaces.item_id
        if self.category in ("harvest", "combat", "techtree"):
            for name in self.target_names:
                target_lookup(name)
        for mob in self.initial_mobs:
            spaces.entity_id(mob)
        if self.specified_biome is not None:
            spaces.biome_id(self.specified_biome)
        if self.max_steps <= 0:
            raise ValueError(f"task {self.id!r}: max_steps must be positive, got {self.max_steps}")
        if self.category == "survival" and self.target_days <= 0:
            raise ValueError(f"survival task {self.id!r} needs target_days > 0")

    @property
    def quantities(self) -> tuple[float, ...]:
        return tuple(float(q) for q in self.target_quantities) or (1.0,) * len(self.target_names)

    @property
    def weights(self) -> tuple[float, ...]:
        return tuple(float(w) for w in self.reward_weights) or (1.0,) * len(self.target_names)


def default_success(spec: TaskSpec) -> SuccessCriterion:
    """MineDojo's success criterion for a programmatic spec (what ``spec.success`` should be)."""
    if spec.category == "harvest":
        return SuccessCriterion("inventory", spec.target_names, spec.quantities)
    if spec.category == "combat":
        return SuccessCriterion("kill", spec.target_names, spec.quantities)
    if spec.category == "techtree":
        return SuccessCriterion("use_all", spec.target_names)
    if spec.category == "survival":
        return SuccessCriterion("survive", days=float(spec.target_days))
    return SuccessCriterion("never")


# ---------------------------------------------------------------------------------------------
# Array forms (traced)
# ---------------------------------------------------------------------------------------------


@struct.dataclass
class TaskParams:
    """Array form of a ``TaskSpec``: dense per-id weight and target vectors.

    A target vector entry of 0 means "not a target". Build with ``TaskParams.from_spec``.
    """

    inventory_weight: Any  # f32 [NUM_ITEMS] reward per unit change of an item count
    inventory_target: Any  # f32 [NUM_ITEMS] count rise needed (any target met -> success)
    kill_weight: Any  # f32 [NUM_ENTITIES] reward per kill
    kill_target: Any  # f32 [NUM_ENTITIES] kills needed (any)
    use_weight: Any  # f32 [NUM_ITEMS] reward per use
    use_target: Any  # f32 [NUM_ITEMS] uses needed (ALL)
    place_target: Any  # f32 [NUM_ITEMS] placements needed (any)
    biome_target: Any  # bool [NUM_BIOME_IDS] success when the player stands in one
    success_kind: Any  # i32 [] index into SUCCESS_KINDS
    reach_distance: Any  # f32 [] reach: success distance
    depth_target: Any  # f32 [] depth: blocks below start
    survive_ticks: Any  # i32 [] survive: ticks alive needed (0: not a survival task)
    day_weight: Any  # f32 [] reward per new full day alive
    survive_bonus: Any  # f32 [] reward when the survival target is reached
    nav_scale: Any  # f32 [] dense: per block of progress
    attack_bonus: Any  # f32 [] dense: per valid attack
    step_penalty: Any  # f32 [] dense: per step

    @classmethod
    def from_spec(cls, spec: TaskSpec, xp=np) -> TaskParams:
        """Array form of ``spec`` (``xp=np`` for NumPy arrays, ``jnp`` for JAX arrays)."""
        f32 = np.float32
        inv_w = np.zeros(spaces.NUM_ITEMS, f32)
        inv_t = np.zeros(spaces.NUM_ITEMS, f32)
        kill_w = np.zeros(spaces.NUM_ENTITIES, f32)
        kill_t = np.zeros(spaces.NUM_ENTITIES, f32)
        use_w = np.zeros(spaces.NUM_ITEMS, f32)
        use_t = np.zeros(spaces.NUM_ITEMS, f32)
        place_t = np.zeros(spaces.NUM_ITEMS, f32)
        biome_t = np.zeros(spaces.NUM_BIOME_IDS, bool)
        # Reward terms come from the category (MineDojo's meta classes).
        # Playthrough rewards its trophy (the dragon egg) like a harvest target.
        if spec.category in ("harvest", "playthrough"):
            for name, w in zip(spec.target_names, spec.weights):
                inv_w[spaces.item_id(name)] += w
        elif spec.category == "combat":
            for name, w in zip(spec.target_names, spec.weights):
                kill_w[spaces.entity_id(name)] += w
        elif spec.category == "techtree":
            for name in spec.target_names:
                inv_w[spaces.item_id(name)] = spec.obtain_reward_weight
                use_w[spaces.item_id(name)] = spec.use_reward_weight
        # Success terms come from the criterion.
        crit = spec.success
        for name, q in zip(crit.names, crit.quantities):
            if crit.kind == "inventory":
                inv_t[spaces.item_id(name)] = q
            elif crit.kind == "kill":
                kill_t[spaces.entity_id(name)] = q
            elif crit.kind == "use_all":
                use_t[spaces.item_id(name)] = q
            elif crit.kind == "place":
                place_t[spaces.item_id(name)] = q
            elif crit.kind == "biome":
                biome_t[spaces.biome_id(name)] = True
        survive_ticks = int(round(crit.days * TICKS_PER_DAY)) if crit.kind == "survive" else 0
        if survive_ticks == 0 and spec.category == "survival":
            survive_ticks = spec.target_days * TICKS_PER_DAY
        is_survival = spec.category == "survival"
        arrays = dict(
            inventory_weight=inv_w,
            inventory_target=inv_t,
            kill_weight=kill_w,
            kill_target=kill_t,
            use_weight=use_w,
            use_target=use_t,
            place_target=place_t,
            biome_target=biome_t,
            success_kind=np.int32(SUCCESS_KINDS.index(crit.kind)),
            reach_distance=f32(crit.distance),
            depth_target=f32(crit.depth),
            survive_ticks=np.int32(survive_ticks),
            day_weight=f32(spec.day_reward_weight if is_survival else 0.0),
            survive_bonus=f32(spec.survive_bonus if is_survival else 0.0),
            nav_scale=f32(spec.nav_scale),
            attack_bonus=f32(spec.attack_bonus),
            step_penalty=f32(spec.step_penalty),
        )
        return cls(**{k: xp.asarray(v) for k, v in arrays.items()})


def stack_params(params: Sequence[TaskParams]) -> TaskParams:
    """Stack per-env params along a new leading axis (multi-task batches)."""
    xp = jnp if isinstance(params[0].nav_scale, jax.Array) else np
    return jax.tree.map(lambda *xs: xp.stack(xs), *params)


@struct.dataclass
class TaskSignals:
    """Backend-neutral state after one step (MineDojo's info dict, reduced to arrays)."""

    inventory: Any  # f32 [NUM_ITEMS] total count of each item (inventory + equipment)
    kills: Any  # f32 [NUM_ENTITIES] stat.kill_entity
    uses: Any  # f32 [NUM_ITEMS] stat.use_item
    crafts: Any  # f32 [NUM_ITEMS] stat.craft_item
    mines: Any  # f32 [NUM_ITEMS] stat.mine_block (by block item id)
    places: Any  # f32 [NUM_ITEMS] blocks placed, by item id
    ticks_alive: Any  # i32 [] stat.time_since_death (game ticks)
    pos: Any  # f32 [3] player position (x, y, z), y up
    biome_id: Any  # i32 [] biome at the player
    target_distance: Any  # f32 [] privileged distance to the nearest target (FAR if none)
    target_visible: Any  # bool [] the nearest target is in sight (LIDAR-like)
    best_target_distance: Any  # f32 [] running minimum of target_distance (reset on attack)
    attack_hit_target: Any  # bool [] this step's attack hit a target entity (valid attack)

    @classmethod
    def zeros(cls, batch_shape: tuple[int, ...] = (), xp=np) -> TaskSignals:
        """Signals of a fresh player with an empty inventory (at the origin)."""
        f32 = np.float32
        z = lambda *s: np.zeros(batch_shape + s, f32)  # noqa: E731
        arrays = dict(
            inventory=z(spaces.NUM_ITEMS),
            kills=z(spaces.NUM_ENTITIES),
            uses=z(spaces.NUM_ITEMS),
            crafts=z(spaces.NUM_ITEMS),
            mines=z(spaces.NUM_ITEMS),
            places=z(spaces.NUM_ITEMS),
            ticks_alive=np.zeros(batch_shape, np.int32),
            pos=z(3),
            biome_id=np.zeros(batch_shape, np.int32),
            target_distance=np.full(batch_shape, FAR, f32),
            target_visible=np.zeros(batch_shape, bool),
            best_target_distance=np.full(batch_shape, FAR, f32),
            attack_hit_target=np.zeros(batch_shape, bool),
        )
        return cls(**{k: xp.asarray(v) for k, v in arrays.items()})


# ---------------------------------------------------------------------------------------------
# Reward / success
# ---------------------------------------------------------------------------------------------


def _xp(*trees):
    """jnp if any leaf is a JAX array (or tracer), else np."""
    for t in trees:
        for leaf in jax.tree.leaves(t):
            if isinstance(leaf, jax.Array):
                return jnp
    return np


def _dot(xp, weight, values):
    return xp.sum(weight * values, axis=-1)


def task_reward(
    params: TaskParams, initial: TaskSignals, previous: TaskSignals, current: TaskSignals
):
    """MineDojo's programmatic reward for the step ``previous -> current`` (f32, batch shape)."""
    del initial  # MineDojo's reward functions accept it; none of the ones we model reads it
    xp = _xp(params, previous, current)
    r = _dot(xp, params.inventory_weight, current.inventory - previous.inventory)
    r = r + _dot(xp, params.kill_weight, current.kills - previous.kills)
    r = r + _dot(xp, params.use_weight, current.uses - previous.uses)
    ticks_day = TICKS_PER_DAY
    days_now = current.ticks_alive // ticks_day
    days_before = previous.ticks_alive // ticks_day
    r = r + params.day_weight * (days_now - days_before).astype(np.float32)
    reached = (params.survive_ticks > 0) & (current.ticks_alive >= params.survive_ticks)
    r = r + xp.where(reached, params.survive_bonus, np.float32(0.0))
    return xp.asarray(r, dtype=np.float32)


def task_success(params: TaskParams, initial: TaskSignals, current: TaskSignals):
    """Whether the task is solved at ``current`` (bool, batch shape)."""
    xp = _xp(params, initial, current)

    def any_target(target, now, start):
        met = (target > 0) & ((now - start) >= target)
        return xp.any(met, axis=-1)

    inv = any_target(params.inventory_target, current.inventory, initial.inventory)
    kill = any_target(params.kill_target, current.kills, initial.kills)
    use_done = (params.use_target <= 0) | ((current.uses - initial.uses) >= params.use_target)
    use_all = xp.all(use_done, axis=-1) & xp.any(params.use_target > 0, axis=-1)
    survive = (params.survive_ticks > 0) & (current.ticks_alive >= params.survive_ticks)
    place = any_target(params.place_target, current.places, initial.places)
    reach = current.target_distance <= params.reach_distance
    biome_ok = xp.take_along_axis(
        xp.broadcast_to(
            params.biome_target, current.biome_id.shape + params.biome_target.shape[-1:]
        ),
        xp.clip(current.biome_id, 0, spaces.NUM_BIOME_IDS - 1)[..., None],
        axis=-1,
    )[..., 0]
    depth = (initial.pos[..., 1] - current.pos[..., 1]) >= params.depth_target
    never = xp.zeros_like(reach)
    # Order matches SUCCESS_KINDS.
    by_kind = xp.stack([inv, kill, use_all, survive, place, reach, biome_ok, depth, never], axis=-1)
    kind = xp.broadcast_to(params.success_kind, by_kind.shape[:-1])
    return xp.take_along_axis(by_kind, kind[..., None].astype(np.int32), axis=-1)[..., 0]


def update_best_distance(previous_best, current_distance, visible, valid_attack):
    """Running minimum of the visible target distance; restarts after a valid attack.

    After a valid attack the animal flees, so the minimum restarts from the current distance
    (MineCLIP's ``AnimalZooDenseRewardWrapper``). Unseen targets leave the minimum unchanged.
    """
    xp = _xp(previous_best, current_distance, visible, valid_attack)
    seen_min = xp.where(visible, xp.minimum(previous_best, current_distance), previous_best)
    return xp.where(valid_attack, xp.where(visible, current_distance, FAR), seen_min)


def dense_reward(params: TaskParams, previous: TaskSignals, current: TaskSignals):
    """The paper's manual dense shaping for the step ``previous -> current`` (f32).

    ``nav_scale * max(0, previous best distance - current distance)`` while the target is in
    sight, plus ``attack_bonus`` on a valid attack, minus ``step_penalty``. Add ``task_reward``
    for the baseline's full reward.
    """
    xp = _xp(params, previous, current)
    progress = xp.maximum(previous.best_target_distance - current.target_distance, 0.0)
    progress = xp.where(
        current.target_visible & (previous.best_target_distance < FAR), progress, 0.0
    )
    attack = xp.where(current.attack_hit_target, params.attack_bonus, np.float32(0.0))
    r = params.nav_scale * progress + attack - params.step_penalty
    return xp.asarray(r, dtype=np.float32)
