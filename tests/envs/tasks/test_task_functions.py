"""Reward and success of catalogue specs on hand-made TaskSignals sequences."""

import dataclasses

import numpy as np

from envs import spaces
from envs.tasks.catalogue import programmatic_spec
from envs.tasks.spec import TaskParams, TaskSignals, task_reward, task_success


def _signals(**counts) -> TaskSignals:
    """Signals with entries set by name: inventory={'log': 3}, kills={'zombie': 1}, uses=..., ticks_alive=n."""
    base = TaskSignals.zeros()
    changes = {}
    for field, lookup in (
        ("inventory", spaces.item_id),
        ("kills", spaces.entity_id),
        ("uses", spaces.item_id),
    ):
        array = np.array(getattr(base, field))
        for name, value in counts.get(field, {}).items():
            array[lookup(name)] = value
        changes[field] = array
    if "ticks_alive" in counts:
        changes["ticks_alive"] = np.int32(counts["ticks_alive"])
    return dataclasses.replace(base, **changes)


def _run(task_id, sequence):
    """Rewards and success flags along a sequence of signals (the first is the reset state)."""
    params = TaskParams.from_spec(programmatic_spec(task_id))
    initial = sequence[0]
    rewards = [
        float(task_reward(params, initial, prev, cur)) for prev, cur in zip(sequence, sequence[1:])
    ]
    success = [bool(task_success(params, initial, cur)) for cur in sequence[1:]]
    return rewards, success


def test_harvest_counts_the_rise_since_reset():
    # starts with 2 logs; needs 8 more
    seq = [_signals(inventory={"log": 2}), _signals(inventory={"log": 7}), _signals(inventory={"log": 6}),
           _signals(inventory={"log": 10}), _signals(inventory={"log": 10, "dirt": 5})]  # fmt: skip
    rewards, success = _run("harvest_8_log", seq)
    assert rewards == [5.0, -1.0, 4.0, 0.0]  # dropping a log costs one
    assert success == [False, False, True, True]


def test_combat_counts_kills_of_the_target_only():
    seq = [_signals(), _signals(kills={"cow": 1}), _signals(kills={"cow": 1, "zombie": 1})]
    rewards, success = _run("combat_zombie_plains_diamond_armors_diamond_sword_shield", seq)
    assert rewards == [0.0, 1.0]
    assert success == [False, True]


def test_combat_kill_counted_under_minecraft_statistic_name():
    # The Java side reports kills as "mushroom_cow"; the spec's target is the summon id "mooshroom".
    seq = [_signals(), _signals(kills={"mushroom_cow": 1})]
    rewards, success = _run("combat_mooshroom_mushroom_island_barehand", seq)
    assert rewards == [1.0] and success == [True]
    seq = [_signals(), _signals(kills={"pig_zombie": 1})]
    rewards, success = _run("combat_zombie_pigman_nether_iron_armors_iron_sword_shield", seq)
    assert rewards == [1.0] and success == [True]


def test_techtree_rewards_obtaining_and_using():
    pick = "stone_pickaxe"
    seq = [_signals(inventory={"wooden_pickaxe": 1}), _signals(inventory={pick: 1}),
           _signals(inventory={pick: 1}, uses={pick: 2})]  # fmt: skip
    rewards, success = _run("techtree_from_wood_to_stone_pickaxe", seq)
    assert rewards == [1.0, 20.0]  # +1 obtained, then +10 per use
    assert success == [False, True]


def test_survival_pays_per_day_and_on_target():
    day = 24_000
    seq = [_signals(ticks_alive=0), _signals(ticks_alive=day - 1), _signals(ticks_alive=day + 5),
           _signals(ticks_alive=100 * day)]  # fmt: skip
    rewards, success = _run("survival", seq)
    assert rewards == [0.0, 1.0, 99.0 + 100.0]
    assert success == [False, False, True]


def test_playthrough_succeeds_on_the_dragon_egg():
    seq = [
        _signals(),
        _signals(kills={"ender_dragon": 1}),
        _signals(kills={"ender_dragon": 1}, inventory={"dragon_egg": 1}),
    ]
    rewards, success = _run("playthrough", seq)
    assert success == [False, True]
    assert rewards == [0.0, 10.0]  # MineDojo's intended +10 for the egg, which its code never paid
