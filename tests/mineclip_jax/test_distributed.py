"""mineclip_jax.distributed: flag validation, a readable error for an unreachable coordinator, and
a real two-process gloo run that computes what one process with all the devices computes."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from mineclip_jax.distributed import DistributedConfig, DistributedError, validate
from tests.multiprocess import check, free_port, process_env, run_processes


@pytest.mark.parametrize(
    "cfg, message",
    [
        (DistributedConfig(coordinator="h:1"), "without --distributed"),
        (DistributedConfig(distributed=True, coordinator="h:1"), "missing --num-processes"),
        (
            DistributedConfig(distributed=True, coordinator="h:1", num_processes=2, process_id=2),
            "outside [0, 2)",
        ),
        (
            DistributedConfig(distributed=True, coordinator="host", num_processes=2, process_id=0),
            "is not HOST:PORT",
        ),
        (
            DistributedConfig(distributed=True, coordinator="h:0", num_processes=2, process_id=0),
            "is not HOST:PORT",
        ),
        (DistributedConfig(distributed=True, init_timeout_s=0), "--init-timeout-s"),
        (DistributedConfig(distributed=True, heartbeat_timeout_s=0), "--heartbeat-timeout-s"),
    ],
)
def test_bad_flags_are_named(cfg, message):
    with pytest.raises(DistributedError, match=message.replace("[", r"\[").replace(")", r"\)")):
        validate(cfg)


def test_valid_explicit_launch_passes_validation():
    validate(DistributedConfig(distributed=True, coordinator="127.0.0.1:1234", num_processes=2,
                               process_id=1))  # fmt: skip
    validate(DistributedConfig())


_JOIN = """
import sys
from mineclip_jax.distributed import DistributedConfig, initialize
initialize(DistributedConfig(distributed=True, coordinator=sys.argv[1], num_processes=2,
                             process_id=1, init_timeout_s=3))
"""


def test_unreachable_coordinator_is_a_readable_error_not_an_abort():
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", _JOIN, address], env=process_env(1), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"the coordinator at {address} did not answer within 3 s" in result.stderr
    assert time.monotonic() - start < 40


# Each process draws the same global batch, keeps its share, builds the global array from the
# local shards and reduces it over the global mesh; one process with all devices does the same.
_PROGRAM = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from mineclip_jax.distributed import DistributedConfig, initialize, process_share, is_main_process
if len(sys.argv) > 1:
    initialize(DistributedConfig(distributed=True, coordinator=sys.argv[1],
               num_processes=int(sys.argv[2]), process_id=int(sys.argv[3]), init_timeout_s=60))
mesh = Mesh(np.array(jax.devices()), ("batch",))
batch = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
local = batch[process_share(8, "batch")]
x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("batch")), local, (8, 3))
w = jnp.arange(3.0)
total = jax.jit(lambda x: jnp.sum(jnp.tanh(x @ w[:, None]) ** 2),
                out_shardings=NamedSharding(mesh, P()))(x)
print(json.dumps({"main": is_main_process(), "devices": jax.device_count(),
                  "total": float(total)}))
"""


def test_two_processes_compute_what_one_process_with_all_devices_computes():
    port = free_port()
    results = run_processes(
        lambda i: ["-c", _PROGRAM, f"127.0.0.1:{port}", "2", str(i)], count=2, devices=2,
        timeout_s=120,
    )  # fmt: skip
    outs = [json.loads(o.strip().splitlines()[-1]) for o in check(results)]
    (single,) = [json.loads(o.strip().splitlines()[-1]) for o in check(
        run_processes(lambda i: ["-c", _PROGRAM], count=1, devices=4, timeout_s=120))]  # fmt: skip
    assert [o["main"] for o in outs] == [True, False]
    assert all(o["devices"] == 4 for o in outs) and single["devices"] == 4
    assert outs[0]["total"] == outs[1]["total"]
    assert abs(outs[0]["total"] - single["total"]) <= 1e-6 * abs(single["total"])
