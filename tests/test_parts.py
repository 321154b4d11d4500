"""The agent's parts one at a time, on small cases worked out by hand: the n-step window's flush at an
episode's end, the sum tree's walk, the replay's stratified sampling and priorities, the noisy layers,
the Ornstein-Uhlenbeck noise, the states' normaliser, the agent's schedules (n, learning interval, warm-up,
beta) and the three steps of a DDPG update."""

import numpy as np
import pytest
import torch

from continuous_control.agent import (
    DDPG,
    Actor,
    Agent,
    Config,
    Critic,
    NoisyActor,
    NoisyLinear,
    NStepAccumulator,
    OrnsteinUhlenbeck,
    PrioritizedReplay,
    walk_step,
)
from continuous_control.behaviour import draw
from continuous_control.networks import Normalizer
from continuous_control.sumtree import SumTree

S, A, ARMS = 3, 2, 2


# --- n-step window: the flush at an episode's end ---
def arms_step(t, reward):
    """Step t of two arms (state size 2, action size 1): arm 1 is arm 0 shifted by 10, its reward times 10."""
    states = np.array([[t, -t], [10 + t, -10 - t]], np.float32)
    return states, -states[:, :1], np.array([reward, 10 * reward], np.float32)


def push_steps(acc, rewards):
    for t, r in enumerate(rewards):
        states, actions, rew = arms_step(t, r)
        acc.push(states, actions, rew, arms_step(t + 1, 0)[0], done=False)


def flush(acc, t):
    """End the episode at step t: that step's own reward is dropped, its state is the bootstrap state."""
    states, actions, rew = arms_step(t, 1000.0)
    return acc.push(states, actions, rew, np.full_like(states, -99), done=True)


def starts(*ts):
    """The expected start states and actions of steps ts, in the flush's order (step, then arm)."""
    s = np.concatenate([arms_step(t, 0)[0] for t in ts])
    return s, -s[:, :1]


def test_a_flush_after_fewer_than_n_steps_truncates_every_return():
    """n = 4, gamma 0.5, three steps with rewards 1, 2, 8: every step starts a transition, whose return
    stops at the last step: 1 + 0.5*2 + 0.25*8 = 4, 2 + 0.5*8 = 6, 8; discounts 0.5^3, 0.5^2, 0.5."""
    acc = NStepAccumulator(4, 0.5, 2, 2, 1)
    push_steps(acc, [1, 2, 8])
    s, a, ret, s_next, disc = flush(acc, 3)
    want_s, want_a = starts(0, 1, 2)
    assert s.shape == (6, 2) and a.shape == (6, 1) and s_next.shape == (6, 2)
    np.testing.assert_array_equal(s, want_s)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(ret, [4, 40, 6, 60, 8, 80])
    np.testing.assert_array_equal(disc, [0.125, 0.125, 0.25, 0.25, 0.5, 0.5])
    np.testing.assert_array_equal(s_next, np.tile(arms_step(3, 0)[0], (3, 1)))
    assert ret.dtype == disc.dtype == s_next.dtype == np.float32


def test_a_flush_after_more_than_n_steps_emits_only_the_steps_not_yet_started():
    """n = 3, rewards 1..5: steps 0, 1, 2 were emitted as full 3-step transitions; the flush adds steps
    3 and 4: 4 + 0.5*5 = 6.5 with discount 0.25, and 5 with discount 0.5."""
    acc = NStepAccumulator(3, 0.5, 2, 2, 1)
    push_steps(acc, [1, 2, 3, 4, 5])
    s, a, ret, s_next, disc = flush(acc, 5)
    want_s, want_a = starts(3, 4)
    np.testing.assert_array_equal(s, want_s)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(ret, [6.5, 65, 5, 50])
    np.testing.assert_array_equal(disc, [0.25, 0.25, 0.5, 0.5])
    np.testing.assert_array_equal(s_next, np.tile(arms_step(5, 0)[0], (2, 1)))


def test_a_flush_of_one_remaining_step_gives_its_one_step_transition():
    acc = NStepAccumulator(3, 0.5, 2, 2, 1)
    push_steps(acc, [3])
    s, a, ret, s_next, disc = flush(acc, 1)
    np.testing.assert_array_equal(s, arms_step(0, 0)[0])
    np.testing.assert_array_equal(ret, [3, 30])
    np.testing.assert_array_equal(disc, [0.5, 0.5])


def test_an_end_with_no_step_left_to_start_emits_nothing():
    """An empty window; or n = 1, where every step was emitted as it came."""
    acc = NStepAccumulator(3, 0.5, 2, 2, 1)
    assert flush(acc, 0) is None
    acc = NStepAccumulator(1, 0.5, 2, 2, 1)
    push_steps(acc, [7, 3])
    assert flush(acc, 2) is None


def test_after_a_flush_the_next_episode_starts_with_an_empty_window():
    acc = NStepAccumulator(3, 0.5, 2, 2, 1)
    push_steps(acc, [1, 2])
    flush(acc, 2)
    assert acc.count == 0
    push_steps(acc, [5])  # the new episode's one step: only it is flushed
    s, a, ret, s_next, disc = flush(acc, 1)
    np.testing.assert_array_equal(ret, [5, 50])
    np.testing.assert_array_equal(s, arms_step(0, 0)[0])


# --- the sum tree ---
@pytest.mark.parametrize("capacity, leaves", [(1, 1), (2, 2), (4, 4), (5, 8), (8, 8)])
def test_the_tree_has_the_smallest_power_of_two_leaves_that_holds_the_capacity(capacity, leaves):
    """Not more: the tree of a million transitions is the largest array after the replay itself."""
    assert SumTree(capacity, walk_step).leaves == leaves


def test_the_walk_finds_the_leaf_whose_interval_holds_u_and_a_boundary_goes_right():
    """Priorities 1, 2, 0, 3, 1 (capacity 5): the intervals are [0, 1), [1, 3), leaf 2 none, [3, 6), [6, 7)."""
    tree = SumTree(5, walk_step)
    tree[np.arange(5)] = [1, 2, 0, 3, 1]
    assert tree.total() == 7
    u = [0, 0.5, 1, 2.99, 3, 5.99, 6, 6.99]
    np.testing.assert_array_equal(tree.find_prefix_sum(np.array(u)), [0, 0, 1, 1, 3, 3, 4, 4])
    np.testing.assert_array_equal(tree[np.arange(5)], [1, 2, 0, 3, 1])


def test_overwritten_leaves_update_the_total_and_zero_priority_leaves_are_never_found():
    tree = SumTree(5, walk_step)
    tree[np.arange(5)] = 1.0
    assert tree.total() == 5
    tree[np.array([1, 3])] = [0.0, 2.5]
    assert tree.total() == 5.5
    found = tree.find_prefix_sum(np.linspace(0, 5.5, 1000, endpoint=False))
    np.testing.assert_array_equal(np.unique(found), [0, 2, 3, 4])


# --- prioritized replay ---
def replay(capacity=8, alpha=1.0, offset=0.0, window=4, rng=None, size=0):
    m = PrioritizedReplay(capacity, 1, 1, alpha, offset, rng or np.random.default_rng(0), window)
    if size:
        add(m, np.arange(size))
    return m


def add(m, values):
    """Transitions whose every field is `values` (as float32), so each is recognisable in a batch."""
    v = np.asarray(values, np.float32)
    m.add(v[:, None], v[:, None], v, v[:, None], v)


def test_with_equal_priorities_a_batch_of_the_whole_buffer_draws_each_transition_once():
    m = replay(capacity=16, size=11)
    idx, weights, (s, *_) = m.sample(11, beta=0.5)
    np.testing.assert_array_equal(np.sort(idx), np.arange(11))
    np.testing.assert_array_equal(s[:, 0], idx)
    np.testing.assert_array_equal(weights, np.ones(11))


def test_each_draw_falls_in_its_own_equal_segment_of_the_total():
    """Priorities 3 and 1 (total 4), batch 4: segments [0,1), [1,2), [2,3) hit transition 0, [3,4) hits 1,
    whatever the random offsets. Weights (N P(i))^-beta: (2 * 3/4)^-1 = 2/3 and (2 * 1/4)^-1 = 2, over the max 2."""
    m = replay(size=2)
    m.update_priorities(np.array([0, 1]), np.array([3.0, -1.0]))
    for _ in range(5):
        idx, weights, _ = m.sample(4, beta=1.0)
        np.testing.assert_array_equal(idx, [0, 0, 0, 1])
        np.testing.assert_allclose(weights, [1 / 3, 1 / 3, 1 / 3, 1], rtol=1e-6)
    _, weights, _ = m.sample(4, beta=0.5)
    np.testing.assert_allclose(weights, [3**-0.5] * 3 + [1], rtol=1e-6)


class TopOfTheUnitInterval:
    """A generator whose every draw is the largest double below 1: the last bound then rounds up to the total."""

    def random(self, n):
        return np.full(n, np.nextafter(1.0, 0.0))


def test_a_draw_at_the_top_of_the_total_still_returns_a_stored_transition():
    m = replay(capacity=8, size=5, rng=TopOfTheUnitInterval())
    idx, _, _ = m.sample(2, beta=0.5)
    np.testing.assert_array_equal(idx, [2, 4])


def test_a_priority_is_the_absolute_td_error_plus_the_offset_to_the_power_alpha():
    """alpha 0.5, offset 0.5: TD errors -8.5 and 3.5 give p = 9 and 4, stored as 3 and 2."""
    m = replay(alpha=0.5, offset=0.5, size=3)
    m.update_priorities(np.array([0, 2]), np.array([-8.5, 3.5]))
    np.testing.assert_array_equal(m.priorities[np.arange(3)], [3, 1, 2])
    assert m.priorities.total() == 6


def test_with_a_window_of_one_new_transitions_enter_at_the_last_updates_largest_priority():
    m = replay(window=1, size=4)
    m.update_priorities(np.array([0, 1]), np.array([0.9, 0.1]))
    m.update_priorities(np.array([2]), np.array([-0.2]))
    assert m.entry_priority == pytest.approx(0.2)
    add(m, [7])
    assert m.priorities[4] == pytest.approx(0.2)


def test_the_window_forgets_updates_older_than_its_length():
    """window 4: after updates whose largest are 0.9, 0.8, 0.1, 0.2, 0.3, 0.4, the last four remain."""
    m = replay(window=4, size=2)
    assert m.entry_priority == 1.0  # before any update: p = 1
    for k, largest in enumerate([0.9, 0.8, 0.1, 0.2, 0.3, 0.4]):
        m.update_priorities(np.array([0, 1]), np.array([largest, 0.05]))
        assert m.updates == k + 1
        if k == 1:
            assert m.entry_priority == 1.0  # two of the four slots still hold the initial 1
    assert m.entry_priority == pytest.approx(0.4)


def test_adding_past_the_capacity_overwrites_the_oldest():
    m = replay(capacity=4, size=3)
    add(m, [10, 11, 12])  # slots 3, 0, 1
    assert (m.size, m.next) == (4, 2)
    np.testing.assert_array_equal(m.returns, [11, 12, 2, 10])
    np.testing.assert_array_equal(m.states[:, 0], [11, 12, 2, 10])
    np.testing.assert_array_equal(m.priorities[np.arange(4)], np.ones(4))


# --- noisy layers ---
def test_a_noisy_layer_starts_with_uniform_means_and_sigma0_over_sqrt_fan_in():
    """fan-in 4: means uniform in +-0.5 (so, over 400 weights and 200 biases, some near each end), sigmas 0.3 * 0.5."""
    torch.manual_seed(0)
    layer = NoisyLinear(4, 200, sigma0=0.3)
    for mean in (layer.weight_mean, layer.bias_mean):
        assert mean.abs().max() <= 0.5 and mean.min() < -0.45 and mean.max() > 0.45
    assert torch.all(layer.weight_sigma == 0.15) and torch.all(layer.bias_sigma == 0.15)
    assert torch.all(NoisyLinear(16, 3).weight_sigma == 0.125)  # sigma0 0.5 by default, as in [4]


def test_a_noisy_layers_weights_are_the_means_plus_sigma_times_the_outer_product_of_f_eps():
    """Means 1 and 0, sigmas 0.5. eps = (4, -9 | 1): f_in = (2, -3), f_out = 1, so w = (1 + 0.5*2, 1 - 0.5*3)
    = (2, -0.5) and b = 0.5; at x = (1, 2) that gives 2 - 1 + 0.5 = 1.5, and the means 1 + 2 = 3."""
    layer = NoisyLinear(2, 1)
    with torch.no_grad():
        layer.weight_mean.fill_(1.0), layer.weight_sigma.fill_(0.5)
        layer.bias_mean.zero_(), layer.bias_sigma.fill_(0.5)
    x = torch.tensor([[1.0, 2.0]])
    assert layer(x).item() == 3.0
    layer.set_noise(torch.tensor([4.0, -9.0, 1.0]))
    assert layer(x).item() == 1.5


def test_drawing_into_a_plain_actor_gives_the_noisy_actors_output_with_that_noise():
    torch.manual_seed(0)
    noisy, plain = NoisyActor(S, A, (8, 8), 0.5), Actor(S, A, (8, 8))
    s = torch.randn(5, S)
    eps = torch.randn(noisy.noise_size)
    draw(noisy, eps, into=plain)
    noisy.set_noise(eps)
    with_noise = noisy(s)
    torch.testing.assert_close(plain(s), with_noise)
    draw(noisy, torch.zeros(noisy.noise_size), into=plain)  # zeros: the mean weights
    noisy.set_noise(None)
    torch.testing.assert_close(plain(s), noisy(s))
    assert not torch.allclose(plain(s), with_noise)


def test_ornstein_uhlenbeck_noise_has_std_scale_and_lag_one_correlation_one_minus_kappa():
    """8 components over 20000 steps: the std's standard error is about 0.4%, the correlation's about 0.0013."""
    noise = OrnsteinUhlenbeck((8,), kappa=0.15, scale=0.3, generator=torch.Generator().manual_seed(0))
    x = torch.stack([noise.sample().clone() for _ in range(20_000)]).numpy().astype(np.float64)
    assert x.std() == pytest.approx(0.3, rel=0.03)
    lag1 = np.mean([np.corrcoef(x[1:, k], x[:-1, k])[0, 1] for k in range(8)])
    assert lag1 == pytest.approx(0.85, abs=0.01)


# --- the agent's schedules ---
def agent(**changes):
    return Agent(Config(**{**dict(buffer_size=64, batch_size=4, warmup=8, hidden=(8, 8)), **changes}), S, A, ARMS)


def test_n_grows_by_one_every_n_step_ramp_episodes_up_to_n_step():
    a = agent(n_step=5, n_step_ramp=4)
    ns = []
    for episode in range(1, 23):
        a.begin_episode(episode)
        ns.append(a.nstep.n)
    assert ns == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 6


def test_the_fast_episodes_learn_every_learn_every_steps_and_later_ones_every_learn_every_later():
    a = agent(learn_every_until=2, learn_every=3, learn_every_later=7)
    intervals = []
    for episode in (1, 2, 3, 4):
        a.begin_episode(episode)
        intervals.append(a.learn_every)
    assert intervals == [3, 3, 7, 7]


def run_steps(a, steps):
    """One-step transitions of both arms; the updates so far after each step."""
    a.begin_episode(1)
    updates = []
    for t in range(steps):
        s = np.full((ARMS, S), t, np.float32)
        a.step(s, np.zeros((ARMS, A), np.float32), np.ones(ARMS, np.float32), s + 1, done=False)
        updates.append(a.updates)
    return updates


def test_the_first_update_comes_at_the_step_that_fills_the_warm_up():
    """Two arms, n = 1: 2 transitions a step, so a warm-up of 6 is filled by step 3."""
    a = agent(n_step=1, n_step_ramp=0, warmup=6)
    assert run_steps(a, 5) == [0, 0, 1, 2, 3]
    assert a.steps == 5 and a.memory.updates == 3


def test_after_the_warm_up_the_agent_learns_on_every_learn_every_th_step():
    a = agent(n_step=1, n_step_ramp=0, warmup=6, learn_every=2)
    assert run_steps(a, 7) == [0, 0, 0, 1, 1, 2, 2]
    assert a.steps == 7


def test_beta_rises_linearly_from_beta_start_to_one_and_stays_there():
    a = agent(beta_start=0.4, beta_steps=100)
    betas = []
    for steps in (0, 50, 100, 150):
        a.steps = steps
        betas.append(a.beta())
    assert betas == pytest.approx([0.4, 0.7, 1.0, 1.0])


# --- the three steps of a DDPG update ---
def ddpg(tau=0.005):
    torch.manual_seed(0)
    return DDPG(
        Config(hidden=(8, 8), tau=tau),
        Actor(S, A, (8, 8)),
        Actor(S, A, (8, 8)),
        Critic(S, A, (8, 8)),
        Critic(S, A, (8, 8)),
        S,
    )


def set_constant(critic, value):
    with torch.no_grad():
        critic.out.weight.zero_()
        critic.out.bias.fill_(value)


def test_the_critics_step_bootstraps_from_the_targets_and_weights_the_squared_errors():
    """Q' = 2, Q = 1: returns (1, 0), discounts (0.5, 0) give targets (2, 0), TD errors (1, -1); with
    weights (1, 0.5) the loss is (1 + 0.5) / 2 = 0.75."""
    d = ddpg()
    set_constant(d.critic_target, 2.0)
    set_constant(d.critic, 1.0)
    target = [p.clone() for p in d.critic_target.parameters()]
    s = torch.zeros(2, S)
    t = lambda *v: torch.tensor(v)
    td, loss, q = d.update_critic(s, torch.zeros(2, A), t(1.0, 0.0), s, t(0.5, 0.0), t(1.0, 0.5))
    torch.testing.assert_close(td, t(1.0, -1.0))
    assert (loss, q) == (0.75, 1.0)
    assert d.critic(s, torch.zeros(2, A))[0].item() != 1.0
    assert all(torch.equal(a, b) for a, b in zip(target, d.critic_target.parameters()))


def test_the_actors_step_changes_neither_the_critic_nor_its_gradients():
    d = ddpg()
    s = torch.randn(4, S)
    d.update_critic(s, torch.zeros(4, A), torch.ones(4), s, torch.zeros(4), torch.ones(4))
    critic = [p.clone() for p in d.critic.parameters()]
    grads = [p.grad.clone() for p in d.critic.parameters()]
    actor = [p.clone() for p in d.actor.parameters()]
    loss = d.update_actor(s)
    assert all(torch.equal(a, p) for a, p in zip(critic, d.critic.parameters()))
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, d.critic.parameters()))
    assert not all(torch.equal(a, p) for a, p in zip(actor, d.actor.parameters()))
    assert torch.isfinite(loss)


def test_a_soft_update_moves_each_target_a_fraction_tau_of_the_way_to_its_online_network():
    """tau 0.25, every online parameter 4 above its target: every target rises by exactly 1."""
    d = ddpg(tau=0.25)
    for online, target in ((d.actor, d.actor_target), (d.critic, d.critic_target)):
        with torch.no_grad():
            for p in online.parameters():
                p.add_(4.0)
        before = [p.clone() for p in target.parameters()]
        d.update_targets()
        for b, p in zip(before, target.parameters()):
            torch.testing.assert_close(p, b + 1.0)


def test_each_learning_step_counts_one_update_of_the_agent_and_of_the_replay():
    a = agent(n_step=1, n_step_ramp=0, warmup=8, learn_every=1000)
    run_steps(a, 4)
    assert a.updates == 0
    a.learn()
    a.learn()
    assert a.updates == 2 and a.memory.updates == 2


def test_without_a_window_new_transitions_enter_at_the_last_updates_largest_priority():
    m = PrioritizedReplay(8, 1, 1, 1.0, 0.0, np.random.default_rng(0))
    m.update_priorities(np.array([0]), np.array([0.9]))
    m.update_priorities(np.array([1]), np.array([0.2]))
    assert m.entry_priority == pytest.approx(0.2)  # a window of 2 would give 0.9


def test_the_sum_tree_holds_two_nodes_per_leaf_and_no_more():
    tree = SumTree(5, walk_step)
    assert tree.tree.size == 2 * tree.leaves == 16  # a million transitions: memory counts


# --- the states' normaliser ---
def test_the_normalisers_running_statistics_are_those_of_all_states_seen():
    torch.manual_seed(0)
    norm, seen = Normalizer(5).to(torch.float64), []
    for b in range(50):  # batches of unequal sizes whose means drift from 0 to 4.9
        seen.append(b / 10 + 2 * torch.randn(1 + b % 7, 5, dtype=torch.float64))
        norm.update(seen[-1])
    seen = torch.cat(seen)
    torch.testing.assert_close(norm.mean, seen.mean(0), atol=1e-5, rtol=0)
    torch.testing.assert_close(norm.var, seen.var(0, unbiased=False), rtol=1e-4, atol=0)
    assert norm.count.item() == pytest.approx(len(seen) + 1e-4)


def test_the_normaliser_standardises_then_clips_at_clip():
    norm = Normalizer(2, clip=3.0)
    norm.update(torch.tensor([[1.0, 10.0], [3.0, 30.0]]))  # mean (2, 20), variance (1, 100), nearly
    x = torch.tensor([[2.0, 20.0], [3.0, 10.0], [100.0, -1000.0]])
    torch.testing.assert_close(norm(x), torch.tensor([[0.0, 0.0], [1.0, -1.0], [3.0, -3.0]]), atol=1e-3, rtol=0)


def test_the_normalisers_statistics_are_saved_with_its_weights():
    norm, copy = Normalizer(3), Normalizer(3)
    norm.update(torch.arange(12.0).reshape(4, 3))
    copy.load_state_dict(norm.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(copy.buffers(), norm.buffers()))
