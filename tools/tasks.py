"""The project's tasks, for Linux, macOS and Windows, with or without make.

Each Makefile target calls the task of its name; every command is this Python running a module.
`RESUME=1` in the environment makes `run` continue an interrupted run instead of starting afresh.

    python -m tools.tasks run          # the main job: train in Continuous_Control.ipynb
    python -m tools.tasks --list       # every task and what it runs
"""

import argparse
import os
import subprocess
import sys

from continuous_control.provenance import ROOT

# The kernel over IPC where it exists (no "running over TCP without encryption" warning, nothing on a port).
TRANSPORT = ["--KernelManager.transport=ipc"] if os.name == "posix" else []
# No widget state saved: where no kernel runs, it would shadow the still image or text (no_widget_state.py).
EXECUTE = [
    "jupyter",
    "nbconvert",
    "--to",
    "notebook",
    "--execute",
    "--inplace",
    *TRANSPORT,
    "--ExecutePreprocessor.store_widget_state=False",
]
SMOKE = {"SMOKE": "1"}
FOLLOW = ["tools.terminal", "follow", "runs/plain", "checkpoints", "--", "-m"]  # the lesson's two training runs

# name: (what it does, [(module and arguments, extra environment), ...]) or a list of other tasks.
TASKS = {
    "notebook": (
        "execute Continuous_Control.ipynb in place: a fresh training run (RESUME=1: continue one)",
        [
            # the notebook's output does not reach the terminal: a bar per training run, read from its own files
            (FOLLOW + EXECUTE + ["--ExecutePreprocessor.timeout=-1", "Continuous_Control.ipynb"], {}),
            (["tools.no_widget_state", "Continuous_Control.ipynb"], {}),
            (["tools.terminal", "result", "checkpoints"], {}),
        ],
    ),
    "figures": ("doc/'s figures from checkpoints/ and results/", [(["experiments.figures"], {})]),
    "report": (
        "maintainers: the solving run's analyses, doc/'s figures, then Report.ipynb executed from them",
        ["diagnose", "figures", "report-notebook"],
    ),
    "report-notebook": (
        "execute Report.ipynb in place",
        [(EXECUTE + ["Report.ipynb"], {}), (["tools.no_widget_state", "Report.ipynb"], {})],
    ),
    "diagnose": (
        "the solving run's critic against Monte-Carlo returns, and its weak arm (results/)",
        [(["experiments.overestimation", "--run", "checkpoints"], {}), (["experiments.weak_arm"], {})],
    ),
    "run": ("the main job: train in the notebook, which writes checkpoints/", ["notebook"]),
    "wheels": (
        "every pin in requirements.txt has a wheel for CPython 3.11-3.14 on each platform (needs the network)",
        [(["tools.wheels"], {})],
    ),
    "test": (
        "every test, with no network: the linter, units, both notebooks executed (the lesson at SMOKE size)",
        [
            (["ruff", "check", "."], {}),
            (["ruff", "format", "--check", "."], {}),
            # Two processes, a file's tests (a notebook's cells) in one; the longest files first (about 120 s to 25 s),
            # so that none is left running alone at the end.
            (
                [
                    "pytest",
                    "tests/test_nbgrader.py",
                    "tests/test_training.py",
                    "tests/test_unity_client.py",
                    "tests/test_student.py",
                    "tests/test_grader.py",
                    "tests/test_benchmarks.py",
                    "tests/test_algorithm.py",
                    "Report.ipynb",
                    "tests/test_bugs.py",
                    "Continuous_Control.ipynb",
                    "tests/test_peers.py",
                    "tests",
                    "--nbval-lax",
                    "--nbval-current-env",
                    "-n",
                    "2",
                    "--dist",
                    "loadfile",
                ],
                SMOKE,
            ),
        ],
    ),
    "export": (
        "after editing a notebook: its text twin, the exported agent and the student edition",
        [
            (["jupytext", "--sync", "Continuous_Control.ipynb", "Report.ipynb"], {}),
            (["continuous_control.export"], {}),
            (["tools.student"], {}),
        ],
    ),
    "student": (
        "lab/Continuous_Control_student.ipynb: the lesson with a blank at each core idea (nbgrader's format)",
        [(["tools.student"], {})],
    ),
    "benchmark": (
        "training speed on the CPU (and a GPU, if any), and clipped double-Q's cost (results/benchmarks/)",
        [(["benchmarks.devices"], {}), (["benchmarks.cost", "--set", "clipped_double_q=True"], {})],
    ),
    "calibrate": (
        "the replica against the Unity build (results/calibration/, doc/calibration.md)",
        [(["benchmarks.calibration"], {})],
    ),
    "experiments": (
        "the report's seeds 0-9 (alone, timed) and ablations (as many at a time as the machine has cores), on a "
        "local Ray, resumable (hours); then the weak arm on every seed and a clipped double-Q critic against "
        "Monte-Carlo returns",
        [(["experiments.run", "--all"], {}), (["experiments.run", "--analyses"], {})],
    ),
    "learner": (
        "a published course learner on the replica, 3 seeds x 80 episodes (hours)",
        [
            (["experiments.published_learner", "--seeds", "0", "1", "2", "--episodes", "80"], {}),
            (["experiments.published_learner", "--report"], {}),
        ],
    ),
    "peers": (
        "Stable-Baselines3's TD3 and SAC on the same 20 arms, with RL-Zoo's settings and configured like the "
        "agent, 5 seeds x 100 episodes, two at a time, resumable (hours); make report draws them",
        [(["experiments.peers"], {})],
    ),
}


def commands(name: str) -> list:
    """The (argv, environment) of every command a task runs, other tasks expanded."""
    if name not in TASKS:
        raise SystemExit(f"unknown task {name!r}: one of {', '.join(TASKS)}")
    out = []
    for step in TASKS[name][1]:
        out += commands(step) if isinstance(step, str) else [([sys.executable, "-m", *step[0]], step[1])]
    return out


def run(name: str) -> int:
    for argv, extra in commands(name):
        print("+", " ".join(argv[2:]), " ".join(f"{k}={v}" for k, v in extra.items()), flush=True)
        code = subprocess.run(argv, cwd=ROOT, env={**os.environ, **extra}).returncode
        if code:
            return code
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?", choices=list(TASKS))
    parser.add_argument("--list", action="store_true", help="every task and what it runs")
    args = parser.parse_args(argv)
    if args.list or not args.task:
        for name, (what, _) in TASKS.items():
            print(f"{name:16s} {what}")
        return 0
    return run(args.task)


if __name__ == "__main__":
    sys.exit(main())
