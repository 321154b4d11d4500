"""Where a training step's time goes: milliseconds per environment step, phase by phase.

    python benchmarks/train_speed.py [--steps 1000] [--label current]    # results/benchmarks/train_speed_<label>.json

The notebook's configuration (`Config()`), its own definitions (experiments/notebook.py), on the
built-in Reacher. The agent first plays `--warmup-episodes` episodes, so that the networks, the
normaliser and the replay are as they are in training; then `--steps` steps are timed phase by
phase. One step is: act for the 20 arms, step the environment, store (normaliser, n-step window,
replay insert), then one learning update (sampling, critic update, priority update, actor update,
target update). Checkpointing is timed once with the replay full (as from episode 50 on) and
spread over the `checkpoint_every` x 1001 steps between checkpoints.

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
from reacher import BRAIN_NAME, ReacherEnvironment  # noqa: E402

PHASES = ["environment step", "acting", "n-step and replay insert", "sampling", "critic update",
          "priority update", "actor update", "target update", "checkpointing (amortised)"]


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
    cfg, nn = agent.cfg, torch.nn
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
        agent.critic_opt.zero_grad()
        critic_loss.backward()
        nn.utils.clip_grad_norm_(agent.critic.parameters(), cfg.grad_clip)
        agent.critic_opt.step()
        agent.updates += 1
    with timer("priority update"):
        agent.memory.update_priorities(idx, td.detach().numpy())
    with timer("actor update"):
        if cfg.exploration == "noisynet":
            agent.actor.set_noise(torch.randn(agent.actor.noise_size, generator=agent.gen))
        actor_loss = -agent.critic(s, agent.actor(s)).mean()
        agent.actor_opt.zero_grad()
        actor_loss.backward()
        agent.actor_opt.step()
    with timer("target update"):
        with torch.no_grad():
            for net, target in ((agent.actor, agent.actor_target), (agent.critic, agent.critic_target)):
                torch._foreach_lerp_(list(target.parameters()), list(net.parameters()), cfg.tau)
    return critic_loss.item(), actor_loss.item()


def timed_step(agent, env, states, timer: Timer):
    """One environment step of all arms and its learning updates (as `Agent.step`), timed by phase."""
    with timer("acting"):
        actions = agent.act(states)
    with timer("environment step"):
        info = env.step(actions)[BRAIN_NAME]
    next_states, rewards, done = info.vector_observations, np.asarray(info.rewards), any(info.local_done)
    with timer("n-step and replay insert"):
        agent.norm.update(torch.as_tensor(states, dtype=torch.float32))
        transitions = agent.nstep.push(states, actions, rewards, next_states, done)
        if transitions is not None:
            agent.memory.add(*transitions)
        agent.steps += 1
    if agent.steps % agent.cfg.learn_every == 0:
        for _ in range(agent.cfg.updates_per_learn):
            timed_learn(agent, timer)
    return next_states


def profile(steps: int, warmup_episodes: int, seed: int = 0, **overrides) -> dict:
    torch.set_num_threads(1)                       # as the notebook trains
    ns = load_definitions()
    cfg = ns["Config"](seed=seed, **overrides)
    env = ReacherEnvironment(seed=seed, verbose=False)
    agent = ns["Agent"](cfg, 33, 4, 20)
    states = env.reset()[BRAIN_NAME].vector_observations
    for _ in range(warmup_episodes * 1001):        # train as the notebook does, untimed
        actions = agent.act(states)
        info = env.step(actions)[BRAIN_NAME]
        agent.step(states, actions, np.asarray(info.rewards), info.vector_observations, any(info.local_done))
        states = info.vector_observations
    timer = Timer()
    start = time.perf_counter()
    for _ in range(steps):
        states = timed_step(agent, env, states, timer)
    total = time.perf_counter() - start
    # Checkpointing with the replay full, as it is from episode 50 on, once per checkpoint_every episodes.
    m = agent.memory
    fill = np.zeros((cfg.buffer_size - m.size, 33), np.float32)
    m.add(fill, np.zeros((len(fill), 4), np.float32), np.zeros(len(fill), np.float32), fill,
          np.ones(len(fill), np.float32))
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        ns["save_checkpoint"](folder, agent, env, 1, {"mean": []}, "profile")
        checkpoint = time.perf_counter() - t
    ms = {phase: 1000 * timer.seconds[phase] / steps for phase in PHASES[:-1]}
    ms["checkpointing (amortised)"] = 1000 * checkpoint / (cfg.checkpoint_every * 1001)
    return {"ms_per_step": ms, "steps": steps, "warmup_episodes": warmup_episodes,
            "timed_steps_per_second": steps / total, "checkpoint_seconds": checkpoint,
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
    result = profile(args.steps, args.warmup_episodes, **overrides)
    result["config_overrides"] = overrides
    result["label"] = args.label
    total = sum(result["ms_per_step"].values())
    print(f"{result['machine']}; {args.steps} timed steps after {args.warmup_episodes} training episodes")
    for phase, ms in result["ms_per_step"].items():
        print(f"  {phase:28s} {ms:7.3f} ms  {ms / total:5.1%}")
    print(f"  {'total':28s} {total:7.3f} ms  -> {1000 / total:,.0f} steps/s, {1001 * total / 1000:.1f} s per episode")
    out = os.path.join(ROOT, "results", "benchmarks")
    os.makedirs(out, exist_ok=True)
    json.dump(result, open(os.path.join(out, f"train_speed_{args.label}.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
