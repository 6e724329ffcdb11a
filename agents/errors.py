"""The CLI's error type, below every module that raises it (adapters, devices, ppo)."""


class ConfigError(ValueError):
    """A bad flag; the message names the flag and the fix."""
