"""Test-wide settings: CPU only, four virtual host devices so sharding tests see a mesh, XLA's
quickest compilation, one compilation cache for the session."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
# Compiling, not running, is most of the suite's time (the embedded world's programs take
# 10-20 s each to compile and run for a few steps). LLVM's lowest optimisation level and XLA's
# older elemental emitters instead of its fusion emitters compile them about 3x faster (one
# batched world step at 16x24: 17.9 s at the defaults, 11.6 s at -O0, 5.0 s with both; it
# then runs in 7.1 ms instead of 4.8). The tests check behaviour, never speed (benchmarks/ do).
# A test marked `default_codegen` (one that checks bit-exact numerics, which depend on how XLA
# fuses and emits code) reruns in a child pytest without these two flags: see pytest_pyfunc_call.
_QUICK_COMPILE = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
_DEFAULT_CODEGEN_CHILD = "MINECLIP_JAX_TEST_DEFAULT_CODEGEN"
if not os.environ.get(_DEFAULT_CODEGEN_CHILD):
    for _flag in _QUICK_COMPILE:
        if _flag.split("=")[0] not in os.environ["XLA_FLAGS"]:
            os.environ["XLA_FLAGS"] += " " + _flag


import gc  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

_SESSION_XLA_CACHE = "MINECLIP_JAX_TEST_XLA_CACHE"


def pytest_configure(config):
    """One persistent XLA compilation cache for the whole session, fresh each session (as on
    a clean CI machine): every xdist worker and every subprocess the tests start inherit it,
    so a program that several tests compile alike (the embedded world at test sizes, the CLI's
    learner) is compiled once. It replaces `agents.ppo`'s ~/.cache default, which made a
    developer's second suite faster than CI's first and wrote outside the test's tmp dirs.
    A JAX_COMPILATION_CACHE_DIR set by the caller is kept (a warm cache, on purpose)."""
    config.addinivalue_line(
        "markers",
        "slow: one of the suite's longest tests (processes, whole training runs, the notebook); "
        'CI runs them, a contributor may leave them out with -m "not slow" (CONTRIBUTING.md)',
    )
    config.addinivalue_line(
        "markers",
        "default_codegen: runs in a child pytest with XLA's default code generation (for tests "
        "of bit-exact numerics; the suite's quick-compile flags change how XLA fuses and rounds)",
    )
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    path = tempfile.mkdtemp(prefix="mineclip-jax-test-xla-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path  # read by jax at import, here and below
    os.environ[_SESSION_XLA_CACHE] = path  # made here: removed at the end of the session


def pytest_unconfigure(config):
    if os.environ.get(_SESSION_XLA_CACHE) and not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(os.environ.pop(_SESSION_XLA_CACHE), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A `default_codegen` test runs in a child `pytest` of its own, with XLA_FLAGS as a user
    has them (the suite's quick-compile flags left out): what it asserts bit for bit (a split
    run equals the one-program run) holds for XLA's default fusion and code generation, which
    the quick flags change (they round a few values of such runs differently by one ulp). The
    child shares the session's compilation cache; its failure is this test's failure."""
    if pyfuncitem.get_closest_marker("default_codegen") is None:
        return None
    if os.environ.get(_DEFAULT_CODEGEN_CHILD):
        return None  # the child: run the test here
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if f not in _QUICK_COMPILE]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", _SESSION_XLA_CACHE)
    }
    env.update(XLA_FLAGS=" ".join(flags), **{_DEFAULT_CODEGEN_CHILD: "1"})  # fmt: skip
    root = Path(pyfuncitem.config.rootpath)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         pyfuncitem.nodeid],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.fail(
            f"{pyfuncitem.nodeid} failed in its child pytest (XLA's default code generation, "
            f"exit {proc.returncode}):\n{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    return True


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs():
    """Each xdist worker runs hundreds of tests in one process, and JAX keeps every compiled
    program: a worker grew past the 24 GB machine late in the suite (killed twice in a row).
    Dropping the caches after each test module keeps a worker to what one module needs."""
    yield
    import jax

    jax.clear_caches()
    gc.collect()


# The two halves of the Table 1 smoke pipeline and the multi-task smoke run take minutes each (a few `agents.ppo` and
# `agents.evaluate` processes compiling the embedded world): each goes first on its own xdist
# worker, where the two then train the two smoke runs side by side while the short tests fill
# in around them. xdist's load scheduling starts worker k on the k-th chunk of consecutive
# tests (len // workers // 4 tests each, at least 2; round robin under 2 tests per worker), so
# the k-th of these goes to the start of the k-th chunk (all of them first without xdist).
LONG_FIRST = (
    "tests/experiments/test_table1.py::"
    "test_smoke_pipeline_trains_evaluates_reports_and_rescores_the_mineclip_run",
    "tests/experiments/test_table1.py::"
    "test_smoke_pipeline_diagnoses_and_cross_scores_reproduce_each_runs_final_eval",
    "tests/experiments/test_multitask.py::test_smoke_trains_two_stages_evaluates_each_task_and_ships",
)


# The suite's longest tests, marked `slow` here (with every `default_codegen` test, which reruns in
# a child pytest, and LONG_FIRST): multi-process runs (jax.distributed, the all-cores children),
# the notebook, whole CLI training runs (the embedded world, the process and Malmo backends),
# the accelerator script's tiny run: each from half a minute to several minutes on its own. `python -m pytest -q -n 2 -m "not slow"` leaves them out; CI runs them all.
# A node id that ends in "::" marks every test of its file.
SLOW = (
    "tests/agents/test_distributed.py::",
    "tests/agents/test_distributed_resume.py::",
    "tests/mineclip_jax/test_distributed.py::",
    "tests/mineclip_jax/test_train_distributed.py::",
    "tests/agents/test_notebook.py::",
    "tests/agents/test_evaluate_cores.py::",
    "tests/data/test_synthetic_cores.py::",
    "tests/agents/test_cli_backends.py::test_process_backend_trains_checkpoints_and_resumes",
    "tests/agents/test_cli_backends.py::test_process_rollout_metrics_obs_layout_and_tasks",
    "tests/agents/test_cli_backends.py::test_minedojo_backend_trains_against_a_fake_malmo_server",
    "tests/benchmarks/test_accelerator.py::test_tiny_run_measures_every_planned_row_and_writes_the_table",
    "tests/agents/test_cli_voxel.py::test_cli_smoke_on_the_embedded_world",  # 81 s alone
    "tests/agents/test_cli_voxel.py::test_evaluate_rebuilds_the_env_the_policy_was_trained_on",  # 41 s
    *LONG_FIRST,
)


def _is_slow(item) -> bool:
    nodeid = item.nodeid
    return item.get_closest_marker("default_codegen") is not None or any(
        nodeid.startswith(s) if s.endswith("::") else nodeid.split("[")[0] == s for s in SLOW
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
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
