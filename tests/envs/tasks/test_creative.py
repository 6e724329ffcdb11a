"""Creative tasks and guidance from MineDojo's description files (synthetic files here)."""

import textwrap

import pytest

from envs.tasks import creative
from envs.tasks.creative import DescriptionFileNotFound, YouTubeSource

CREATIVE_YAML = textwrap.dedent(
    """\
    creative:0:
      collection: manual
      guidance: '1. Walk.'
      prompt: Explore the world to find plains.
      source: null
    creative:1:
      collection: youtube
      guidance: null
      prompt: make a food truck
      source: {end: 1225, start: 0, youtube_id: M3t9zpPIqeE}
    creative:2:
      collection: gpt3
      guidance: ''
      prompt: Build a swimming pool
      source: null
    """
)


@pytest.fixture
def no_installed_minedojo(monkeypatch):
    monkeypatch.delenv(creative.TASKS_DIR_ENV, raising=False)
    monkeypatch.setattr(creative, "_installed_minedojo_dir", lambda: None)


@pytest.fixture
def tasks_dir(tmp_path):
    (tmp_path / "creative_tasks.yaml").write_text(CREATIVE_YAML)
    (tmp_path / "programmatic_tasks.yaml").write_text(
        "harvest_1_log:\n  category: harvest\n  guidance: Punch a tree.\n  prompt: obtain log\n"
    )
    return tmp_path


def test_load_by_file_or_directory(tasks_dir, no_installed_minedojo):
    for path in (tasks_dir, tasks_dir / "creative_tasks.yaml"):
        tasks = creative.load_creative_tasks(path)
        assert [t.id for t in tasks] == ["creative:0", "creative:1", "creative:2"]
    t1 = creative.creative_task("creative:1", tasks_dir)
    assert t1.collection == "youtube" and t1.prompt == "make a food truck"
    assert t1.guidance == ""  # null guidance becomes ""
    assert t1.source == YouTubeSource("M3t9zpPIqeE", 0.0, 1225.0)
    assert creative.creative_task("creative:0", tasks_dir).source is None


def test_environment_variable(tasks_dir, monkeypatch, no_installed_minedojo):
    monkeypatch.setenv(creative.TASKS_DIR_ENV, str(tasks_dir))
    assert creative.creative_task("creative:2").prompt == "Build a swimming pool"
    assert creative.load_guidance()["harvest_1_log"] == "Punch a tree."


def test_missing_file_says_how_to_fix(no_installed_minedojo):
    with pytest.raises(DescriptionFileNotFound, match="MINEDOJO_TASKS_DIR") as err:
        creative.load_creative_tasks()
    assert "pip install minedojo" in str(err.value)
    assert creative.load_guidance() == {}  # guidance is optional


def test_explicit_missing_path_is_named(tmp_path, no_installed_minedojo):
    with pytest.raises(DescriptionFileNotFound, match="given path"):
        creative.load_creative_tasks(tmp_path / "nowhere")


def test_bad_ids(tasks_dir, no_installed_minedojo):
    with pytest.raises(KeyError, match="creative:0' .. 'creative:2"):
        creative.creative_task("creative:3", tasks_dir)
    with pytest.raises(KeyError, match="look like"):
        creative.creative_task("creative:x", tasks_dir)


def test_gap_in_indices_is_rejected(tmp_path, no_installed_minedojo):
    (tmp_path / "creative_tasks.yaml").write_text(
        "creative:0: {collection: manual, guidance: '', prompt: a, source: null}\n"
        "creative:2: {collection: manual, guidance: '', prompt: b, source: null}\n"
    )
    with pytest.raises(ValueError, match="without gaps"):
        creative.load_creative_tasks(tmp_path)
