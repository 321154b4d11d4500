"""Train the notebook's agent headless, for several seeds and variants, and save the results.

    python experiments/run.py --variant full --seeds 0 1 2            # until solved (max 200)
    python experiments/run.py --variant one_step --seeds 0 1 2 --episodes 100 --no-stop
    python experiments/run.py --all                 # the report's set: what `make experiments` runs
    python experiments/run.py --import-notebook     # the notebook's run in checkpoints/ as full/seed0

Each (variant, seed) runs in its own process with one torch thread, `--jobs` at a time (2 on
this 2-core machine). A run checkpoints to runs/<variant>/seed<k>/ (large, not committed) and
resumes from there if interrupted; when it ends, its small results (scores.csv, summary.json
with a 5-episode noise-free evaluation of the exported policy, config.json) are copied to
results/<variant>/seed<k>/, and a run whose results exist is skipped.

The agent is the notebook's own code (experiments/notebook.py), never a copy.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# What each variant changes in the notebook's Config. Ablations change one thing at a time,
# except plain DDPG, which removes all three extensions.
VARIANTS = {
    "full": {},
    "one_step": {"n_step": 1},
    "n3": {"n_step": 3},
    "n10": {"n_step": 10},
    "uniform": {"alpha": 0.0},
    "action_noise": {"exploration": "ou"},
    "per_arm_noise": {"noise_per_arm": True},
    "no_noise": {"exploration": "none"},
    "plain": {"n_step": 1, "alpha": 0.0, "exploration": "ou"},
}
ABLATIONS = [v for v in VARIANTS if v != "full"]
FULL_SEEDS, ABLATION_SEEDS, ABLATION_EPISODES = (0, 1, 2, 3, 4), (0, 1, 2), 100


def report_set() -> list[tuple[str, int, int, bool]]:
    """(variant, seed, episodes, stop when solved) of every run the report reads, seed-major so
    that an interrupted set already holds every variant for the first seeds."""
    runs = []
    for seed in FULL_SEEDS:
        runs.append(("full", seed, 200, True))
        if seed in ABLATION_SEEDS:
            runs += [(v, seed, ABLATION_EPISODES, False) for v in ABLATIONS]
    return runs


def evaluate(run_dir: str, seed: int, episodes: int = 5) -> dict:
    """The exported policy (actor.pt2) without noise on goals unseen in training (environment seed
    10000 + seed): the 20-arm mean of each episode, and each arm's mean over the episodes."""
    import torch
    import reacher
    from reacher.demo import play
    policy = torch.export.load(os.path.join(run_dir, "actor.pt2")).module()

    def act(info):
        with torch.no_grad():
            return policy(torch.as_tensor(info.vector_observations, dtype=torch.float32)).numpy()

    scores = play(reacher.ReacherEnvironment(seed=10_000 + seed, verbose=False), act, episodes)
    return {"episode_means": scores.mean(1).tolist(), "arm_means": scores.mean(0).tolist()}


def run_one(variant: str, seed: int, episodes: int, stop: bool, concurrent: int) -> None:
    """One training run in this process; `concurrent`: how many runs shared the machine."""
    import torch
    import reacher
    from experiments.notebook import load_definitions
    torch.set_num_threads(1)
    ns = load_definitions()
    cfg = ns["Config"](seed=seed, max_episodes=episodes, stop_when_solved=stop, **VARIANTS[variant])
    run_dir = os.path.join(ROOT, "runs", variant, f"seed{seed}")
    env = reacher.ReacherEnvironment(seed=seed, verbose=False)
    ns["train"](cfg, env, run_dir, live=False, log_every=10)
    summary_path = os.path.join(run_dir, "summary.json")
    summary = json.load(open(summary_path))
    evaluation = evaluate(run_dir, seed)
    summary["eval_noise_free_5"], summary["eval_arm_means"] = evaluation["episode_means"], evaluation["arm_means"]
    summary["variant"], summary["concurrent_runs"] = variant, concurrent
    json.dump(summary, open(summary_path, "w"), indent=2)
    out = os.path.join(ROOT, "results", variant, f"seed{seed}")
    os.makedirs(out, exist_ok=True)
    for name in ("scores.csv", "arm_scores.csv", "config.json", "summary.json"):
        shutil.copy(os.path.join(run_dir, name), out)
    print(f"{variant} seed {seed}: solved at {summary['solved_at']}, first 30 at {summary['first_episode_mean_30']}, "
          f"{summary['wall_seconds'] / 60:.1f} min, noise-free eval {[round(x, 2) for x in summary['eval_noise_free_5']]}",
          flush=True)


def import_notebook_run() -> None:
    """Record the notebook's own run (checkpoints/, seed 0, default Config) as results/full/seed0."""
    src = os.path.join(ROOT, "checkpoints")
    summary = json.load(open(os.path.join(src, "summary.json")))
    config = json.load(open(os.path.join(src, "config.json")))
    evaluation = evaluate(src, config["seed"])
    summary["eval_noise_free_5"], summary["eval_arm_means"] = evaluation["episode_means"], evaluation["arm_means"]
    summary["variant"] = "full"
    summary["source"] = "Continuous_Control.ipynb"
    out = os.path.join(ROOT, "results", "full", f"seed{config['seed']}")
    os.makedirs(out, exist_ok=True)
    for name in ("scores.csv", "arm_scores.csv", "config.json"):
        shutil.copy(os.path.join(src, name), out)
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
    print(f"notebook run (seed {config['seed']}): solved at {summary['solved_at']}, noise-free eval "
          f"{[round(x, 2) for x in summary['eval_noise_free_5']]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs="+", default=["full"], choices=sorted(VARIANTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=200, help="maximum episodes per run")
    parser.add_argument("--no-stop", action="store_true", help="run all episodes even once solved")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time")
    parser.add_argument("--all", action="store_true", help="the report's set: the full agent for seeds 0-4 until solved, "
                        "every ablation for seeds 0-2 and 100 episodes")
    parser.add_argument("--import-notebook", action="store_true", help=import_notebook_run.__doc__)
    parser.add_argument("--one", nargs=2, metavar=("VARIANT", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.import_notebook:
        return import_notebook_run()
    if args.one:
        return run_one(args.one[0], int(args.one[1]), args.episodes, not args.no_stop, args.jobs)
    if args.all:
        plan = report_set()
    else:   # seed-major, as in report_set
        plan = [(v, s, args.episodes, not args.no_stop) for s in args.seeds for v in args.variant]
    todo = [run for run in plan
            if not os.path.exists(os.path.join(ROOT, "results", run[0], f"seed{run[1]}", "summary.json"))]
    running = []
    while todo or running:
        while todo and len(running) < args.jobs:
            v, s, episodes, stop = todo.pop(0)
            os.makedirs(os.path.join(ROOT, "runs"), exist_ok=True)
            log = open(os.path.join(ROOT, "runs", f"{v}-seed{s}.log"), "a")
            cmd = [sys.executable, __file__, "--one", v, str(s), "--episodes", str(episodes), "--jobs", str(args.jobs)]
            cmd += [] if stop else ["--no-stop"]
            running.append((v, s, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
            print(f"started {v} seed {s} (log: runs/{v}-seed{s}.log)", flush=True)
        time.sleep(5)
        for job in [j for j in running if j[2].poll() is not None]:
            running.remove(job)
            v, s, proc = job
            tail = open(os.path.join(ROOT, "runs", f"{v}-seed{s}.log")).read().strip().splitlines()[-1:]
            print(f"finished {v} seed {s} (exit {proc.returncode}): {tail[0] if tail else ''}", flush=True)


if __name__ == "__main__":
    main()
