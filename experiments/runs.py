"""The table of runs: one row per run folder of results/, loaded with pandas, checked as it is read.

    table = runs.load()                  # variant, seed, commit, processor, version, runs_at_once, measures
    curves = runs.episodes("scores.csv") # every run's per-episode file, long: variant, seed, episode, ...

A run folder is `results/<variant>/seed<k>/` (the agent and its ablations), or the same under
`results/processor_check/` and `results/peers/` (column `group`). Every measure covers a run's first
100 episodes, so runs that stopped when solved and runs of exactly 100 episodes compare alike.
A damaged folder is refused, naming it: a missing or short file, a seed or variant that disagrees
with its folder, a folder that is no run.
"""

import os
import re

import numpy as np
import pandas as pd

from continuous_control.provenance import ROOT
from continuous_control.results import WINDOW, first_episode_at, load_run

RESULTS = os.path.join(ROOT, "results")
GROUPS = {"processor_check": "processor_check", "peers": "peers"}  # sub-folders holding runs of their own
NOT_RUNS = {"benchmarks", "calibration", "overestimation", "published_learner"}  # results/ folders of other data
NEVER = WINDOW + 1  # first_30 of a run that never reached 30: it orders runs, it measures nothing
MEASURES = {  # column: (what it is, higher is better)
    "mean_1_100": ("mean of episodes 1-100", True),
    "first_30": ("first episode with a mean of 30", False),
    "mean_91_100": ("mean of episodes 91-100", True),
    "worst_arm_1_100": ("worst arm's mean of episodes 1-100", True),
    "eval": ("noise-free evaluation", True),
    "eval_worst_arm": ("noise-free evaluation, worst arm", True),
}
PRIMARY = "mean_1_100"  # named before the ten-seed runs; the other measures are secondary


class RunError(ValueError):
    """A results folder that cannot be read as a run."""


def read_run(folder: str) -> dict:
    """A run folder as the package reads it (continuous_control.results.load_run, the one reader of a run
    folder); a missing or damaged file is a RunError that names it."""
    if not os.path.exists(os.path.join(folder, "summary.json")):
        raise RunError(f"{folder}: no summary.json")
    try:
        return load_run(folder)
    except (OSError, ValueError) as error:  # a file missing, damaged, or disagreeing with another
        raise RunError(str(error)) from None


def measure(folder: str) -> dict:
    """One run's row: its provenance and its measures over the first 100 episodes."""
    run = read_run(folder)
    summary = run["summary"]
    mean, arms = run["scores"]["mean"][:WINDOW], run["arms"][:WINDOW].mean(0)
    evaluation = summary.get("eval_arm_means", [np.nan])
    return {
        "seed": summary["seed"],
        "variant": summary.get("variant"),
        "commit": summary["commit"],
        "processor": summary.get("processor", ""),
        "version": summary.get("results_version", 0),
        "runs_at_once": summary.get("concurrent_runs", 1),
        "episodes": len(mean),
        "solved_at": summary["solved_at"],
        "first_30": first_episode_at(mean) or NEVER,
        "mean_1_100": mean.mean(),
        "mean_91_100": mean[-10:].mean(),
        "worst_arm_1_100": arms.min(),
        "best_arm_1_100": arms.max(),
        "eval": np.mean(summary.get("eval_noise_free_5", np.nan)),
        "eval_worst_arm": np.min(evaluation),
        "eval_best_arm": np.max(evaluation),
        "minutes": (summary["wall_seconds_to_solve"] or summary["wall_seconds"]) / 60,
    }


def run_folders(root: str = RESULTS):
    """(group, variant, seed, folder) of every run under root; anything else there is refused."""
    for group, sub in [("agent", root), *((g, os.path.join(root, s)) for g, s in GROUPS.items())]:
        if not os.path.isdir(sub):
            continue
        for variant in sorted(os.listdir(sub)):
            path = os.path.join(sub, variant)
            if not os.path.isdir(path) or (group == "agent" and variant in NOT_RUNS | set(GROUPS)):
                continue
            for name in sorted(os.listdir(path)):
                found = re.fullmatch(r"seed(\d+)", name)
                if not found or not os.path.isdir(os.path.join(path, name)):
                    raise RunError(f"{os.path.join(path, name)}: not a run folder (seed<k>/)")
                yield group, variant, int(found.group(1)), os.path.join(path, name)


def load(root: str = RESULTS) -> pd.DataFrame:
    """The table of runs, one row per run folder, sorted by group, variant and seed."""
    rows = []
    for group, variant, seed, folder in run_folders(root):
        row = measure(folder)
        if row["seed"] != seed or row["variant"] not in (None, variant):
            raise RunError(f"{folder}: its summary.json names {row['variant']} seed {row['seed']}")
        rows.append({**row, "group": group, "variant": variant})
    columns = ["group", "variant", "seed", "commit", "processor", "version", "runs_at_once"]
    table = pd.DataFrame(rows).astype({"solved_at": "Int64"})  # None: not solved
    return table[columns + [c for c in table if c not in columns]].sort_values(columns[:3], ignore_index=True)


FILES = {"scores.csv": "scores", "diagnostics.csv": "diagnostics"}  # episodes(): a file and its key in a run


def episodes(name: str = "scores.csv", root: str = RESULTS, group: str = "agent") -> pd.DataFrame:
    """Every run's per-episode file (scores.csv or diagnostics.csv) of one group, long."""
    frames = []
    for g, variant, seed, folder in run_folders(root):
        if g == group and os.path.exists(os.path.join(folder, name)):
            columns = read_run(folder)[FILES[name]]
            frame = pd.DataFrame(columns)
            frames.append(frame.astype({"episode": int}).assign(variant=variant, seed=seed))
    return pd.concat(frames, ignore_index=True)
