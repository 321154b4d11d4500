"""The README's result tables, written from the saved results (never typed by hand).

    python -m experiments.summarize        # rewrites the blocks between <!-- begin: X --> and <!-- end: X -->

Blocks: `run` (the notebook's solving run, checkpoints/, with a noise-free evaluation of its
exported actor), `seeds` (results/full/), `ablations` (each variant against the full agent, by
the rule of experiments/claims.py), `peers` (Stable-Baselines3 beside the full agent, results/peers/), `compute` (the training time behind it all), `speed` (results/benchmarks/env_speed.json, written by
benchmarks/env_speed.py), `train_speed` (results/benchmarks/train_speed_*.json, written by
benchmarks/train_speed.py) and `calibration` (results/calibration/, written by
benchmarks/calibration.py). `make figures` runs it after the figures (`python -m experiments.figures`).
Tables are built by experiments/tables.py, the numbers by experiments/claims.py.
"""
import glob
import json
import os
import re

import numpy as np

from continuous_control.results import ROOT, load_results, load_run, load_variant
from continuous_control.variants import LABELS
from experiments.claims import (INTERVAL_HEADER, all_comparisons, interval_rows, rule_sentence, run_stats, score_goals,
                               summary_line)
from experiments.tables import markdown_table

README = os.path.join(ROOT, "README.md")


def run_block(run_dir: str = "checkpoints") -> str:
    """The notebook's run, with the noise-free evaluation saved in its summary (`save_evaluation`, run by
    `make report`): read from files only, so that the block is the same on every machine."""
    run = load_run(run_dir)
    s = run["summary"]
    if "eval_noise_free_5" not in s:
        raise ValueError(f"{run_dir}/summary.json has no noise-free evaluation: `make report` saves it")
    return (f"Environment: {s['environment']}. Machine: {s['machine']}.\n\n"
            + markdown_table(["seed", "solved at episode", "first episode with mean >= 30",
                     "mean of episodes 1-100 (worst arm, best arm)", "minutes",
                     "noise-free, 5 episodes (worst arm, best arm)"], [score_row(run)])
            + "\n\nThe noise-free evaluation runs the exported policy (`actor.pt2`, the target actor) on goals the run never saw "
              "(environment seed 10000 + seed); an arm's score is its mean over the 5 episodes, and over episodes 1-100 "
              "its mean over those episodes. " + repeated_by(run))


def repeated_by(run: dict, root: str = ROOT) -> str:
    """Which independent runs in results/ (any depth) have this run's configuration and repeat its
    scores episode for episode, over the episodes both ran: a sentence. A copy of this run
    (`experiments.run --import-notebook`, its summary names its `source`) repeats nothing."""
    seed, same, copies = run["config"]["seed"], [], []
    for folder in sorted(glob.glob(os.path.join(root, "results", "**", f"seed{seed}"), recursive=True)):
        other = os.path.join(folder, "config.json")
        if not os.path.exists(other) or json.load(open(other)) != run["config"]:
            continue
        theirs = load_run(folder)
        name = f"`{os.path.relpath(folder, root)}/`"
        n = min(len(theirs["scores"]["mean"]), len(run["scores"]["mean"]))
        if not np.allclose(theirs["scores"]["mean"][:n], run["scores"]["mean"][:n], atol=1e-4):
            continue
        if "source" in theirs["summary"]:
            copies.append(name)
        else:
            same.append(f"{name} ({n} episodes)")
    copied = (f"{' and '.join(copies)} {'is' if len(copies) == 1 else 'are'} this run, copied as the seeds table's "
              f"seed {seed}. " if copies else "")
    if same:
        return copied + f"Episode for episode, this run is the same as {', '.join(same)}: only the minutes differ."
    if copies:
        return copied + ("A test (`tests/test_training.py`) checks at small size that the notebook's `train` and "
                         "`experiments/run.py` give the same scores episode for episode.")
    return ("No run in `results/` has this run's configuration and scores: the tables below come from runs of other "
            "code or made on another kind of processor (the same code and seed repeat a run episode for episode on "
            "the same kind, not always on another: the rounding may differ, and training amplifies it).")


def score_row(run: dict) -> list:
    """A run's row: seed, solve episode, first episode at 30, then each score with its worst and best arm."""
    st, s = run_stats(run), run["summary"]
    return [st["seed"], s["solved_at"] or f"not solved in {s['episodes']}", st["first_30"] or "-",
            f"{st['mean_1_100']:.1f} ({st['worst_arm_1_100']:.1f}, {st['best_arm_1_100']:.1f})", f"{st['minutes']:.1f}",
            f"{st['eval']:.2f} ({st['eval_worst_arm']:.2f}, {st['eval_best_arm']:.2f})"]


def seeds_block() -> str:
    """results/full/: one row per seed, every score with its worst and best arm."""
    runs = load_variant("full")
    if not runs:
        return "(no runs yet: `make experiments`)"
    rows = [score_row(run) for run in runs]
    goals = [[goal, found, "yes" if met else "**no**"] for goal, found, met in score_goals(runs)]
    return (f"{describe_runs(runs)}\n\n"
            + markdown_table(["seed", "solved at episode", "first episode with mean >= 30",
                     "mean of episodes 1-100 (worst arm, best arm)", "minutes to solve",
                     "noise-free, 5 episodes (worst arm, best arm)"], rows)
            + f"\n\nThe score goals, on these {len(runs)} seeds:\n\n" + markdown_table(["goal", "the seeds give", "met"], goals))


def describe_runs(runs: list) -> str:
    """Where a set of runs was made: environment, machine, how many shared the machine, and whether
    today's code would run them with the same configuration."""
    env = sorted({r["summary"].get("environment", "?") for r in runs})
    machine = sorted({r["summary"].get("machine", "?") for r in runs})
    shared = sorted({r["summary"].get("concurrent_runs", 1) for r in runs})
    together = " and ".join(f"{k} run{'s' if k > 1 else ''} at a time" for k in shared)
    return (f"Environment: {'; '.join(env)}. Machine: {'; '.join(machine)}; {together}. {provenance(runs)}"
            + vintage(runs))


def provenance(runs: list) -> str:
    """The commits whose code made the runs (summary.json's `commit`), most runs first."""
    from collections import Counter

    def part(commit, n):
        count = f"{n} run{'s' if n > 1 else ''}"
        if commit is None:
            return f"{count} made before runs recorded their commit"
        return f"{count} outside a git checkout of this project" if commit == "unknown" else f"commit `{commit}` ({count})"
    return "Code: " + "; ".join(part(c, n) for c, n in Counter(r["summary"].get("commit") for r in runs).most_common()) + "."


def vintage(runs: list) -> str:
    """A sentence when some of the agent's runs (not the peers', whose configuration names an
    `algorithm`) were made by earlier code: their config.json differs from what a run of their
    variant (the folder results/<variant>/seed<k>/ names it) and seed saves today, naming the fields."""
    from continuous_control.ablations import todays_config
    from continuous_control.variants import CHANGES

    def today(run):
        variant = os.path.basename(os.path.dirname(run["dir"]))
        return todays_config(variant if variant in CHANGES else "full", run["config"]["seed"])
    agents = [r for r in runs if "algorithm" not in r["config"]]
    older = [(saved, now) for saved, now in ((r["config"], today(r)) for r in agents) if saved != now]
    if not older:
        return ""
    fields = sorted({k for saved, now in older for k in {*saved, *now}
                     if k not in saved or k not in now or saved[k] != now[k]})
    return (f" {len(older)} of the agent's {len(agents)} runs here were made by earlier code (their configuration "
            f"differs from today's in {', '.join(f'`{m}`' for m in fields)}); `make experiments` runs them again.")


def ablations_block() -> str:
    """Each variant's verdicts against the full agent, by the rule of experiments/claims.py."""
    results = load_results()
    comparisons = all_comparisons(results)
    if not comparisons:
        return "(no ablations yet: `make experiments`)"
    rows = [[LABELS[v], len(cs[0].seeds), summary_line(cs)] for v, cs in comparisons.items()]
    primary = [[LABELS[row[0]]] + row[1:] for row in interval_rows(results)]
    return (f"{describe_runs([r for runs in results.values() for r in runs])} {rule_sentence(comparisons)}\n\n"
            + "The primary measure, the mean of episodes 1-100:\n\n" + markdown_table(INTERVAL_HEADER, primary)
            + "\n\nEvery measure:\n\n"
            + markdown_table(["variant", "paired seeds", "against the full agent, paired by seed (rule: experiments/claims.py)"], rows))


def peers_block() -> str:
    """Stable-Baselines3's TD3 and SAC beside the full agent on the same seeds (experiments/peers.py)."""
    from experiments.peers import peer_results, peers_intervals, peers_table
    results = peer_results()
    if len(results) < 2 or "full" not in results:
        return "(no peer results yet: `make peers`)"
    return (f"{describe_runs([r for runs in results.values() for r in runs])}\n\n"
            f"{peers_table(results)}\n\nThe mean of episodes 1-100, each peer against the agent on the same seeds:\n\n"
            f"{peers_intervals(results)}")


def compute_block(run_dir: str = "checkpoints") -> str:
    """The training time behind results/ and the notebook's run (`run_dir`): the sum of every run's wall time."""
    runs = [r for rs in load_results().values() for r in rs]
    hours = sum(r["summary"]["wall_seconds"] for r in runs) / 3600
    notebook = load_run(run_dir)["summary"]["wall_seconds"] / 3600
    jobs = max((r["summary"].get("concurrent_runs", 1) for r in runs), default=1)
    machines = "; ".join(sorted({r["summary"].get("machine", "unknown machine") for r in runs}))
    return (f"{len(runs)} runs in `results/` trained for {hours:.1f} hours in all ({jobs} at a time on {machines}: "
            f"about {hours / jobs:.1f} hours of wall time), and the notebook's run "
            f"in `{run_dir.rstrip('/')}/` for {notebook * 60:.0f} minutes: {hours + notebook:.1f} hours of training.")


def speed_block() -> str:
    s = json.load(open(os.path.join(ROOT, "results", "benchmarks", "env_speed.json")))
    rows = [["in-process `ReacherEnvironment`", f"{s['in_process']:,.0f}", f"one 1001-step episode in {1001 / s['in_process']:.2f} s"]]
    if s.get("client"):
        rows.append(["through the `unityagents` client and the executable", f"{s['client']:,.0f}",
                     f"{1000 / s['client']:.1f} ms a step"])
    return f"{s['machine']}, 20 agents, random actions:\n\n" + markdown_table(["", "steps per second", ""], rows)


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
    return markdown_table(["replica", "random play, 20-arm mean", "arms at 0", "scripted controller",
                  "Unity-trained actors, mean of 4", "lowest actor"], rows)


def train_speed_block() -> str:
    """One column per saved profile (results/benchmarks/train_speed_<label>.json, written by
    benchmarks/train_speed.py), by label and episode. The total is the episode's wall time per step."""
    paths = glob.glob(os.path.join(ROOT, "results", "benchmarks", "train_speed_*.json"))
    runs = sorted((json.load(open(p)) for p in paths), key=lambda r: (r["label"].split(",")[0], r["episode"]))
    if not runs:
        return "(no profile yet: `python -m benchmarks.train_speed`)"
    phases = list(dict.fromkeys(phase for r in runs for phase in r["ms_per_step"]))
    cell = lambda r, phase: f"{r['ms_per_step'][phase]:.3f}" if phase in r["ms_per_step"] else ""
    rows = [[phase] + [cell(r, phase) for r in runs] for phase in phases]
    rows.append(["**total, wall time**"] + [f"**{t:.2f}** ({1000 / t:,.0f} steps/s, {1001 * t / 1000:.1f} s an episode)"
                                            for t in (r["wall_ms_per_step"] for r in runs)])
    return (f"{runs[0]['machine']}; milliseconds per environment step (20 arms), each phase without the timed "
            "phases it calls:\n\n" + markdown_table(["phase"] + [r["label"] for r in runs], rows))


BLOCKS = {"run": run_block, "seeds": seeds_block, "ablations": ablations_block, "peers": peers_block,
          "compute": compute_block,
          "speed": speed_block, "calibration": calibration_block, "train_speed": train_speed_block}


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
