"""Launcher errors and the MineDojo vector env end to end with a fake ``java`` (real processes).

The fake java is ``envs/bridge/fake_server.py`` run as a script: it answers ``-version`` like a
JDK, reads the mod config the launcher writes, prints the mod's readiness lines and serves the
Malmo protocol until ``<Exit>``.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import sys
import tempfile

import numpy as np
import pytest

from envs import spaces
from envs.bridge import fake_server, launcher
from envs.bridge.malmo import MalmoClient
from envs.bridge.minedojo import make_minedojo_vector
from tests.envs.bridge.procs import children_of, wait_all_dead

FAKE_SERVER = os.path.abspath(fake_server.__file__)


def _script(path, body: str) -> str:
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def fake_java(tmp_path):
    return _script(tmp_path / "java", f'exec "{sys.executable}" "{FAKE_SERVER}" "$@"')


@pytest.fixture
def fake_jar(tmp_path):
    path = tmp_path / "MalmoMod-0.37.0-fat.jar"
    path.write_bytes(b"PK\x03\x04 not a real jar")
    return str(path)


def test_missing_jar_and_missing_java_say_what_to_do(tmp_path, fake_jar, monkeypatch):
    monkeypatch.delenv(launcher.JAR_ENV, raising=False)
    config = launcher.LaunchConfig(java="java")
    with pytest.raises(launcher.LaunchError, match="MINECLIP_MALMO_JAR.*docs/bridge.md"):
        launcher.launch(config, str(tmp_path / "run"))
    config = launcher.LaunchConfig(jar=str(tmp_path / "nope.jar"))
    with pytest.raises(launcher.LaunchError, match="jar not found.*build MalmoMod"):
        launcher.launch(config, str(tmp_path / "run"))
    config = launcher.LaunchConfig(jar=fake_jar, java=str(tmp_path / "no-such-java"))
    with pytest.raises(launcher.LaunchError, match="openjdk-8"):
        launcher.launch(config, str(tmp_path / "run"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(launcher.LaunchError, match="no java found.*Java 8"):
        launcher.launch(launcher.LaunchConfig(jar=fake_jar), str(tmp_path / "run"))


def test_wrong_java_version_and_missing_xvfb(tmp_path, fake_jar, fake_java, monkeypatch):
    java17 = _script(
        tmp_path / "java17", "echo 'openjdk version \"17.0.9\" 2023-10-17' >&2; exit 0"
    )
    with pytest.raises(launcher.LaunchError, match="Java 17.*Java 8 only"):
        launcher.launch(launcher.LaunchConfig(jar=fake_jar, java=java17), str(tmp_path / "r"))
    assert launcher.java_major_version(fake_java) == 8
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(fake_java))  # no xvfb-run on this PATH
    with pytest.raises(launcher.LaunchError, match="apt-get install xvfb"):
        launcher.launch(launcher.LaunchConfig(jar=fake_jar, java=fake_java), str(tmp_path / "r"))


def test_minedojo_vector_checks_java_and_jar_before_spawning(tmp_path, fake_jar, monkeypatch):
    from envs.bridge import minedojo, vector

    java17 = _script(
        tmp_path / "java17", "echo 'openjdk version \"17.0.9\" 2023-10-17' >&2; exit 0"
    )
    spawned = []
    monkeypatch.setattr(vector.ProcessVectorEnv, "__init__", lambda *a, **k: spawned.append(a))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    os.makedirs(tmp_path / "tmp")
    with pytest.raises(launcher.LaunchError, match="Java 17.*Java 8 only"):
        minedojo.make_minedojo_vector("harvest_1_log", 2, jar=fake_jar, java=java17)
    unreadable = tmp_path / "locked.jar"
    unreadable.write_bytes(b"PK")
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # root reads anything: then only the Java check runs
        with pytest.raises(launcher.LaunchError, match="not readable"):
            minedojo.make_minedojo_vector("harvest_1_log", 2, jar=str(unreadable), java=java17)
    with pytest.raises(launcher.LaunchError, match="jar not found"):
        minedojo.make_minedojo_vector("harvest_1_log", 2, jar=str(tmp_path / "nope.jar"))
    assert not spawned and not os.listdir(tmp_path / "tmp")  # no workers, no run dir left


def test_launch_ready_from_log_then_stop(tmp_path, fake_jar, fake_java):
    before = children_of(os.getpid())
    config = launcher.LaunchConfig(jar=fake_jar, java=fake_java, headless=False, seed=3)
    instance = launcher.launch(config, str(tmp_path / "run"))
    try:
        cfg_text = (tmp_path / "run" / "config" / "malmomodCLIENT.cfg").read_text()
        assert f"I:portOverride={instance.port}" in cfg_text and "B:env=true" in cfg_text
        assert "I:seed=3" in cfg_text
        log = open(instance.log_path).read()
        assert "-jar " + fake_jar in log and "OverclockingPlugin" in log
        client = MalmoClient(instance.port, timeout_s=10)
        client.connect()
        assert client.quit_mission()
        assert client.exit_server()
        client.close()
        instance.proc.wait(timeout=10)
    finally:
        instance.stop(grace_s=1.0)
    assert not instance.running
    assert children_of(os.getpid()) <= before


def test_launch_failures_carry_the_log(tmp_path, fake_jar, fake_java, monkeypatch):
    config = launcher.LaunchConfig(jar=fake_jar, java=fake_java, headless=False)
    monkeypatch.setenv("FAKE_MALMO_FAIL_START", "1")
    with pytest.raises(launcher.LaunchError, match="(?s)exited with code 1.*fake failure to start"):
        launcher.launch(config, str(tmp_path / "a"))
    monkeypatch.delenv("FAKE_MALMO_FAIL_START")
    monkeypatch.setenv("FAKE_MALMO_NEVER_READY", "1")
    before = children_of(os.getpid())
    slow = launcher.LaunchConfig(jar=fake_jar, java=fake_java, headless=False, ready_timeout_s=1.5)
    with pytest.raises(
        launcher.LaunchError, match="(?s)not ready within 1.5 s.*never getting there"
    ):
        launcher.launch(slow, str(tmp_path / "b"))
    assert children_of(os.getpid()) <= before  # the hung instance was killed


def _java_pids(run_root: str) -> list[int]:
    pids = []
    for path in glob.glob(os.path.join(run_root, "instance-*", "minecraft.log")):
        pids += [int(p) for p in re.findall(r"\[fake-java\] pid (\d+)", open(path).read())]
    return pids


def test_minedojo_vector_end_to_end_with_instance_crash(tmp_path, fake_jar, fake_java, monkeypatch):
    # Env 1's Minecraft dies once, on its 3rd tick (the zombie summon, then the 2nd agent step).
    monkeypatch.setenv("FAKE_MALMO_DIE_AT_STEP", "3")
    monkeypatch.setenv("FAKE_MALMO_DIE_ENV_ID", "1")
    monkeypatch.setenv("FAKE_MALMO_DIE_MARKER", str(tmp_path / "died"))
    before = children_of(os.getpid())
    run_root = str(tmp_path / "instances")
    env = make_minedojo_vector(
        "combat_zombie_plains_diamond_armors_diamond_sword_shield",
        2,
        jar=fake_jar,
        java=fake_java,
        headless=False,
        run_root=run_root,
        height=16,
        width=24,
        timeout_s=60,
    )
    try:
        assert env.single_action_space == spaces.ACTION_SPACE
        obs, _ = env.reset(seed=0)
        assert obs["rgb"].shape == (2, 16, 24, 3)
        assert env.observation_space.contains(obs)
        assert os.path.isdir(os.path.join(run_root, "instance-0"))
        assert os.path.isdir(os.path.join(run_root, "instance-1"))
        sword = spaces.item_id("diamond_sword")
        assert (obs["inventory"]["name"][:, 0] == sword).all()
        actions = np.tile(spaces.NOOP_ACTION, (2, 1))
        _, _, _, trunc, info = env.step(actions)
        assert not trunc.any()
        _, _, _, trunc, info = env.step(actions)
        np.testing.assert_array_equal(trunc, [False, True])
        assert "closed the connection" in info["bridge_fault"][1]
        assert "Minecraft exited" in info["bridge_fault"][1]
        obs, _, _, trunc, _ = env.step(actions)
        assert not trunc.any() and (obs["inventory"]["name"][:, 0] == sword).all()
        assert len(_java_pids(run_root)) == 3  # two instances plus the replacement of env 1
    finally:
        env.close()
    assert wait_all_dead(_java_pids(run_root), 10.0) == []
    assert children_of(os.getpid()) <= before
