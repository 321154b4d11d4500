"""The agent keeps every part working after its networks are moved or cast, and its random
streams are independent.

Before this was so, `.double()` on the networks left NoisyNet's noise at zero and no weight moved
in 18 updates, with no error: the noise buffers and the flat parameter views had been replaced by
copies. These tests fail on that code.
"""

import numpy as np
import pytest
import torch

from continuous_control.agent import Agent, Config
from continuous_control.config import seed_streams

S, A, ARMS = 33, 4, 20
SMALL = dict(warmup=256, batch_size=64, hidden=(32, 32), buffer_size=10_000)
DEVICES = [pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))]


def run_steps(agent: Agent, steps: int, seed: int = 0) -> list:
    """Made-up transitions; the behaviour actor's noise per layer after each step."""
    rng = np.random.default_rng(seed)
    agent.begin_episode(1)
    states, noise = rng.standard_normal((ARMS, S)), []
    for _ in range(steps):
        actions = agent.act(states)
        next_states = rng.standard_normal((ARMS, S))
        means = [layer.weight_mean.detach().clone() for layer in agent.actor.layers]  # what step's refresh reads
        agent.step(states, actions, rng.random(ARMS) * 0.04, next_states, False)
        # the next step's acting weights less the mean weights they were drawn from: the noise
        noise.append([(plain.weight - mean).cpu() for plain, mean in zip(agent.behaviour.actor.layers, means)])
        states = next_states
    return noise


def weights(agent: Agent) -> dict:
    nets = {
        "actor": agent.actor,
        "critic": agent.critic,
        "actor_target": agent.actor_target,
        "critic_target": agent.critic_target,
    }
    return {
        f"{net}.{name}": p.detach().cpu().clone()
        for net, module in nets.items()
        for name, p in module.named_parameters()
    }


def check_trains(agent: Agent, dtype: torch.dtype) -> None:
    before = weights(agent)
    noise = run_steps(agent, 30)
    assert agent.updates > 10
    for layer_noise in zip(*noise):  # every layer, step after step
        assert all(n.abs().sum() > 0 for n in layer_noise), "NoisyNet's noise is zero"
        assert not torch.equal(layer_noise[0], layer_noise[-1]), "NoisyNet's noise does not change"
    for layer in agent.actor.layers:  # the learner's noise too
        assert layer.eps_in.abs().sum() > 0
    after = weights(agent)
    frozen = [name for name in before if torch.equal(before[name], after[name])]
    assert not frozen, f"weights that no update moved: {frozen}"
    assert all(p.dtype == dtype for p in agent.actor.parameters())
    for opt in (agent.actor_opt, agent.critic_opt):
        assert all(s["exp_avg"].dtype == dtype for s in opt.state.values())


def test_float64_agent_explores_and_every_layer_learns():
    agent = Agent(Config(**SMALL), S, A, ARMS).to(torch.float64)
    check_trains(agent, torch.float64)


def test_moving_after_updates_keeps_adams_state():
    """Cast midway: Adam's moments follow the parameters, and learning goes on."""
    agent = Agent(Config(**SMALL), S, A, ARMS)
    run_steps(agent, 20)
    agent.to(torch.float64)
    check_trains(agent, torch.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_cuda_agent_explores_and_every_layer_learns(device):
    agent = Agent(Config(**SMALL, device=device), S, A, ARMS)
    assert next(agent.critic.parameters()).device.type == "cuda"
    check_trains(agent, torch.float32)


def test_tensor_follows_the_networks_after_a_move():
    """`tensor` finds the networks' dtype once, and again after each `to`."""
    agent = Agent(Config(**SMALL), S, A, ARMS)
    states = np.random.default_rng(0).standard_normal((ARMS, S))
    assert agent.tensor(states).dtype == torch.float32
    agent.to(torch.float64)
    assert agent.tensor(states).dtype == torch.float64
    assert torch.equal(agent.tensor(states), torch.as_tensor(states))  # not rounded through float32 on the way


def test_float64_learns_what_float32_learns():
    """Same seed, same transitions: the two precisions act alike after learning."""
    states = np.random.default_rng(5).standard_normal((ARMS, S))
    actions = []
    for dtype in (torch.float32, torch.float64):
        agent = Agent(Config(**SMALL), S, A, ARMS).to(dtype)
        run_steps(agent, 25)
        actions.append(agent.act(states, explore=False))
    np.testing.assert_allclose(actions[0], actions[1], atol=1e-3)


def test_a_device_that_is_not_there_is_refused():
    """At once, in Config, with torch's own reason."""
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError), match="CUDA|NVIDIA"):
            Config(device="cuda")
    with pytest.raises(ValueError, match=r"Config\.device\b.*'abacus'"):
        Config(device="abacus")


def test_random_streams_are_independent_and_reproducible():
    """The goals, the replay sampler, the weights and the noise draw different streams, even
    though one seed makes them all; the same seed makes the same streams."""
    draws = {name: np.random.default_rng(seq).random(8) for name, seq in seed_streams(0).items()}
    assert len({tuple(d) for d in draws.values()}) == 4
    again = {name: np.random.default_rng(seq).random(8) for name, seq in seed_streams(0).items()}
    assert all(np.array_equal(draws[k], again[k]) for k in draws)
    agent = Agent(Config(**SMALL), S, A, ARMS)
    replay = agent.rng.random(8)
    noise = torch.randn(8, generator=agent.gen)
    np.testing.assert_array_equal(replay, draws["replay"])
    assert not np.allclose(replay, draws["goals"])
    assert not torch.equal(noise, torch.randn(8, generator=torch.Generator().manual_seed(0)))
    Agent(Config(**SMALL), S, A, ARMS)
    assert torch.initial_seed() == seed_streams(0)["weights"]  # the weights drew from their own stream
