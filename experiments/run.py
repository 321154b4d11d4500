"""Train the notebook's agent headless, for several seeds and variants, and save the results.

    python -m experiments.run --variant full --seeds 0 1 2            # until solved (max 200)
    python -m experiments.run --all                 # the report's set: what `make experiments` runs
    python -m experiments.run --analyses            # after --all: the weak arm and a twin critic, from runs/
    python -m experiments.run --all --ray HOST:6379 # the same on the Ray cluster whose head is HOST

Every run is one Ray task of one CPU: on a Ray of --jobs CPUs that this command starts on this machine alone
(listening on loopback only), or with --ray ADDRESS on whichever node of that cluster Ray gives it. A run
checkpoints to runs/<variant>/seed<k>/ and logs to runs/<variant>-seed<k>.log on its node (not committed); a
task whose worker or node dies is run again (RETRIES), resuming from its checkpoint. Its small result files, with
a noise-free evaluation, come back to this machine, are checked, and land in results/<variant>/seed<k>/ (then
the run is skipped). Every node holds the project at this commit, installed with its [cluster] extra, on the
same kind of processor if its runs are to repeat the saved ones.
"""

import argparse
import contextlib
import json
import os
import platform
import shutil
import socket
import sys
import tempfile
import traceback
from pathlib import Path

from continuous_control.files import MANIFEST, FileRefused, read_json
from continuous_control.playback import evaluate
from continuous_control.provenance import ROOT
from continuous_control.results import NETWORKS, replace_run, write_files, write_json
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
        os.path.join(runs, variant, f"seed{seed}", NETWORKS)
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


def cores() -> int:
    """The CPUs this process may use (a container's or a `taskset`'s share, where the system says)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def open_log(path: str):
    """`path` opened to append, one line at a time (a killed attempt's lines are on disk), never through a symlink
    planted there; its folder is made here if it is missing."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.fdopen(os.open(path, flags, 0o644), "a", buffering=1)
    except OSError:
        if os.path.islink(path):
            raise FileRefused(f"{path} is a symbolic link; a run writes no log through one") from None
        raise


class Places:
    """Where each run's log is (node:path), told by its task as it starts: the driver names it for a task whose
    worker or node died, which returns nothing."""

    def __init__(self):
        self.places = {}

    def put(self, run: tuple, place: str) -> None:
        self.places[run] = place

    def get(self, run: tuple) -> str | None:
        return self.places.get(run)


def ray_task(run: tuple, concurrent: int | None, runs: str | None, overrides: dict, places=None) -> dict:
    """One run, on a Ray worker: its output in that node's runs/<variant>-seed<k>.log, after a line naming the
    attempt and its node; its result files returned, or the last line of its error (the log holds the traceback).
    `concurrent` None: as many runs at once as this node has CPUs."""
    import ray

    variant, seed, episodes, stop = run
    runs = runs or RUNS  # this node's
    log = os.path.abspath(os.path.join(runs, f"{variant}-seed{seed}.log"))
    place = f"{platform.node()}:{log}"
    if places is not None:
        places.put.remote(run, place)
    context = ray.get_runtime_context()
    if concurrent is None:
        node = next(n for n in ray.nodes() if n["NodeID"] == context.get_node_id())
        concurrent = int(node["Resources"].get("CPU", 1))
    task = context.get_task_id()
    with open_log(log) as f:
        attempt = 1 + Path(log).read_text(errors="replace").count(f"Ray task {task}")  # a retry keeps its task id
        f.write(
            f"--- {variant} seed {seed}: attempt {attempt} of {RETRIES + 1} on {platform.node()} (pid {os.getpid()}, "
            f"Ray task {task})"
            + ("; a retry: the attempt before it ended unfinished, its worker or node gone\n" if attempt > 1 else "\n")
        )
        try:
            with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
                run_one(variant, seed, episodes, stop, concurrent, runs=runs, results=out, **overrides)
                folder = Path(out, variant, f"seed{seed}")
                files = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != MANIFEST}
        except Exception as error:  # a run's own error: not retried, it would fail again
            traceback.print_exc(file=f)
            return {"error": last_line(error), "log": place}
    return {"files": files, "log": place}


def last_line(error: BaseException) -> str:
    """An error's last line, as a traceback ends: its type and message."""
    lines = "".join(traceback.format_exception_only(error)).strip().splitlines()
    return lines[-1] if lines else type(error).__name__


def checked(name: str, folder: str, files) -> dict:
    """A run's result files as they came back, before `folder` changes: FileRefused, one sentence, for no files
    or files that are no run's (`results.replace_run` then checks them in full, in memory, as it writes them)."""
    if not isinstance(files, dict) or not files:
        raise FileRefused(f"{name} sent back no result files; {folder} is as it was")
    if not set(files) <= {*RESULT_FILES, "diagnostics.csv"} or not all(type(x) is bytes for x in files.values()):
        raise FileRefused(f"{name} sent back {sorted(map(str, files))!r}, not a run's result files; refused")
    if set(RESULT_FILES) - set(files):
        raise FileRefused(f"{name} sent back no {min(set(RESULT_FILES) - set(files))}; {folder} is as it was")
    return files


LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray takes this machine's node for one with no network


def start_ray(address: str, jobs: int, temp: str):
    """Ray, started here ("local": `jobs` CPUs, on loopback) or joined at `address`, its session here in `temp`
    (a cluster whose head runs token authentication is joined with the token this machine holds).
    SystemExit, one line, where Ray is missing or does not start."""
    local = address == "local"
    if local:  # read as Ray is imported and by its processes: they bind to 127.0.0.1, not to every interface
        os.environ[LOOPBACK] = "0"
    else:
        host, _, port = address.rpartition(":")
        try:  # Ray itself waits minutes for a head that is not there
            socket.create_connection((host, int(port)), timeout=WAIT_SECONDS).close()
        except (OSError, ValueError) as error:
            raise SystemExit(f"No Ray head answers at {address} (host:port): {error}") from None
        held = {"RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"} & set(os.environ) or Path.home().joinpath(".ray/auth_token")
        if "RAY_AUTH_MODE" not in os.environ and (isinstance(held, set) or held.exists()):
            os.environ["RAY_AUTH_MODE"] = "token"  # what Ray does for a head it finds here, never for an address
        os.environ["RAY_TMPDIR"] = temp  # the driver's session folder, in place of /tmp/ray (_temp_dir failed here)
    options = dict(num_cpus=jobs, _temp_dir=temp) if local else {}
    try:
        try:
            import ray
        except ImportError as error:
            said = f"The sweep runs on Ray, which does not import ({error}): pip install -e '.[cluster]'"
            raise SystemExit(said) from None
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, **options)
        except Exception as error:  # Ray's own errors have no common class
            with contextlib.suppress(Exception):
                ray.shutdown()  # what it started before it failed
            raise SystemExit(f"Ray did not start at {address}: {last_line(error)}") from None
    finally:
        for name in (LOOPBACK, "RAY_TMPDIR"):  # Ray's processes started with them; a later Ray in this process not
            os.environ.pop(name, None)
    return ray


class RunFailed(Exception):
    """A run's own error, as its task reported it in one line."""


def collect(ray, ref, run: tuple, results: str, places) -> tuple:
    """The finished task `ref` of the run `run`: its result checked and written to `results`, then (its summary,
    the line that says so), or (None, the line that says why it failed, with its log's node and path)."""
    variant, seed, *_ = run
    name, out = f"{variant} seed {seed}", {}
    try:
        out = ray.get(ref, timeout=WAIT_SECONDS)
        if "error" in out:
            raise RunFailed(out["error"])
        folder = os.path.join(results, variant, f"seed{seed}")
        summary = replace_run(folder, checked(name, folder, out.get("files")))["summary"]
    except (ray.exceptions.RayError, RunFailed, FileRefused, OSError) as error:
        line = (str(error).strip().splitlines() or [""])[-1]
        if isinstance(error, ray.exceptions.RayError):  # its worker or node died, at every attempt
            how, line = f" after {RETRIES} retries", f"{type(error).__name__}: {line}"
            log = ray.get(places.get.remote(run), timeout=WAIT_SECONDS)
        else:
            how, log = "", out["log"]
        return None, f"failed {name}{how}: {line}; its log: {log or 'none, it never started'}"
    minutes = summary["wall_seconds"] / 60
    return summary, (
        f"finished {name}: solved at {summary['solved_at']}, {minutes:.1f} min, {summary['processor']} "
        f"(log: {out['log']})"
    )


def ray_sweep(batches: list, address: str, jobs: int, results: str, runs: str | None = None, **overrides) -> list:
    """Each batch (runs, how many at a time: None, all that Ray has CPUs for; the runs at once that each records:
    None, its node's CPUs) as Ray tasks, a batch once the one before it ends, on a Ray of `jobs` CPUs started here
    (`address` "local") or the cluster at `address`; each result checked and written to `results` as it comes back.
    The runs that failed, each named as it fails with the last line of its error and its log's node and path.
    Ctrl-C ends it with one line that says how to resume."""
    from tqdm import tqdm

    temp = tempfile.mkdtemp(prefix="ray-")  # this machine's Ray session folder, removed at the end
    total = sum(len(todo) for todo, *_ in batches)
    failed, minutes, pending, ray = [], [], {}, None
    bar = tqdm(total=total, unit="run", desc="runs", dynamic_ncols=True)
    try:
        ray = start_ray(address, jobs, temp)
        task = ray.remote(num_cpus=1, max_retries=RETRIES)(ray_task)  # retried where its worker or node dies
        places = ray.remote(num_cpus=0)(Places).remote()
        for todo, limit, concurrent in batches:
            todo, cpus = list(todo), max(1, int(ray.cluster_resources().get("CPU", 1)))
            limit = min(limit, cpus) if limit else len(todo)
            while todo or pending:
                while todo and len(pending) < limit:
                    run = todo.pop(0)
                    pending[task.remote(run, concurrent, runs, overrides, places)] = run
                done, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_SECONDS)
                for ref in done:
                    run = pending.pop(ref)
                    summary, line = collect(ray, ref, run, results, places)
                    bar.write(line)
                    if summary is None:
                        failed.append(run)
                        continue
                    minutes.append(summary["wall_seconds"] / 60)
                    bar.update(1)
                    left = total - bar.n - len(failed)
                    bar.set_postfix(compute_hours_left=f"{left * sum(minutes) / len(minutes) / 60:.1f}")
    except KeyboardInterrupt:
        for ref in pending:  # on a cluster too, none runs on
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        bar.close()
        raise SystemExit(
            f"Interrupted: {total - bar.n - len(failed)} of {total} runs unfinished. Run the same command again "
            "to resume them, each from its last checkpoint in runs/."
        ) from None
    finally:
        bar.close()
        if ray is not None:
            ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
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


def main(argv=None, **overrides):
    """The command line; `overrides`: Config changes for every run (tests make small runs with them)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs="+", default=["full"], choices=sorted(CHANGES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--episodes", type=positive, default=200, help="maximum episodes per run")
    parser.add_argument("--no-stop", action="store_true", help="run all episodes even once solved")
    parser.add_argument("--jobs", type=positive, default=cores(), help="runs at a time here (default: its cores)")
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
        default="local",
        metavar="ADDRESS",
        help="the Ray cluster whose head is at ADDRESS (host:port) runs the runs; without it, or without ADDRESS, "
        "a Ray of --jobs CPUs that this command starts on this machine alone",
    )
    args = parser.parse_args(argv)
    if args.analyses:
        return analyses(args.runs)
    plan = (
        report_set()
        if args.all
        else [(v, s, args.episodes, not args.no_stop) for s in args.seeds for v in args.variant]
    )
    todo = [run for run in plan if not finished(args.results, *run, runs=args.runs)]
    for variant, seed, episodes, _ in todo:
        refuse_to_replace(args.results, variant, seed, episodes)
    runs = None if args.runs == RUNS else args.runs  # by default, each node's own runs/
    alone = [run for run in todo if args.all and run[0] == "full"]  # the longest runs, first
    shared = [run for run in todo if run not in alone]
    if args.ray == "local":  # with --all, the full agent's seeds run alone (the seeds table times them)
        batches = [(alone, 1, 1), (shared, args.jobs, args.jobs)]
        print(f"{len(todo)} runs to do: {len(alone)} alone, then {len(shared)} {args.jobs} at a time", flush=True)
    else:  # a cluster: the full agent's seeds beside the rest, each node running as many as it has CPUs
        batches = [(alone + shared, None, None)]
        print(f"{len(todo)} runs to do on the cluster at {args.ray}, as many at a time as it has CPUs", flush=True)
    failed = ray_sweep(batches, args.ray, args.jobs, args.results, runs, **overrides)
    if failed:
        sys.exit(f"{len(failed)} of {len(todo)} runs failed: " + ", ".join(f"{v} seed {s}" for v, s, *_ in failed))


if __name__ == "__main__":
    main()
