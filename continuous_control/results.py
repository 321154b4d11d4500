"""A run folder: what a training run leaves behind (`save_results`, at TrainingRun.finish), written whole or
not at all (`write_files`), and read by everyone (`load_run`)."""

import contextlib
import copy
import errno
import io
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict

import numpy as np
import safetensors.torch
import torch
import torch.nn as nn

from .files import (
    MANIFEST,
    MIB,
    FileRefused,
    clear,
    create_new,
    enlist,
    manifest,
    new_beside,
    parse_json,
    read_folder,
    replace_files,
)
from .provenance import ROOT, code_version, machine, processor

TARGET_SCORE = 30.0  # the course's criterion: the mean of 100 consecutive episodes of the 20-arm mean
WINDOW = 100
EVAL_SEED = 10_000  # noise-free evaluations run on goals of environment seed EVAL_SEED + the run's seed


def average100(means, window: int = WINDOW) -> float:
    """The course's average: the mean of the last `window` episodes' scores (of every one, before `window`)."""
    return float(np.mean(means[-window:]))


def running_mean(x, window: int = WINDOW) -> np.ndarray:
    """Each episode's `average100`, of the episodes up to it."""
    return np.array([average100(x[: k + 1], window) for k in range(len(x))])


def solved_at(averages) -> int | None:
    """The course's rule: the first episode (counting from 1), from episode `WINDOW` on, whose 100-episode
    average reached TARGET_SCORE; None if none did."""
    hits = np.flatnonzero(np.asarray(averages, dtype=float)[WINDOW - 1 :] >= TARGET_SCORE)
    return int(hits[0]) + WINDOW if hits.size else None


def first_episode_at(means, level: float = TARGET_SCORE):
    """The first episode (counting from 1) whose score reached `level`, or None."""
    hits = np.flatnonzero(np.asarray(means) >= level)
    return int(hits[0]) + 1 if hits.size else None


@contextlib.contextmanager
def atomic_file(path: str, mode: str = "w"):
    """Write `path` through a new file beside it (`files.new_beside`: O_EXCL|O_NOFOLLOW, a name no one could plant),
    renamed into place at the block's end: the old file or the new, never half, never written through a link."""
    f, temporary = new_beside(path, mode)
    try:
        with f:
            yield f
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def write_files(folder: str, files: dict, whole: bool = False) -> None:
    """`files` ({name: bytes or text}) into `folder`, all or none, with their manifest. Without `whole`, each is
    written as a new file beside its place, then renamed into it, the manifest last; files of the folder that the
    manifest does not list (resume/, say) stay (`files.replace_files`). With `whole`, they are written to a new
    sibling folder that then replaces `folder` and its every file (one rename). A full disk is an OSError that
    names the folder and says that nothing in it changed."""
    folder = os.path.normpath(folder)
    if not whole:
        replace_files(folder, files)
        return
    files = {**files, MANIFEST: manifest(files)}
    parent, name = os.path.split(folder)
    os.makedirs(parent or ".", exist_ok=True)
    for left in os.listdir(parent or "."):  # a write's stage or set-aside folder that a kill left behind
        if left.startswith((f".{name}.partial.", f".{name}.old.")):
            clear(os.path.join(parent or ".", left))  # removed, a planted link never followed
    stage = tempfile.mkdtemp(dir=parent or ".", prefix=f".{name}.partial.")  # a new folder: nothing planted inside
    try:
        for file, data in files.items():
            with create_new(os.path.join(stage, file), "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
        if os.path.isdir(folder) and not os.path.islink(folder):
            old = tempfile.mkdtemp(dir=parent or ".", prefix=f".{name}.old.")
            os.replace(folder, old)  # onto the empty folder just made: a rename, never through a link
            os.replace(stage, folder)
            shutil.rmtree(old)
        else:
            clear(folder)  # a planted link: removed, never followed
            os.replace(stage, folder)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(
                error.errno,
                f"The disk is full: the files of {folder} were not written, and nothing in "
                f"it changed ({error.strerror})",
            ) from None
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def saved(save, obj) -> bytes:
    """What `save(obj, file)` writes (torch.save, torch.export.save), made in memory: torch's own file
    writer aborts the process on a full disk, where a Python write raises."""
    buffer = io.BytesIO()
    save(obj, buffer)
    return buffer.getvalue()


class Float32Input(nn.Module):
    """A policy that takes states of any float dtype (the environment's are float64) as float32."""

    def __init__(self, policy: nn.Module):
        super().__init__()
        self.policy = policy

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        # Not `states.float()`: torch.export turns a `.to` into a check that the input is float32 already.
        return self.policy(torch.ops.aten._to_copy(states, dtype=torch.float32))


def exported_policy(agent, state_size: int) -> bytes:
    """The noise-free target actor behind its normaliser as a `torch.export` program (actor.pt2), written for
    deployers who use torch without this project (a program: the project never reads one; `load_policy` reads
    policy.json and policy.safetensors): tensors of float32 or float64 states, one row per arm, any number of arms."""
    network = getattr(agent, "policy_network", lambda: nn.Sequential(agent.norm, agent.actor_target))()
    policy = Float32Input(copy.deepcopy(network).to("cpu", torch.float32).eval())
    # The batch dimension is dynamic (an example of 2, since 1 would be specialised).
    exported = torch.export.export(
        policy, (torch.zeros(2, state_size),), dynamic_shapes=({0: torch.export.Dim("agents", min=1)},)
    )
    return saved(torch.export.save, exported)


POLICY, POLICY_WEIGHTS, NETWORKS = "policy.json", "policy.safetensors", "networks.safetensors"
POLICY_LIMIT = 64 * MIB  # policy.safetensors and networks.safetensors: the four networks are about 0.5 MB
CLIP = 5.0  # the normaliser's clip (networks.Normalizer)


def to_safetensors(tensors: dict) -> bytes:
    """Named tensors as safetensors bytes: each copied to the CPU, contiguous, none sharing memory."""
    return safetensors.torch.save({k: v.detach().to("cpu").contiguous().clone() for k, v in tensors.items()})


def from_safetensors(data: bytes, path: str, wanted: dict, described_by: str = "its JSON") -> dict:
    """The tensors of safetensors bytes, exactly `wanted` ({name: shape}, float32) and finite; FileRefused naming
    `path` for anything else. The format holds no code: a bounded header, then raw numbers at exact offsets."""
    try:
        tensors = safetensors.torch.load(data)
    except Exception as error:  # the library's refusals of a damaged header or offsets (SafetensorError)
        raise FileRefused(f"{path} is not a safetensors file ({str(error)[:200]}); refused") from None
    if set(tensors) != set(wanted):
        odd = sorted(set(tensors) ^ set(wanted))[0]
        raise FileRefused(
            f"{path} holds the tensors {sorted(tensors)[:4]}..., not what {described_by} describes ({odd}); refused"
        )
    for name, x in tensors.items():
        if x.dtype != torch.float32 or tuple(x.shape) != tuple(wanted[name]):
            got = f"{x.dtype} of shape {tuple(x.shape)}"
            raise FileRefused(f"{path}: {name} is {got}, not float32 {wanted[name]} as {described_by} says")
        if not torch.isfinite(x).all():
            raise FileRefused(f"{path}: {name} holds a value that is not a finite number; refused")
    return tensors


def policy_files(agent) -> dict:
    """The noise-free target actor behind its normaliser (mirrored, for the report's mirroring ablation) as
    policy.json (its architecture, checked field by field on load) and policy.safetensors (its numbers)."""
    network = getattr(agent, "policy_network", lambda: nn.Sequential(agent.norm, agent.actor_target))()
    norm, actor = (network[0], network[1]) if isinstance(network, nn.Sequential) else (network.norm, network.actor)
    mirror = getattr(network, "mirror", None)  # the mirroring ablation's MirroredPolicy says how it mirrors
    tensors = {f"normalizer.{k}": v.float() for k, v in norm.state_dict().items()}
    for i, layer in enumerate(actor.layers):  # a NoisyLinear's mean weights, or a Linear's: the noise-free actor
        tensors[f"actor.layers.{i}.weight"] = getattr(layer, "weight_mean", getattr(layer, "weight", None)).float()
        tensors[f"actor.layers.{i}.bias"] = getattr(layer, "bias_mean", getattr(layer, "bias", None)).float()
    sizes = [
        layer.weight_mean.shape[1] if hasattr(layer, "weight_mean") else layer.in_features for layer in actor.layers
    ]
    architecture = {
        "state_size": sizes[0],
        "action_size": int(tensors[f"actor.layers.{len(sizes) - 1}.bias"].numel()),
        "hidden": sizes[1:],
        "clip": float(norm.clip),
        "mirror": mirror,
    }
    return {POLICY: json.dumps(architecture, indent=2), POLICY_WEIGHTS: to_safetensors(tensors)}


def network_tensors(agent) -> dict:
    """The four networks' state (weights, normaliser, noise buffers) as one dict of named tensors."""
    nets = {"actor": agent.actor, "actor_target": agent.actor_target, "critic": agent.critic, "normalizer": agent.norm}
    return {f"{name}.{k}": v for name, net in nets.items() for k, v in net.state_dict().items()}


def save_results(run_dir: str, agent, history: dict, env) -> dict:
    """Weights, the exported policy, the configuration, per-episode and per-arm scores, a summary: all of
    them or none (`write_files`; the folder's other files, such as resume/, stay)."""
    files = {**policy_files(agent), NETWORKS: to_safetensors(network_tensors(agent))}
    files["actor.pt2"] = exported_policy(agent, agent.norm.mean.numel())  # for deployers: never read by the project
    files["config.json"] = json.dumps(asdict(agent.cfg), indent=2)
    files |= score_files(history)
    if history.get("diagnostics"):
        names = list(history["diagnostics"][0])
        files["diagnostics.csv"] = csv_text(
            ",".join(names), ([row[c] for c in names] for row in history["diagnostics"]), "{:.6g}"
        )
    summary = {
        **score_summary(history),
        "environment": getattr(env, "description", "Unity build"),
        # where it ran, and the code it started with (a resume refuses other code that shapes training)
        "machine": machine(),
        "processor": processor(),
        "commit": history.get("commit") or code_version(),
        "seed": agent.cfg.seed,
    }
    files["summary.json"] = json.dumps(summary, indent=2)
    write_files(run_dir, files)
    return summary


def score_files(history: dict) -> dict:
    """scores.csv and arm_scores.csv ({name: text}) of a run's history: per episode its 20-arm mean, min, max, the
    100-episode average, the wall-clock seconds, and each arm's score."""
    columns = zip(history["mean"], history["min"], history["max"], history["avg100"], history["wall"])
    arms = ",".join(f"arm{k}" for k in range(len(history["arms"][0])))
    return {
        "scores.csv": csv_text("mean,min,max,avg100,wall_seconds", columns, "{:.4f}"),
        "arm_scores.csv": csv_text(arms, history["arms"], "{:.2f}"),
    }


def score_summary(history: dict) -> dict:
    """The summary's score entries of a run's history (score_files' columns, and solved_at)."""
    solved = history["solved_at"]
    return {
        "solved_at": solved,
        "first_episode_mean_30": first_episode_at(history["mean"]),
        "episodes": len(history["mean"]),
        "final_avg100": float(history["avg100"][-1]),
        "mean_episodes_1_100": float(np.mean(history["mean"][:WINDOW])),
        "arm_means_episodes_1_100": np.mean(history["arms"][:WINDOW], axis=0).tolist(),
        "wall_seconds": float(history["wall"][-1]),
        "wall_seconds_to_solve": float(history["wall"][solved - 1]) if solved else None,
    }


def csv_text(header: str, rows, number: str) -> str:
    """One row per episode, numbered from 1, each value written as `number` formats it."""
    return f"episode,{header}\n" + "".join(
        f"{i + 1}," + ",".join(number.format(v) for v in row) + "\n" for i, row in enumerate(rows)
    )


def acting(policy):
    """`policy(states) -> actions` on tensors as `act(info) -> actions` on an environment's observations."""

    def act(info):
        with torch.no_grad():
            return policy(torch.as_tensor(info.vector_observations, dtype=torch.float32)).numpy()

    return act


def evaluate_policy(policy, seed: int, episodes: int = 5) -> dict:
    """`policy(states) -> actions` (tensors) on unseen goals (environment seed EVAL_SEED + seed): each episode's
    mean, each arm's mean."""
    from reacher import ReacherEnvironment, play

    scores = play(ReacherEnvironment(seed=EVAL_SEED + seed, verbose=False), acting(policy), episodes)
    return {"episode_means": scores.mean(1).tolist(), "arm_means": scores.mean(0).tolist()}


def write_json(path: str, data: dict, listed: bool = False) -> str:
    """`data` as JSON at `path` (`atomic_file`, its folder made if missing); with `listed`, entered in its folder's
    manifest too (`files.enlist`: results/'s own files, which the report reads through it); the path."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    text = json.dumps(data, indent=2)
    with atomic_file(path) as f:
        f.write(text)
    if listed:
        enlist(path, text.encode())
    return path


# What a run folder can hold: scores of a 1001-step episode lie in [0, 0.04 * 1001], one row per episode.
SCORES = ("episode", "mean", "min", "max", "avg100", "wall_seconds")
MAX_SCORE = 0.04 * 1001
MAX_EPISODES, MAX_ARMS = 100_000, 1_000


def read_numbers(data: bytes, path: str, finite: bool = True, names: bool = False) -> np.ndarray:
    """CSV bytes of numbers (read once, by the caller) as a table: numpy's C reader, a header of names or none
    skipped; a cell that is not a number, or with `finite` one that is not finite, a FileRefused naming `path`."""
    text = io.StringIO(data.decode("ascii", errors="replace"))
    header = text.readline().strip().split(",")
    if not text.getvalue()[text.tell() :].strip():
        raise FileRefused(f"{path} has no rows of numbers: restore it from git or remove its run")
    try:
        values = np.loadtxt(text, delimiter=",", ndmin=2, dtype=np.float64)
    except ValueError as error:
        reason = str(error).strip().splitlines()[-1][:200]
        raise FileRefused(
            f"{path} is not a table of numbers ({reason}): restore it from git or remove its run"
        ) from None
    if values.size == 0 or values.shape[1] != len(header):
        raise FileRefused(f"{path} has no rows, or rows of another length than its header's {len(header)} names")
    if finite and not np.isfinite(values).all():
        raise FileRefused(f"{path} holds a cell that is not a finite number: restore it from git or remove its run")
    return np.rec.fromarrays(values.T, names=header) if names else values


# The bound on each file of a run folder: 100,000 episodes of 1,000 arms at most, a few characters a number.
LIMITS = {
    "summary.json": MIB,
    "config.json": MIB,
    POLICY: MIB,
    "scores.csv": 8 * MIB,
    "diagnostics.csv": 32 * MIB,
    "arm_scores.csv": 64 * MIB,
}
MAX_MINUTES = 60 * 24 * 365  # a run of a year: anything longer is a damaged clock, not a run
SUMMARY = {  # the fields of a summary.json that every run writes (save_results), each checked by parse_run
    "solved_at", "first_episode_mean_30", "episodes", "final_avg100", "mean_episodes_1_100", "arm_means_episodes_1_100",
    "wall_seconds", "wall_seconds_to_solve", "environment", "machine", "processor", "commit", "seed",
}  # fmt: skip
TEXT = 1000  # the longest text field of a summary (machine, environment, processor, commit, notes)


def load_run(path: str) -> dict:
    """A run folder (under the project root, or absolute): config, summary, scores, arm scores and diagnostics,
    every file its manifest lists read once, its size bounded first and its bytes checked against the manifest
    (`files.read_folder`), then parsed from those same bytes and checked (`parse_run`). Anything else is a
    FileRefused naming the file."""
    path = os.path.join(ROOT, path)
    files = read_folder(path, LIMITS)  # every file it lists, the policy too: a folder is whole or refused
    return parse_run(files, path)


def replace_run(folder: str, files: dict) -> dict:
    """A run's result files ({name: bytes}, as a task sends them back) checked in memory as `load_run` checks a
    folder (`parse_run`), then written into `folder` with their manifest, each as a new file renamed into place
    (`files.replace_files`): a refused, empty or failed result leaves the folder as it was. The run as
    `load_run` gives it; FileRefused naming the folder and the file otherwise."""
    checked = {}
    replace_files(folder, files, check=lambda data: checked.update(run=parse_run(data, folder)))
    return checked["run"]


def parse_run(files: dict, path: str) -> dict:
    """A run folder's files ({name: bytes}, read once) checked against what a run writes: its columns, its bounds
    (a score lies in [0, 40.04]), and its agreement with the others (the 100-episode averages with the scores,
    the min and max with the arms, the arms with their mean, the summary and its evaluation with both)."""
    file = lambda name: os.path.join(path, name)

    def refuse(name: str, what: str):
        raise FileRefused(f"{file(name)}: {what}; restore it from git or remove its run")

    summary, episodes = _summary(files, file, refuse)
    columns = _scores(files, episodes, file, refuse)
    arms = _arms(files, episodes, columns, file, refuse)
    _summary_agrees(summary, columns, arms, refuse)
    check_evaluation(summary, arms.shape[1], refuse)
    _summary_texts(summary, refuse)
    config = parse_json(files["config.json"], file("config.json"))
    if not isinstance(config, dict):
        refuse("config.json", "it is not a JSON object")
    run = {
        "dir": os.path.relpath(path, ROOT),
        "config": config,
        "summary": summary,
        "scores": columns,
        "arms": arms,
    }
    if "diagnostics.csv" in files:
        diag = read_numbers(files["diagnostics.csv"], file("diagnostics.csv"), finite=False, names=True)
        if len(diag) != episodes or diag.dtype.names[0] != "episode":
            refuse("diagnostics.csv", f"it is not a table of {episodes} episodes, one per row, numbered first")
        run["diagnostics"] = {name: np.atleast_1d(diag[name]) for name in diag.dtype.names}
    return run


def _summary(files: dict, file, refuse) -> tuple:
    """The run's summary.json, with its every field there and its number of episodes in range."""
    for name in ("summary.json", "scores.csv", "arm_scores.csv", "config.json"):
        if name not in files:
            raise FileRefused(f"{file(name)} is missing: a run folder holds it")
        if len(files[name]) > LIMITS[name]:
            refuse(name, f"it is {len(files[name]):,} bytes, more than the {LIMITS[name]:,} it can be")
    summary = parse_json(files["summary.json"], file("summary.json"))
    if not isinstance(summary, dict) or not set(summary) >= SUMMARY:
        missing = sorted(SUMMARY - set(summary)) if isinstance(summary, dict) else "every field"
        refuse("summary.json", f"it is not a run's summary (it lacks {', '.join(missing)})")
    episodes = summary.get("episodes")
    if type(episodes) is not int or not 1 <= episodes <= MAX_EPISODES:
        refuse("summary.json", f"episodes is {episodes!r}, not a whole number from 1 to {MAX_EPISODES:,}")
    return summary, episodes


def _scores(files: dict, episodes: int, file, refuse) -> dict:
    """scores.csv's columns: its episodes, each score in range, the mean between min and max, avg100 the
    running mean, wall_seconds a clock."""
    scores = read_numbers(files["scores.csv"], file("scores.csv"), names=True)
    if scores.dtype.names != SCORES:
        refuse("scores.csv", f"its columns are {', '.join(scores.dtype.names)}, not {', '.join(SCORES)}")
    columns = {name: np.atleast_1d(scores[name]) for name in SCORES}
    if columns["mean"].size != episodes:
        raise FileRefused(f"{file('scores.csv')} has {columns['mean'].size} episodes, summary.json {episodes}")
    if not np.array_equal(columns["episode"], np.arange(1, episodes + 1)):
        refuse("scores.csv", f"its episodes are not numbered 1 to {episodes}")
    for name in ("mean", "min", "max", "avg100"):
        bad = np.flatnonzero((columns[name] < 0) | (columns[name] > MAX_SCORE))
        if bad.size:
            refuse(
                "scores.csv", f"{name} of episode {bad[0] + 1} is {columns[name][bad[0]]}, outside [0, {MAX_SCORE:g}]"
            )
    bad = np.flatnonzero((columns["min"] > columns["mean"] + 1e-4) | (columns["mean"] > columns["max"] + 1e-4))
    if bad.size:
        refuse("scores.csv", f"the mean of episode {bad[0] + 1} is not between its min and max")
    bad = np.flatnonzero(np.abs(running_mean(columns["mean"]) - columns["avg100"]) > 1e-3)
    if bad.size:
        refuse("scores.csv", f"avg100 of episode {bad[0] + 1} is not the mean of its last 100 episodes' means")
    wall = columns["wall_seconds"]
    if (wall < 0).any() or (np.diff(wall) < 0).any() or wall[-1] > 60 * MAX_MINUTES:
        refuse("scores.csv", "its wall_seconds are not a clock: from 0, never going back, within a year")
    return columns


def _arms(files: dict, episodes: int, columns: dict, file, refuse) -> np.ndarray:
    """arm_scores.csv's arms, in range, averaging to scores.csv's mean, their min and max scores.csv's."""
    arms = read_numbers(files["arm_scores.csv"], file("arm_scores.csv"))[:, 1:]
    agents = arms.shape[1]
    if arms.shape[0] != episodes or not 1 <= agents <= MAX_ARMS:
        raise FileRefused(
            f"{file('arm_scores.csv')} has {arms.shape[0]} episodes of {arms.shape[1]} arms; summary.json "
            f"says {episodes} episodes"
        )
    if ((arms < 0) | (arms > MAX_SCORE)).any():
        refuse("arm_scores.csv", f"an arm's score lies outside [0, {MAX_SCORE:g}]")
    bad = np.flatnonzero(np.abs(arms.mean(1) - columns["mean"]) > 0.006)  # arms printed to 2 decimals
    if bad.size:
        refuse("arm_scores.csv", f"the arms of episode {bad[0] + 1} do not average to scores.csv's mean")
    for name, of_arms in (("min", arms.min(1)), ("max", arms.max(1))):  # arms to 2 decimals, scores to 4
        bad = np.flatnonzero(np.abs(of_arms - columns[name]) > 0.006)
        if bad.size:
            refuse("scores.csv", f"{name} of episode {bad[0] + 1} is not the {name} of its arms in arm_scores.csv")
    return arms


def _summary_agrees(summary: dict, columns: dict, arms: np.ndarray, refuse) -> None:
    """The summary's numbers are what scores.csv and arm_scores.csv say."""
    agents, wall = arms.shape[1], columns["wall_seconds"]
    number = lambda x: type(x) is float and np.isfinite(x)  # json gives floats as float; NaN is refused on parse
    numbers = lambda x, n: isinstance(x, list) and len(x) == n and all(number(v) and 0 <= v <= MAX_SCORE for v in x)
    if not numbers(summary.get("arm_means_episodes_1_100"), agents):
        refuse("summary.json", f"arm_means_episodes_1_100 is not {agents} scores, one per arm of arm_scores.csv")
    if not np.abs(np.array(summary["arm_means_episodes_1_100"]) - arms[:WINDOW].mean(0)).max() <= 0.006:
        refuse("summary.json", "arm_means_episodes_1_100 is not the mean of arm_scores.csv's episodes 1-100")
    for name, value in (
        ("mean_episodes_1_100", columns["mean"][:WINDOW].mean()),
        ("final_avg100", columns["avg100"][-1]),
    ):
        if not (number(summary.get(name)) and abs(summary[name] - value) <= 1e-3):  # NaN fails `<=`
            refuse("summary.json", f"{name} is not {value:.4f}, what scores.csv's episodes say")
    if summary.get("solved_at") != solved_at(columns["avg100"]):
        refuse("summary.json", f"solved_at is {summary.get('solved_at')!r}, but scores.csv's averages say otherwise")
    if summary.get("first_episode_mean_30") != first_episode_at(columns["mean"]):
        refuse("summary.json", "first_episode_mean_30 is not the first episode of scores.csv whose mean reached 30")
    solved = summary["solved_at"]
    expected = {"wall_seconds": wall[-1], "wall_seconds_to_solve": wall[solved - 1] if solved else None}
    for name, value in expected.items():
        got = summary.get(name)
        if not (got is None if value is None else number(got) and abs(got - value) <= 1e-3):
            refuse("summary.json", f"{name} is {got!r}, not what scores.csv's wall_seconds say")


def _summary_texts(summary: dict, refuse) -> None:
    """The summary's texts are short texts, its commit a commit, its seed a seed."""
    for name in ("environment", "machine", "processor", "commit", "variant", "commit_note", "machine_note"):
        optional = name not in SUMMARY and summary.get(name) is None  # a run of no variant, no note
        if name in summary and not optional and not (isinstance(summary[name], str) and len(summary[name]) <= TEXT):
            refuse("summary.json", f"{name} is not a text of at most {TEXT} characters")
    if "commit" in summary and not re.fullmatch(r"[0-9a-f]{7,40}(\+changes)?|unknown", summary["commit"]):
        refuse("summary.json", f"commit {summary['commit'][:50]!r} is not a git commit (7 to 40 hex digits)")
    if type(summary.get("seed")) is not int or not 0 <= summary["seed"] < 2**32:
        refuse("summary.json", f"seed is {summary.get('seed')!r}, not a whole number from 0 to 2**32 - 1")


EVALUATED = 5  # eval_noise_free_5: the noise-free evaluation's episodes


def check_evaluation(summary: dict, agents: int, refuse) -> None:
    """The noise-free evaluation of a results/ folder, where it has one: episode means and arm means that are
    scores, as many as it ran, and that agree (both average to the evaluation's mean)."""
    if "eval_noise_free_5" not in summary and "eval_arm_means" not in summary:
        return
    episodes, arms = summary.get("eval_noise_free_5"), summary.get("eval_arm_means")
    score = lambda v: type(v) is float and 0 <= v <= MAX_SCORE
    if not (isinstance(episodes, list) and 1 <= len(episodes) <= EVALUATED and all(map(score, episodes))):
        refuse("summary.json", f"eval_noise_free_5 is not 1 to {EVALUATED} episode scores in [0, {MAX_SCORE:g}]")
    if not (isinstance(arms, list) and len(arms) == agents and all(map(score, arms))):
        refuse("summary.json", f"eval_arm_means is not {agents} arm scores in [0, {MAX_SCORE:g}]")
    if not abs(np.mean(episodes) - np.mean(arms)) <= 1e-6 * MAX_SCORE:
        refuse("summary.json", "eval_noise_free_5 and eval_arm_means do not average to one evaluation's mean")
