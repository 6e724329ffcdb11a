"""Out-of-process simulators as one Gymnasium vector env (see docs/bridge.md).

``ProcessVectorEnv`` hosts any env factory in spawned worker processes; ``envs.bridge.minedojo``
speaks MineDojo's Malmo protocol to the Java simulator directly.
"""

from envs.bridge.vector import ProcessVectorEnv, WorkerFailedError

__all__ = ["ProcessVectorEnv", "WorkerFailedError"]
