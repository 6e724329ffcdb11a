"""Test-wide settings: CPU only, four virtual host devices so sharding tests see a mesh."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()


import gc  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture
def xla_cache(tmp_path, monkeypatch):
    """A persistent XLA compilation cache under the test's own tmp dir, shared by this process
    and every subprocess the test starts (they inherit JAX_COMPILATION_CACHE_DIR, which
    `agents.ppo` keeps instead of its ~/.cache default): a program that one process compiled,
    the others load. Restored to what it was after the test."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    path = str(tmp_path / "xla")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", path)
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", path)
    compilation_cache.reset_cache()  # JAX decides once per process whether a cache is used
    yield path
    jax.config.update("jax_compilation_cache_dir", before)
    compilation_cache.reset_cache()


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs():
    """Each xdist worker runs hundreds of tests in one process, and JAX keeps every compiled
    program: a worker grew past the 24 GB machine late in the suite (killed twice in a row).
    Dropping the caches after each test module keeps a worker to what one module needs."""
    yield
    import jax

    jax.clear_caches()
    gc.collect()
