"""What `make run` shows on the terminal, where the notebook's own output does not reach.

    python -m tools.terminal follow runs/plain checkpoints -- -m jupyter nbconvert --execute ...
    python -m tools.terminal result checkpoints

`follow` runs this Python with the arguments after `--` and, while it runs, draws a progress bar per training run
from that run's own file, `<run>/resume/progress.json`, which it writes after every episode (nothing asks the
kernel).
`result` prints the run's result and whether it repeats the saved run of this processor kind episode for episode.
"""

import math
import os
import subprocess
import sys

from tqdm import tqdm

from continuous_control.checkpoints import kept
from continuous_control.files import FileRefused, read_json
from continuous_control.provenance import ROOT
from continuous_control.results import MAX_EPISODES, MAX_SCORE, load_run
from continuous_control.training import PROGRESS

POLL_SECONDS = 2.0
SAVED = ("results/full", "results/processor_check/full")  # the full agent's saved seeds, on each processor kind


def progress(folder: str, since: float) -> dict | None:
    """The run's latest episode, if its progress file was written after `since` and holds what a run writes."""
    path = os.path.join(ROOT, folder, "resume", PROGRESS)
    try:
        if os.stat(path).st_mtime < since:
            return None  # an earlier run's
        data = read_json(path)
    except (OSError, FileRefused):
        return None
    numbers = [data.get(k) if isinstance(data, dict) else None for k in ("mean", "avg100", "wall_seconds")]
    whole = [data.get(k) if isinstance(data, dict) else None for k in ("episode", "of")]
    if not all(type(n) is int for n in whole) or not 1 <= whole[0] <= whole[1] <= MAX_EPISODES:
        return None
    if not all(type(x) is float and math.isfinite(x) for x in numbers) or not 0 <= numbers[0] <= MAX_SCORE:
        return None
    return data


def follow(command: list, folders: list) -> int:
    """Run this Python with `command`, showing each run's progress while it runs; its exit status."""
    import time

    since = time.time()
    process = subprocess.Popen([sys.executable, *command], cwd=ROOT)
    bars = {}
    try:
        while True:
            try:
                code = process.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                code = None
            for folder in folders:
                latest = progress(folder, since)
                if latest is None:
                    continue
                if folder not in bars:
                    for bar in bars.values():
                        bar.close()  # the run before it has ended
                    bars[folder] = tqdm(total=latest["of"], desc=folder, unit="episode", dynamic_ncols=True)
                bar = bars[folder]
                bar.total = latest["of"]
                bar.set_postfix(mean=f"{latest['mean']:.2f}", avg100=f"{latest['avg100']:.2f}", refresh=False)
                bar.update(latest["episode"] - bar.n)
            if code is not None:
                for bar in bars.values() if code == 0 else ():
                    bar.total = bar.n  # a run that stopped once solved, before its last episode, is complete
                return code
    except KeyboardInterrupt:
        process.wait(timeout=60)  # Ctrl-C reached the notebook's process too: it stops, its checkpoint kept
        raise
    finally:
        for bar in bars.values():
            bar.close()


def saved_twin(run: dict) -> dict | None:
    """The saved run of the full agent with this run's seed on this kind of processor, if there is one."""
    for group in SAVED:
        path = os.path.join(group, f"seed{run['summary']['seed']}")
        if os.path.isdir(os.path.join(ROOT, path)):
            saved = load_run(path)
            if saved["summary"].get("processor") == run["summary"].get("processor"):
                return saved
    return None


def result(folder: str) -> None:
    run = load_run(folder)
    s = run["summary"]
    print(
        f"result {folder}/: solved_at {s['solved_at']}, first episode at 30: {s['first_episode_mean_30']}, "
        f"mean of episodes 1-100 {s['mean_episodes_1_100']:.2f}, {s['wall_seconds'] / 60:.1f} min, "
        f"processor {s['processor'] or 'unknown'}"
    )
    twin = saved_twin(run)
    if twin is None:
        kinds = sorted({load_run(os.path.join(g, "seed0"))["summary"]["processor"] for g in SAVED})
        print(f"no saved run on this processor kind to compare with (saved: {', '.join(kinds)})")
    else:
        columns = ("mean", "min", "max", "avg100")
        differ = [
            k + 1
            for k in range(max(len(run["scores"]["mean"]), len(twin["scores"]["mean"])))
            if any(
                k >= len(run["scores"][c]) or k >= len(twin["scores"][c]) or run["scores"][c][k] != twin["scores"][c][k]
                for c in columns
            )
        ]
        if not differ:
            print(f"repeats {twin['dir']}/, the saved run of this processor kind, episode for episode")
        else:
            print(
                f"differs from {twin['dir']}/ from episode {differ[0]} on: another processor model, library build "
                "or configuration rounds differently, and training amplifies the difference (Report, section 4)"
            )
    print(f"the notebook: Continuous_Control.ipynb; the run: {folder}/")
    old = os.path.join(ROOT, folder, "resume.old")
    if os.path.exists(old):
        print(f"the checkpoint of the run before this one is kept in {kept(old)}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["result"] and len(argv) == 2:
        result(argv[1])
        return 0
    if argv[:1] == ["follow"] and "--" in argv[2:] and argv[-1] != "--":
        cut = argv.index("--")
        return follow(argv[cut + 1 :], argv[1:cut])
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
