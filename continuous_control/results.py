"""A run folder: what a training run leaves behind (`save_results`, at TrainingRun.finish), written whole or
not at all (`write_files`), and read by everyone (`load_run`)."""

import contextlib
import copy
import errno
import io
import json
import os
import shutil
import zipfile
from dataclasses import asdict

import numpy as np
import torch
import torch.nn as nn

# where the project is, and where and with what code a run ran (provenance.py); checkpoints.py and training.py
# still read ROOT, processor and code_version from here
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
        with open(temporary, mode) as f:
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
    stage = f"{folder}.partial"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        os.makedirs(stage)
        for name, data in files.items():
            with open(os.path.join(stage, name), "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
        if whole and os.path.isdir(folder):
            shutil.rmtree(f"{folder}.old", ignore_errors=True)  # left by an interrupted replacement
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
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a policy exported by this project (not a zip archive)")
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
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
    return Policy(torch.export.load(path), path)


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


def read_json(path: str):
    """A JSON file's data; a damaged one is a ValueError that names it."""
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error}): restore it from git or remove its run") from None


def read_numbers(path: str, **options) -> np.ndarray:
    """A CSV file of numbers (numpy's reader); a cell that is not a number is a ValueError that names the file."""
    table = np.genfromtxt(path, delimiter=",", invalid_raise=True, **options)
    values = np.column_stack([table[n] for n in table.dtype.names]) if table.dtype.names else table
    if not np.isfinite(values).all():
        raise ValueError(f"{path} holds a cell that is not a finite number: restore it from git or remove its run")
    return table


def load_run(path: str) -> dict:
    """A run folder (under the project root, or absolute): config, summary, scores, arm scores and diagnostics.
    Files that disagree (a row or an arm missing) or do not parse are a ValueError naming the file."""
    path = os.path.join(ROOT, path)
    file = lambda name: os.path.join(path, name)
    summary = read_json(file("summary.json"))
    scores = read_numbers(file("scores.csv"), names=True)
    arms = np.atleast_2d(read_numbers(file("arm_scores.csv"), skip_header=1))[:, 1:]
    episodes, agents = summary["episodes"], len(summary.get("arm_means_episodes_1_100", arms[0]))
    if np.atleast_1d(scores["mean"]).size != episodes:
        raise ValueError(
            f"{file('scores.csv')} has {np.atleast_1d(scores['mean']).size} episodes, summary.json {episodes}"
        )
    if arms.shape != (episodes, agents):
        raise ValueError(
            f"{file('arm_scores.csv')} has {arms.shape[0]} episodes of {arms.shape[1]} arms; summary.json "
            f"says {episodes} episodes of {agents} arms"
        )
    run = {
        "dir": os.path.relpath(path, ROOT),
        "config": read_json(file("config.json")),
        "summary": summary,
        "scores": {name: np.atleast_1d(scores[name]) for name in scores.dtype.names},
        "arms": arms,
    }
    if os.path.exists(file("diagnostics.csv")):
        diag = np.genfromtxt(file("diagnostics.csv"), delimiter=",", names=True)
        run["diagnostics"] = {name: np.atleast_1d(diag[name]) for name in diag.dtype.names}
    return run
