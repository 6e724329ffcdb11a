"""The CLI's error type, below every module that raises it (adapters, devices, ppo)."""


class ConfigError(ValueError):
    """A bad flag; the message names the flag and the fix."""


class EnvContractError(ValueError):
    """An env handed to the learner breaks its contract (`agents.learner.JaxEnv`, docs/agents.md
    "Bring your own JAX env"); the message says what is missing."""
