"""Test-wide settings: CPU only, four virtual host devices so sharding tests see a mesh."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()


import gc  # noqa: E402

import pytest  # noqa: E402


def use_xla_cache(path, monkeypatch):
    """A persistent XLA compilation cache in `path`, shared by this process and every
    subprocess started while it is in use (they inherit JAX_COMPILATION_CACHE_DIR, which
    `agents.ppo` keeps instead of its ~/.cache default): a program that one process compiled,
    the others load. A generator: restores the previous cache when resumed (`xla_cache`)."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    path = str(path)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", path)
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", path)
    compilation_cache.reset_cache()  # JAX decides once per process whether a cache is used
    try:
        yield path
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        compilation_cache.reset_cache()


@pytest.fixture
def xla_cache(tmp_path, monkeypatch):
    """A persistent XLA compilation cache under the test's own tmp dir (`use_xla_cache`),
    restored to what it was after the test."""
    yield from use_xla_cache(tmp_path / "xla", monkeypatch)


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs():
    """Each xdist worker runs hundreds of tests in one process, and JAX keeps every compiled
    program: a worker grew past the 24 GB machine late in the suite (killed twice in a row).
    Dropping the caches after each test module keeps a worker to what one module needs."""
    yield
    import jax

    jax.clear_caches()
    gc.collect()


# The two halves of the Table 1 smoke pipeline take minutes each (a few `agents.ppo` and
# `agents.evaluate` processes compiling the embedded world): they go first. xdist hands the
# first tests out round robin, so they start at once on different workers, which then train the
# two smoke runs side by side; the short tests fill in around them.
LONG_FIRST = (
    "tests/benchmarks/test_table1.py::"
    "test_smoke_pipeline_trains_evaluates_reports_and_rescores_the_mineclip_run",
    "tests/benchmarks/test_table1.py::"
    "test_smoke_pipeline_diagnoses_and_cross_scores_reproduce_each_runs_final_eval",
)


def pytest_collection_modifyitems(config, items):
    rank = {nodeid: i for i, nodeid in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid, len(rank)))  # stable: the rest as before
