"""Checkpoints: everything needed to go on after an interruption, written atomically, and reused
only by the same configuration and the same code.

    fingerprint = run_fingerprint(code_fingerprint(train))   # the code that `train` runs, and the SHAPING modules'
    save_checkpoint(folder, agent, env, episode, history, fingerprint, record)   # record: the run's Recorder
    restored = load_checkpoint(folder, agent, env, fingerprint, record)    # (episode, history) or None

A checkpoint is one file, `checkpoint.npz`: the replay buffer's arrays and, as one more array of
bytes, the state (networks, optimisers, counters, every random generator, the history), tensors and
plain data only, read back with `torch.load(weights_only=True)`: loading a shared checkpoint runs no code. It is
written under a temporary name and renamed into place, so an interruption at any moment leaves
either the old checkpoint or the new one, never a mix.

With `background=True` (as training saves) the state is taken at once, copies and all, and the
file is written by a second thread while training goes on, on the core that training leaves
free: the replay is hundreds of megabytes, about half a second to write. One write is under way
at a time; the next save, a load, `set_aside` and `wait_for_checkpoint` wait for it.
"""
import hashlib
import importlib
import io
import os
import pickle
import shutil
import threading
import types
import zipfile
from dataclasses import asdict

import numpy as np
import torch

FILE = "checkpoint.npz"
# Beyond the agent (the notebook's `train` and what it names): the modules whose code shapes a run's
# scores, each fingerprinted whole. A checkpoint made while any of them differed is not resumed.
SHAPING = ("reacher.physics", "reacher.physx", "reacher.environment", "continuous_control.training",
           "continuous_control.checkpoints", "continuous_control.ablations")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be resumed: damaged, refused, or made by other code or on another processor."""
REPLAY = ("states", "actions", "returns", "next_states", "discounts")
RECORDED = ("born", "replayed")                # the Recorder's arrays, one entry per stored transition
NETWORKS = ("actor", "critic", "actor_target", "critic_target", "norm")


def code_fingerprint(entry) -> str:
    """SHA-256 of the compiled code that `entry` runs: its bytecode, constants, names and default
    arguments, and recursively those of every class and function of its own module that it names
    (a base class, a method's callee, a function compiled by numba or wrapped by a decorator). Comments, blank lines and
    line numbers do not count; any change to what runs does."""
    digest, seen = hashlib.sha256(), set()
    module = entry.__module__

    def follow(code, scope):
        """The classes and functions of the same module that this code names."""
        for name in code.co_names:
            target = scope.get(name)
            if callable(target) and getattr(target, "__module__", None) == module:
                add(target, scope)

    def add(value, scope):
        if isinstance(value, types.CodeType):
            digest.update(value.co_code + repr((value.co_names, value.co_varnames)).encode())
            for const in value.co_consts:
                add(const, scope)
            follow(value, scope)
        elif isinstance(value, (staticmethod, classmethod)):
            add(value.__func__, scope)
        elif isinstance(value, property):
            add(value.fget, scope)
        elif isinstance(value, types.FunctionType):
            if id(value) in seen:
                return
            seen.add(id(value))
            digest.update(value.__qualname__.encode())
            add(value.__code__, value.__globals__)
            add(value.__defaults__, scope)
            if hasattr(value, "__wrapped__"):     # a decorator's wrapper (torch.no_grad): what it wraps
                add(value.__wrapped__, scope)
        elif isinstance(value, type):
            if id(value) in seen:
                return
            seen.add(id(value))
            digest.update(value.__qualname__.encode())
            for base in value.__bases__:
                if base.__module__ == module:
                    add(base, scope)
            for name, member in sorted(vars(value).items()):
                if not name.startswith("__") or isinstance(member, types.FunctionType):
                    digest.update(name.encode())
                    add(member, scope)
        elif hasattr(value, "py_func"):           # a numba dispatcher: the Python function it compiles
            add(value.py_func, scope)
        elif isinstance(value, tuple):
            for item in value:
                add(item, scope)
        elif isinstance(value, frozenset):        # `x in {"a", "b"}` compiles to one: its order
            for item in sorted(value, key=repr):   # follows the string hash, new in every process
                add(item, scope)
        elif value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            digest.update(repr(value).encode())

    add(entry, getattr(entry, "__globals__", {}))
    return digest.hexdigest()


def module_fingerprint(name: str) -> str:
    """SHA-256 of a module's compiled code (comments, blank lines and line numbers do not count)."""
    module = importlib.import_module(name)
    with open(module.__file__, encoding="utf-8") as f:
        code = compile(f.read(), module.__file__, "exec", dont_inherit=True)
    digest = hashlib.sha256()

    def add(code):
        digest.update(code.co_code + repr((code.co_names, code.co_varnames)).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                add(const)
            elif isinstance(const, frozenset):
                digest.update(repr(sorted(map(repr, const))).encode())
            else:
                digest.update(repr(const).encode())
    add(code)
    return digest.hexdigest()


def run_fingerprint(agent_fingerprint: str) -> dict:
    """What a checkpoint must match to be resumed: the agent's code, that of every SHAPING module, and the
    kind of processor (a run resumes to the same scores only on the kind that began it)."""
    from .results import processor
    return {"agent (the notebook's train)": agent_fingerprint, **{name: module_fingerprint(name) for name in SHAPING},
            "processor": processor()}


def _random_state(agent, env) -> dict:
    physics = getattr(env, "physics", None)
    return {"numpy": agent.rng.bit_generator.state, "torch": agent.gen.get_state(),
            "torch_global": torch.get_rng_state(), "noise": agent.behaviour.noise.state,
            "env": physics.rng.bit_generator.state if physics is not None else None}


_writing = None        # the checkpoint being written in the background


def wait_for_checkpoint() -> None:
    """Return once no checkpoint is being written; raise what the last background write raised."""
    global _writing
    if _writing is not None:
        _writing.join()
        error, _writing = _writing.error, None
        if error is not None:
            raise error


def save_checkpoint(folder: str, agent, env, episode: int, history: dict, fingerprint: str, record=None,
                    background: bool = False) -> None:
    """Everything needed to resume after `episode`, in one file swapped in by one rename; with
    `background`, written by a second thread from copies taken now."""
    global _writing
    wait_for_checkpoint()
    os.makedirs(folder, exist_ok=True)
    m = agent.memory
    state = {
        "config": asdict(agent.cfg), "code": fingerprint, "episode": episode, "history": history,
        "steps": agent.steps, "updates": agent.updates,
        "nets": {k: getattr(agent, k).state_dict() for k in NETWORKS},
        "opts": {"actor": agent.actor_opt.state_dict(), "critic": agent.critic_opt.state_dict()},
        "memory": {"next": int(m.next), "size": int(m.size), "adds": int(record.adds) if record else 0,
                   "recent": torch.from_numpy(m.recent.copy()),
                   "updates": int(m.updates)},
        "random": _random_state(agent, env),
    }
    blob = io.BytesIO()
    torch.save(state, blob)                    # serialised now: training may change every tensor after this
    arrays = {"state": np.frombuffer(blob.getvalue(), np.uint8), "priorities": m.priorities[np.arange(m.size)],
              **{name: getattr(m, name)[:m.size] for name in REPLAY},
              **{name: getattr(record, name)[:m.size] if record else np.zeros(m.size, np.int8) for name in RECORDED}}
    if not background:
        _write(folder, arrays)
        return
    arrays.update({name: arrays[name].copy() for name in REPLAY + RECORDED})     # the buffer goes on filling
    _writing = _Writer(folder, arrays)
    _writing.start()


def _write(folder: str, arrays: dict) -> None:
    temporary = os.path.join(folder, FILE + ".tmp")
    with open(temporary, "wb") as f:
        np.savez(f, **arrays)
    os.replace(temporary, os.path.join(folder, FILE))      # atomic: the old checkpoint or this one


class _Writer(threading.Thread):
    """`_write` on a thread of its own; what it raised waits in `error` for `wait_for_checkpoint`."""

    def __init__(self, folder: str, arrays: dict):
        super().__init__(name="checkpoint")
        self.folder, self.arrays, self.error = folder, arrays, None

    def run(self) -> None:
        try:
            _write(self.folder, self.arrays)
        except BaseException as error:
            self.error = error


def set_aside(folder: str) -> str:
    """Rename a checkpoint folder to `<folder>.old`, deleting the one set aside before it (only the
    last is kept: each holds the replay, hundreds of megabytes); a sentence saying where and how big."""
    wait_for_checkpoint()
    old = f"{folder}.old"
    replaced = os.path.exists(old)
    if replaced:
        shutil.rmtree(old)
    os.rename(folder, old)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(old) for f in files)
    return f"{old} ({size / 1e6:,.0f} MB{'; the one set aside before it was deleted' if replaced else ''})"


def _damaged(path: str, reason) -> CheckpointError:
    folder = os.path.dirname(path)
    return CheckpointError(
        f"The checkpoint {path} cannot be resumed: {reason}. Nothing was deleted. Either start afresh "
        f"(RESUME=0, which sets it aside as {folder}.old), or delete {folder} yourself.")


def read_checkpoint(path: str) -> tuple[dict, dict]:
    """(state, arrays) of a checkpoint file: arrays only, and a state of tensors and plain data, loaded
    with `weights_only=True`, so that a crafted file runs no code; CheckpointError for anything else."""
    try:
        with np.load(path, allow_pickle=False) as saved:
            arrays = {name: saved[name] for name in saved.files}
        missing = [name for name in ("state", "priorities", *REPLAY, *RECORDED) if name not in arrays]
        if missing:
            raise _damaged(path, f"it has no {', '.join(missing)}")
        state = torch.load(io.BytesIO(arrays.pop("state").tobytes()), weights_only=True)
    except pickle.UnpicklingError as error:
        raise _damaged(path, "it holds Python objects besides tensors and plain data, which loading would run, "
                             f"so it was refused ({str(error).splitlines()[0][:200]})") from None
    except CheckpointError:
        raise
    except (OSError, EOFError, ValueError, RuntimeError, zipfile.BadZipFile) as error:
        raise _damaged(path, f"it is damaged or not a checkpoint ({type(error).__name__}: {str(error)[:200]})") from None
    if not isinstance(state, dict) or not {"config", "code", "episode", "history", "memory", "random"} <= set(state):
        raise _damaged(path, "it is not a checkpoint of this project")
    return state, arrays


def load_checkpoint(folder: str, agent, env, fingerprint: dict, record=None):
    """Restore a checkpoint of the same configuration and code into `agent` and `env`; return
    (episode, history), or None (with the reason printed) when there is none or its configuration
    differs. CheckpointError when it is damaged, refused, or was made by other code (naming what changed)."""
    wait_for_checkpoint()
    path = os.path.join(folder, FILE)
    if not os.path.exists(path):
        print(f"No checkpoint in {folder}: starting afresh.")
        return None
    state, saved = read_checkpoint(path)
    if state["config"] != asdict(agent.cfg):
        print(f"The checkpoint in {folder} has another configuration: starting afresh "
              f"(kept in {set_aside(folder)}).")
        return None
    if state["code"] != fingerprint:
        theirs = state["code"] if isinstance(state["code"], dict) else {}
        changed = [name for name in fingerprint if theirs.get(name) != fingerprint[name]]
        raise CheckpointError(
            f"The checkpoint in {folder} was made by other code or on another kind of processor: {', '.join(changed)} "
            f"changed since. Resuming would mix two versions in one run. Start afresh (RESUME=0, which sets it aside), "
            f"or go back to that code and machine.")
    m = agent.memory
    n = state["memory"]["size"]
    for name in REPLAY:
        getattr(m, name)[:n] = saved[name]
    if record is not None:
        for name in RECORDED:
            getattr(record, name)[:n] = saved[name]
        record.adds = state["memory"]["adds"]
    m.priorities[np.arange(n)] = saved["priorities"]
    m.next, m.size, m.updates = state["memory"]["next"], n, state["memory"]["updates"]
    m.recent[:] = state["memory"]["recent"].numpy()
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
    agent.steps, agent.updates = state["steps"], state["updates"]
    return state["episode"], state["history"]
