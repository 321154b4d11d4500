"""What a change to `Config` costs in time, against the default, measured side by side.

    python -m benchmarks.cost --set clipped_double_q=True [--pairs 5]

Each pair runs a short `benchmarks.devices` run as whole processes with the change (A) and without (B), in
turn, and takes A/B pair by pair, so that the machine's drift moves both sides alike. The short run
(4 episodes, `learn_every_until=1`) makes 0.28 updates per step, as a 100-episode run makes 0.30.
Results: results/benchmarks/cost_<label>.json.
"""

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from continuous_control.provenance import ROOT, host
from continuous_control.results import write_json

SHORT_RUN = [
    "-m",
    "benchmarks.devices",
    "--devices",
    "cpu",
    "--episodes",
    "4",
    "--out",
    os.path.join(tempfile.gettempdir(), "cost_run.json"),
    "--set",
    "learn_every_until=1",
]
TIMEOUT = 1800  # seconds for one short run: a bound on every wait


def timed(changes: list) -> tuple:
    """(wall seconds, CPU seconds) of one short run with `changes`, as a whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(
        [sys.executable] + SHORT_RUN + changes, cwd=ROOT, check=True, timeout=TIMEOUT, stdout=subprocess.DEVNULL
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="+", required=True, metavar="FIELD=VALUE", help="the change to time")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--label", default=None, help="the result's name (default: the first field changed)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "benchmarks"), help="the result's folder")
    args = parser.parse_args(argv)
    label = args.label or args.set[0].split("=")[0]
    timed(args.set)  # a warm-up run, not counted (file caches, imports)
    runs = {"changed": [], "default": []}
    for _ in range(args.pairs):
        runs["changed"].append(timed(args.set))
        runs["default"].append(timed([]))
    a, b = np.array(runs["changed"]), np.array(runs["default"])
    ratios = {"wall": (a[:, 0] / b[:, 0]).tolist(), "cpu": (a[:, 1] / b[:, 1]).tolist()}
    result = {
        "change": args.set,
        "short_run": " ".join(SHORT_RUN[1:]),
        "pairs": args.pairs,
        "runs": runs,
        "ratio_median": {k: float(np.median(v)) for k, v in ratios.items()},
        "ratio_range": {k: [float(min(v)), float(max(v))] for k, v in ratios.items()},
        "ratios": ratios,
        "machine": f"{host()}, Python {platform.python_version()}",
        "load_average_at_end": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d"),
    }
    path = write_json(os.path.join(args.out, f"cost_{label}.json"), result, listed=True)
    print(
        f"{' '.join(args.set)} against the default, {args.pairs} pairs: "
        f"wall time x{result['ratio_median']['wall']:.2f} "
        f"(median; {min(ratios['wall']):.2f} to {max(ratios['wall']):.2f}), CPU time "
        f"x{result['ratio_median']['cpu']:.2f}; {path}"
    )


if __name__ == "__main__":
    main()
