"""mineclip_jax.compile_cache: where the persistent XLA cache goes, and that a second process
loads its program from it (the point of turning it on in every entry point)."""

import os
import subprocess
import sys

import pytest

from mineclip_jax import compile_cache

# Compiles one small program after `enable()`; prints the cache directory and JAX's count of
# persistent-cache hits (the event JAX records when it loads an executable from disk).
_PROGRAM = """
from jax._src import monitoring
import jax, jax.numpy as jnp
from mineclip_jax import compile_cache
hits = []
monitoring.register_event_listener(
    lambda name, **kw: hits.append(name) if name == "/jax/compilation_cache/cache_hits" else None)
where = compile_cache.enable()
jax.jit(lambda x: jnp.sin(x) @ x.T)(jnp.ones((8, 8))).block_until_ready()
print(repr(where), len(hits))
"""


def _run(tmp_path, value: str | None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env.pop(compile_cache.ENV_VAR, None)
    if value is not None:
        env[compile_cache.ENV_VAR] = value
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"  # the tiny program counts too
    env["HOME"] = str(tmp_path / "home")  # the default directory, never the developer's
    proc = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    where, hits = proc.stdout.split()
    return eval(where), int(hits)


def test_second_process_loads_the_program_from_the_cache(tmp_path):
    cache = tmp_path / "xla"
    assert _run(tmp_path, str(cache)) == (str(cache), 0)
    assert any(cache.iterdir()), "the first process wrote no compiled program"
    where, hits = _run(tmp_path, str(cache))
    assert where == str(cache) and hits >= 1  # jnp.ones and the jitted function: a hit each


@pytest.mark.parametrize("off", ["", "0"])
def test_the_variable_turns_it_off(tmp_path, off):
    assert _run(tmp_path, off) == ("", 0)
    assert not (tmp_path / "home").exists()


def test_where_it_goes(monkeypatch):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.delenv(compile_cache.ENV_VAR, raising=False)
    assert compile_cache.cache_dir() == os.path.expanduser("~/.cache/mineclip_jax/xla")
    monkeypatch.setenv(compile_cache.ENV_VAR, "/tmp/somewhere")
    assert compile_cache.cache_dir() == "/tmp/somewhere"
    assert compile_cache.cache_dir("/tmp/chosen") == "/tmp/chosen"  # an explicit flag wins
    assert compile_cache.cache_dir("") == ""
    # JAX's own variable (the test suite's session cache) is kept whatever else is asked
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/tmp/jax-own")
    assert compile_cache.cache_dir("/tmp/chosen") == "/tmp/jax-own"
    assert compile_cache.cache_dir("") == "/tmp/jax-own"
