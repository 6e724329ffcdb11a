"""The Malmo client, MissionInit XML, obs decoding and MineDojoEnv against the fake server."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from envs import spaces, tasks
from envs.bridge import mission
from envs.bridge.fake_server import FakeMalmoServer, FakeOptions
from envs.bridge.malmo import (
    HELLO,
    MalmoClient,
    MalmoConnectionError,
    MalmoFrame,
    make_token,
    step_message,
)
from envs.bridge.minedojo import (
    MineDojoEnv,
    SimulatorError,
    action_to_commands,
    decode_observation,
    signals_from_info,
)

MILK = "harvest_milk_with_empty_bucket_and_cow"
NS = "{http://ProjectMalmo.microsoft.com}"


def _noop() -> np.ndarray:
    return spaces.NOOP_ACTION.copy()


def test_client_handshake_mission_peek_step_exit():
    with FakeMalmoServer(height=4, width=6, options=FakeOptions(busy_replies=2)) as server:
        client = MalmoClient(server.port, timeout_s=10)
        client.connect()
        assert client.quit_mission() is True
        xml = mission.mission_xml(tasks.get(MILK), mission.MissionOptions(height=4, width=6))
        busy = client.start_mission(xml, make_token("exp-1"), retry_interval_s=0.01)
        assert busy == 2  # Malmo said "busy" twice; the client retried instead of giving up
        frame = client.peek()
        assert len(frame.pixels) == 4 * 6 * 3 and not frame.done
        assert frame.info["inventory"][0]["name"] == "bucket"  # from the MissionInit
        frame = client.step(["camera 0 30", "forward 1"])
        assert server.commands == [["camera 0 30", "forward 1"]]
        assert frame.info["yaw"] == 30.0 and frame.info["zpos"] > 0.5
        assert client.exit_server() is True
        client.close()
        assert server.hellos == [HELLO] and server.quits == 1 and server.peeks == 1
        assert server.server_ticks == 1  # StepServer followed StepClient
        assert server.missions[0][1] == "exp-1:0:0:1:true"


def test_step_message_and_token_format():
    assert step_message(["a 1", "b 0"]) == b"<StepClient0>a 1\nb 0</StepClient0 >"
    with pytest.raises(ValueError, match="newline"):
        step_message(["chat /say hi\nforward 1"])
    assert make_token("u", seed=7) == "u:0:0:1:true:7"


def test_connection_errors_are_clear():
    server = FakeMalmoServer().start()
    port = server.port
    server.stop()
    with pytest.raises(MalmoConnectionError, match=f"cannot connect .*:{port}"):
        MalmoClient(port, timeout_s=2).connect()
    with FakeMalmoServer(options=FakeOptions(die_at_step=1)) as server:
        client = MalmoClient(server.port, timeout_s=5)
        client.connect()
        client.start_mission(mission.mission_xml(tasks.get(MILK)), make_token())
        with pytest.raises(MalmoConnectionError, match="closed the connection"):
            client.step(["forward 1"])


def test_mission_xml_from_task_specs():
    spec = tasks.get(MILK)
    xml = mission.mission_xml(spec, mission.MissionOptions(height=90, width=120, world_seed=5))
    assert xml.startswith("<MissionInit")  # Malmo dispatches on this prefix
    root = ET.fromstring(xml)
    assert root.tag == f"{NS}MissionInit" and root.get("PlatformVersion") == "0.37.0"
    assert root.find(f".//{NS}DefaultWorldGenerator").get("seed") == "5"
    assert root.findtext(f".//{NS}VideoProducer/{NS}Width") == "120"
    (item,) = root.iter(f"{NS}InventoryObject")
    assert (item.get("slot"), item.get("type"), item.get("quantity")) == ("0", "bucket", "1")
    assert root.findtext(f".//{NS}Name") == "MineDojoAgent0"
    handlers = mission.handler_names(xml)
    for needed in ("ObservationFromFullStats", "ObservationFromGrid", "HumanLevelCommands",
                   "NearbyCraftCommands", "EquipCommands", "PlaceCommands", "ChatCommands"):  # fmt: skip
        assert needed in handlers

    night = next(
        tasks.get(t)
        for t in tasks.list_tasks("combat")
        if tasks.get(t).always_night and tasks.get(t).specified_biome
    )
    root = ET.fromstring(mission.mission_xml(night))
    assert root.findtext(f".//{NS}StartTime") == "18000"
    assert root.findtext(f".//{NS}AllowPassageOfTime") == "false"
    biome = root.find(f".//{NS}BiomeGenerator")
    assert int(biome.get("biome")) == spaces.biome_id(night.specified_biome)
    commands = mission.mob_commands(night, np.random.default_rng(0))
    assert len(commands) == len(night.initial_mobs) and commands[0].startswith("chat /summon ")


def test_action_translation_follows_minedojo():
    names = np.zeros(36, np.int32)
    names[3] = spaces.item_id("cobblestone")
    a = _noop()
    a[0], a[1], a[2], a[3], a[4], a[5] = 1, 2, 1, 11, 14, 3
    commands, invalid = action_to_commands(a, names)
    assert invalid == ""
    for expected in ("forward 1", "back 0", "left 0", "right 1", "jump 1", "sneak 0",
                     "camera -15 30", "attack 1", "use 0"):  # fmt: skip
        assert expected in commands

    def functional(fn: int, arg: int = 0, slot: int = 0) -> list[str]:
        b = _noop()
        b[5], b[6], b[7] = fn, arg, slot
        return action_to_commands(b, names)[0][11:]

    assert functional(4, spaces.craft_index("planks")) == ["craft planks"]
    assert functional(4, spaces.craft_index("furnace")) == ["craftNearby furnace"]
    assert functional(4, spaces.craft_index("iron_ingot")) == ["smeltNearby iron_ingot"]
    assert functional(5, slot=3) == ["equip cobblestone"]
    assert functional(6, slot=3) == ["place cobblestone"]
    assert functional(7, slot=3) == ["chat /replaceitem entity @p slot.hotbar.3 air"]
    b = _noop()
    b[5], b[7] = 6, 4  # place from an empty slot: dropped and reported
    commands, invalid = action_to_commands(b, names)
    assert not any(c.startswith("place") for c in commands) and "empty slot 4" in invalid
    with pytest.raises(ValueError, match="out of range"):
        action_to_commands(np.array([0, 0, 0, 25, 12, 0, 0, 0]), names)


def test_decode_observation_fixes_minedojo_defects():
    with FakeMalmoServer(height=6, width=5) as server:
        info = server._info()
        pixels = server._pixels()
        image = server.image()
    info["damage_source"]["damage_amout"] = 3.5  # Java's spelling
    info["yaw"] = 190.0  # Java's yaw is unbounded
    info["stat"]["kill_entity"] = {"pig_zombie": 2, "cow": 1, "not_a_mob": 9}
    obs = decode_observation(MalmoFrame(pixels, info, False), 6, 5)
    np.testing.assert_array_equal(obs["rgb"], image)  # flipped back to top row first
    assert obs["rgb"][0, 0, 0] == 0 and obs["rgb"][5, 0, 0] == 5
    assert obs["damage_source"]["damage_amount"][0] == 3.5
    assert obs["location_stats"]["yaw"][0] == -170.0
    assert spaces.observation_space(6, 5).contains(obs)
    # Voxels: Java's flat x-fastest list, reshaped so [x, y, z] indexes (+1, -1, -1) = stone.
    assert obs["voxels"]["block_name"][2, 0, 0] == spaces.block_id("stone")
    assert obs["voxels"]["block_name"][0, 0, 0] == spaces.block_id("dirt")
    assert obs["voxels"]["block_name"][2, 1, 0] == spaces.block_id("air")
    signals = signals_from_info(info)
    assert signals.kills[spaces.entity_id("zombie_pigman")] == 2
    assert signals.kills[spaces.entity_id("cow")] == 1
    # Empty frame (nothing rendered yet) -> zeros, as MineDojo; wrong size -> clear error.
    assert not decode_observation(MalmoFrame(b"", info, False), 6, 5)["rgb"].any()
    with pytest.raises(Exception, match="expected 6x5x3"):
        decode_observation(MalmoFrame(b"\0" * 10, info, False), 6, 5)


def test_env_reward_success_extra_ticks_and_masks():
    def give_milk(world):
        world.slots[0] = ["milk_bucket", 1, 0]

    options = FakeOptions(effect_lag_ticks=2)
    with FakeMalmoServer(options=options, script={6: give_milk}) as server:
        env = MineDojoEnv(MILK, malmo_port=server.port, height=32, width=48)
        try:
            obs, info = env.reset(seed=0)
            assert env.observation_space.contains(obs)
            assert spaces.item_name(obs["inventory"]["name"][0]) == "bucket"
            assert obs["masks"]["action_type"][2]  # drop is valid: the main hand holds a bucket
            ticks = len(server.commands)  # the cow was summoned with a chat command
            assert server.commands[0][0].startswith("chat /summon cow")
            a = _noop()
            a[5], a[6] = 4, spaces.craft_index("planks")
            obs, reward, terminated, truncated, info = env.step(a)
            # craft + 2 no-op ticks: with Malmo's 2-tick lag the planks show up in this step.
            assert len(server.commands) == ticks + 3
            assert "planks" in [spaces.item_name(i) for i in obs["inventory"]["name"]]
            assert reward == 0.0 and not terminated and not truncated
            obs, reward, terminated, truncated, info = env.step(_noop())  # tick 5
            assert len(server.commands) == ticks + 4 and reward == 0.0
            obs, reward, terminated, truncated, info = env.step(_noop())  # tick 6: milk
            assert reward == 1.0 and terminated and info["success"]
        finally:
            env.close()


def test_env_refuses_float_and_out_of_range_actions_before_minecraft():
    with FakeMalmoServer() as server:
        env = MineDojoEnv("harvest_1_log", malmo_port=server.port, height=8, width=8)
        try:
            env.reset(seed=0)
            sent = len(server.commands)
            with pytest.raises(TypeError, match=r"integers.*'move' \(component 0\)"):
                env.step(_noop().astype(np.float64) + 0.5)  # was cast to a valid action
            bad = _noop()
            bad[4] = 25
            with pytest.raises(ValueError, match=r"'yaw' \(component 4\) must be in \[0, 24\]"):
                env.step(bad)
            assert len(server.commands) == sent  # nothing reached Minecraft
            env.step(_noop())
        finally:
            env.close()


def test_creative_success_is_reported_but_does_not_end_the_episode():
    def dig(world):
        world.pos[1] = 60.0  # 4 blocks below the start: dig_hole's depth check passes

    def climb_out(world):
        world.pos[1] = 64.0

    with FakeMalmoServer(script={2: dig, 3: climb_out}) as server:
        env = MineDojoEnv("dig_hole", malmo_port=server.port, height=8, width=8, max_steps=5)
        try:
            env.reset(seed=0)
            env.step(_noop())
            _, _, terminated, truncated, info = env.step(_noop())
            assert info["success"] and not terminated and not truncated
            _, _, terminated, _, info = env.step(_noop())  # back at the surface
            assert info["success"] and not terminated  # sticky within the episode
            env.reset(seed=1)
            assert not env.step(_noop())[4]["success"]  # a new episode starts over
        finally:
            env.close()


def test_env_truncation_done_flag_and_dead_server():
    with FakeMalmoServer(options=FakeOptions(done_at_step=3)) as server:
        env = MineDojoEnv("harvest_1_log", malmo_port=server.port, height=8, width=8, max_steps=50)
        try:
            env.reset()
            results = [env.step(_noop()) for _ in range(3)]
            _, _, terminated, truncated, info = results[-1]
            assert truncated and not terminated and info["malmo_done"]
            assert not results[0][3]
        finally:
            env.close()
    with FakeMalmoServer() as server:
        env = MineDojoEnv("harvest_1_log", malmo_port=server.port, height=8, width=8, max_steps=2)
        try:
            env.reset()
            assert not env.step(_noop())[3]
            assert env.step(_noop())[3]  # time limit
        finally:
            env.close()
    with FakeMalmoServer(options=FakeOptions(die_at_step=2)) as server:
        env = MineDojoEnv("harvest_1_log", malmo_port=server.port, height=8, width=8)
        try:
            env.reset()
            env.step(_noop())
            with pytest.raises(SimulatorError, match="closed the connection"):
                env.step(_noop())
            # No stale observation: stepping again needs a reset.
            with pytest.raises(RuntimeError, match="call reset"):
                env.step(_noop())
        finally:
            env.close()
