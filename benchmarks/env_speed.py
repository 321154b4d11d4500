"""Steps per second of the built-in Reacher, 20 agents, random actions (clipped normal).

    python -m benchmarks.env_speed [--steps 5005] [--client-steps 300]

In-process (`ReacherEnvironment`), and through the real unityagents 0.4.0 client launching
`reacher/Reacher_Linux_NoVis/Reacher.x86_64` in a child process (one environment per process).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from continuous_control.results import host
from reacher import BRAIN_NAME, BUILT_IN_EXECUTABLE, ReacherEnvironment

CLIENT = """
import sys, time, numpy as np
import reacher  # first: on numpy 2 it gives the client the np.float_ it uses
from unityagents import UnityEnvironment
env = UnityEnvironment(file_name=sys.argv[1], worker_id=int(sys.argv[3]), no_graphics=True)
env.reset(train_mode=True)
rng, steps = np.random.default_rng(0), int(sys.argv[2])
start = time.perf_counter()
for _ in range(steps):
    env.step(np.clip(rng.standard_normal((20, 4)), -1, 1))
print(steps / (time.perf_counter() - start))
env.close()
"""


def in_process(steps: int) -> float:
    env = ReacherEnvironment(seed=0, verbose=False)
    env.reset()
    actions = np.clip(np.random.default_rng(0).standard_normal((steps, 20, 4)), -1, 1)
    start = time.perf_counter()
    for a in actions:
        env.step(a)[BRAIN_NAME]
    return steps / (time.perf_counter() - start)


def through_client(steps: int) -> float:
    env = dict(os.environ, REACHER_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, "-c", CLIENT, BUILT_IN_EXECUTABLE, str(steps), "77"],
                         capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5005)
    parser.add_argument("--client-steps", type=int, default=300)
    args = parser.parse_args()
    machine = f"{host()}, Python {platform.python_version()}"
    print(f"machine: {machine}")
    rates = [in_process(args.steps) for _ in range(3)]
    print(f"in-process, 20 agents: {np.median(rates):,.0f} steps/s (median of 3 runs of {args.steps}; "
          f"{np.median(rates) * 20:,.0f} agent-steps/s; one 1001-step episode in {1001 / np.median(rates):.2f} s)")
    rate = through_client(args.client_steps) if args.client_steps else None
    if rate is not None:
        print(f"through the unityagents client, 20 agents: {rate:,.0f} steps/s ({1000 / rate:.1f} ms per step)")
    out = os.path.join(os.path.dirname(__file__), "..", "results", "benchmarks")
    os.makedirs(out, exist_ok=True)
    result = {"machine": machine, "in_process": float(np.median(rates)), "client": rate, "steps": args.steps}
    Path(os.path.join(out, "env_speed.json")).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
