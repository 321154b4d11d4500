"""Where a training step's time goes: milliseconds per environment step, phase by phase.

    python benchmarks/train_speed.py [--steps 1000] [--label current]    # results/benchmarks/train_speed_<label>*.json

The notebook's configuration (`Config()`), its own definitions (experiments/notebook.py), on the
built-in Reacher, driven as the notebook's training loop drives it (`EnvRunner`, section 4.9).
The agent first trains `--warmup-episodes` episodes, so that the networks, the normaliser and the
replay are as they are in training; then `--steps` steps are timed phase by phase in this (the
learner's) process: waiting for the environment runner's step, refreshing the behaviour policy,
storing (normaliser, n-step window, replay insert), then the learning update (sampling, critic
update, priority update, actor update, target update). With the worker process the environment
steps and acts meanwhile in the other process; the profile is taken twice, with the worker and
inline (where "waiting" is the environment step and acting themselves), each in the first
`fast_episodes` (learning every step) and after them (learning every `learn_every_later` steps):
four files, `_inline`, `_later` and `_later_inline` added to the label. The total is the measured
wall time per step. The later phase is timed after the same warm-up, as if it were the first
later episode (its replay then holds fewer transitions than it would). Checkpointing is timed once with the replay full (as from episode
50 on) and spread over the `checkpoint_every` x 1001 steps between checkpoints.

`timed_learn` mirrors `Agent.learn` phase by phase; tests/test_benchmarks.py checks that it
leaves the agent exactly as `Agent.learn` does, so the profile cannot drift from the notebook.
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from experiments.notebook import load_definitions  # noqa: E402
from reacher import ReacherEnvironment  # noqa: E402

WAIT = {True: "waiting for the worker's step", False: "environment step and acting"}
PHASES = ["refreshing the behaviour policy", "n-step and replay insert", "sampling", "critic update",
          "priority update", "actor update", "target update"]


class Timer:
    """Total seconds per phase."""

    def __init__(self):
        self.seconds = defaultdict(float)

    @contextmanager
    def __call__(self, phase):
        start = time.perf_counter()
        yield
        self.seconds[phase] += time.perf_counter() - start


def timed_learn(agent, timer: Timer) -> tuple[float, float]:
    """`Agent.learn`, phase by phase (the same calls in the same order)."""
    cfg = agent.cfg
    with timer("sampling"):
        idx, weights, batch = agent.memory.sample(cfg.batch_size, agent.beta())
        s, a, ret, s_next, disc = (torch.from_numpy(x) for x in batch)
        s, s_next = agent.norm(s), agent.norm(s_next)
        w = torch.from_numpy(weights)
    with timer("critic update"):
        with torch.no_grad():
            y = ret + disc * agent.critic_target(s_next, agent.actor_target(s_next))
        td = y - agent.critic(s, a)
        critic_loss = (w * td.pow(2)).mean()
        agent.critic_params.grad.zero_()
        critic_loss.backward()
        grad = agent.critic_params.grad
        grad.mul_((cfg.grad_clip / (torch.linalg.vector_norm(grad) + 1e-6)).clamp_(max=1.0))
        agent.critic_opt.step()
        agent.updates += 1
    with timer("priority update"):
        agent.memory.update_priorities(idx, td.detach().numpy())
    with timer("actor update"):
        if cfg.exploration == "noisynet":
            agent.actor.set_noise(torch.randn(agent.actor.noise_size, generator=agent.gen))
        agent.critic.requires_grad_(False)
        actor_loss = -agent.critic(s, agent.actor(s)).mean()
        agent.actor_params.grad.zero_()
        actor_loss.backward()
        agent.critic.requires_grad_(True)
        agent.actor_opt.step()
    with timer("target update"):
        with torch.no_grad():
            agent.actor_target_params.lerp_(agent.actor_params, cfg.tau)
            agent.critic_target_params.lerp_(agent.critic_params, cfg.tau)
    return critic_loss.item(), actor_loss.item()


def timed_step(agent, runner, timer: Timer, process: bool) -> bool:
    """One step of the training loop (`train` in the notebook), timed by phase; returns done."""
    with timer(WAIT[process]):
        states, actions, rewards, next_states, done = runner.result()
    if not done:
        with timer("refreshing the behaviour policy"):
            agent.refresh_behaviour()
        runner.request("step")
    with timer("n-step and replay insert"):
        agent.norm.update(torch.as_tensor(states, dtype=torch.float32))
        transitions = agent.nstep.push(states, actions, rewards, next_states, done)
        if transitions is not None:
            agent.memory.add(*transitions)
        agent.steps += 1
    ready = agent.memory.size >= max(agent.cfg.warmup, agent.cfg.batch_size)
    if ready and agent.steps % agent.learn_every == 0:
        for _ in range(agent.cfg.updates_per_learn):
            timed_learn(agent, timer)
    return done


def start_episode(agent, runner, episode: int) -> None:
    runner("reset")
    agent.begin_episode(episode)
    agent.refresh_behaviour()
    runner.request("step")


def profile(steps: int, warmup_episodes: int, process: bool, episode: int, seed: int = 0, **overrides) -> dict:
    """Train `warmup_episodes`, then time `steps` steps as from episode `episode` on (its n and learning interval)."""
    torch.set_num_threads(1)                       # as the notebook trains
    ns = load_definitions()
    cfg = ns["Config"](seed=seed, **overrides)
    env = ReacherEnvironment(seed=seed, verbose=False)
    agent = ns["Agent"](cfg, 33, 4, 20)
    runner = ns["EnvRunner"](env, agent.behaviour, process=process and ns["EnvRunner"].can_fork(env))
    try:
        for warmup_episode in range(1, warmup_episodes + 1):    # train as the notebook does, untimed
            start_episode(agent, runner, warmup_episode)
            while not timed_step(agent, runner, Timer(), process):
                pass
        start_episode(agent, runner, episode)
        timer = Timer()
        start = time.perf_counter()
        for _ in range(steps):
            if timed_step(agent, runner, timer, process):
                episode += 1
                start_episode(agent, runner, episode)
        wall = time.perf_counter() - start
    finally:
        runner.close()
    # Checkpointing with the replay full, as it is from episode 50 on, once per checkpoint_every episodes.
    m = agent.memory
    fill = np.zeros((cfg.buffer_size - m.size, 33), np.float32)
    m.add(fill, np.zeros((len(fill), 4), np.float32), np.zeros(len(fill), np.float32), fill,
          np.ones(len(fill), np.float32))
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        ns["save_checkpoint"](folder, agent, None, 1, {"mean": []}, "profile")
        checkpoint = time.perf_counter() - t
    ms = {phase: 1000 * timer.seconds[phase] / steps for phase in [WAIT[process]] + PHASES}
    ms["checkpointing (amortised)"] = 1000 * checkpoint / (cfg.checkpoint_every * 1001)
    return {"ms_per_step": ms, "wall_ms_per_step": 1000 * wall / steps + ms["checkpointing (amortised)"],
            "worker_process": process, "episode": episode, "learn_every": agent.learn_every, "steps": steps, "warmup_episodes": warmup_episodes,
            "timed_steps_per_second": steps / wall, "checkpoint_seconds": checkpoint,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                       f"torch {torch.__version__}, 1 torch thread"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--warmup-episodes", type=int, default=2)
    parser.add_argument("--label", default="current", help="which table this is (e.g. before, after)")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="Config overrides to compare, e.g. batch_size=512 learn_every=2")
    args = parser.parse_args(argv)
    overrides = {k: type(getattr(load_definitions()["Config"], k))(v) for k, v in (a.split("=", 1) for a in args.set)}
    later = load_definitions()["Config"](**overrides).fast_episodes + 1
    cases = [(True, args.warmup_episodes + 1, ""), (False, args.warmup_episodes + 1, "_inline"),
             (True, later, "_later"), (False, later, "_later_inline")]
    for process, episode, suffix in cases:
        result = profile(args.steps, args.warmup_episodes, process, episode, **overrides)
        result["config_overrides"] = overrides
        result["label"] = args.label + {"": f", worker, episodes 1-{later - 1}", "_inline": f", inline, episodes 1-{later - 1}",
                                        "_later": f", worker, episodes {later}+",
                                        "_later_inline": f", inline, episodes {later}+"}[suffix]
        total = result["wall_ms_per_step"]
        print(f"{result['machine']}; {'worker process' if process else 'inline'}; "
              f"{args.steps} timed steps as episode {episode} after {args.warmup_episodes} training episodes")
        for phase, ms in result["ms_per_step"].items():
            print(f"  {phase:32s} {ms:7.3f} ms")
        print(f"  {'total (wall)':32s} {total:7.3f} ms  -> {1000 / total:,.0f} steps/s, {1001 * total / 1000:.1f} s per episode")
        out = os.path.join(ROOT, "results", "benchmarks")
        os.makedirs(out, exist_ok=True)
        name = args.label + suffix
        json.dump(result, open(os.path.join(out, f"train_speed_{name}.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
