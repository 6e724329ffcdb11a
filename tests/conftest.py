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
# `agents.evaluate` processes compiling the embedded world): each goes first on its own xdist
# worker, where the two then train the two smoke runs side by side while the short tests fill
# in around them. xdist's load scheduling starts worker k on the k-th chunk of consecutive
# tests (len // workers // 4 tests each, at least 2; round robin under 2 tests per worker), so
# the k-th of these goes to the start of the k-th chunk (all of them first without xdist).
LONG_FIRST = (
    "tests/benchmarks/test_table1.py::"
    "test_smoke_pipeline_trains_evaluates_reports_and_rescores_the_mineclip_run",
    "tests/benchmarks/test_table1.py::"
    "test_smoke_pipeline_diagnoses_and_cross_scores_reproduce_each_runs_final_eval",
)


def pytest_collection_modifyitems(config, items):
    rank = {nodeid: i for i, nodeid in enumerate(LONG_FIRST)}
    long = sorted((it for it in items if it.nodeid in rank), key=lambda it: rank[it.nodeid])
    rest = [it for it in items if it.nodeid not in rank]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers <= 1:
        chunk = 0
    elif len(items) < 2 * workers:
        chunk = 1
    else:
        chunk = max(
            min(
                len(items) // workers // 4,
                getattr(config.option, "maxschedchunk", None) or len(items),
            ),
            2,
        )
    for k, item in enumerate(long):  # in order: each lands at k * chunk of the final list
        rest.insert(min((k % workers) * chunk + k // workers, len(rest)), item)
    items[:] = rest
