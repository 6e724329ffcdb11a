"""The persistent XLA compilation cache every entry point turns on (`enable`).

The embedded world and the learner take minutes to compile on a small CPU; with the cache a
second process loads the compiled programs from disk instead. Where it goes, in order:

1. `JAX_COMPILATION_CACHE_DIR`, when set (JAX's own variable; the test suite sets it): kept as is;
2. the entry point's explicit choice (`agents.ppo --compile-cache DIR`);
3. `MINECLIP_JAX_COMPILE_CACHE=DIR` ('' or 0: no cache);
4. `~/.cache/mineclip_jax/xla`.

It lives in `mineclip_jax` because every package may import it (DESIGN.md's import rules).
"""

from __future__ import annotations

import os

ENV_VAR = "MINECLIP_JAX_COMPILE_CACHE"
DEFAULT_DIR = "~/.cache/mineclip_jax/xla"
# Programs that compile faster than this are not worth a file each (JAX's default is 1 s);
# JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS overrides it, as JAX documents.
MIN_COMPILE_TIME_S = 2.0
_OFF = ("", "0")


def cache_dir(path: str | None = None) -> str:
    """The directory `enable(path)` would use ('' for none); see the module doc for the order."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return os.environ["JAX_COMPILATION_CACHE_DIR"]
    if path is None:
        path = os.environ.get(ENV_VAR, DEFAULT_DIR)
    return "" if path.strip() in _OFF else os.path.expanduser(path)


def enable(path: str | None = None) -> str:
    """Turn the persistent compilation cache on (see the module doc); returns its directory,
    '' when off. Call it before the first compilation: a process that already compiled without
    a cache keeps none (JAX fixes the cache at its first compile). A cache already configured in
    this process (JAX_COMPILATION_CACHE_DIR, an earlier call) is left as it is."""
    import jax

    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    directory = cache_dir(path)
    if not directory:
        return ""
    os.makedirs(directory, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", directory)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_TIME_S)
    return directory
