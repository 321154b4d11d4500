"""experiments/overestimation.py without playing: the discounted return, the truncation rule, the table."""

import numpy as np
import pytest

from experiments.overestimation import discounted_returns, steps_left_needed, usable_steps


def test_discounted_returns_match_the_direct_sum():
    rewards = np.array([[0.04, 0.0], [0.0, 0.01], [0.02, 0.04], [0.04, 0.0], [0.01, 0.03]])
    gamma = 0.9
    returns = discounted_returns(rewards, gamma)
    for t in range(len(rewards)):
        direct = sum(gamma**k * rewards[t + k] for k in range(len(rewards) - t))
        np.testing.assert_allclose(returns[t], direct, rtol=1e-12)
    assert returns[-1].tolist() == rewards[-1].tolist()  # the last step sees only its own reward


def test_a_constant_reward_approaches_the_ceiling_within_the_bound():
    gamma, r_max, steps = 0.99, 0.04, 1001
    returns = discounted_returns(np.full((steps, 1), r_max), gamma)[:, 0]
    ceiling, left = r_max / (1 - gamma), steps - np.arange(steps)
    np.testing.assert_allclose(ceiling - returns, gamma**left * ceiling, rtol=1e-9)  # the tail, exactly the bound


@pytest.mark.parametrize("gamma, tolerance", [(0.99, 0.01), (0.95, 0.01), (0.99, 0.05), (0.5, 0.25)])
def test_the_truncation_rule_keeps_the_tail_under_the_tolerance(gamma, tolerance):
    left = steps_left_needed(gamma, tolerance)
    assert gamma**left <= tolerance < gamma ** (left - 1)  # the fewest steps that suffice
    assert usable_steps(left - 1, gamma, tolerance) == 0
    assert usable_steps(left, gamma, tolerance) == 1  # t = 0 alone has `left` steps left
    assert usable_steps(1001, gamma, tolerance) == 1001 - left + 1


def test_gamma_099_needs_459_steps_left_of_1001():
    assert steps_left_needed(0.99) == 459
    assert usable_steps(1001, 0.99) == 543
