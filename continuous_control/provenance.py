"""Where the project lives and where a run ran: the project's root folder (`ROOT`), the processor, host and
machine, and the version of the code (`code_version`). Light to import: no torch until `machine()` asks."""

import contextlib
import os
import platform
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout (or the hand-out) itself


def processor(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The processor's model name, or "": a run repeats on the same kind of processor, not always on another."""
    with contextlib.suppress(OSError), open(cpuinfo) as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "" if platform.processor() in ("", platform.machine()) else platform.processor()


def host() -> str:
    """The architecture, the processor (`processor`) and the cores: "x86_64 (Example CPU), 2 cores"."""
    model = processor()
    return f"{platform.machine()}{f' ({model})' if model else ''}, {os.cpu_count()} cores"


def machine() -> str:
    import torch

    return f"{host()}, torch threads {torch.get_num_threads()}"


# The source files that shape a run's scores (the notebook's code is agent.py's, tests/test_notebooks.py): a
# checkpoint made while any of them differed is refused (checkpoints.code_fingerprint).
SHAPING = (
    "continuous_control/agent.py",
    "continuous_control/behaviour.py",
    "continuous_control/networks.py",
    "continuous_control/sumtree.py",
    "experiments/ablations.py",
    "continuous_control/config.py",
    "continuous_control/devices.py",
    "continuous_control/training.py",
    "continuous_control/checkpoints.py",
    "reacher/environment.py",
    "reacher/physics.py",
    "reacher/physx.py",
)
# What can change a result, and so names its code version: the folders that hold SHAPING, the rest of the code,
# the notebook's text twin, and the pins.
CODE_PATHS = (
    *sorted({path.split("/")[0] for path in SHAPING}),
    "benchmarks",
    "tools",
    "twins/Continuous_Control.py",
    "pyproject.toml",
    "requirements.txt",
    "Makefile",
)


def code_version(root: str = ROOT) -> str:
    """The last commit that changed the code (CODE_PATHS), "+changes" if tracked code differs from it,
    " (shallow clone)" if the history is cut; "unknown" outside this project's own git checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # two runs may ask at once; `git status` must not lock

    def git(*args):
        return subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()

    try:
        if os.path.realpath(git("rev-parse", "--show-toplevel")) != os.path.realpath(root):
            return "unknown"  # inside some other repository
        commit = git("log", "-1", "--format=%h", "--abbrev=7", "--", *CODE_PATHS)
        changed = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
        shallow = git("rev-parse", "--is-shallow-repository") == "true"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    if not commit:
        return "unknown"
    return commit + ("+changes" if changed else "") + (" (shallow clone)" if shallow else "")
