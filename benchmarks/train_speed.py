"""Where a training step's time goes: milliseconds per environment step, phase by phase.

    python -m benchmarks.train_speed [--label current] [--set batch_size=512 hidden=(64,64)]

It times the notebook's own `train` (`Config()`, changed by `--set`) by wrapping the real methods,
in a fast episode (3) and in episode `learn_every_until + 1`: results/benchmarks/train_speed_<label>.json
and train_speed_<label>_later.json. A phase's time excludes the timed phases it calls; the total is
the wall time plus checkpointing (replay full) spread over its interval.
"""
import argparse
import contextlib
import json
import os
import platform
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from continuous_control import agent as lesson
from continuous_control.checkpoints import save_checkpoint, wait_for_checkpoint
from continuous_control.config import parse_overrides as parse_overrides_of
from continuous_control.results import ROOT, host
from reacher import ReacherEnvironment

# (class, method, phase): what is timed. A phase's time excludes the timed calls inside it.
PHASES = [
    (ReacherEnvironment, "step", "environment step"),
    (lesson.Agent, "act", "acting (behaviour policy)"),
    (lesson.Behaviour, "refresh", "refreshing the behaviour policy"),
    (lesson.Agent, "step", "normaliser, n-step and replay insert"),
    (lesson.PrioritizedReplay, "sample", "sampling"),
    (lesson.Agent, "learn", "batch to tensors, normalising, noise"),
    (lesson.DDPG, "update_critic", "critic update"),
    (lesson.PrioritizedReplay, "update_priorities", "priority update"),
    (lesson.DDPG, "update_actor", "actor update"),
    (lesson.DDPG, "update_targets", "target update"),
]
CHECKPOINT_EVERY = 5        # TrainingRun's default


class Profiler:
    """Exclusive seconds per phase, per bucket (the episode being timed, or None: not timed)."""

    def __init__(self):
        self.seconds = defaultdict(lambda: defaultdict(float))
        self.bucket, self.stack = None, []

    def wrap(self, method, phase):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            self.stack.append(0.0)
            try:
                return method(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                inner = self.stack.pop()
                if self.stack:
                    self.stack[-1] += elapsed
                if self.bucket is not None:
                    self.seconds[self.bucket][phase] += elapsed - inner
        return timed


def parse_overrides(pairs: list[str]) -> dict:
    """`field=value` pairs typed by Config's annotations (continuous_control.config), checked by Config."""
    overrides = parse_overrides_of(lesson.Config, pairs)
    lesson.Config(**overrides)              # a bad value is refused now, named, before any training
    return overrides


def profile(seed: int = 0, warmup_episodes: int = 2, **overrides) -> tuple[dict, dict]:
    """Train with every phase timed: {bucket: result} for the two timed episodes, and the run's history."""
    cfg = lesson.Config(seed=seed, **overrides)
    timed = {warmup_episodes + 1: "fast", cfg.learn_every_until + 1: "later"}
    profiler, clock = Profiler(), {}
    begin_episode = lesson.Agent.begin_episode

    def begin(agent, episode, *args):               # switch buckets at each episode's start
        if profiler.bucket is not None:
            clock[profiler.bucket] = (clock[profiler.bucket], time.perf_counter(), agent.learn_every)
        profiler.bucket = timed.get(episode)
        if profiler.bucket:
            clock[profiler.bucket] = time.perf_counter()
        begin.agent = agent
        return begin_episode(agent, episode, *args)

    with contextlib.ExitStack() as patches:                 # the real methods, timed while training
        for cls, name, phase in PHASES:
            patches.enter_context(mock.patch.object(cls, name, profiler.wrap(getattr(cls, name), phase)))
        patches.enter_context(mock.patch.object(lesson.Agent, "begin_episode", begin))
        run_dir = patches.enter_context(tempfile.TemporaryDirectory())
        history = lesson.train(cfg, ReacherEnvironment(seed=seed, verbose=False), run_dir, max(timed) + 1,
                               stop_when_solved=False, live=False, log_every=10 ** 6, checkpoint_every=10 ** 6)
    checkpoint = checkpoint_seconds(begin.agent, cfg)
    results = {}
    for bucket, (start, end, learn_every) in clock.items():
        ms = {phase: 1000 * profiler.seconds[bucket][phase] / 1001 for _, _, phase in PHASES}
        ms["checkpointing (amortised)"] = 1000 * checkpoint / (CHECKPOINT_EVERY * 1001)
        results[bucket] = {"ms_per_step": ms, "wall_ms_per_step": 1000 * (end - start) / 1001 + ms["checkpointing (amortised)"],
                           "episode": [e for e, b in timed.items() if b == bucket][0], "learn_every": learn_every,
                           "checkpoint_seconds": checkpoint}
    return results, history


def checkpoint_seconds(agent, cfg) -> float:
    """What one checkpoint (the second of two) costs the training thread with the replay full, as
    from episode 50 on; the file itself is written in the background."""
    m = agent.memory
    fill = np.zeros((cfg.buffer_size - m.size, 33), np.float32)
    m.add(fill, np.zeros((len(fill), 4), np.float32), np.zeros(len(fill), np.float32), fill, np.ones(len(fill), np.float32))
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(2):
            start = time.perf_counter()
            save_checkpoint(folder, agent, None, 1, {"mean": []}, "profile", background=True)
            seconds = time.perf_counter() - start
            wait_for_checkpoint()
        return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current", help="which column this is (e.g. before, after)")
    parser.add_argument("--warmup-episodes", type=int, default=2)
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="Config changes to compare, e.g. batch_size=512 'hidden=(64, 64)'")
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.set)
    torch.set_num_threads(1)                      # as the notebook trains
    machine = f"{host()}, Python {platform.python_version()}, torch {torch.__version__}, 1 torch thread"
    out = os.path.join(ROOT, "results", "benchmarks")
    os.makedirs(out, exist_ok=True)
    for bucket, result in profile(warmup_episodes=args.warmup_episodes, **overrides)[0].items():
        result.update(config_overrides=overrides, machine=machine,
                      label=f"{args.label}, episode {result['episode']} (learning every "
                            + (f"{result['learn_every']} steps)" if result["learn_every"] > 1 else "step)"))
        print(f"{machine}; {result['label']}")
        for phase, ms in result["ms_per_step"].items():
            print(f"  {phase:38s} {ms:7.3f} ms")
        total = result["wall_ms_per_step"]
        print(f"  {'total (wall)':38s} {total:7.3f} ms  -> {1000 / total:,.0f} steps/s, {1001 * total / 1000:.1f} s per episode")
        name = args.label + ("_later" if bucket == "later" else "")
        Path(os.path.join(out, f"train_speed_{name}.json")).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
