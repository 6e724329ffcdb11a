"""Walk around the embedded world with keyboard and mouse (pygame; ``pip install mineclip-jax[play]``).

    python -m envs.voxel.play --task "hunt a cow"
    xvfb-run -a python -m envs.voxel.play --max-frames 100    # headless (e.g. a server)

Controls (MineDojo's action space, one game tick per frame at 20 frames/s):
  W / S forward / back    A / D strafe left / right    Space jump    Shift sneak    Ctrl sprint
  mouse or arrow keys: look (15 degree steps)    left click: attack / mine    right click: use
  1-9: equip inventory slot    Q: drop held item    C: next craft target    V: craft it
  Esc: quit
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from envs import spaces, tasks
from envs.voxel import env as E
from envs.voxel import tables as T
from envs.voxel.gym_env import _reset, _step
from envs.voxel.state import VoxelStaticConfig


@dataclasses.dataclass(frozen=True)
class PlayConfig:
    """Play a task of the embedded world by hand."""

    task: str = "hunt a cow"  # paper task id or prompt, or a catalogue id / prompt
    seed: int = 0  # world seed
    scale: int = 3  # window pixels per rendered pixel
    height: int = 160  # rendered height
    width: int = 256  # rendered width
    max_frames: int = 0  # quit after this many frames (0: run until Esc / window closed)
    mouse_deg_per_px: float = 0.5  # camera turn per pixel of mouse motion


def keys_to_action(
    pressed: dict[str, bool], turn: tuple[int, int], fn: int, arg: int = 0, slot: int = 0
):
    """MineDojo action from held keys, a camera turn in 15 degree bins and a functional action."""
    a = spaces.NOOP_ACTION.astype(np.int32).copy()
    a[0] = 1 if pressed.get("forward") else (2 if pressed.get("back") else 0)
    a[1] = 1 if pressed.get("left") else (2 if pressed.get("right") else 0)
    a[2] = (
        1
        if pressed.get("jump")
        else (2 if pressed.get("sneak") else (3 if pressed.get("sprint") else 0))
    )
    a[3] = spaces.CAMERA_NOOP_BIN + int(np.clip(turn[0], -12, 12))
    a[4] = spaces.CAMERA_NOOP_BIN + int(np.clip(turn[1], -12, 12))
    a[5], a[6], a[7] = fn, arg, slot
    return a


def play(cfg: PlayConfig) -> int:
    """Run the window loop; returns the number of frames shown."""
    try:
        import pygame
    except ImportError as e:
        raise SystemExit(
            "play needs pygame: pip install 'mineclip-jax[play]' (or pip install pygame)"
        ) from e
    spec = tasks.get(cfg.task)
    static = VoxelStaticConfig(render=True, height=cfg.height, width=cfg.width)
    params = E.make_params(spec, static, seed=cfg.seed)
    key = jax.random.key(cfg.seed)
    obs, state = _reset(key, params, static)
    pygame.init()
    screen = pygame.display.set_mode((cfg.width * cfg.scale, cfg.height * cfg.scale + 24))
    pygame.display.set_caption(f"mineclip-jax voxel world: {spec.prompt}")
    font = pygame.font.Font(None, 22)
    clock = pygame.time.Clock()
    pygame.event.set_grab(True)
    pygame.mouse.set_visible(False)
    craft_names = T.RECIPE_NAMES
    craft_i = 0
    mouse_acc = np.zeros(2)
    frames = 0
    message = ""
    running = True
    while running:
        fn, slot = spaces.FN_NOOP, 0
        for event in pygame.event.get():
            if event.type == pygame.QUIT:
                running = False
            elif event.type == pygame.KEYDOWN:
                if event.key == pygame.K_ESCAPE:
                    running = False
                elif pygame.K_1 <= event.key <= pygame.K_9:
                    fn, slot = spaces.FN_EQUIP, event.key - pygame.K_1
                elif event.key == pygame.K_q:
                    fn = spaces.FN_DROP
                elif event.key == pygame.K_c:
                    craft_i = (craft_i + 1) % len(craft_names)
                elif event.key == pygame.K_v:
                    fn = spaces.FN_CRAFT
            elif event.type == pygame.MOUSEMOTION:
                mouse_acc += np.array([event.rel[1], -event.rel[0]]) * cfg.mouse_deg_per_px
        keys = pygame.key.get_pressed()
        buttons = pygame.mouse.get_pressed()
        if fn == spaces.FN_NOOP:
            fn = (
                spaces.FN_ATTACK
                if buttons[0]
                else (spaces.FN_USE if buttons[2] else spaces.FN_NOOP)
            )
        turn = np.trunc(mouse_acc / spaces.CAMERA_BIN_DEG).astype(int)
        mouse_acc -= turn * spaces.CAMERA_BIN_DEG
        turn += np.array(
            [keys[pygame.K_DOWN] - keys[pygame.K_UP], keys[pygame.K_LEFT] - keys[pygame.K_RIGHT]]
        )
        pressed = {
            "forward": keys[pygame.K_w], "back": keys[pygame.K_s], "left": keys[pygame.K_a],
            "right": keys[pygame.K_d], "jump": keys[pygame.K_SPACE],
            "sneak": keys[pygame.K_LSHIFT], "sprint": keys[pygame.K_LCTRL],
        }  # fmt: skip
        arg = spaces.craft_index(craft_names[craft_i])
        action = keys_to_action(pressed, (turn[0], turn[1]), fn, arg, slot)
        key, k = jax.random.split(key)
        obs, state, reward, term, trunc, info = _step(k, state, jnp.asarray(action), params, static)
        if float(reward) != 0 or bool(info["success"]):
            message = f"reward {float(reward):+.1f}  success {bool(info['success'])}"
        if bool(term) or bool(trunc):
            key, k = jax.random.split(key)
            obs, state = _reset(k, params, static)
            message = "episode over: new episode"
        rgb = np.asarray(obs["rgb"])
        surf = pygame.surfarray.make_surface(np.transpose(rgb, (1, 0, 2)))
        surf = pygame.transform.scale(surf, (cfg.width * cfg.scale, cfg.height * cfg.scale))
        screen.fill((0, 0, 0))
        screen.blit(surf, (0, 0))
        life = float(obs["life_stats"]["life"][0])
        food = float(obs["life_stats"]["food"][0])
        held = spaces.item_name(int(obs["inventory"]["name"][0]))
        hud = f"life {life:.0f}  food {food:.0f}  hand {held}  craft[C/V] {craft_names[craft_i]}  {message}"
        screen.blit(font.render(hud, True, (255, 255, 255)), (4, cfg.height * cfg.scale + 4))
        pygame.display.flip()
        clock.tick(20)
        frames += 1
        if cfg.max_frames and frames >= cfg.max_frames:
            running = False
    pygame.quit()
    return frames


if __name__ == "__main__":
    play(tyro.cli(PlayConfig))
