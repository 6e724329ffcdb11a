"""Test-wide settings: CPU only, four virtual host devices so sharding tests see a mesh, XLA's
quickest compilation, one compilation cache for the session."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
# Compiling, not running, is most of the suite's time (the embedded world's programs take
# 10-20 s each to compile and run for a few steps): LLVM's lowest optimisation level compiles
# them about a third faster. The tests check behaviour, never speed (benchmarks/ do that).
if "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=0"


import gc  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402

_SESSION_XLA_CACHE = "MINECLIP_JAX_TEST_XLA_CACHE"


def pytest_configure(config):
    """One persistent XLA compilation cache for the whole session, fresh each session (as on
    a clean CI machine): every xdist worker and every subprocess the tests start inherit it,
    so a program that several tests compile alike (the embedded world at test sizes, the CLI's
    learner) is compiled once. It replaces `agents.ppo`'s ~/.cache default, which made a
    developer's second suite faster than CI's first and wrote outside the test's tmp dirs.
    A JAX_COMPILATION_CACHE_DIR set by the caller is kept (a warm cache, on purpose)."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    path = tempfile.mkdtemp(prefix="mineclip-jax-test-xla-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path  # read by jax at import, here and below
    os.environ[_SESSION_XLA_CACHE] = path  # made here: removed at the end of the session


def pytest_unconfigure(config):
    if os.environ.get(_SESSION_XLA_CACHE) and not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(os.environ.pop(_SESSION_XLA_CACHE), ignore_errors=True)


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
