"""The training-speed profiler times the notebook's own update, not a drifted copy of it."""
import os
import sys

import numpy as np
import torch

from experiments.notebook import load_definitions

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import train_speed  # noqa: E402


def agent_with_data(ns):
    agent = ns["Agent"](ns["Config"](buffer_size=2_000, batch_size=32, warmup=10_000), 33, 4, 20)
    fake = np.random.default_rng(0)
    for _ in range(30):                   # stores transitions; warmup is not reached, so no update yet
        s = fake.standard_normal((20, 33)).astype(np.float32)
        agent.step(s, agent.act(s), fake.random(20).astype(np.float32), s, done=False)
    return agent


def test_timed_learn_is_agent_learn_phase_by_phase():
    ns = load_definitions()
    reference, timed = agent_with_data(ns), agent_with_data(ns)
    timer = train_speed.Timer()
    for _ in range(3):
        assert reference.learn() == train_speed.timed_learn(timed, timer)
    for name in ("actor", "critic", "actor_target", "critic_target"):
        for p, q in zip(getattr(reference, name).parameters(), getattr(timed, name).parameters()):
            assert torch.equal(p, q), name
    size = reference.memory.size
    np.testing.assert_array_equal(reference.memory.priorities[np.arange(size)], timed.memory.priorities[np.arange(size)])
    assert set(timer.seconds) == {"sampling", "critic update", "priority update", "actor update", "target update"}


def test_profiled_loop_trains_as_the_notebook_trains():
    """The profiler's loop (timed_step with the worker process) stores and learns what `train` would:
    after the same steps from the same seed, the same networks."""
    ns = load_definitions()
    from reacher import ReacherEnvironment
    cfg = dict(buffer_size=5_000, batch_size=32, warmup=300, hidden=(32, 32), max_episodes=1, checkpoint_every=1)
    import tempfile
    with tempfile.TemporaryDirectory() as run_dir:
        ns["train"](ns["Config"](**cfg), ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
        trained = torch.load(os.path.join(run_dir, "actor.pt"))
    agent = ns["Agent"](ns["Config"](**cfg), 33, 4, 20)
    env = ReacherEnvironment(seed=0, verbose=False)
    env.reset(train_mode=True)                    # as `train` does, to read the sizes
    runner = ns["EnvRunner"](env, agent.behaviour, process=True)
    try:
        train_speed.start_episode(agent, runner, 1)
        while not train_speed.timed_step(agent, runner, train_speed.Timer(), process=True):
            pass
    finally:
        runner.close()
    assert agent.updates > 0
    for name, value in agent.actor.state_dict().items():
        assert torch.equal(value, trained[name]), name
