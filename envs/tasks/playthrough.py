"""The Playthrough task: defeat the Ender Dragon and obtain the dragon egg.

MineDojo declares success as "+1 dragon_egg in the inventory since reset" and a +10 reward for it,
but its ``Playthrough`` class overrides ``reset`` and ``step`` without calling the base class, so
neither is ever computed; only the 115,200-step limit applies. Here the declared check is the
task's ``success`` criterion, so every backend computes it from ``TaskSignals`` (the egg is the
trophy only a defeated dragon leaves, hence a proxy for finishing the game).
"""

from __future__ import annotations

from envs.tasks.spec import SuccessCriterion, TaskSpec
from envs.tasks.templates import PLAYTHROUGH_MAX_STEPS, PLAYTHROUGH_TEMPLATE

PLAYTHROUGH_ID = PLAYTHROUGH_TEMPLATE.id
TROPHY = "dragon_egg"
TROPHY_REWARD = 10.0  # MineDojo's obtain_dragon_egg_reward


def playthrough_spec(guidance: str = "") -> TaskSpec:
    """The Playthrough ``TaskSpec``: default world, empty inventory, success = dragon egg obtained."""
    return TaskSpec(
        id=PLAYTHROUGH_ID,
        category="playthrough",
        prompt=PLAYTHROUGH_TEMPLATE.prompt,
        guidance=guidance,
        target_names=(TROPHY,),
        target_quantities=(1,),
        reward_weights=(TROPHY_REWARD,),
        success=SuccessCriterion("inventory", (TROPHY,), (1,)),
        max_steps=PLAYTHROUGH_MAX_STEPS,
    )
