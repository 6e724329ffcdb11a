"""Temporally consistent random resized crop (paper appendix E.3), in JAX.

One crop box is drawn per video and applied to all of its frames, so motion inside the clip is
not confused with crop jitter. Boxes follow the usual Inception-style recipe: area fraction
uniform in `scale`, aspect ratio log-uniform in `ratio` (relative to the frame's own aspect),
a fixed number of tries, and the whole frame when no try fits. Pure functions of (key, frames);
they jit and vmap.

    key = jax.random.key(0)
    frames = random_resized_crop(key, frames)              # uint8 [T, H, W, 3] -> same shape
    batch = batch_random_resized_crop(key, batch)          # uint8 [B, T, H, W, 3], one box per video
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class CropConfig:
    """Random resized crop parameters (static)."""

    scale: tuple[float, float] = (0.5, 1.0)  # crop area as a fraction of the frame area.
    ratio: tuple[float, float] = (3 / 4, 4 / 3)  # crop aspect relative to the frame's aspect.
    tries: int = 10  # candidate boxes drawn before falling back to the whole frame.

    def __post_init__(self):
        if not 0 < self.scale[0] <= self.scale[1] <= 1:
            raise ValueError(f"scale must satisfy 0 < lo <= hi <= 1, got {self.scale}")
        if not 0 < self.ratio[0] <= self.ratio[1]:
            raise ValueError(f"ratio must satisfy 0 < lo <= hi, got {self.ratio}")


def sample_crop_box(key: jax.Array, height: int, width: int, config: CropConfig = CropConfig()):
    """A crop box `(top, left, crop_height, crop_width)` as float32 scalars, in pixels."""
    k_area, k_ratio, k_y, k_x = jax.random.split(key, 4)
    n = config.tries
    area = (
        height
        * width
        * jax.random.uniform(k_area, (n,), minval=config.scale[0], maxval=config.scale[1])
    )
    log_ratio = jax.random.uniform(
        k_ratio, (n,), minval=jnp.log(config.ratio[0]), maxval=jnp.log(config.ratio[1])
    )
    aspect = jnp.exp(log_ratio) * (width / height)
    crop_w = jnp.sqrt(area * aspect)
    crop_h = jnp.sqrt(area / aspect)
    fits = (crop_w <= width) & (crop_h <= height)
    first = jnp.argmax(fits)  # first candidate that fits (0 if none; masked below)
    any_fits = fits.any()
    crop_h = jnp.where(any_fits, crop_h[first], float(height))
    crop_w = jnp.where(any_fits, crop_w[first], float(width))
    top = jax.random.uniform(k_y) * (height - crop_h)
    left = jax.random.uniform(k_x) * (width - crop_w)
    return top, left, crop_h, crop_w


def crop_and_resize(frames: jax.Array, box, out_height: int, out_width: int) -> jax.Array:
    """Crop the same `box` from every frame of uint8 `[T, H, W, 3]` and resize (bilinear)."""
    top, left, crop_h, crop_w = box
    scale = jnp.stack([out_height / crop_h, out_width / crop_w])
    translation = -jnp.stack([top, left]) * scale
    resized = jax.image.scale_and_translate(
        frames.astype(jnp.float32),
        (frames.shape[0], out_height, out_width, frames.shape[-1]),
        spatial_dims=(1, 2),
        scale=scale,
        translation=translation,
        method="linear",
        antialias=True,
    )
    return jnp.clip(jnp.round(resized), 0, 255).astype(jnp.uint8)


def random_resized_crop(
    key: jax.Array,
    frames: jax.Array,
    config: CropConfig = CropConfig(),
    out_size: tuple[int, int] | None = None,
) -> jax.Array:
    """One random box for the whole clip `[T, H, W, 3]`; output `[T, *out_size, 3]` (default H, W)."""
    height, width = frames.shape[1], frames.shape[2]
    out_height, out_width = out_size or (height, width)
    box = sample_crop_box(key, height, width, config)
    return crop_and_resize(frames, box, out_height, out_width)


def batch_random_resized_crop(
    key: jax.Array,
    videos: jax.Array,
    config: CropConfig = CropConfig(),
    out_size: tuple[int, int] | None = None,
) -> jax.Array:
    """`random_resized_crop` over a batch `[B, T, H, W, 3]`: an independent box per video."""
    keys = jax.random.split(key, videos.shape[0])
    return jax.vmap(lambda k, v: random_resized_crop(k, v, config, out_size))(keys, videos)
