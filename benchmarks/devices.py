"""The CPU and the GPU side by side on one machine: the notebook's solve (seed 0), timed on each device.

    python -m benchmarks.devices                           # cpu and (where there is one) cuda, 100 episodes each
    python -m benchmarks.devices --devices cuda cuda-eager --episodes 10
    python -m benchmarks.devices --devices cpu --episodes 4 --set clipped_double_q=True    # a Config changed

`cuda` is the package's speed path (continuous_control/devices.py); `cuda-eager` is the same without the
CUDA graph. For each it prints the wall time, the environment's share, the time per update (500 more
updates once the run is over, timed alone) and the run's scores, and writes them all to --out as JSON.
"""

import argparse
import os
import platform
import sys
import tempfile
import time
import traceback

import torch

from continuous_control import agent as lesson
from continuous_control.config import parse_overrides
from continuous_control.devices import graphed
from continuous_control.provenance import ROOT, host
from continuous_control.results import write_json
from reacher import ReacherEnvironment
from reacher.physics import MAX_STEPS


def solve(device: str, episodes: int, seed: int = 0, **overrides) -> dict:
    """One training run of the notebook's Config (changed by `overrides`) on `device`; its timings and scores."""
    agents, env_seconds = [], [0.0]

    class Timed(lesson.Agent):  # the notebook's agent, kept for the update timing
        def __init__(self, *args):
            super().__init__(*args)
            agents.append(self)

    class TimedEnvironment(ReacherEnvironment):  # the Reacher, its time kept apart from the agent's
        def step(self, *args, **kwargs):
            start = time.perf_counter()
            out = super().step(*args, **kwargs)
            env_seconds[0] += time.perf_counter() - start
            return out

    env = TimedEnvironment(seed=seed, verbose=False)
    cfg = lesson.Config(seed=seed, device=device.removesuffix("-eager"), **overrides)
    agent_class = graphed(Timed, capture=not device.endswith("-eager")) if cfg.device == "cuda" else Timed
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        history = lesson.train(
            cfg, env, run_dir, episodes, stop_when_solved=False, live=False, log_every=10, agent_class=agent_class
        )
        wall = time.perf_counter() - start
    agent = agents[0]
    sync = torch.cuda.synchronize if cfg.device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(500):
        agent.learn()
    sync()
    steps = MAX_STEPS * episodes
    return {
        "device": device,
        "episodes": episodes,
        "wall_s": wall,
        "env_s": env_seconds[0],
        "updates": agent.updates - 500,
        "ms_per_update": 2 * (time.perf_counter() - start),
        "ms_per_env_step": 1000 * wall / steps,
        "mean": history["mean"],
        "avg100": history["avg100"][-1],
        "solved_at": history["solved_at"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--devices",
        nargs="+",
        default=["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"],
        choices=["cpu", "cuda", "cuda-eager"],
    )
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="Config changes, e.g. tau=0.01")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "benchmarks", "devices.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the notebook trains
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    machine = {"cpu": host(), "gpu": gpu, "python": platform.python_version(), "torch": torch.__version__}
    print(machine, flush=True)
    runs, failed = [], []
    for device in args.devices:
        try:
            run = solve(device, args.episodes, **parse_overrides(lesson.Config, args.set))
        except Exception:  # a device that fails is reported; the others still run
            traceback.print_exc()
            failed.append(device)
            continue
        runs.append(run)
        print(
            f"{device:10s} {run['wall_s']:6.1f} s ({run['env_s']:5.1f} s in the environment), "
            f"{run['ms_per_env_step']:.3f} ms per environment step, {run['ms_per_update']:.3f} ms per update "
            f"({run['updates']} updates); mean of the last episode {run['mean'][-1]:.2f}, avg100 {run['avg100']:.2f}, "
            f"solved at {run['solved_at']}",
            flush=True,
        )
        write_json(args.out, {"machine": machine, "config_changes": args.set, "runs": runs})
    if failed:
        print(f"failed on {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
