"""Start one MineDojo Minecraft instance from a prebuilt MalmoMod fat jar, and stop it.

MineDojo runs Gradle in a fresh temp copy on every launch (``minedojo-sim-facts.md`` 3.1, 4): slow,
network-bound and racy with several instances. Here the user builds
``MalmoMod-0.37.0-fat.jar`` once on a networked machine (docs/bridge.md) and every instance runs
it directly, as MineDojo's ``launchClient.sh`` does when that jar exists:

    java -Dfml.coreMods.load=com.microsoft.Malmo.OverclockingPlugin -Xmx2G -Dfile.encoding=UTF-8
         -Duser.country=US -Duser.language=en -Duser.variant -jar MalmoMod-0.37.0-fat.jar

from a per-instance run directory holding ``config/malmomodCLIENT.cfg`` (port, env mode,
replaceable) and, if given, a copy of MineDojo's ``Malmo/Minecraft/run`` template (options.txt with
its render settings). Headless machines get ``xvfb-run -a -s "-screen 0 1024x768x24"``. The
instance is ready when its log prints ``CLIENT enter state: DORMANT``; its port comes from
``***** Start MalmoEnvServer on port N``. Every wait is bounded, and the log is kept.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence

JAR_ENV = "MINECLIP_MALMO_JAR"  # default jar path
RUN_TEMPLATE_ENV = "MINECLIP_MALMO_RUN_TEMPLATE"  # default run-dir template
DEFAULT_JVM_ARGS = (
    "-Dfml.coreMods.load=com.microsoft.Malmo.OverclockingPlugin",
    "-Xmx2G",
    "-Dfile.encoding=UTF-8",
    "-Duser.country=US",
    "-Duser.language=en",
    "-Duser.variant",
)
XVFB_ARGS = ("xvfb-run", "-a", "-s", "-screen 0 1024x768x24")
READY_PATTERN = re.compile(r"CLIENT enter state: DORMANT")
PORT_PATTERN = re.compile(r"Start MalmoEnvServer on port (\d+)")
_LOG_TAIL_LINES = 30
BUILD_HINT = "see docs/bridge.md, 'Building the MalmoMod jar once'"


class LaunchError(RuntimeError):
    """Minecraft could not be started; the message says what to install or fix."""


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """How to start one instance."""

    jar: str | None = None  # MalmoMod-0.37.0-fat.jar (default: $MINECLIP_MALMO_JAR)
    java: str | None = None  # java executable (default: $JAVA_HOME/bin/java, then PATH)
    run_template: str | None = None  # MineDojo's Malmo/Minecraft/run to copy per instance
    headless: bool | None = None  # wrap in xvfb-run (None: when $DISPLAY is unset)
    ready_timeout_s: float = 300.0  # first launch loads assets; MineDojo reports ~60 s
    jvm_args: tuple[str, ...] = DEFAULT_JVM_ARGS
    require_java8: bool = True  # Minecraft 1.11.2 + Forge 13.20 run on Java 8 only
    seed: int | None = None  # malmoseed in the mod config


def tail(path: str, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 32768))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError as err:
        return f"(no log: {err})"


def resolve_jar(jar: str | None) -> str:
    path = jar or os.environ.get(JAR_ENV)
    if not path:
        raise LaunchError(
            "no MalmoMod jar given: pass jar=... or set $MINECLIP_MALMO_JAR to "
            f"MalmoMod-0.37.0-fat.jar ({BUILD_HINT})"
        )
    if not os.path.isfile(path):
        raise LaunchError(
            f"MalmoMod jar not found at {path!r}: build MalmoMod-0.37.0-fat.jar once on a "
            f"networked machine and copy it here ({BUILD_HINT})"
        )
    if not os.access(path, os.R_OK):
        raise LaunchError(
            f"MalmoMod jar {path!r} is not readable by this user: fix its permissions "
            f"(chmod a+r) or copy it somewhere readable ({BUILD_HINT})"
        )
    return os.path.abspath(path)


def resolve_java(java: str | None) -> str:
    if java:
        found = shutil.which(java)
        if found is None:
            raise LaunchError(
                f"java executable {java!r} not found or not executable; install a Java 8 "
                "runtime (e.g. apt-get install openjdk-8-jre-headless) and pass its path"
            )
        return found
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("java")
    if found is None:
        raise LaunchError(
            "no java found (not in $JAVA_HOME/bin nor on PATH): Minecraft 1.11.2 needs a "
            "Java 8 runtime, e.g. apt-get install openjdk-8-jre-headless, then set JAVA_HOME"
        )
    return found


def java_major_version(java: str, timeout_s: float = 30.0) -> int:
    """Major version of ``java`` (8 for "1.8.0_x", 17 for "17.0.x")."""
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LaunchError(f"could not run {java} -version: {err}") from err
    text = out.stderr + out.stdout
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if match is None:
        raise LaunchError(f"cannot read the version of {java}: {text.strip()[:200]!r}")
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return minor if major == 1 else major


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_mod_config(run_dir: str, port: int, seed: int | None) -> str:
    """``config/malmomodCLIENT.cfg`` as MineDojo's launchClient.sh writes it (env mode on)."""
    config_dir = os.path.join(run_dir, "config")
    os.makedirs(config_dir, exist_ok=True)
    path = os.path.join(config_dir, "malmomodCLIENT.cfg")
    with open(path, "w") as f:
        f.write(
            "# Configuration file\n# Written by envs.bridge.launcher\n\n"
            f"malmoports {{\n  I:portOverride={port}\n}}\n"
            "malmoscore {\n  I:policy=0\n}\n\n"
            f"malmoseed {{\n  I:seed={'NONE' if seed is None else seed}\n}}\n\n"
            "runtype {\n  B:replaceable=true\n}\n\n"
            "envtype {\n  B:env=true\n}\n\n"
        )
    return path


@dataclasses.dataclass
class MinecraftInstance:
    """A running instance: its process, port, run directory and log."""

    proc: subprocess.Popen
    port: int
    run_dir: str
    log_path: str
    own_group: bool

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        return tail(self.log_path, lines)

    def stop(self, grace_s: float = 5.0) -> None:
        """Ask politely (SIGTERM), then SIGKILL the instance's whole process tree; bounded."""
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass

    def _signal(self, sig: int) -> None:
        try:
            if self.own_group:
                os.killpg(self.proc.pid, sig)  # xvfb-run, Xvfb and java together
            elif self.proc.poll() is None:
                self.proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass


def check_runtime(config: LaunchConfig) -> tuple[str, str]:
    """(jar, java) after checking the jar is there and readable and Java is version 8.

    Raises ``LaunchError`` saying what to install or pass. Cheap (one ``java -version``), so
    callers run it up front, before spawning workers or creating run directories.
    """
    jar = resolve_jar(config.jar)
    java = resolve_java(config.java)
    if config.require_java8:
        major = java_major_version(java)
        if major != 8:
            raise LaunchError(
                f"{java} is Java {major}, but MalmoMod (Minecraft 1.11.2, Forge 13.20) runs on "
                "Java 8 only: install openjdk-8-jre-headless and pass java=/path/to/java8 or "
                "set JAVA_HOME (require_java8=False skips this check)"
            )
    return jar, java


def launch(
    config: LaunchConfig,
    run_dir: str,
    port: int | None = None,
    extra_env: dict[str, str] | None = None,
) -> MinecraftInstance:
    """Start an instance in ``run_dir`` (created) and wait until it accepts MalmoEnv clients."""
    jar, java = check_runtime(config)
    command: list[str] = [java, *config.jvm_args, "-jar", jar]
    headless = config.headless if config.headless is not None else not os.environ.get("DISPLAY")
    if headless:
        if shutil.which(XVFB_ARGS[0]) is None:
            raise LaunchError(
                "no display ($DISPLAY unset) and no xvfb-run: install xvfb "
                "(apt-get install xvfb) or run with a display / headless=False"
            )
        command = [*XVFB_ARGS, *command]

    os.makedirs(run_dir, exist_ok=True)
    template = config.run_template or os.environ.get(RUN_TEMPLATE_ENV)
    if template:
        if not os.path.isdir(template):
            raise LaunchError(f"run template {template!r} is not a directory")
        shutil.copytree(
            template, run_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.lock")
        )
    port = port if port is not None else free_port()
    write_mod_config(run_dir, port, config.seed)
    log_path = os.path.join(run_dir, "minecraft.log")
    # Inside a bridge worker, the instance stays in the worker's process group so that the
    # vector env's killpg of a hung worker takes Minecraft down too; standalone, it gets its
    # own group so stop() can take down xvfb-run, Xvfb and java together.
    own_group = "MINECLIP_BRIDGE_ENV_ID" not in os.environ
    env = dict(os.environ)
    env.update(extra_env or {})
    with open(log_path, "ab") as log:
        log.write(f"=== launching: {' '.join(command)} (port {port}) ===\n".encode())
        log.flush()
        # The log is kept across launches in the same run dir: only read what this one writes.
        log_offset = log.tell()
        try:
            proc = subprocess.Popen(
                command,
                cwd=run_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                process_group=0 if own_group else None,
            )
        except OSError as err:
            raise LaunchError(f"could not start {command[0]}: {err}") from err
    instance = MinecraftInstance(proc, port, run_dir, log_path, own_group)
    try:
        instance.port = _wait_ready(instance, config.ready_timeout_s, log_offset)
    except BaseException:
        instance.stop(grace_s=0.0)
        raise
    return instance


def _wait_ready(instance: MinecraftInstance, timeout_s: float, offset: int) -> int:
    """Poll the log from ``offset`` until the ready line (bounded); return the server's port."""
    deadline = time.monotonic() + timeout_s
    port = instance.port
    pending = ""
    while True:
        with open(instance.log_path, "rb") as f:
            f.seek(offset)
            chunk = f.read()
        offset += len(chunk)
        pending += chunk.decode("utf-8", "replace")
        lines = pending.split("\n")
        pending = lines.pop()  # keep a partial last line for the next read
        for line in lines:
            found = PORT_PATTERN.search(line)
            if found:
                port = int(found.group(1))
            if READY_PATTERN.search(line):
                return port
        code = instance.proc.poll()
        if code is not None:
            raise LaunchError(
                f"Minecraft exited with code {code} before it was ready; last lines of "
                f"{instance.log_path}:\n{instance.log_tail()}"
            )
        if time.monotonic() > deadline:
            raise LaunchError(
                f"Minecraft was not ready within {timeout_s:g} s (no '{READY_PATTERN.pattern}' "
                f"in its log); last lines of {instance.log_path}:\n{instance.log_tail()}"
            )
        time.sleep(0.1)


def command_preview(config: LaunchConfig) -> Sequence[str]:
    """The command line ``launch`` would run (for docs and debugging); resolves nothing."""
    return [config.java or "java", *config.jvm_args, "-jar", config.jar or f"${JAR_ENV}"]
