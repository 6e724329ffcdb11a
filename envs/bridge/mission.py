"""MissionInit XML for MineDojo's Malmo mod, generated from our ``TaskSpec``.

Same outline as MineDojo's ``minedojo_mission.xml.j2`` (``minedojo-sim-facts.md`` 3.3): Mission
(About, ModSettings/MsPerTick 50, ServerSection with initial conditions and one world generator,
one Survival AgentSection named ``MineDojoAgent0`` with starting inventory and the observation /
command handlers), ExperimentUID, ClientRole 0 and a ClientAgentConnection on 127.0.0.1 with all
ports 0. Built with ElementTree, so names and values are escaped properly.

Mobs (``initial_mobs``) are not part of the XML: MineDojo summons them with chat commands right
after the mission starts, and so does ``envs.bridge.minedojo`` (see ``reset_commands``).
"""

from __future__ import annotations

import dataclasses
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import numpy as np

from envs import spaces
from envs.tasks.spec import TaskSpec

NAMESPACE = "http://ProjectMalmo.microsoft.com"
MALMO_VERSION = "0.37.0"
DAY_START_TICK = 6000  # noon, so a fresh episode starts in daylight
NIGHT_START_TICK = 13000  # MineDojo's start_at_night
ALWAYS_NIGHT_TICK = 18000  # MineDojo's always_night (time frozen)
OBSERVATION_HANDLERS = ("ObservationFromFullInventory", "ObservationFromFullStats")
COMMAND_HANDLERS = (
    "CameraCommands",
    "SimpleCraftCommands",
    "NearbyCraftCommands",
    "NearbySmeltCommands",
    "HumanLevelCommands",
    "EquipCommands",
    "PlaceCommands",
)


@dataclasses.dataclass(frozen=True)
class MissionOptions:
    """Simulator settings that are not part of a task."""

    height: int = 160
    width: int = 256
    voxel_radius: int = 1  # voxels cover [-r, r]^3 around the player (MineDojo: 1)
    world_seed: int | None = None  # None: Minecraft picks one
    break_speed_multiplier: float = 1.0
    weather: str = "clear"
    generator_options: str = ""  # DefaultWorldGenerator's generatorOptions JSON


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: str(v) for k, v in attrs.items()})
    if text is not None:
        element.text = str(text)
    return element


def start_tick(spec: TaskSpec) -> tuple[int, bool]:
    """(start time in ticks, whether time passes)."""
    if spec.always_night:
        return ALWAYS_NIGHT_TICK, False
    if spec.start_at_night:
        return NIGHT_START_TICK, True
    return DAY_START_TICK, True


def mission_xml(
    spec: TaskSpec, options: MissionOptions = MissionOptions(), experiment_id: str | None = None
) -> str:
    """The MissionInit document (a string) that starts ``spec`` on a Malmo 0.37.0 instance."""
    root = ET.Element(
        "MissionInit",
        {
            "xmlns": NAMESPACE,
            "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
            "SchemaVersion": "",
            "PlatformVersion": MALMO_VERSION,
        },
    )
    mission = _sub(root, "Mission")
    _sub(_sub(mission, "About"), "Summary", f"mineclip-jax: {spec.id}: {spec.prompt}")
    _sub(_sub(mission, "ModSettings"), "MsPerTick", "50")

    server = _sub(mission, "ServerSection")
    conditions = _sub(server, "ServerInitialConditions")
    tick, passes = start_tick(spec)
    time_element = _sub(conditions, "Time")
    _sub(time_element, "StartTime", str(tick))
    _sub(time_element, "AllowPassageOfTime", "true" if passes else "false")
    _sub(conditions, "Weather", options.weather)
    _sub(conditions, "AllowSpawning", "true" if spec.allow_mob_spawn else "false")
    handlers = _sub(server, "ServerHandlers")
    seed = "" if options.world_seed is None else str(options.world_seed)
    if spec.specified_biome is not None:
        _sub(
            handlers,
            "BiomeGenerator",
            forceReset="true",
            seed=seed,
            biome=str(spaces.biome_id(spec.specified_biome)),
        )
    else:
        _sub(
            handlers,
            "DefaultWorldGenerator",
            forceReset="true",
            seed=seed,
            generatorOptions=options.generator_options,
        )

    agent = _sub(mission, "AgentSection", mode="Survival")
    _sub(agent, "Name", "MineDojoAgent0")
    start = _sub(agent, "AgentStart")
    _sub(start, "LowLevelInputs", "true")
    _sub(start, "BreakSpeedMultiplier", f"{options.break_speed_multiplier:g}")
    if spec.initial_inventory:
        inventory = _sub(start, "Inventory")
        for item in spec.initial_inventory:
            _sub(
                inventory,
                "InventoryObject",
                slot=str(item.slot_index),
                type=item.name,
                metadata=str(item.variant),
                quantity=str(item.quantity),
            )
    agent_handlers = _sub(agent, "AgentHandlers")
    for tag in ("FileBasedPerformanceProducer", "ObservationFromDamage", "PauseCommand"):
        _sub(agent_handlers, tag)
    video = _sub(agent_handlers, "VideoProducer", want_depth="false")
    _sub(video, "Width", str(options.width))
    _sub(video, "Height", str(options.height))
    _sub(agent_handlers, "ObservationFromFullInventory", flat="false")
    _sub(agent_handlers, "ObservationFromFullStats")
    r = options.voxel_radius
    grid = _sub(_sub(agent_handlers, "ObservationFromGrid"), "Grid", name="voxels")
    _sub(grid, "min", x=str(-r), y=str(-r), z=str(-r))
    _sub(grid, "max", x=str(r), y=str(r), z=str(r))
    _sub(agent_handlers, "ChatCommands")
    for tag in COMMAND_HANDLERS:
        _sub(agent_handlers, tag)

    _sub(root, "ExperimentUID", experiment_id or str(uuid.uuid4()))
    _sub(root, "ClientRole", "0")
    connection = _sub(root, "ClientAgentConnection")
    _sub(connection, "ClientIPAddress", "127.0.0.1")
    for tag in (
        "ClientMissionControlPort",
        "ClientCommandsPort",
    ):
        _sub(connection, tag, "0")
    _sub(connection, "AgentIPAddress", "127.0.0.1")
    for tag in (
        "AgentMissionControlPort",
        "AgentVideoPort",
        "AgentDepthPort",
        "AgentLuminancePort",
        "AgentObservationsPort",
        "AgentRewardsPort",
        "AgentColourMapPort",
    ):
        _sub(connection, tag, "0")
    # Elements are built without a namespace; the root's xmlns attribute puts all of them in
    # Malmo's namespace for any XML parser (JAXB included). No XML declaration: MalmoEnvServer
    # recognises the message by its "<MissionInit" prefix (MineDojo sends lxml's tostring()).
    return ET.tostring(root, encoding="unicode")


def mob_commands(spec: TaskSpec, rng: np.random.Generator) -> list[str]:
    """``/summon`` chat commands for ``initial_mobs`` at uniform offsets in the spawn range."""
    low = np.asarray(spec.initial_mob_spawn_range_low)
    high = np.asarray(spec.initial_mob_spawn_range_high)
    commands = []
    for mob in spec.initial_mobs:
        dx, dy, dz = (int(v) for v in rng.integers(low, high + 1))
        # Our entity names are Minecraft 1.11's summon ids (snake_case since 1.11).
        commands.append(f"chat /summon {mob} ~{dx} ~{dy} ~{dz}")
    return commands


def fast_reset_commands(
    spec: TaskSpec, rng: np.random.Generator, spread_range: int = 200
) -> list[str]:
    """MineDojo's fast reset as chat commands, one per tick (facts 3.4)."""
    tick, _ = start_tick(spec)
    commands = ["chat /kill"]
    if spread_range > 0:
        commands.append(f"chat /spreadplayers ~ ~ 0 {spread_range} false @p")
    commands += [f"chat /time set {tick}", "chat /weather clear"]
    for slot in range(41):
        commands.append(f"chat /replaceitem entity @p {replaceitem_slot(slot)} air")
    for item in spec.initial_inventory:
        commands.append(
            f"chat /replaceitem entity @p {replaceitem_slot(item.slot_index)} "
            f"minecraft:{item.name} {item.quantity} {item.variant}"
        )
    commands.append("chat /kill @e[type=item]")
    return commands + mob_commands(spec, rng)


def replaceitem_slot(slot: int) -> str:
    """The ``/replaceitem`` slot name of a raw MineDojo slot number (0..40)."""
    if 0 <= slot <= 8:
        return f"slot.hotbar.{slot}"
    if 9 <= slot <= 35:
        return f"slot.inventory.{slot - 9}"
    named = {36: "slot.armor.feet", 37: "slot.armor.legs", 38: "slot.armor.chest",
             39: "slot.armor.head", 40: "slot.weapon.offhand"}  # fmt: skip
    if slot in named:
        return named[slot]
    raise ValueError(f"slot must be in [0, 40], got {slot}")


def handler_names(xml: str) -> Sequence[str]:
    """Tags under AgentHandlers (for tests and debugging)."""
    root = ET.fromstring(xml)
    handlers = root.find(f".//{{{NAMESPACE}}}AgentHandlers")
    return [child.tag.split("}", 1)[1] for child in handlers]
