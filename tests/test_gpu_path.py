"""The GPU's speed path (continuous_control/devices.py) is the lesson's agent: the same batches, the same
updates, the same priorities. Its tensor code runs on any device, so a CPU checks it against the lesson's
numpy replay; the CUDA graph is checked against the eager path where a GPU is at hand."""

import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from continuous_control import agent as agent_module
from continuous_control.agent import Agent, Config
from continuous_control.checkpoints import load_checkpoint, save_checkpoint
from continuous_control.devices import DeviceReplay, GraphedBehaviour, graphed
from continuous_control.training import Recorder, diagnostics

S, A, ARMS = 33, 4, 20
SMALL = dict(warmup=256, batch_size=64, hidden=(32, 32), buffer_size=2_000, priority_window=3)
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def feed(agent, steps: int, seed: int = 0) -> Recorder:
    """Made-up transitions, the same for every agent given the same seed; the run's Recorder."""
    record, rng = Recorder(agent), np.random.default_rng(seed)
    agent.begin_episode(1)
    states = rng.standard_normal((ARMS, S))
    for _ in range(steps):
        next_states = rng.standard_normal((ARMS, S))
        record.on_step(agent.step(states, agent.act(states), rng.random(ARMS) * 0.04, next_states, False))
        states = next_states
    return record


def state(agent) -> dict:
    nets = {name: getattr(agent, name) for name in ("actor", "critic", "actor_target", "critic_target")}
    out = {f"{n}.{k}": v.detach().cpu().double() for n, net in nets.items() for k, v in net.state_dict().items()}
    m = agent.memory
    out["priorities"] = torch.as_tensor(m.priorities[np.arange(m.size)]).cpu().double()
    out["recent"] = torch.as_tensor(m.recent).cpu().double()
    out["states"] = torch.as_tensor(m.states[: m.size]).cpu().double()
    return out


def assert_same(a: dict, b: dict, tol: float) -> None:
    for key in a:
        assert torch.allclose(a[key], b[key], rtol=tol, atol=tol), (
            f"{key} differs by {(a[key] - b[key]).abs().max():.2e}"
        )


def test_tensor_path_learns_what_the_lesson_learns():
    """30 updates on the same transitions: weights, targets, priorities and the ring of largest priorities agree."""
    lesson, fast = Agent(Config(**SMALL), S, A, ARMS), graphed(Agent)(Config(**SMALL), S, A, ARMS)  # on a CPU: eager
    feed(lesson, 45), feed(fast, 45)
    assert lesson.updates == fast.updates == fast.memory.updates == 33
    assert fast.memory.size == lesson.memory.size
    assert_same(state(lesson), state(fast), 1e-4)


def test_tensor_path_runs_the_lessons_own_priorities(monkeypatch):
    """A change planted in the lesson's `_set_priority` reaches the GPU's path: both paths hold the same priorities (and
    networks), and not the priorities of the lesson without the change."""
    line = "self.priorities[idx] = priorities**self.alpha"  # the body of the lesson's _set_priority
    source = Path(agent_module.__file__).read_text(encoding="utf-8")
    assert source.count(line) == 1
    planted = types.ModuleType("planted_agent")
    monkeypatch.setitem(sys.modules, planted.__name__, planted)  # the dataclass's module
    exec(compile(source.replace(line, line + " * 2"), "planted", "exec"), vars(planted))
    lesson, fast = (cls(planted.Config(**SMALL), S, A, ARMS) for cls in (planted.Agent, graphed(planted.Agent)))
    plain = Agent(Config(**SMALL), S, A, ARMS)
    for agent in (lesson, fast, plain):
        feed(agent, 30)
    assert_same(state(lesson), state(fast), 1e-4)
    assert not torch.allclose(state(lesson)["priorities"], state(plain)["priorities"])


def test_tensor_path_samples_the_sum_trees_leaves():
    """The prefix-sum search by searchsorted finds the leaf the sum tree's walk finds, at its boundaries too."""
    lesson, fast = Agent(Config(**SMALL), S, A, ARMS), graphed(Agent)(Config(**SMALL), S, A, ARMS)
    p = np.random.default_rng(1).random(1000) ** 3
    lesson.memory.priorities[np.arange(1000)] = p
    fast.memory.priorities[np.arange(1000)] = p
    cumulative = np.cumsum(p)
    u = np.concatenate([cumulative[:-1] - 1e-9, cumulative[:-1] + 1e-9, np.random.default_rng(2).random(500) * p.sum()])
    expected = lesson.memory.priorities.find_prefix_sum(u)
    found = fast.memory.priorities.find_prefix_sum(torch.as_tensor(u))
    assert np.array_equal(found.numpy(), expected)
    whole = np.random.default_rng(3).integers(1, 5, 1000).astype(float)  # sums exact in any order
    lesson.memory.priorities[np.arange(1000)] = whole
    fast.memory.priorities[np.arange(1000)] = whole
    on_a_boundary = np.cumsum(whole)[:-1]  # the walk goes right where u equals the left sum
    expected = lesson.memory.priorities.find_prefix_sum(on_a_boundary)
    assert np.array_equal(expected, np.arange(1, 1000))
    assert np.array_equal(fast.memory.priorities.find_prefix_sum(torch.as_tensor(on_a_boundary)).numpy(), expected)


def test_device_replay_is_the_lessons_replay_over_tensors():
    """The same transitions, priorities and uniform numbers: the same rows, weights and batch, the same priorities
    after an update, and new transitions at the same entry priority."""
    lesson, fast = Agent(Config(**SMALL), S, A, ARMS), graphed(Agent)(Config(**SMALL), S, A, ARMS)
    rng = np.random.default_rng(3)
    for _ in range(30):
        batch = rng.standard_normal((ARMS, S)), rng.random((ARMS, A)), rng.random(ARMS), rng.standard_normal((ARMS, S))
        for agent in (lesson, fast):
            agent.memory.add(*batch, np.full(ARMS, 0.99))
    td = rng.standard_normal(64).astype(np.float32) * 3
    for beta in (0.4, 0.9):
        fast.memory.u.copy_(torch.as_tensor(np.random.default_rng(4).random(64)))
        idx, weights, rows = fast.memory.sample(64, torch.tensor(beta, dtype=torch.float64))
        lesson.memory.rng = np.random.default_rng(4)
        expected = lesson.memory.sample(64, beta)
        assert np.array_equal(idx.numpy(), expected[0])
        np.testing.assert_allclose(weights.numpy(), expected[1], rtol=1e-6)
        for got, want in zip(rows, expected[2]):
            np.testing.assert_array_equal(got.numpy(), want)
        lesson.memory.update_priorities(expected[0], td)
        fast.memory.update_priorities(idx, torch.as_tensor(td))
        np.testing.assert_allclose(
            fast.memory.priorities[np.arange(600)].numpy(), lesson.memory.priorities[np.arange(600)], rtol=1e-6
        )
    assert int(fast.memory.updates) == lesson.memory.updates == 2
    assert fast.memory.entry_priority == pytest.approx(lesson.memory.entry_priority, rel=1e-6)


def test_recorder_and_checkpoint_on_the_tensor_path(tmp_path):
    """The diagnostics are those of the lesson's agent, and a checkpoint resumes to the same state."""
    lesson, fast = Agent(Config(**SMALL), S, A, ARMS), graphed(Agent)(Config(**SMALL), S, A, ARMS)
    rows = [diagnostics(agent, feed(agent, 40)) for agent in (lesson, fast)]
    assert rows[0]["updates"] == rows[1]["updates"] == 28
    for key, value in rows[0].items():
        assert np.isclose(value, rows[1][key], rtol=1e-4), key
    record = Recorder(fast)
    one = [1.0]  # the history of one episode, as a run records it
    history = {**dict.fromkeys(("mean", "min", "max", "avg100", "wall"), one), "arms": [one * ARMS]}
    history |= {"solved_at": None, "diagnostics": [{"updates": 28.0}]}
    save_checkpoint(str(tmp_path), fast, None, 1, history, "code", record)
    again = graphed(Agent)(Config(**SMALL), S, A, ARMS)
    counter = again.memory.updates  # the ring's position, in the tensor that a captured update reads
    assert load_checkpoint(str(tmp_path), again, None, "code", Recorder(again)) == (1, history)
    assert_same(state(fast), state(again), 0)
    assert again.memory.updates is counter and int(counter) == int(fast.memory.updates) == 28


def test_the_ablations_stay_on_the_cpu_and_a_subclass_of_the_agent_does_not():
    """The speed path replaces the lesson's replay storage and behaviour, which an ablation may swap: an Ablation on
    CUDA is refused as its config is made. A subclass of the agent with the lesson's parts gets the speed path."""
    from experiments.ablations import Ablation

    with pytest.raises(ValueError, match=r"\bCPU\b"):
        Ablation(**SMALL, device="cuda")

    class Timed(Agent):  # a subclass with the lesson's parts is the lesson's agent
        pass

    assert isinstance(graphed(Timed)(Config(**SMALL), S, A, ARMS).memory, DeviceReplay)


def test_the_graphed_behaviour_is_the_lessons_for_all_but_its_graphs():
    """Before its first refresh (no Graph yet) it acts as the lesson's behaviour; its noise, acting actor and mean
    actor, which the agent and a checkpoint read, are the lesson's own."""
    agent = Agent(Config(**SMALL), S, A, ARMS)
    feed(agent, 20)
    lesson = agent.behaviour
    wrapped = GraphedBehaviour(lesson, agent.sizes)
    assert wrapped.noise is lesson.noise and wrapped.actor is lesson.actor
    states = torch.randn(ARMS, S)
    torch.testing.assert_close(wrapped(states), lesson(states), rtol=0, atol=0)
    torch.testing.assert_close(wrapped.mean_actor(states), lesson.mean_actor(states), rtol=0, atol=0)


@CUDA
def test_cuda_graph_replays_the_eager_update():
    """The captured update, replayed, does what the same update run eagerly does."""
    eager = graphed(Agent, capture=False)(Config(**SMALL, device="cuda"), S, A, ARMS)  # no graph at all
    captured = graphed(Agent)(Config(**SMALL, device="cuda"), S, A, ARMS)
    feed(eager, 60), feed(captured, 60)
    assert captured.graph.calls > 10 and captured.graph.captured is not None
    assert_same(state(eager), state(captured), 1e-4)
