"""Train the notebook's agent headless, for several seeds and variants, and save the results.

    python -m experiments.run --variant full --seeds 0 1 2            # until solved (max 200)
    python -m experiments.run --all                 # the report's set: what `make experiments` runs
    python -m experiments.run --analyses            # after --all: the weak arm and a twin critic, from runs/
    python -m experiments.run --all --ray           # the same, as Ray tasks on this machine (pip install -e .[cluster])
    python -m experiments.run --all --ray HOST:6379 # ... on the Ray cluster whose head is HOST

Each run has its own process and torch thread, checkpoints to runs/<variant>/seed<k>/ (not committed), and
leaves its small results, with a noise-free evaluation, in results/<variant>/seed<k>/ (then it is skipped).
With --ray each run is one Ray task of one CPU, on whichever node Ray gives it; its checkpoints and log stay in
that node's runs/, a task that fails is retried (RETRIES), and its small result files come back to this machine,
which writes results/ as without Ray. Every node holds the project at this commit, installed with its [cluster]
extra, on the same kind of processor if its runs are to repeat the saved ones.
"""

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from continuous_control.files import MANIFEST, FileRefused
from continuous_control.provenance import ROOT
from continuous_control.results import evaluate, load_run, read_json, write_files, write_json
from experiments.variants import CHANGES, RESULTS_VERSION

SEEDS, FEW_SEEDS, ABLATION_EPISODES = tuple(range(10)), (0, 1, 2), 100
# The variants the lesson's and the report's claims rest on run on all ten seeds; the others on three.
TEN_SEEDS = (
    "full",
    "one_step",
    "no_ramp",
    "uniform",
    "all_time_max_priority",
    "mean_priority",
    "action_noise",
    "no_noise",
    "plain",
    "learn_every_step",
    "clipped_double_q",
    "mirror",
)
RESULT_FILES = ("scores.csv", "arm_scores.csv", "config.json", "summary.json")
RUNS = os.path.join(ROOT, "runs")
# The runs whose networks `--analyses` reads (results/ keeps none): finished only while runs/ holds them.
WEAK_ARM_RUNS = tuple(("full", seed) for seed in SEEDS)
TWIN_CRITIC_RUN = ("clipped_double_q", 0)
RETRIES = 2  # a Ray task that fails is run again this many times (resuming from its checkpoint), then reported
WAIT_SECONDS = 30  # the longest the driver waits for Ray between two looks at its runs


def report_set() -> list[tuple[str, int, int, bool]]:
    """(variant, seed, episodes, stop when solved) of every run the report reads, seed-major: first seeds first."""
    runs = []
    for seed in SEEDS:
        runs.append(("full", seed, 200, True))
        runs += [
            (v, seed, ABLATION_EPISODES, False)
            for v in CHANGES
            if v != "full" and (v in TEN_SEEDS or seed in FEW_SEEDS)
        ]
    return runs


def run_one(
    variant: str,
    seed: int,
    episodes: int,
    stop: bool,
    concurrent: int = 1,
    runs: str = RUNS,
    results: str = os.path.join(ROOT, "results"),
    **overrides,
) -> dict:
    """One training run in this process (resumed if interrupted); its summary. `overrides`: Config changes."""
    import torch

    from continuous_control.checkpoints import CheckpointError
    from experiments.ablations import config_for, train
    from reacher import ReacherEnvironment

    torch.set_num_threads(1)
    cfg = config_for(CHANGES[variant], seed=seed, **overrides)
    run_dir = os.path.join(runs, variant, f"seed{seed}")
    go = lambda resume: train(
        cfg,
        ReacherEnvironment(seed=seed, verbose=False),
        run_dir,
        episodes,
        stop,
        resume=resume,
        live=False,
        log_every=10,
    )
    try:
        go(resume=True)
    except CheckpointError as error:  # made by other code, or damaged: this run starts afresh
        shutil.rmtree(os.path.join(run_dir, "resume"))  # runs/ is scratch space: no copy is kept
        print(f"{error}\nDeleted it; starting {variant} seed {seed} afresh.", flush=True)
        go(resume=False)
    summary = record(run_dir, os.path.join(results, variant, f"seed{seed}"), variant, seed, concurrent_runs=concurrent)
    print(
        f"{variant} seed {seed}: solved at {summary['solved_at']}, first 30 at {summary['first_episode_mean_30']}, "
        f"{summary['wall_seconds'] / 60:.1f} min, "
        f"noise-free eval {[round(x, 2) for x in summary['eval_noise_free_5']]}",
        flush=True,
    )
    return summary


def record(run_dir: str, out: str, variant: str, seed: int, **extra) -> dict:
    """Evaluate a finished run's exported policy noise-free and copy its small results to `out`."""
    summary = read_json(os.path.join(run_dir, "summary.json"))
    evaluation = evaluate(run_dir, seed)
    summary.update(
        eval_noise_free_5=evaluation["episode_means"],
        eval_arm_means=evaluation["arm_means"],
        variant=variant,
        changes=CHANGES[variant],
        results_version=RESULTS_VERSION,
        **extra,
    )
    names = [
        name
        for name in RESULT_FILES[:-1] + ("diagnostics.csv",)  # older runs have no diagnostics
        if name in RESULT_FILES or os.path.exists(os.path.join(run_dir, name))
    ]
    files = {name: Path(run_dir, name).read_bytes() for name in names}
    write_files(out, {**files, "summary.json": json.dumps(summary, indent=2)}, whole=True)  # the old result or this one
    return summary


def finished(results: str, variant: str, seed: int, episodes: int, stop: bool, runs: str = RUNS) -> bool:
    """Whether results/ holds this run, current (changes, RESULTS_VERSION), stopped, with runs/ networks if needed."""
    folder = os.path.join(results, variant, f"seed{seed}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        return False
    if (variant, seed) in (*WEAK_ARM_RUNS, TWIN_CRITIC_RUN) and not os.path.exists(
        os.path.join(runs, variant, f"seed{seed}", "critic.pt")
    ):
        return False
    summary = read_json(os.path.join(folder, "summary.json"))
    if (summary.get("changes"), summary.get("results_version")) != (CHANGES[variant], RESULTS_VERSION):
        return False
    return summary["episodes"] >= episodes or (stop and summary["solved_at"] is not None)


def refuse_to_replace(results: str, variant: str, seed: int, episodes: int) -> None:
    """A run never replaces a current result that holds more episodes than it would (a finished run whose
    networks are not in runs/, as on every fresh clone, asked again for fewer episodes): it stops, naming the
    folder. Run again for as many episodes, it repeats the result on the same kind of processor."""
    folder = os.path.join(results, variant, f"seed{seed}")
    with contextlib.suppress(OSError, ValueError):
        summary = read_json(os.path.join(folder, "summary.json"))
        current = (summary.get("changes"), summary.get("results_version")) == (CHANGES[variant], RESULTS_VERSION)
        if current and summary["episodes"] > episodes:
            raise SystemExit(
                f"refusing to replace {folder}: it holds a finished {summary['episodes']}-episode run, and "
                f"this run of {episodes} episodes would write over it; remove the folder, or give --results "
                "another folder"
            )


def analyses(runs: str = RUNS) -> None:
    """The weak arm on every full seed's policy (results/weak_arm_seeds.json), and the twin critic of
    TWIN_CRITIC_RUN against Monte-Carlo returns (results/overestimation/), from the runs in runs/."""
    from experiments import overestimation, weak_arm

    folder = lambda variant, seed: os.path.relpath(os.path.join(runs, variant, f"seed{seed}"), ROOT)
    write_json(weak_arm.SEEDS_FILE, weak_arm.across_seeds([folder(*run) for run in WEAK_ARM_RUNS]))
    print(overestimation.save(overestimation.measure(folder(*TWIN_CRITIC_RUN))))


def child(argv: list, name: str, log: str) -> int:
    """`python -m *argv` in a child process, its output appended to `log`; a line as it starts and one as it ends."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    say = lambda text: (sys.stdout.write(text + "\n"), sys.stdout.flush())  # one write a line: runs print at once
    say(f"started {name} (log: {log})")
    with open(log, "a") as f:
        code = subprocess.run([sys.executable, "-m", *argv], stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    tail = Path(log).read_text().strip().splitlines()[-1:]
    say(f"finished {name} (exit {code}): {tail[0] if tail else ''}")
    return code


def launch(run: tuple, jobs: int, results: str, runs: str = RUNS) -> int:
    """One run in a child process (one torch thread each), its output in runs/<variant>-seed<k>.log."""
    variant, seed, episodes, stop = run
    argv = [
        "experiments.run",
        "--one",
        variant,
        str(seed),
        "--episodes",
        str(episodes),
        "--jobs",
        str(jobs),
        "--results",
        results,
        "--runs",
        runs,
    ] + ([] if stop else ["--no-stop"])
    return child(argv, f"{variant} seed {seed}", os.path.join(runs, f"{variant}-seed{seed}.log"))


def ray_task(run: tuple, concurrent: int, runs: str | None, overrides: dict) -> dict:
    """One run, on a Ray worker: its output in that node's runs/<variant>-seed<k>.log, its result files returned."""
    import platform

    variant, seed, episodes, stop = run
    runs = runs or RUNS  # this node's
    log = os.path.join(runs, f"{variant}-seed{seed}.log")
    os.makedirs(runs, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as out,
        open(log, "a") as f,
        contextlib.redirect_stdout(f),
        contextlib.redirect_stderr(f),
    ):
        run_one(variant, seed, episodes, stop, concurrent, runs=runs, results=out, **overrides)
        folder = Path(out, variant, f"seed{seed}")
        files = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != MANIFEST}
    return {"files": files, "log": f"{platform.node()}:{log}"}


def ray_sweep(batches: list, address: str, jobs: int, results: str, runs: str | None = None, **overrides) -> list:
    """Each batch's runs as Ray tasks, at most its limit at a time (None: as many as Ray has CPUs; a batch starts
    when the one before it ends), on a local Ray of `jobs` CPUs (`address` "local") or the cluster at `address`;
    each result written to `results` as it comes back, and checked. The runs that failed after RETRIES retries."""
    try:
        import ray
    except ImportError:
        raise SystemExit("--ray needs Ray: pip install -e .[cluster]") from None
    from tqdm import tqdm

    local = address == "local"
    ray.init(address=None if local else address, num_cpus=jobs if local else None, include_dashboard=False)
    task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=True)(ray_task)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    failed, minutes = [], []
    total = sum(len(runs_) for runs_, _ in batches)
    bar = tqdm(total=total, unit="run", desc="runs", dynamic_ncols=True)
    try:
        for todo, limit in batches:
            todo, pending, limit = list(todo), {}, min(limit or cpus, cpus)
            while todo or pending:
                while todo and len(pending) < limit:
                    run = todo.pop(0)
                    pending[task.remote(run, limit, runs, overrides)] = run
                done, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_SECONDS)
                for ref in done:
                    variant, seed, *_ = run = pending.pop(ref)
                    name = f"{variant} seed {seed}"
                    try:
                        out = ray.get(ref, timeout=WAIT_SECONDS)
                        folder = os.path.join(results, variant, f"seed{seed}")
                        files = out["files"]
                        if not set(files) <= {*RESULT_FILES, "diagnostics.csv"} or not all(
                            type(data) is bytes for data in files.values()
                        ):  # only a run's result files, by name, are written here
                            raise FileRefused(f"{name} sent back {sorted(files)!r}, not a run's result files")
                        write_files(folder, files, whole=True)
                        summary = load_run(folder)["summary"]  # what came back is checked like any run folder
                    except (ray.exceptions.RayError, FileRefused, KeyError, TypeError) as error:
                        failed.append(run)
                        retried = isinstance(error, ray.exceptions.RayError)
                        how = f"after {RETRIES} retries" if retried else "its results"
                        log = os.path.join(runs or "runs", f"{variant}-seed{seed}.log")
                        bar.write(f"failed {name} ({how}): {str(error).strip().splitlines()[-1]}; its log: {log}")
                        continue
                    minutes.append(summary["wall_seconds"] / 60)
                    bar.write(
                        f"finished {name}: solved at {summary['solved_at']}, {minutes[-1]:.1f} min, "
                        f"{summary['processor']} (log: {out['log']})"
                    )
                    bar.update(1)
                    left = total - bar.n - len(failed)
                    bar.set_postfix(compute_hours_left=f"{left * sum(minutes) / len(minutes) / 60:.1f}")
    finally:
        bar.close()
        ray.shutdown()
    return failed


def positive(text: str) -> int:
    """An argument that must be a whole number >= 1 (argparse names the option when this refuses)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs="+", default=["full"], choices=sorted(CHANGES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--episodes", type=positive, default=200, help="maximum episodes per run")
    parser.add_argument("--no-stop", action="store_true", help="run all episodes even once solved")
    parser.add_argument("--jobs", type=positive, default=2, help="runs at a time")
    parser.add_argument(
        "--all",
        action="store_true",
        help="the report's set: the full agent for seeds 0-9 until "
        "solved, the ablations for 100 episodes on seeds 0-9 (TEN_SEEDS) or 0-2",
    )
    parser.add_argument("--analyses", action="store_true", help=analyses.__doc__)
    parser.add_argument(
        "--results",
        default=os.path.join(ROOT, "results"),
        help="the folder that receives <variant>/seed<k>/ (default results/)",
    )
    parser.add_argument("--runs", default=RUNS, help="where runs checkpoint and log, on each machine (default runs/)")
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray: a local Ray of --jobs CPUs, or the cluster whose head is at ADDRESS (host:port)",
    )
    parser.add_argument("--one", nargs=2, metavar=("VARIANT", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.analyses:
        return analyses(args.runs)
    if args.one:
        one = args.one[0], int(args.one[1]), args.episodes, not args.no_stop, args.jobs
        return run_one(*one, runs=args.runs, results=args.results)
    plan = (
        report_set()
        if args.all
        else [(v, s, args.episodes, not args.no_stop) for s in args.seeds for v in args.variant]
    )
    todo = [run for run in plan if not finished(args.results, *run, runs=args.runs)]
    for variant, seed, episodes, _ in todo:
        refuse_to_replace(args.results, variant, seed, episodes)
    # With --all, the full agent's seeds run alone first (the seeds table times them), then the rest.
    alone = [run for run in todo if args.all and run[0] == "full"]
    shared = [run for run in todo if run not in alone]
    print(f"{len(todo)} runs to do: {len(alone)} alone, then {len(shared)} {args.jobs} at a time", flush=True)
    if args.ray:
        shared_limit = args.jobs if args.ray == "local" else None  # a cluster: as many as it has CPUs
        runs = None if args.runs == RUNS else args.runs  # by default, each node's own runs/
        failed = ray_sweep([(alone, 1), (shared, shared_limit)], args.ray, args.jobs, args.results, runs)
        if failed:
            sys.exit(f"{len(failed)} of {len(todo)} runs failed: " + ", ".join(f"{v} seed {s}" for v, s, *_ in failed))
        return
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        codes = [launch(run, 1, args.results, args.runs) for run in alone]
        codes += pool.map(lambda run: launch(run, args.jobs, args.results, args.runs), shared)
    failed = sum(code != 0 for code in codes)
    if failed:
        sys.exit(f"{failed} of {len(todo)} runs failed: their logs are in runs/")


if __name__ == "__main__":
    main()
