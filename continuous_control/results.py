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
import zipfile
from dataclasses import asdict

import numpy as np
import torch
import torch.nn as nn

# where the project is, and where and with what code a run ran (provenance.py); checkpoints.py and training.py
# still read ROOT, processor and code_version from here
from .files import (
    MANIFEST,
    MIB,
    FileRefused,
    check_manifest,
    clear,
    create_new,
    manifest,
    read_archive,
    read_bytes,
    read_json,
)
from .provenance import ROOT, code_version, machine, processor

TARGET_SCORE = 30.0  # the course's criterion: the mean of 100 consecutive episodes of the 20-arm mean
WINDOW = 100
EVAL_SEED = 10_000  # noise-free evaluations run on goals of environment seed EVAL_SEED + the run's seed


def first_episode_at(means, level: float = TARGET_SCORE):
    """The first episode (counting from 1) whose score reached `level`, or None."""
    hits = np.flatnonzero(np.asarray(means) >= level)
    return int(hits[0]) + 1 if hits.size else None


@contextlib.contextmanager
def atomic_file(path: str, mode: str = "w"):
    """Write `path` through `path`.tmp, renamed into place at the block's end: the old file or the new, never half."""
    temporary = f"{path}.tmp"
    try:
        clear(temporary)  # a stale one, or a symlink planted there: removed, never written through
        with create_new(temporary, mode) as f:
            yield f
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def write_files(folder: str, files: dict, whole: bool = False) -> None:
    """`files` ({name: bytes or text}) into `folder`, all or none: each is written in full to a sibling folder
    first, where a full disk shows, and only then moved into `folder` (a rename, which needs no space). With
    `whole`, the new files replace the folder's every file (one rename); else other files in it stay.
    A full disk is an OSError that names the folder and says that nothing in it changed."""
    folder = os.path.normpath(folder)
    files = {**files, MANIFEST: manifest(files)}  # last: a folder whose moves were cut short fails its check
    stage = f"{folder}.partial"
    clear(stage)  # left by an interrupted write, or a symlink planted there: removed, never followed
    try:
        os.makedirs(stage)
        for name, data in files.items():
            with open(os.path.join(stage, name), "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
        if whole and os.path.isdir(folder):
            clear(f"{folder}.old")  # left by an interrupted replacement
            os.replace(folder, f"{folder}.old")
            os.replace(stage, folder)
            shutil.rmtree(f"{folder}.old")
        else:
            os.makedirs(folder, exist_ok=True)
            for name in files:
                os.replace(os.path.join(stage, name), os.path.join(folder, name))
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(
                error.errno,
                f"The disk is full: the files of {folder} were not written, and nothing in "
                f"it changed ({error.strerror})",
            ) from None
        raise
    finally:
        if not os.path.islink(stage):
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
    """The noise-free target actor behind its normaliser as a `torch.export` program (actor.pt2), loadable with
    torch alone (`torch.export.load(path).module()`): tensors of float32 or float64 states, one row per arm,
    for any number of arms. `load_policy` also takes numpy arrays and single states."""
    network = getattr(agent, "policy_network", lambda: nn.Sequential(agent.norm, agent.actor_target))()
    policy = Float32Input(copy.deepcopy(network).to("cpu", torch.float32).eval())
    # The batch dimension is dynamic (an example of 2, since 1 would be specialised).
    exported = torch.export.export(
        policy, (torch.zeros(2, state_size),), dynamic_shapes=({0: torch.export.Dim("agents", min=1)},)
    )
    return saved(torch.export.save, exported)


# The archive's only members that torch.export.load reads as tensors: raw weights and tensor constants. Any
# other entry (`use_pickle`, custom or opaque objects) it unpickles with weights_only=False.
RAW = ("weight_", "tensor_")
# Every member an exported policy of this project holds (`exported_policy`), by name; anything else is refused.
MEMBERS = re.compile(
    r"[^/]+/(\.data/(serialization_id|version)|archive_format|archive_version|byteorder|models/model\.json"
    r"|data/(constants/model_constants_config\.json|sample_inputs/model\.pt|weights/model_weights_config\.json"
    r"|weights/weight_\d+|constants/tensor_\d+))"
)
POLICY_LIMIT = 64 * MIB  # the file, and what its members expand to: the actor is about 0.1 MB
# The operators an actor needs (a normaliser, linear layers, activations, a clamp, the mirror of the report's
# ablation): the graph is checked against them before it runs. No file, in-place, random or I/O operator.
OPERATORS = {
    f"aten.{op}"
    for op in (
        "_to_copy.default", "add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "neg.default", "sqrt.default",
        "rsqrt.default", "clamp.default", "linear.default", "addmm.default", "mm.default", "t.default",
        "permute.default", "relu.default", "tanh.default", "lt.Scalar", "gt.Scalar", "where.self",
        "select.int", "slice.Tensor", "unsqueeze.default", "view.default", "reshape.default", "expand.default",
        "squeeze.dim", "cat.default", "mul.Scalar", "add.Scalar", "sub.Scalar", "div.Scalar",
        "lift_fresh_copy.default", "clone.default", "alias.default", "detach.default",
        "_assert_tensor_metadata.default", "sym_size.int", "index.Tensor", "index_select.default", "ge.Scalar",
        "le.Scalar", "scalar_tensor.default", "to.device", "to.dtype", "flatten.using_ints",
    )
}  # fmt: skip


class Policy(nn.Module):
    """An exported policy as `load_policy` gives it: states as a tensor or a numpy array, of any float dtype,
    one per row (one per arm) or a single state; actions of the same kind and shape (numpy for numpy)."""

    def __init__(self, program, path: str):
        super().__init__()
        self.program, self.path = program.module(), path
        inputs = [
            n for n in program.graph.nodes if n.op == "placeholder" and n.name in program.graph_signature.user_inputs
        ]
        self.state_size = int(inputs[0].meta["val"].shape[-1])

    def forward(self, states):
        x = torch.as_tensor(states)
        if x.ndim not in (1, 2) or x.shape[-1] != self.state_size or not x.is_floating_point():
            raise ValueError(
                f"{self.path} takes float states of {self.state_size} numbers, one per row (shape (arms, "
                f"{self.state_size}) or ({self.state_size},)); got {x.dtype} of shape {tuple(x.shape)}"
            )
        actions = self.program(x.reshape(-1, self.state_size))
        actions = actions[0] if x.ndim == 1 else actions
        return actions.numpy() if isinstance(states, np.ndarray) else actions


def load_policy(path: str) -> Policy:
    """An exported policy (`exported_policy`) as a `Policy`, loaded so that no code in the file can run: before
    torch reads it, every weight and constant must be a raw tensor, and the sample inputs must load weights-only
    (torch would otherwise retry them with weights_only=False). Anything else is refused, naming the file."""
    data, names = read_archive(path, POLICY_LIMIT)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        other = [n for n in names if not MEMBERS.fullmatch(n)]
        if other:
            raise FileRefused(f"{path}: its archive holds {other[0]}, which no exported policy holds; refused")
        for name in names:
            if name.endswith(("weights_config.json", "constants_config.json")):
                for key, entry in json.loads(archive.read(name))["config"].items():
                    if entry.get("use_pickle") or not str(entry.get("path_name", "")).startswith(RAW):
                        raise ValueError(f"{path}: {key} is stored to be unpickled, which could run code; refused")
            elif "/sample_inputs/" in name:
                try:
                    torch.load(io.BytesIO(archive.read(name)), weights_only=True)
                except Exception as error:  # what a weights-only load refuses is what could run code
                    raise ValueError(
                        f"{path}: its sample inputs hold more than tensors, which could run code; "
                        f"refused ({type(error).__name__})"
                    ) from None
    try:
        program = torch.export.load(io.BytesIO(data))  # the bytes checked above, not the file again
    except Exception as error:  # a damaged or crafted program: torch's reason, named
        raise FileRefused(
            f"{path}: torch cannot read its program ({type(error).__name__}: {str(error)[:200]})"
        ) from None
    signature = program.graph_signature
    if signature.buffers_to_mutate or signature.user_inputs_to_mutate:
        raise FileRefused(f"{path}: its graph writes into its own state or its input, which no actor does; refused")
    for node in program.graph.nodes:
        if node.op not in ("placeholder", "output", "call_function") or (
            node.op == "call_function" and str(node.target) not in OPERATORS
        ):
            what = node.target if node.op == "call_function" else f"a {node.op} node"
            raise FileRefused(f"{path}: its graph calls {what}, which no actor needs; refused before it runs")
    return Policy(program, path)


def save_results(run_dir: str, agent, history: dict, env) -> dict:
    """Weights, the exported policy, the configuration, per-episode and per-arm scores, a summary: all of
    them or none (`write_files`; the folder's other files, such as resume/, stay)."""
    files = {
        f"{name}.pt": saved(torch.save, net.state_dict())
        for name, net in (
            ("actor", agent.actor),
            ("actor_target", agent.actor_target),
            ("critic", agent.critic),
            ("normalizer", agent.norm),
        )
    }
    files["actor.pt2"] = exported_policy(agent, agent.norm.mean.numel())
    files["config.json"] = json.dumps(asdict(agent.cfg), indent=2)
    columns = zip(history["mean"], history["min"], history["max"], history["avg100"], history["wall"])
    files["scores.csv"] = csv_text("mean,min,max,avg100,wall_seconds", columns, "{:.4f}")
    arms = ",".join(f"arm{k}" for k in range(len(history["arms"][0])))
    files["arm_scores.csv"] = csv_text(arms, history["arms"], "{:.2f}")
    if history.get("diagnostics"):
        names = list(history["diagnostics"][0])
        files["diagnostics.csv"] = csv_text(
            ",".join(names), ([row[c] for c in names] for row in history["diagnostics"]), "{:.6g}"
        )
    solved = history["solved_at"]
    summary = {
        "solved_at": solved,
        "first_episode_mean_30": first_episode_at(history["mean"]),
        "episodes": len(history["mean"]),
        "final_avg100": history["avg100"][-1],
        "mean_episodes_1_100": float(np.mean(history["mean"][:WINDOW])),
        "arm_means_episodes_1_100": np.mean(history["arms"][:WINDOW], axis=0).tolist(),
        "wall_seconds": history["wall"][-1],
        "wall_seconds_to_solve": history["wall"][solved - 1] if solved else None,
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


def write_csv(path: str, header: str, rows, number: str) -> None:
    with atomic_file(path) as f:
        f.write(csv_text(header, rows, number))


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


def evaluate(run_dir: str, seed: int, episodes: int = 5) -> dict:
    """actor.pt2 on unseen goals (environment seed EVAL_SEED + seed): each episode's mean, each arm's mean."""
    from reacher import ReacherEnvironment, play

    policy = load_policy(os.path.join(run_dir, "actor.pt2"))
    scores = play(ReacherEnvironment(seed=EVAL_SEED + seed, verbose=False), acting(policy), episodes)
    return {"episode_means": scores.mean(1).tolist(), "arm_means": scores.mean(0).tolist()}


def write_json(path: str, data: dict) -> str:
    """`data` as JSON at `path` (`atomic_file`, its folder made if missing); the path."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with atomic_file(path) as f:
        json.dump(data, f, indent=2)
    return path


# What a run folder can hold: scores of a 1001-step episode lie in [0, 0.04 * 1001], one row per episode.
SCORES = ("episode", "mean", "min", "max", "avg100", "wall_seconds")
MAX_SCORE = 0.04 * 1001
MAX_EPISODES, MAX_ARMS = 100_000, 1_000


def read_numbers(path: str, finite: bool = True, **options) -> np.ndarray:
    """A CSV file of numbers (numpy's reader, on the bytes `read_bytes` checked); a cell that is not a number, or
    with `finite` one that is not finite, is a FileRefused that names the file."""
    data = read_bytes(path, 64 * MIB)
    try:
        table = np.genfromtxt(io.BytesIO(data), delimiter=",", invalid_raise=True, **options)
    except ValueError as error:
        reason = str(error).strip().splitlines()[-1][:200]
        raise FileRefused(
            f"{path} is not a table of numbers ({reason}): restore it from git or remove its run"
        ) from None
    values = np.column_stack([table[n] for n in table.dtype.names]) if table.dtype.names else table
    if values.size == 0 or (finite and not np.isfinite(values).all()):
        raise FileRefused(f"{path} holds a cell that is not a finite number: restore it from git or remove its run")
    return table


def running_mean(x: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Each episode's mean of the last `window` episodes (fewer at the start)."""
    total = np.concatenate([[0.0], np.cumsum(x)])
    k = np.arange(1, len(x) + 1)
    return (total[k] - total[np.maximum(0, k - window)]) / np.minimum(k, window)


def load_run(path: str) -> dict:
    """A run folder (under the project root, or absolute): config, summary, scores, arm scores and diagnostics.
    Every file is read by `files.read_bytes` and checked against what a run writes: its columns, its bounds
    (a score lies in [0, 40.04]), and its agreement with the others (the 100-episode averages with the
    scores, the arms with their mean, the summary with both). Anything else is a FileRefused naming the file."""
    path = os.path.join(ROOT, path)
    file = lambda name: os.path.join(path, name)
    check_manifest(path)

    def refuse(name: str, what: str):
        raise FileRefused(f"{file(name)}: {what}; restore it from git or remove its run")

    summary = read_json(file("summary.json"))
    if not isinstance(summary, dict):
        refuse("summary.json", "it is not a JSON object")
    episodes = summary.get("episodes")
    if type(episodes) is not int or not 1 <= episodes <= MAX_EPISODES:
        refuse("summary.json", f"episodes is {episodes!r}, not a whole number from 1 to {MAX_EPISODES:,}")
    scores = read_numbers(file("scores.csv"), names=True)
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
    arms = np.atleast_2d(read_numbers(file("arm_scores.csv"), skip_header=1))[:, 1:]
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
    arm_means = summary.get("arm_means_episodes_1_100", [])
    if not (isinstance(arm_means, list) and len(arm_means) == agents and all(type(a) is float for a in arm_means)):
        refuse("summary.json", f"arm_means_episodes_1_100 is not {agents} numbers, one per arm of arm_scores.csv")
    if np.abs(np.array(arm_means) - arms[:WINDOW].mean(0)).max() > 0.006:
        refuse("summary.json", "arm_means_episodes_1_100 is not the arms' mean over episodes 1-100")
    if (
        not isinstance(summary.get("mean_episodes_1_100"), float)
        or abs(summary["mean_episodes_1_100"] - columns["mean"][:WINDOW].mean()) > 1e-3
    ):
        refuse("summary.json", "mean_episodes_1_100 is not the mean of scores.csv's episodes 1-100")
    reached = np.flatnonzero((columns["avg100"] >= TARGET_SCORE) & (columns["episode"] >= WINDOW))
    if summary.get("solved_at") != (int(reached[0]) + 1 if reached.size else None):
        refuse("summary.json", f"solved_at is {summary.get('solved_at')!r}, but scores.csv's averages say otherwise")
    if summary.get("first_episode_mean_30") != first_episode_at(columns["mean"]):
        refuse("summary.json", "first_episode_mean_30 is not the first episode of scores.csv whose mean reached 30")
    config = read_json(file("config.json"))
    if not isinstance(config, dict):
        refuse("config.json", "it is not a JSON object")
    run = {
        "dir": os.path.relpath(path, ROOT),
        "config": config,
        "summary": summary,
        "scores": columns,
        "arms": arms,
    }
    if os.path.lexists(file("diagnostics.csv")):
        diag = read_numbers(file("diagnostics.csv"), finite=False, names=True)
        run["diagnostics"] = {name: np.atleast_1d(diag[name]) for name in diag.dtype.names}
    return run
