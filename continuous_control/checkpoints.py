"""Checkpoints: all that resuming needs, written atomically, reused only by the same configuration, shape, code
and processor.

    fingerprint = code_fingerprint()                  # the source files that shape training (SHAPING)
    save_checkpoint(folder, agent, env, episode, history, fingerprint, record)   # record: the run's Recorder
    restored = load_checkpoint(folder, agent, env, fingerprint, record)    # (episode, history) or None

One file, `checkpoint.safetensors`, data by construction: every tensor and array (the networks, Adam's moments,
the replay, the random generators' states) as safetensors, and the rest as JSON in its header's metadata, checked
field by field on load; a SHA-256 of both in the header vouches for every byte (the checkpoint's manifest, inside
the one file that is renamed into place, so that a kill leaves the old checkpoint or the new). Nothing in it runs.
With `background=True` a second thread writes it from copies while training goes on (the replay is hundreds of
MB); a failed write is reported, and the previous checkpoint stays.
"""

import hashlib
import json
import math
import os
import struct
import sys
import threading
from dataclasses import asdict

import numpy as np
import safetensors.torch
import torch

from . import results
from .files import GIB, FileRefused, clear, parse_json, read_bytes
from .provenance import ROOT, SHAPING, processor
from .results import MAX_ARMS, MAX_EPISODES, atomic_file

CHECKPOINT_LIMIT = 4 * GIB  # the file, and what its arrays expand to: a full replay of a million is about 0.4 GB

FILE = "checkpoint.safetensors"
HEADER_LIMIT = 64 * 1024 * 1024  # the header: the names and offsets of a few hundred tensors, and the history


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be resumed: damaged, or made by another configuration, shape, code or processor."""


REPLAY = ("states", "actions", "returns", "next_states", "discounts")
RECORDED = ("born", "replayed")  # the Recorder's arrays, one entry per stored transition
NETWORKS = ("actor", "critic", "actor_target", "critic_target", "norm")


def code_fingerprint() -> str:
    """SHA-256 of the source files that shape training (provenance.SHAPING)."""
    digest = hashlib.sha256()
    for path in SHAPING:
        full = os.path.join(ROOT, path)
        digest.update(path.encode() + b"\0")
        if os.path.exists(full):  # experiments/ is not part of the student hand-out
            with open(full, "rb") as f:
                digest.update(f.read())
        digest.update(b"\0")
    return digest.hexdigest()


_writing = None  # the thread writing a checkpoint in the background


def wait_for_checkpoint() -> None:
    """Return once no checkpoint is being written (a failed write was reported as it failed)."""
    if _writing is not None:
        _writing.join()


def save_checkpoint(
    folder: str, agent, env, episode: int, history: dict, fingerprint: str, record=None, background: bool = False
) -> None:
    """Everything needed to resume after `episode`, in one file; with `background`, written by a second thread."""
    global _writing
    wait_for_checkpoint()
    m = agent.memory
    opts = {"actor": agent.actor_opt.state_dict(), "critic": agent.critic_opt.state_dict()}
    tensors = {f"nets.{k}.{name}": x for k in NETWORKS for name, x in getattr(agent, k).state_dict().items()}
    for k, opt in opts.items():
        for param, moments in opt["state"].items():
            tensors |= {f"opts.{k}.{param}.{name}": torch.as_tensor(x) for name, x in moments.items()}
    tensors |= {
        "memory.recent": torch.as_tensor(getattr(m, "recent", np.zeros(0))),  # none in uniform replay
        "random.torch": agent.gen.get_state(),
        "random.torch_global": torch.get_rng_state(),
        "random.noise": torch.as_tensor(agent.behaviour.noise.state),
        "priorities": torch.as_tensor(m.priorities[np.arange(m.size)] if hasattr(m, "priorities") else np.zeros(0)),
        **{name: torch.as_tensor(getattr(m, name)[: m.size]) for name in REPLAY},
        **{
            name: torch.as_tensor(getattr(record, name)[: m.size] if record else np.zeros(m.size, np.int8))
            for name in RECORDED
        },
    }
    state = {
        "config": asdict(agent.cfg),
        "code": fingerprint,
        "processor": processor(),
        "shape": list(agent.sizes),
        "episode": episode,
        "history": {**history, "diagnostics": [_nulls(row) for row in history.get("diagnostics", [])]},
        "steps": agent.steps,
        "updates": agent.updates,
        "opts": {k: opt["param_groups"] for k, opt in opts.items()},
        "memory": {
            "next": int(m.next),
            "size": int(m.size),
            "adds": int(record.adds) if record else 0,
            "updates": int(getattr(m, "updates", 0)),
        },
        "random": {
            "numpy": agent.rng.bit_generator.state,
            "env": env.physics.rng.bit_generator.state if hasattr(env, "physics") else None,
        },
    }
    # serialised now, copies on the CPU: training may change every tensor after this
    tensors = {k: x.detach().to("cpu").contiguous().clone() for k, x in tensors.items()}
    text = json.dumps(state, allow_nan=False, default=_plain)
    path = os.path.join(folder, FILE)
    if not background:
        _write(path, tensors, text)
        return
    _writing = threading.Thread(target=_write_or_report, args=(path, tensors, text, episode), name="checkpoint")
    _writing.start()


def _plain(x):
    """A numpy number in the state (a config field, a random state's counter) as the Python number it holds."""
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"a checkpoint's state holds {type(x).__name__}, which is no plain data")


def _nulls(row: dict) -> dict:
    """A diagnostics row for JSON: NaN (a value not measured yet) as null, given back by `_nans`."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def _nans(row: dict) -> dict:
    return {k: float("nan") if v is None else v for k, v in row.items()}


def _digest(text: bytes, header: dict, data: bytes) -> str:
    """SHA-256 of the state, the tensors' table (names, dtypes, shapes, offsets) and the tensors' bytes."""
    table = json.dumps({k: v for k, v in header.items() if k != "__metadata__"}, sort_keys=True).encode()
    return hashlib.sha256(hashlib.sha256(text).digest() + hashlib.sha256(table).digest() + data).hexdigest()


def checkpoint_bytes(tensors: dict, text: str) -> bytes:
    """The checkpoint file: safetensors of `tensors`, whose header's metadata holds the state (`text`, JSON) and
    the SHA-256 of the state, the tensors' table and every byte of the tensors."""
    data = safetensors.torch.save(tensors)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    digest = _digest(text.encode(), json.loads(data[8:start]), data[start:])
    return safetensors.torch.save(tensors, metadata={"state": text, "sha256": digest})


def _write(path: str, tensors: dict, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = checkpoint_bytes(tensors, text)
    with atomic_file(path, "wb") as f:  # the old checkpoint or this one, never a mix
        f.write(data)


def _write_or_report(path: str, tensors: dict, text: str, episode: int) -> None:
    """`_write`, on the writer thread: a failure is printed at once, and training goes on without it."""
    try:
        _write(path, tensors, text)
    except Exception as error:
        print(
            f"The checkpoint after episode {episode} was not written to {path}: {type(error).__name__}: {error}. "
            f"Training goes on; the checkpoint before it, if any, stays.",
            file=sys.stderr,
            flush=True,
        )


def set_aside(folder: str) -> str:
    """Rename a checkpoint folder to `<folder>.old`, where the one set aside before it (a run older still) is
    deleted, so that fresh starts keep one previous checkpoint, not one each; where it went, and its size."""
    wait_for_checkpoint()
    old = f"{folder}.old"
    clear(old)  # the run set aside before, or a symlink planted there: removed, never followed
    os.rename(folder, old)
    return kept(old)


def kept(old: str) -> str:
    """A checkpoint folder set aside: where it is, and its size."""
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(old) for f in files)
    return f"{old} ({size / 1e6:,.0f} MB; delete it when you no longer need it)"


def _damaged(path: str, reason) -> CheckpointError:
    folder = os.path.dirname(path)
    return CheckpointError(
        f"The checkpoint {path} cannot be resumed: {reason}. Nothing was deleted. Either start afresh "
        f"(RESUME=0, which sets it aside as {folder}.old), or delete {folder} yourself."
    )


MAX_COUNT = 10**12  # steps, updates and transitions added: far more than any run makes
HISTORY = {"mean", "min", "max", "avg100", "wall", "arms", "solved_at", "diagnostics", "commit"}


def read_checkpoint(path: str) -> tuple[dict, dict]:
    """(state, tensors) of a checkpoint file: read once, bounded, its SHA-256 checked before anything is parsed,
    then every field of its state checked (types, ranges, finiteness, lengths that agree: arms, episodes, the
    replay's fill and cursor); CheckpointError naming the file and the field otherwise. Nothing in it runs."""
    try:
        data = read_bytes(path, CHECKPOINT_LIMIT)  # a regular file, never through a symlink, bounded
    except FileRefused as error:
        raise _damaged(path, "it " + str(error).removeprefix(path).strip(" :")) from None  # "it is a FIFO", say
    if len(data) < 8 or not 2 <= (size := struct.unpack("<Q", data[:8])[0]) <= min(HEADER_LIMIT, len(data) - 8):
        raise _damaged(path, "it is not a safetensors file (its header's length is impossible)")
    try:
        header = parse_json(data[8 : 8 + size], path)
    except FileRefused as error:
        raise _damaged(
            path, f"its header is not JSON of this project ({str(error).removeprefix(path)[:200]})"
        ) from None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not (isinstance(meta, dict) and set(meta) == {"state", "sha256"} and all(map(_text, meta.values()))):
        raise _damaged(path, "it is not a checkpoint of this project (no state and SHA-256 in its header)")
    if _digest(meta["state"].encode(), header, data[8 + size :]) != meta["sha256"]:
        raise _damaged(path, "its SHA-256 does not match its contents: it was damaged or edited after it was written")
    try:
        tensors = safetensors.torch.load(data)
        state = parse_json(meta["state"].encode(), path)
    except FileRefused as error:
        raise _damaged(path, f"its state is not JSON of this project ({str(error).removeprefix(path)[:200]})") from None
    except Exception as error:  # the library's refusal of damaged offsets or dtypes (SafetensorError)
        raise _damaged(path, f"its tensors are damaged ({type(error).__name__}: {str(error)[:200]})") from None
    check_state(state, tensors, path)
    return state, tensors


def _text(x) -> bool:
    return isinstance(x, str)


def _whole(x, low: int = 0, high: int = MAX_COUNT) -> bool:
    return type(x) is int and low <= x <= high


def _finite(x) -> bool:
    return type(x) is float and math.isfinite(x)


def check_state(state, tensors: dict, path: str) -> None:
    """A checkpoint's state against what `save_checkpoint` writes: CheckpointError naming the field otherwise."""
    fields = {"config", "code", "processor", "shape", "episode", "history", "steps", "updates", "opts", "memory"}
    if not isinstance(state, dict) or set(state) != fields | {"random"}:
        raise _damaged(path, "it is not a checkpoint of this project (its state's fields differ)")
    if not isinstance(state["config"], dict) or not _text(state["code"]) or not _text(state["processor"]):
        raise _damaged(path, "its config, code or processor is not what a checkpoint holds")
    episode = state["episode"]
    if not _whole(episode, 1, MAX_EPISODES):
        raise _damaged(path, f"its episode is {episode!r}, not a whole number from 1 to {MAX_EPISODES:,}")
    shape = state["shape"]
    if not (isinstance(shape, list) and len(shape) == 3 and _whole(shape[0], 1, MAX_ARMS)) or not all(
        _whole(n, 1, 10_000) for n in shape[1:]
    ):
        raise _damaged(path, f"its shape (arms, state size, action size) is {shape!r}")
    if not _whole(state["steps"]) or not _whole(state["updates"]):
        raise _damaged(path, "its steps or updates are not whole numbers of at least 0")
    _check_history(state["history"], episode, shape, path)
    memory = _check_counters(state, path)
    _check_tensors(tensors, memory, path)
    h = state["history"]
    state["history"]["diagnostics"] = [_nans(row) for row in h.get("diagnostics", [])]


def _check_history(h, episode: int, shape: list, path: str) -> None:
    """The history of a run after `episode` episodes of `shape[0]` arms."""
    if not isinstance(h, dict) or not {"mean", "arms", "solved_at"} <= set(h) <= HISTORY:
        raise _damaged(path, "its history is not the history of a run")
    solved = h["solved_at"]
    if solved is not None and not _whole(solved, results.WINDOW, episode):
        raise _damaged(path, f"its solved_at is {solved!r}: a run is solved at episode 100 at the earliest")
    for key in ("mean", "min", "max", "avg100", "wall", "arms", "diagnostics"):
        value = h.get(key, [])
        if not isinstance(value, list) or len(value) != episode:
            n = len(value) if isinstance(value, list) else value
            raise _damaged(path, f"it is the state after episode {episode}, but its history holds {n!r} of {key}")
        rows = value if key == "arms" else [value] if key != "diagnostics" else []
        if not all(isinstance(r, list) and all(map(_finite, r)) for r in rows):
            raise _damaged(path, f"its history's {key} holds a value that is not a finite number")
    if any(len(row) != shape[0] for row in h["arms"]):
        raise _damaged(path, f"its history's arms are not {shape[0]} per episode, as its shape says")
    if not all(isinstance(r, dict) and all(v is None or _finite(v) for v in r.values()) for r in h["diagnostics"]):
        raise _damaged(path, "its history's diagnostics are not rows of numbers")


def _check_counters(state: dict, path: str) -> dict:
    """The replay's counters, the optimisers' settings and the random states; the counters."""
    memory = state["memory"]
    if not (isinstance(memory, dict) and set(memory) == {"next", "size", "adds", "updates"}):
        raise _damaged(path, "its memory is not a replay's counters (next, size, adds, updates)")
    if not _whole(memory["size"]) or not _whole(memory["next"], 0, memory["size"]):
        raise _damaged(path, f"its replay's cursor {memory['next']!r} and fill {memory['size']!r} are impossible")
    if not _whole(memory["adds"]) or not _whole(memory["updates"]):
        raise _damaged(path, "its replay's adds or updates are not whole numbers of at least 0")
    opts = state["opts"]
    if not (
        isinstance(opts, dict) and set(opts) == {"actor", "critic"} and all(isinstance(g, list) for g in opts.values())
    ):
        raise _damaged(path, "its optimisers' settings are not the actor's and the critic's")
    random = state["random"]
    if not (isinstance(random, dict) and set(random) == {"numpy", "env"}):
        raise _damaged(path, "its random states are not numpy's and the environment's")
    return memory


def _check_tensors(tensors: dict, memory: dict, path: str) -> None:
    """Every tensor finite, every part there, the replay's arrays as long as its fill."""
    for name, x in tensors.items():
        if x.is_floating_point() and not torch.isfinite(x).all():
            raise _damaged(path, f"its {name} holds a value that is not a finite number")
    names = {"priorities", "memory.recent", "random.torch", "random.torch_global", "random.noise", *REPLAY, *RECORDED}
    if not names <= set(tensors):
        raise _damaged(path, f"it has no {', '.join(sorted(names - set(tensors)))}")
    if {name.split(".")[1] for name in tensors if name.startswith("nets.")} != set(NETWORKS):
        raise _damaged(path, f"it does not hold the networks {sorted(NETWORKS)}")
    if (tensors["priorities"] < 0).any():
        raise _damaged(path, "its priorities hold a negative value")
    prioritized = len(tensors["memory.recent"]) > 0  # a uniform replay saves no priorities
    stored = {name: len(tensors[name]) for name in (("priorities",) * prioritized + REPLAY + RECORDED)}
    if any(n != memory["size"] for n in stored.values()):
        raise _damaged(
            path,
            f"its replay holds {memory['size']} transitions, but its arrays "
            + ", ".join(f"{name} {n}" for name, n in stored.items()),
        )


def _put(target, values: np.ndarray) -> None:
    """target[:len(values)] = values, where target is an array or a tensor on any device."""
    target[: len(values)] = torch.as_tensor(values).to(target.device) if torch.is_tensor(target) else values


def load_checkpoint(folder: str, agent, env, fingerprint: str, record=None):
    """Restore a checkpoint into `agent` and `env`: (episode, history), None if there is none; CheckpointError."""
    wait_for_checkpoint()
    path = os.path.join(folder, FILE)
    if not os.path.exists(path):
        if os.path.exists(os.path.join(folder, "checkpoint.npz")):  # an earlier version's, which held a pickle
            raise _damaged(os.path.join(folder, "checkpoint.npz"), "it is of an earlier version of this project")
        print(f"No checkpoint in {folder}: starting afresh.")
        return None
    state, saved = read_checkpoint(path)
    _same_run(state, saved, agent, folder, path, fingerprint)
    _restore(state, saved, agent, env, record, path)
    agent.steps = state["steps"]
    agent.updates = state["updates"]
    return state["episode"], state["history"]


def _same_run(state: dict, saved: dict, agent, folder: str, path: str, fingerprint: str) -> None:
    """CheckpointError unless the checkpoint was made by this code, processor, configuration, shape and replay."""
    refuse = lambda what: CheckpointError(
        f"The checkpoint in {folder} was made {what}. Resuming would mix two runs in one. Start afresh (RESUME=0, "
        f"which sets it aside as {folder}.old), or resume with what made it."
    )
    if state["code"] != fingerprint:
        raise refuse(f"by other code: a source file that shapes training ({', '.join(SHAPING)}) changed since")
    if state.get("processor") != processor():
        raise refuse(f"on another kind of processor ({state.get('processor')!r}; this one is {processor()!r})")
    ours = json.loads(json.dumps(asdict(agent.cfg), default=_plain))  # as saved: tuples as lists
    changed = sorted(k for k in {**state["config"], **ours} if state["config"].get(k) != ours.get(k))
    if changed:
        raise refuse(
            "with another configuration: "
            + ", ".join(f"{k} {state['config'].get(k)!r} (now {ours.get(k)!r})" for k in changed)
        )
    if tuple(state["shape"]) != tuple(agent.sizes):
        shape = "{} arms, states of {}, actions of {}".format
        raise refuse(
            f"for an environment of another shape: {shape(*state['shape'])}; this one has {shape(*agent.sizes)}"
        )
    m, n = agent.memory, state["memory"]["size"]
    if hasattr(m, "priorities") != (len(saved["memory.recent"]) > 0):
        kind = "a prioritized" if len(saved["memory.recent"]) else "a uniform"
        raise refuse(f"by an agent with {kind} replay; this agent's is {type(m).__name__}")
    if n > m.capacity or not (state["memory"]["next"] == n if n < m.capacity else state["memory"]["next"] < m.capacity):
        raise _damaged(
            path,
            f"its replay's fill {n} and cursor {state['memory']['next']} do not fit a replay of {m.capacity}",
        )
    for k, opt in (("actor", agent.actor_opt), ("critic", agent.critic_opt)):
        if json.loads(json.dumps(opt.state_dict()["param_groups"], default=_plain)) != state["opts"][k]:
            raise refuse(f"with other settings of the {k}'s optimiser")


def _restore(state: dict, saved: dict, agent, env, record, path: str) -> None:
    """The checkpoint's networks, optimisers, replay, records and random states into the agent and env."""
    m, n = agent.memory, state["memory"]["size"]
    opts = {"actor": agent.actor_opt, "critic": agent.critic_opt}
    try:  # every tensor's name, shape and dtype is the agent's own, or torch refuses (strict)
        nets, weights, moments = _fitting(saved, agent, opts)
        for name in REPLAY:
            _put(getattr(m, name), saved[name].numpy() if not torch.is_tensor(getattr(m, name)) else saved[name])
        if record is not None:
            for name in RECORDED:
                _put(
                    getattr(record, name),
                    saved[name].numpy() if not torch.is_tensor(getattr(record, name)) else saved[name],
                )
            record.adds = state["memory"]["adds"]
        if hasattr(m, "priorities"):
            m.priorities[np.arange(n)] = saved["priorities"].numpy()
            m.updates = state["memory"]["updates"]
            _put(m.recent, saved["memory.recent"].numpy())
        m.next = state["memory"]["next"]
        m.size = n
        for k, net in nets.items():
            net.load_state_dict(weights[k])
        for k, opt in opts.items():
            opt.load_state_dict(moments[k])
        random = state["random"]
        agent.rng.bit_generator.state = random["numpy"]
        agent.gen.set_state(saved["random.torch"])
        torch.set_rng_state(saved["random.torch_global"])
        agent.behaviour.noise.state = saved["random.noise"]
        if random["env"] is not None and hasattr(env, "physics"):
            env.physics.rng.bit_generator.state = random["env"]
    except (ValueError, TypeError, KeyError, RuntimeError) as error:
        raise _damaged(path, f"it does not fit this agent ({type(error).__name__}: {str(error)[:200]})") from None


def _fitting(saved: dict, agent, opts: dict) -> tuple:
    """(networks, their weights, the optimisers' moments) of the checkpoint, each of this agent's names, shapes
    and dtypes; ValueError naming the part that is not."""
    m = agent.memory
    nets = {k: getattr(agent, k) for k in NETWORKS}
    weights = {
        k: {name[len(f"nets.{k}.") :]: x for name, x in saved.items() if name.startswith(f"nets.{k}.")} for k in nets
    }
    for k, net in nets.items():
        ours = net.state_dict()
        if set(weights[k]) != set(ours) or any(
            weights[k][q].shape != ours[q].shape or weights[k][q].dtype != ours[q].dtype for q in ours
        ):
            raise ValueError(f"its {k} is not this agent's network")
    moments = {}
    for k, opt in opts.items():
        ours = opt.state_dict()
        state_k = {}
        for param in range(sum(len(g["params"]) for g in ours["param_groups"])):
            found = {name.rsplit(".", 1)[1]: x for name, x in saved.items() if name.startswith(f"opts.{k}.{param}.")}
            if found:
                state_k[param] = found
        moments[k] = {"state": state_k, "param_groups": ours["param_groups"]}
    if (
        len(saved["random.noise"]) != len(torch.as_tensor(agent.behaviour.noise.state))
        or saved["random.noise"].shape != torch.as_tensor(agent.behaviour.noise.state).shape
    ):
        raise ValueError("its exploration noise is not this agent's")
    for name in REPLAY:
        if saved[name].shape[1:] != tuple(getattr(m, name).shape[1:]):
            raise ValueError(f"its replay's {name} are not of this agent's shape")
    return nets, weights, moments
