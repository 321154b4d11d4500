"""The weak arm: is an arm-episode that scores low one whose goal orbits the way the policy tracks worse?

    .venv/bin/python -m experiments.weak_arm --run checkpoints --episodes 8

The same noise-free episodes, as trained and with every goal mirrored (x -> -x, ablations) to speed > 0 or
< 0: if the low arm-episodes are of one direction and mirroring lifts them, the policy is asymmetric.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np
import torch

from continuous_control.files import FileRefused
from continuous_control.playback import load_policy
from continuous_control.provenance import ROOT
from continuous_control.results import EVAL_SEED, load_run, write_json
from experiments.ablations import GOAL_SPEED, MIRROR_ACT, MIRROR_OBS, mirrored
from reacher import ReacherEnvironment, play
from reacher.physics import DEFAULT_RESET_PARAMETERS

SEEDS_FILE = os.path.join(ROOT, "results", "weak_arm_seeds.json")
CONDITIONS = {"as_trained": 0, "mirrored_to_positive": 1, "mirrored_to_negative": -1}  # speeds mirrored to this sign


def mirror_policy(policy, into: int):
    """The policy acting on states whose goal speed has the sign -`into` mirrored to `into`, with their
    actions mirrored back: the same policy, shown only one direction of orbit (into=0: as it is)."""

    def act(states: np.ndarray) -> np.ndarray:
        s = torch.as_tensor(states, dtype=torch.float32)
        flip = s[:, GOAL_SPEED] * into < 0
        with torch.no_grad():
            return mirrored(policy(mirrored(s, flip, MIRROR_OBS)), flip, MIRROR_ACT).numpy()

    return act


def play_episodes(policy, env_seed: int, episodes: int, into: int = 0):
    """Scores (episodes, arms), and each arm-episode's goal speed at reset."""
    act, speeds = mirror_policy(policy, into), []

    def record(t, info):
        if t == 0:
            speeds.append(info.vector_observations[:, GOAL_SPEED].copy())

    scores = play(
        ReacherEnvironment(seed=env_seed, verbose=False),
        lambda info: act(info.vector_observations),
        episodes,
        on_step=record,
    )
    return scores, np.array(speeds)


def by_direction(scores: np.ndarray, speeds: np.ndarray) -> dict:
    """Per direction of orbit: arm-episodes, mean and worst score, the means of the slow (|speed| < 0.5)
    and fast halves, and the correlation of score with |speed|: is the weakness all of one direction?"""
    out = {}
    for name, mask in (("positive", speeds > 0), ("negative", speeds < 0), ("all", np.full(speeds.shape, True))):
        s, v = scores[mask], np.abs(speeds[mask])
        out[name] = {
            "count": int(mask.sum()),
            "mean": float(s.mean()),
            "worst": float(s.min()),
            "mean_slow": float(s[v < 0.5].mean()),
            "mean_fast": float(s[v >= 0.5].mean()),
            "corr_abs_speed": float(np.corrcoef(v, s)[0, 1]),
        }
    return out


def analyse(run: str = "checkpoints", episodes: int = 8) -> dict:
    """Play the three conditions on the run's evaluation goals (EVAL_SEED + its seed, as playback.evaluate)."""
    summary = load_run(os.path.join(ROOT, run))["summary"]  # the whole folder checked against its manifest
    policy = load_policy(os.path.join(ROOT, run))
    start, seed = time.time(), summary["seed"]
    played = {name: play_episodes(policy, EVAL_SEED + seed, episodes, into) for name, into in CONDITIONS.items()}
    scores, speeds = {name: p[0] for name, p in played.items()}, played["as_trained"][1]
    return {
        "run": run,
        "seed": seed,
        "episodes": episodes,
        "env_seed": EVAL_SEED + seed,
        "goal_size": DEFAULT_RESET_PARAMETERS["goal_size"],  # the same for every arm, not observed
        "machine": f"{platform.platform()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        "summary": {name: by_direction(s, speeds) for name, s in scores.items()},
        "seconds": round(time.time() - start, 1),
    }


def across_seeds(folders: list, episodes: int = 5) -> dict:
    """Each run's policy on its evaluation goals, as trained and mirrored: each direction's mean, the worst arm."""
    out = {}
    for folder in folders:
        seed = load_run(os.path.join(ROOT, folder))["summary"]["seed"]
        policy = load_policy(os.path.join(ROOT, folder))
        played = {name: play_episodes(policy, EVAL_SEED + seed, episodes, into) for name, into in CONDITIONS.items()}
        speeds = played["as_trained"][1]
        out[str(seed)] = {
            "run": folder,
            **{
                name: {
                    "positive": float(p[0][speeds > 0].mean()),
                    "negative": float(p[0][speeds < 0].mean()),
                    "worst_arm": float(p[0].mean(0).min()),
                    "mean": float(p[0].mean()),
                }
                for name, p in played.items()
            },
        }
    return {"episodes": episodes, "seeds": out}


def positive(text: str) -> int:
    """A whole number >= 1 (argparse names the option when this refuses)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", default="checkpoints", help="a run folder with its policy and summary.json")
    parser.add_argument("--episodes", type=positive, default=8, help="noise-free episodes per condition")
    parser.add_argument(
        "--seeds",
        nargs="+",
        metavar="FOLDER",
        help="instead: these runs' policies on their 5 evaluation episodes (results/weak_arm_seeds.json)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        if args.seeds:
            return write_json(SEEDS_FILE, across_seeds(args.seeds), listed=True)
        result = analyse(args.run, args.episodes)
    except (FileRefused, FileNotFoundError) as error:  # a folder refused or missing: one line naming it
        sys.exit(f"experiments.weak_arm: {error}")
    out = os.path.join(ROOT, "results", "weak_arm.json")
    write_json(out, result, listed=True)
    print(f"{result['seconds']} s -> {out}")


if __name__ == "__main__":
    main()
