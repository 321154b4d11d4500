"""The README's result tables, written from the saved results (never typed by hand).

    python experiments/summarize.py        # rewrites the blocks between <!-- begin: X --> and <!-- end: X -->

Blocks: `run` (the notebook's solving run, checkpoints/, with a noise-free evaluation of its
exported actor), `seeds` (results/full/, the current code's seeds), `speed` (results/benchmarks/env_speed.json, written by
benchmarks/env_speed.py), `train_speed` (results/benchmarks/train_speed_*.json, written by
benchmarks/train_speed.py) and `calibration` (results/calibration/, written by
benchmarks/calibration.py). `make figures` runs it after the figures.
"""
import glob
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
# results/ made before the PhysX frame pipeline (doc/environment.md): what to call their physics.
FIRST_REPLICA = "first replica (joint-rate drag and cap after the step)"


def table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def run_block(run_dir: str = "checkpoints") -> str:
    sys.path.insert(0, ROOT)
    from experiments.run import evaluate
    path = os.path.join(ROOT, run_dir)
    s = json.load(open(os.path.join(path, "summary.json")))
    cfg = json.load(open(os.path.join(path, "config.json")))
    ev = evaluate(path, cfg["seed"])
    minutes = s["wall_seconds_to_solve"] or s["wall_seconds"]
    row = [s["seed"], s["solved_at"] or f"not solved in {s['episodes']}", s["first_episode_mean_30"] or "-",
           f"{s.get('mean_episodes_1_100', np.nan):.1f}", f"{minutes / 60:.1f}",
           f"{np.mean(ev['episode_means']):.2f}", f"{min(ev['arm_means']):.2f}", f"{max(ev['arm_means']):.2f}"]
    return (f"Environment: {s['environment']}. Machine: {s['machine']}.\n\n"
            + table(["seed", "solved at episode", "first episode with mean >= 30", "mean of episodes 1-100",
                     "minutes", "noise-free mean, 5 episodes", "worst arm", "best arm"], [row])
            + "\n\nThe noise-free evaluation runs the exported policy (`actor.pt2`, the target actor) on goals the run never saw "
              "(environment seed 10000 + seed); an arm's score is its mean over the 5 episodes.")


def seeds_block() -> str:
    """results/full/: one row per seed, the noise-free evaluation with its worst and best arm."""
    rows, environments, machines = [], set(), set()
    for path in sorted(glob.glob(os.path.join(ROOT, "results", "full", "seed*", "summary.json"))):
        s = json.load(open(path))
        arms = s.get("eval_arm_means", [])
        minutes = s["wall_seconds_to_solve"] / 60 if s["wall_seconds_to_solve"] else None
        rows.append([s["seed"], s["solved_at"] or f"not solved in {s['episodes']}", s["first_episode_mean_30"] or "-",
                     f"{s['mean_episodes_1_100']:.1f}", f"{minutes:.1f}" if minutes else "-",
                     f"{np.mean(s['eval_noise_free_5']):.2f}", f"{min(arms):.2f}", f"{max(arms):.2f}"])
        environments.add(s.get("environment", FIRST_REPLICA))
        machines.add(s.get("machine", "?"))
    if not rows:
        return "(no runs yet: `make benchmark`)"
    return (f"Environment: {'; '.join(sorted(environments))}. Machine: {'; '.join(sorted(machines))}.\n\n"
            + table(["seed", "solved at episode", "first episode with mean >= 30", "mean of episodes 1-100",
                     "minutes to solve", "noise-free mean, 5 episodes", "worst arm", "best arm"], rows))


def speed_block() -> str:
    s = json.load(open(os.path.join(ROOT, "results", "benchmarks", "env_speed.json")))
    rows = [["in-process `ReacherEnvironment`", f"{s['in_process']:,.0f}", f"one 1001-step episode in {1001 / s['in_process']:.2f} s"]]
    if s.get("client"):
        rows.append(["through the `unityagents` client and the executable", f"{s['client']:,.0f}",
                     f"{1000 / s['client']:.1f} ms a step"])
    return f"{s['machine']}, 20 agents, random actions:\n\n" + table(["", "steps per second", ""], rows)


def calibration_block() -> str:
    runs = {json.load(open(p))["joint_model"]: json.load(open(p))
            for p in glob.glob(os.path.join(ROOT, "results", "calibration", "*.json"))}
    actors = ["1jsingh", "AnKra", "ChrisPalmerNZ", "GrayWizard"]
    rows = []
    for key in sorted(runs, key=lambda k: (runs[k]["joint_model"] != runs[k].get("default"), runs[k].get("default") is None, k)):
        r = runs[key]["results"]
        rows.append([runs[key]["label"], f"{r['random_normal']['mean']:.2f}", f"{r['random_normal']['arms_at_zero']:.0%}",
                     f"{r['scripted']['mean']:.1f}", f"{np.mean([r[a]['mean'] for a in actors]):.1f}",
                     f"{min(r[a]['mean'] for a in actors):.1f}"])
    return table(["replica", "random play, 20-arm mean", "arms at 0", "scripted controller",
                  "Unity-trained actors, mean of 4", "lowest actor"], rows)


def train_speed_block() -> str:
    """One column per saved profile (results/benchmarks/train_speed_<label>.json), "before" first.

    The total is the measured wall time per step: with the worker process the environment steps
    while the learner updates, so the learner's phases do not add up to it."""
    paths = glob.glob(os.path.join(ROOT, "results", "benchmarks", "train_speed_*.json"))
    # before; then each change's effect in turn: the code (inline), the worker, the later replay ratio.
    runs = sorted((json.load(open(p)) for p in paths),
                  key=lambda r: (r["label"] != "before", "+" in r["label"], "inline" not in r["label"], r["label"]))
    if not runs:
        return "(no profile yet: `python benchmarks/train_speed.py`)"
    phases = list(dict.fromkeys(phase for r in runs for phase in r["ms_per_step"]))
    cell = lambda r, phase: f"{r['ms_per_step'][phase]:.3f}" if phase in r["ms_per_step"] else ""
    rows = [[phase] + [cell(r, phase) for r in runs] for phase in phases]
    totals = [r.get("wall_ms_per_step", 1000 / r["timed_steps_per_second"] + r["ms_per_step"]["checkpointing (amortised)"])
              for r in runs]
    rows.append(["**total, wall time**"] + [f"**{t:.2f}** ({1000 / t:,.0f} steps/s, {1001 * t / 1000:.1f} s an episode)"
                                            for t in totals])
    return (f"{runs[0]['machine']}; milliseconds per environment step (20 arms, one update), measured in the "
            "learner's process:\n\n" + table(["phase"] + [r["label"] for r in runs], rows))


BLOCKS = {"run": run_block, "seeds": seeds_block, "speed": speed_block, "calibration": calibration_block,
          "train_speed": train_speed_block}


def write(readme: str = README, blocks=BLOCKS) -> None:
    text = open(readme).read()
    for name, make in blocks.items():
        pattern = re.compile(rf"(<!-- begin: {name} -->\n).*?(\n<!-- end: {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"{readme} has no <!-- begin: {name} --> ... <!-- end: {name} --> block")
        text = pattern.sub(lambda m: m.group(1) + make() + m.group(2), text)
    open(readme, "w").write(text)
    print(f"wrote {', '.join(blocks)} into {readme}")


if __name__ == "__main__":
    write()
