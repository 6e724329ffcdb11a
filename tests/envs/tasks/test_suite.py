"""The 64-task starter suite."""

import pytest

from envs.tasks.catalogue import expanded_tasks
from envs.tasks.suite import STARTER_SUITE, starter_suite


def test_sizes_and_split():
    assert len(STARTER_SUITE) == len(set(STARTER_SUITE)) == 64
    for kind in ("programmatic", "creative"):
        for difficulty in ("standard", "difficult"):
            assert len(starter_suite(kind, difficulty)) == 16
    assert STARTER_SUITE[0] == "harvest_milk_with_empty_bucket_and_cow"
    assert "combat_zombie_pigman_nether_diamond_armors_diamond_sword_shield" in starter_suite(
        "programmatic", "difficult"
    )
    assert starter_suite("creative", "standard")[-1] == "creative:1559"


def test_programmatic_ids_exist():
    catalogue = expanded_tasks()
    missing = [t for t in starter_suite("programmatic") if t not in catalogue]
    assert missing == []
    assert all(t.startswith("creative:") for t in starter_suite("creative"))


def test_bad_filter():
    with pytest.raises(ValueError, match="difficulty"):
        starter_suite("programmatic", "hard")
