"""envs.tasks: lookup by id or prompt, listing, backends, errors."""

import pytest

from envs import tasks
from envs.tasks import creative


@pytest.fixture
def no_minedojo_files(monkeypatch):
    monkeypatch.delenv(creative.TASKS_DIR_ENV, raising=False)
    monkeypatch.setattr(creative, "_installed_minedojo_dir", lambda: None)
    tasks._guidance.cache_clear()
    yield
    tasks._guidance.cache_clear()


def test_get_by_id_and_by_prompt(no_minedojo_files):
    spec = tasks.get("harvest_1_log")
    assert spec.id == "harvest_1_log" and spec.prompt == "obtain log" and spec.guidance == ""
    assert tasks.get("obtain log") == spec
    assert tasks.get("  Obtain Log. ") == spec  # case, spaces and a final period do not matter
    assert tasks.get("PLAYTHROUGH").id == "playthrough"


def test_paper_tasks_by_id_and_prompt():
    for task_id in tasks.paper_task_ids():
        spec = tasks.get(task_id)
        assert spec.id == task_id
        assert tasks.get(spec.prompt).id == task_id
    assert len(tasks.paper_task_ids()) == 12


def test_one_lookup_takes_an_id_a_prompt_or_a_spec():
    import envs
    from envs.bridge import minedojo

    spec = tasks.get("hunt a cow")
    assert tasks.get(spec) is spec  # a TaskSpec passes through unchanged
    assert tasks.get("hunt_cow") is spec
    # no second lookup beside envs.tasks.get
    assert not hasattr(envs, "resolve_task") and not hasattr(minedojo, "_task_spec")


def test_unknown_ids_suggest_the_closest():
    with pytest.raises(tasks.UnknownTaskError, match="Closest: 'harvest_1_log'") as err:
        tasks.get("harvest_1_logs")
    assert isinstance(err.value, KeyError)
    with pytest.raises(
        KeyError, match="Closest: 'combat_zombie_plains_diamond_armors_diamond_sword_shield'"
    ):
        tasks.get("combat_zombie_plains_diamond_armor_diamond_sword_shield")
    with pytest.raises(KeyError, match="Closest: 'techtree_from_wood_to_stone_pickaxe'"):
        tasks.get("techtree_wood_to_stone_pickaxe")
    with pytest.raises(KeyError, match="'harvest_1_diamond'"):
        tasks.get("obtain a diamond")  # by prompt
    with pytest.raises(TypeError, match="str"):
        tasks.get(3)


def test_list_tasks_counts(no_minedojo_files):
    assert len(tasks.list_tasks("harvest")) == 895
    assert len(tasks.list_tasks("combat")) == 471
    assert len(tasks.list_tasks("techtree")) == 213
    assert len(tasks.list_tasks("survival")) == 2
    assert tasks.list_tasks("playthrough") == ("playthrough",)
    assert len(tasks.list_tasks()) == 1582  # no Creative file around
    with pytest.raises(tasks.DescriptionFileNotFound):
        tasks.list_tasks("creative")
    with pytest.raises(ValueError, match="category"):
        tasks.list_tasks("farming")
    with pytest.raises(ValueError, match="backend"):
        tasks.list_tasks("harvest", backend="java")


def test_creative_tasks_through_get(tmp_path, no_minedojo_files):
    (tmp_path / "creative_tasks.yaml").write_text(
        "creative:0: {collection: manual, guidance: 'Walk.', prompt: Find plains., source: null}\n"
        "creative:1: {collection: gpt3, guidance: '', prompt: Build a pool, source: null}\n"
    )
    spec = tasks.get("creative:1", creative_path=tmp_path)
    assert spec.category == "creative" and spec.prompt == "Build a pool"
    assert spec.success.kind == "never"
    assert tasks.list_tasks("creative", creative_path=tmp_path) == ("creative:0", "creative:1")
    with pytest.raises(tasks.DescriptionFileNotFound, match="MINEDOJO_TASKS_DIR"):
        tasks.get("creative:1")


def test_guidance_from_tasks_dir(tmp_path, monkeypatch, no_minedojo_files):
    (tmp_path / "programmatic_tasks.yaml").write_text(
        "harvest_1_log: {category: harvest, guidance: Punch a tree., prompt: obtain log}\n"
    )
    monkeypatch.setenv(creative.TASKS_DIR_ENV, str(tmp_path))
    assert tasks.get("harvest_1_log").guidance == "Punch a tree."
    assert tasks.get("harvest_1_dirt").guidance == ""


def test_backends():
    assert tasks.backends_for("combat_enderman_end_diamond_armors_diamond_sword_shield") == (
        "minedojo",
    )
    for task_id in tasks.paper_task_ids():
        assert tasks.backends_for(task_id) == ("minedojo", "voxel"), task_id
    voxel = tasks.list_tasks("combat", backend="voxel")
    assert 0 < len(voxel) < 471
    assert all("voxel" in tasks.backends_for(t) for t in voxel[:5])
