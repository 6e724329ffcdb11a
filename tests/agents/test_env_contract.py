"""Bringing your own JAX env: docs/agents.md's example trains as written, and an env whose step
returns no info["success"] is refused with an error that names the contract."""

import re
from pathlib import Path

import jax
import pytest

from agents.errors import EnvContractError

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def _example() -> str:
    text = DOC.read_text().split("## Bring your own JAX env", 1)[1]
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def test_the_documented_example_trains():
    code = _example().replace("range(30)", "range(2)")  # the program, not the learning curve
    scope = {}
    exec(compile(code, str(DOC), "exec"), scope)
    assert set(scope["metrics"]) >= {"pg_loss", "v_loss", "entropy"}


def test_an_env_without_success_is_refused_by_name():
    code = _example().split("learner = ")[0]
    scope = {}
    exec(compile(code, str(DOC), "exec"), scope)
    lrn, env, step = scope["lrn"], scope["env"], scope["step"]

    def step_without_success(*args):
        *out, _ = step(*args)
        return (*out, {})

    env = lrn.JaxEnv(**{**env.__dict__, "step": step_without_success})
    cfg = scope["cfg"]
    learner = lrn.Learner(lrn.LearnerConfig.from_config(cfg), env,
                          scope["networks"].MLPActorCritic((2,)), lrn.make_mesh(1),
                          hp=lrn.HyperParams.from_config(cfg))  # fmt: skip
    runner = learner.init(jax.random.key(0))
    with pytest.raises(EnvContractError, match=r"info\['success'\].*Bring your own JAX env"):
        learner.iteration(runner)
