"""Checkpoints: all that resuming needs, written atomically, reused only by the same configuration, shape, code
and processor.

    fingerprint = code_fingerprint()                  # the source files that shape training (SHAPING)
    save_checkpoint(folder, agent, env, episode, history, fingerprint, record)   # record: the run's Recorder
    restored = load_checkpoint(folder, agent, env, fingerprint, record)    # (episode, history) or None

One file, `checkpoint.npz`: the replay's arrays, and the rest as bytes for `torch.load(weights_only=True)`,
so loading runs no code. With `background=True` a second thread writes it from copies while training goes on
(the replay is hundreds of MB); a failed write is reported, and the previous checkpoint stays.
"""

import hashlib
import io
import os
import pickle
import sys
import threading
import zipfile
from dataclasses import asdict

import numpy as np
import torch

from . import results
from .files import GIB, clear, read_archive
from .results import MAX_ARMS, MAX_EPISODES, atomic_file

CHECKPOINT_LIMIT = 4 * GIB  # the file, and what its arrays expand to: a full replay of a million is about 0.4 GB

FILE = "checkpoint.npz"
# The source files that shape a run's scores: a checkpoint made while any of them differed is refused.
SHAPING = (
    "continuous_control/agent.py",
    "continuous_control/behaviour.py",
    "continuous_control/networks.py",
    "continuous_control/sumtree.py",
    "experiments/ablations.py",
    "continuous_control/config.py",
    "continuous_control/devices.py",
    "continuous_control/training.py",
    "continuous_control/checkpoints.py",
    "reacher/environment.py",
    "reacher/physics.py",
    "reacher/physx.py",
)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be resumed: damaged, or made by another configuration, shape, code or processor."""


REPLAY = ("states", "actions", "returns", "next_states", "discounts")
RECORDED = ("born", "replayed")  # the Recorder's arrays, one entry per stored transition
NETWORKS = ("actor", "critic", "actor_target", "critic_target", "norm")


def code_fingerprint() -> str:
    """SHA-256 of the SHAPING source files (the notebook's code is agent.py's, tests/test_notebooks.py)."""
    digest = hashlib.sha256()
    for path in SHAPING:
        full = os.path.join(results.ROOT, path)
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
    state = {
        "config": asdict(agent.cfg),
        "code": fingerprint,
        "processor": results.processor(),
        "shape": list(agent.sizes),
        "episode": episode,
        "history": history,
        "steps": agent.steps,
        "updates": agent.updates,
        "nets": {k: getattr(agent, k).state_dict() for k in NETWORKS},
        "opts": {"actor": agent.actor_opt.state_dict(), "critic": agent.critic_opt.state_dict()},
        "memory": {
            "next": int(m.next),
            "size": int(m.size),
            "adds": int(record.adds) if record else 0,
            "recent": torch.as_tensor(getattr(m, "recent", np.zeros(0))).cpu().clone(),  # none in uniform replay
            "updates": int(getattr(m, "updates", 0)),
        },
        "random": {
            "numpy": agent.rng.bit_generator.state,
            "torch": agent.gen.get_state(),
            "torch_global": torch.get_rng_state(),
            "noise": agent.behaviour.noise.state,
            "env": env.physics.rng.bit_generator.state if hasattr(env, "physics") else None,
        },
    }
    blob = io.BytesIO()
    torch.save(state, blob)  # serialised now: training may change every tensor after this
    arrays = {
        "state": np.frombuffer(blob.getvalue(), np.uint8),
        "priorities": m.priorities[np.arange(m.size)] if hasattr(m, "priorities") else np.zeros(0),
        **{name: getattr(m, name)[: m.size] for name in REPLAY},
        **{name: getattr(record, name)[: m.size] if record else np.zeros(m.size, np.int8) for name in RECORDED},
    }
    arrays = {name: x.cpu().numpy() if torch.is_tensor(x) else x for name, x in arrays.items()}  # a GPU's replay
    path = os.path.join(folder, FILE)
    if not background:
        _write(path, arrays)
        return
    arrays.update({name: arrays[name].copy() for name in REPLAY + RECORDED})  # the buffer goes on filling
    _writing = threading.Thread(target=_write_or_report, args=(path, arrays, episode), name="checkpoint")
    _writing.start()


def _write(path: str, arrays: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_file(path, "wb") as f:  # the old checkpoint or this one, never a mix
        np.savez(f, **arrays)


def _write_or_report(path: str, arrays: dict, episode: int) -> None:
    """`_write`, on the writer thread: a failure is printed at once, and training goes on without it."""
    try:
        _write(path, arrays)
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


def read_checkpoint(path: str) -> tuple[dict, dict]:
    """(state, arrays) of a checkpoint file, loaded so that a crafted file runs no code; CheckpointError if not one."""
    try:
        data, _ = read_archive(path, CHECKPOINT_LIMIT)  # a regular file, never through a symlink, bounded, no twins
        with np.load(io.BytesIO(data), allow_pickle=False) as saved:
            arrays = {name: saved[name] for name in saved.files}
        missing = [name for name in ("state", "priorities", *REPLAY, *RECORDED) if name not in arrays]
        if missing:
            raise _damaged(path, f"it has no {', '.join(missing)}")
        state = torch.load(io.BytesIO(arrays.pop("state").tobytes()), weights_only=True)
    except pickle.UnpicklingError as error:
        raise _damaged(
            path,
            "it holds Python objects besides tensors and plain data, which loading would run, "
            f"so it was refused ({str(error).splitlines()[0][:200]})",
        ) from None
    except CheckpointError:
        raise
    except (OSError, EOFError, ValueError, RuntimeError, zipfile.BadZipFile) as error:
        reason = f"{type(error).__name__}: {str(error)[:200]}"
        raise _damaged(path, f"it is damaged or not a checkpoint ({reason})") from None
    if not isinstance(state, dict) or not {"config", "code", "episode", "history", "memory", "random"} <= set(state):
        raise _damaged(path, "it is not a checkpoint of this project")
    if type(state["episode"]) is not int or not 1 <= state["episode"] <= MAX_EPISODES:
        raise _damaged(path, f"its episode is {state['episode']!r}, not a whole number from 1 to {MAX_EPISODES:,}")
    shape = state.get("shape")
    if not (isinstance(shape, list) and len(shape) == 3 and all(type(n) is int and n >= 1 for n in shape)) or (
        shape[0] > MAX_ARMS
    ):
        raise _damaged(path, f"its shape (arms, state size, action size) is {shape!r}")
    if not isinstance(state.get("nets"), dict) or set(state["nets"]) != set(NETWORKS):
        raise _damaged(path, f"it holds the networks {sorted(state.get('nets') or {})}, not {sorted(NETWORKS)}")
    solved = state["history"].get("solved_at") if isinstance(state["history"], dict) else "no history"
    if solved is not None and not (type(solved) is int and results.WINDOW <= solved <= state["episode"]):
        raise _damaged(path, f"its solved_at is {solved!r}: a run is solved at episode 100 at the earliest")
    episodes = {key: len(value) for key, value in state["history"].items() if isinstance(value, list) and value}
    if any(n != state["episode"] for n in episodes.values()):
        raise _damaged(
            path,
            f"it is the state after episode {state['episode']}, but its history holds "
            + ", ".join(f"{n} episodes of {key}" for key, n in episodes.items()),
        )
    learned = {"nets": state["nets"], "opts": state.get("opts"), "recent": state["memory"]["recent"]}
    for name, value in [*arrays.items(), *_tensors(learned)]:
        value = np.asarray(value)
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise _damaged(path, f"its {name} holds a value that is not a finite number")
    if (arrays["priorities"] < 0).any():
        raise _damaged(path, "its priorities hold a negative value")
    prioritized = len(state["memory"]["recent"]) > 0  # a uniform replay saves no priorities
    stored = {name: len(arrays[name]) for name in (("priorities",) * prioritized + REPLAY + RECORDED)}
    if any(n != state["memory"]["size"] for n in stored.values()):
        raise _damaged(
            path,
            f"its replay holds {state['memory']['size']} transitions, but its arrays "
            + ", ".join(f"{name} {n}" for name, n in stored.items()),
        )
    return state, arrays


def _tensors(tree, name: str = ""):
    """(name, tensor) for each tensor in nested dicts and lists: the networks' weights and the optimisers' moments."""
    if torch.is_tensor(tree):
        yield name, tree
    elif isinstance(tree, dict | list | tuple):
        for key, value in tree.items() if isinstance(tree, dict) else enumerate(tree):
            yield from _tensors(value, f"{name}.{key}" if name else str(key))


def _put(target, values: np.ndarray) -> None:
    """target[:len(values)] = values, where target is an array or a tensor on any device."""
    target[: len(values)] = torch.as_tensor(values).to(target.device) if torch.is_tensor(target) else values


def load_checkpoint(folder: str, agent, env, fingerprint: str, record=None):
    """Restore a checkpoint into `agent` and `env`: (episode, history), None if there is none; CheckpointError."""
    wait_for_checkpoint()
    path = os.path.join(folder, FILE)
    if not os.path.exists(path):
        print(f"No checkpoint in {folder}: starting afresh.")
        return None
    state, saved = read_checkpoint(path)
    refuse = lambda what: CheckpointError(
        f"The checkpoint in {folder} was made {what}. Resuming would mix two runs in one. Start afresh (RESUME=0, "
        f"which sets it aside as {folder}.old), or resume with what made it."
    )
    if state["code"] != fingerprint:
        raise refuse(f"by other code: a source file that shapes training ({', '.join(SHAPING)}) changed since")
    if state.get("processor") != results.processor():
        raise refuse(f"on another kind of processor ({state.get('processor')!r}; this one is {results.processor()!r})")
    ours = asdict(agent.cfg)
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
    if hasattr(m, "priorities") != (len(state["memory"]["recent"]) > 0):
        kind = "a prioritized" if len(state["memory"]["recent"]) else "a uniform"
        raise refuse(f"by an agent with {kind} replay; this agent's is {type(m).__name__}")
    if n > m.capacity:
        raise _damaged(path, f"its replay holds {n} transitions, more than the {m.capacity} this agent's replay holds")
    for name in REPLAY:
        _put(getattr(m, name), saved[name])
    if record is not None:
        for name in RECORDED:
            _put(getattr(record, name), saved[name])
        record.adds = state["memory"]["adds"]
    if hasattr(m, "priorities"):
        m.priorities[np.arange(n)] = saved["priorities"]
        m.updates = state["memory"]["updates"]
        _put(m.recent, state["memory"]["recent"].numpy())
    m.next = state["memory"]["next"]
    m.size = n
    for k, weights in state["nets"].items():
        getattr(agent, k).load_state_dict(weights)
    agent.actor_opt.load_state_dict(state["opts"]["actor"])
    agent.critic_opt.load_state_dict(state["opts"]["critic"])
    random = state["random"]
    agent.rng.bit_generator.state = random["numpy"]
    agent.gen.set_state(random["torch"])
    torch.set_rng_state(random["torch_global"])
    agent.behaviour.noise.state = random["noise"]
    if random["env"] is not None and hasattr(env, "physics"):
        env.physics.rng.bit_generator.state = random["env"]
    agent.steps = state["steps"]
    agent.updates = state["updates"]
    return state["episode"], state["history"]
