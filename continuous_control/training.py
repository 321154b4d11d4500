"""A training run's bookkeeping, so that the notebook's training loop is the loop and nothing else.

run = TrainingRun(run_dir, agent, env, code_fingerprint(), max_episodes)
first = run.start(resume)              # 1, or the episode after the last checkpoint
for episode in range(first, max_episodes + 1):
    ...                                # the episode itself, telling run.end_step what each agent.step did
    if run.end_episode(episode, scores):   # also logs, draws and checkpoints (run_dir/resume/) every few
        break
history = run.finish()                 # result files in run_dir
"""

import atexit
import contextlib
import numbers
import os
import stat
import time

import numpy as np
import torch

from .checkpoints import load_checkpoint, save_checkpoint, set_aside, wait_for_checkpoint
from .provenance import code_version
from .results import average100, save_results, solved_at, write_json

PROGRESS = "progress.json"  # in the run's resume/: its latest episode, for a terminal (tools/terminal.py)

LOGGED = ("critic_loss", "actor_loss", "q", "td_abs", "young_share")  # the columns of Recorder.log


class Recorder:
    """The diagnostics' bookkeeping: per update what it saw, and per stored transition when it was added and
    whether it was replayed since. Told what each step did (`on_step`), it changes no value of the agent. Its
    notes are arrays of the replay's kind: numpy's, or a GPU replay's tensors (read once per episode)."""

    def __init__(self, agent):
        capacity = agent.memory.capacity
        self.device = getattr(agent.memory, "device", None)  # a DeviceReplay's, or None: the lesson's replay
        born = torch.zeros(capacity, dtype=torch.int64, device=self.device)
        replayed = torch.zeros(capacity, dtype=torch.bool, device=self.device)
        self.born = born if self.device else born.numpy()
        self.replayed = replayed if self.device else replayed.numpy()
        self.log = []
        self.adds = 0

    def on_step(self, told: dict) -> None:
        """What the agent's `step` returned: the rows it stored (`stored`), then its update (`update`), each or None."""
        if told["stored"] is not None:
            self.on_add(told["stored"])
        if told["update"] is not None:
            self.on_update(told["update"])

    def on_add(self, idx) -> None:
        """A batch of transitions was stored at rows `idx`."""
        self.born[idx] = self.adds
        self.replayed[idx] = False
        self.adds += 1

    def on_update(self, out: dict) -> None:
        """An update: its losses and mean Q, and its batch's rows `idx` and TD errors `td`."""
        idx = out["idx"]
        self.replayed[idx] = True
        td_abs = torch.as_tensor(out["td"]).abs().mean()
        young = (self.age(idx) <= 1000).sum() / len(idx)
        row = (out["critic_loss"], out["actor_loss"], out["q"], td_abs, young)
        self.log.append(torch.stack(row) if self.device else [float(x) for x in row])  # a GPU's numbers stay there

    def age(self, idx):
        """How many insertions ago each transition was added."""
        return self.adds - self.born[idx]


def diagnostics(agent, record: Recorder) -> dict:
    """One episode's learning, from the updates' log (then cleared) and the agent's state at the episode's end."""
    log = (
        torch.stack(record.log).double().cpu().numpy() if record.device and record.log else np.array(record.log, float)
    )
    record.log.clear()
    m, log = agent.memory, log.reshape(-1, len(LOGGED))
    prioritized = hasattr(m, "priorities")  # plain DDPG's uniform replay has no priorities, and its agent no beta
    row = {
        "updates": len(log),
        **dict(zip(LOGGED, log.mean(0) if len(log) else [float("nan")] * len(LOGGED))),
        "young_share_stored": float((record.age(slice(0, m.size)) <= 1000).sum()) / m.size if m.size else float("nan"),
        **({"beta": agent.beta(), "max_priority": m.entry_priority} if prioritized else {}),
        **backlog(m, record),
    }
    for k, layer in enumerate(agent.actor.layers):
        if hasattr(layer, "weight_sigma"):
            row[f"sigma_{k}"] = layer.weight_sigma.detach().abs().mean().item()
    return {key: float(value) for key, value in row.items()}


def backlog(memory, record: Recorder) -> dict:
    """The stored transitions never replayed yet: their share of the buffer, and of the sampling probability."""
    waiting = np.flatnonzero(torch.as_tensor(~record.replayed[: memory.size]).cpu())
    share = len(waiting) / memory.size if memory.size else float("nan")
    if not hasattr(memory, "priorities"):  # uniform replay: the probability's share is the rows' share
        return {"unreplayed_share": share, "unreplayed_mass": share}
    total = memory.priorities.total()
    return {
        "unreplayed_share": share,
        "unreplayed_mass": float(memory.priorities[waiting].sum() / total) if total else float("nan"),
    }


class TrainingRun:
    def __init__(
        self,
        run_dir: str,
        agent,
        env,
        fingerprint: str,
        max_episodes: int,
        stop_when_solved: bool = True,
        live: bool = True,
        log_every: int = 5,
        checkpoint_every: int = 5,
    ):
        """ValueError for fewer than one episode, before anything is written (it would replace the results)."""
        if not isinstance(max_episodes, numbers.Integral) or max_episodes < 1:
            raise ValueError(f"max_episodes must be a whole number >= 1, got {max_episodes!r}")
        self.run_dir = run_dir
        self.agent = agent
        self.env = env
        self.record = Recorder(agent)
        self.fingerprint = fingerprint
        self.max_episodes = max_episodes
        self.stop_when_solved = stop_when_solved
        self.live = live
        self.log_every = log_every
        self.checkpoint_every = checkpoint_every
        self.resume_dir = os.path.join(run_dir, "resume")
        self.history = {
            "mean": [],
            "min": [],
            "max": [],
            "arms": [],
            "avg100": [],
            "wall": [],
            "solved_at": None,
            "diagnostics": [],
        }
        self.episode = 0

    def start(self, resume: bool = False) -> int:
        """The first episode to train: a fresh run sets an earlier checkpoint aside, `resume` continues from it."""
        lock_folder(self.run_dir)
        restored = resume and load_checkpoint(self.resume_dir, self.agent, self.env, self.fingerprint, self.record)
        if restored:
            self.episode, self.history = restored
            if self.finished():
                print(f"The run in {self.resume_dir} finished after episode {self.episode}: nothing to train.")
            else:
                print(f"Resuming after episode {self.episode}, from {self.resume_dir}")
        elif not resume and os.path.exists(self.resume_dir):
            print(f"Starting a fresh run; the previous checkpoint is kept in {set_aside(self.resume_dir)}.")
        # The code that makes the run, taken as it starts (a resumed run keeps its first segment's).
        self.history.setdefault("commit", code_version())
        elapsed = self.history["wall"][-1] if self.history["wall"] else 0.0
        self.clock = time.perf_counter() - elapsed
        from .progress import LiveCurve, Progress  # here: training imports no display code

        self.progress = Progress(self.max_episodes, self.episode, self.live)
        self.curve = LiveCurve(self.live)
        return self.max_episodes + 1 if self.finished() else self.episode + 1

    def finished(self) -> bool:
        solved = self.stop_when_solved and self.history["solved_at"] is not None
        return self.episode >= self.max_episodes or solved

    def end_step(self, told: dict) -> None:
        """What the agent's `step` returned (the rows stored, the update), for the diagnostics."""
        self.record.on_step(told)

    def end_episode(self, episode: int, scores: np.ndarray) -> bool:
        """Record one episode's scores (one per arm); True when the run is finished."""
        h = self.history
        self.episode = episode
        for key, value in (("mean", scores.mean()), ("min", scores.min()), ("max", scores.max())):
            h[key].append(float(value))
        h["arms"].append(scores.tolist())
        h["avg100"].append(average100(h["mean"]))
        h["wall"].append(time.perf_counter() - self.clock)
        h["diagnostics"].append(diagnostics(self.agent, self.record))
        if h["solved_at"] is None:
            h["solved_at"] = solved_at(h["avg100"])
        self.progress.update(score=f"{scores.mean():.1f}", avg100=f"{h['avg100'][-1]:.1f}")
        latest = {"episode": episode, "of": self.max_episodes, "mean": h["mean"][-1], "avg100": h["avg100"][-1]}
        with contextlib.suppress(OSError):  # for a terminal's bar only: a full disk is the checkpoint's to report
            write_json(os.path.join(self.resume_dir, PROGRESS), {**latest, "wall_seconds": h["wall"][-1]})
        if episode % self.log_every == 0 or episode == 1 or h["solved_at"] == episode:
            print(
                f"episode {episode:4d}  mean {scores.mean():5.2f}  min {scores.min():5.2f}  "
                f"max {scores.max():5.2f}  avg100 {h['avg100'][-1]:5.2f}  {h['wall'][-1] / 60:5.1f} min"
            )
            self.curve.draw(h)
        if episode % self.checkpoint_every == 0 or self.finished():
            save_checkpoint(
                self.resume_dir, self.agent, self.env, episode, h, self.fingerprint, self.record, background=True
            )
        return self.finished()

    def finish(self) -> dict:
        """Close the displays and write the result files; the history of every episode."""
        wait_for_checkpoint()  # the last checkpoint is on disk before the run counts as done
        try:
            self.progress.close(self.episode)
            self.curve.close(self.history)
            save_results(self.run_dir, self.agent, self.history, self.env)
        finally:
            unlock_folder(self.run_dir)
        return self.history


_locks = {}  # folder: the open lock file this process holds


def lock_folder(folder: str) -> None:
    """Hold `folder`/.lock, an OS lock gone with its process: a second process is refused, naming the holder."""
    folder = os.path.abspath(folder)
    if folder in _locks:
        return
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, ".lock")
    if os.path.islink(path):  # planted: this project never makes one; a held lock is a regular file
        os.unlink(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    f = os.fdopen(os.open(path, flags | os.O_NONBLOCK, 0o644), "r+")  # held open: the lock lasts as long as the file
    info = os.fstat(f.fileno())
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:  # a FIFO, a device, or a hard link to another file
        f.close()
        raise RuntimeError(
            f"{path} is not a regular file of one link (a hard link shares another file's contents, which the lock "
            "would overwrite), so it cannot hold the run's lock: remove it"
        )
    try:
        if os.name == "nt":
            import msvcrt

            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        f.close()
        raise RuntimeError(
            f"{folder} is in use by another training run: {holder_of(holder)}. An interrupted "
            f"notebook keeps the folder until its kernel restarts or ends. Once that run is over, "
            f"restart that kernel, or end the process (kill {holder}); or train into another "
            f"folder."
        ) from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    _locks[folder] = f


def holder_of(pid: str) -> str:
    """A lock's holder: its pid and, where Linux's /proc tells, its command (a Jupyter kernel named as one)."""
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except (OSError, ValueError):
        return f"pid {pid}"
    kind = "a Jupyter kernel, " if "ipykernel" in command else ""
    return f"pid {pid} ({kind}{command[:200]})"


def unlock_folder(folder: str) -> None:
    f = _locks.pop(os.path.abspath(folder), None)
    if f is not None:
        f.close()  # closing releases the lock


@atexit.register
def _unlock_all() -> None:
    """The locks of runs that never finished (an error, an interrupt): closed as the process exits, not left to the
    garbage collector."""
    for folder in list(_locks):
        unlock_folder(folder)
