"""experiments/overestimation.py without playing: the discounted return, the truncation rule, the table."""
import json

import numpy as np
import pytest

from experiments.overestimation import discounted_returns, overestimation_table, steps_left_needed, usable_steps


def test_discounted_returns_match_the_direct_sum():
    rewards = np.array([[0.04, 0.0], [0.0, 0.01], [0.02, 0.04], [0.04, 0.0], [0.01, 0.03]])
    gamma = 0.9
    returns = discounted_returns(rewards, gamma)
    for t in range(len(rewards)):
        direct = sum(gamma ** k * rewards[t + k] for k in range(len(rewards) - t))
        np.testing.assert_allclose(returns[t], direct, rtol=1e-12)
    assert returns[-1].tolist() == rewards[-1].tolist()          # the last step sees only its own reward


def test_a_constant_reward_approaches_the_ceiling_within_the_bound():
    gamma, r_max, steps = 0.99, 0.04, 1001
    returns = discounted_returns(np.full((steps, 1), r_max), gamma)[:, 0]
    ceiling, left = r_max / (1 - gamma), steps - np.arange(steps)
    np.testing.assert_allclose(ceiling - returns, gamma ** left * ceiling, rtol=1e-9)   # the tail, exactly the bound


@pytest.mark.parametrize("gamma, tolerance", [(0.99, 0.01), (0.95, 0.01), (0.99, 0.05), (0.5, 0.25)])
def test_the_truncation_rule_keeps_the_tail_under_the_tolerance(gamma, tolerance):
    left = steps_left_needed(gamma, tolerance)
    assert gamma ** left <= tolerance < gamma ** (left - 1)        # the fewest steps that suffice
    assert usable_steps(left - 1, gamma, tolerance) == 0
    assert usable_steps(left, gamma, tolerance) == 1               # t = 0 alone has `left` steps left
    assert usable_steps(1001, gamma, tolerance) == 1001 - left + 1


def test_gamma_099_needs_459_steps_left_of_1001():
    assert steps_left_needed(0.99) == 459
    assert usable_steps(1001, 0.99) == 543


def test_the_table_shows_the_saved_numbers(tmp_path):
    single = {"run": "checkpoints", "seed": 0, "q": 3.4567, "q_min": None, "mc_return": 3.1234,
              "mc_return_upper": 3.1299, "difference": 0.3333, "ceiling": 4.0,
              "by_arm": {"q": [3.4, 3.5, 3.456], "mc_return": [2.9, 3.3, 3.1]}}
    twin = {**single, "run": "seed3", "seed": 3, "q": 2.5, "q_min": 2.25, "difference": -0.6234}
    for result in (single, twin):
        (tmp_path / f"{result['run']}.json").write_text(json.dumps(result))
    lines = overestimation_table(str(tmp_path)).splitlines()
    assert len(lines) == 4
    assert lines[2] == "| checkpoints | 0 | 3.457 | – | 3.123 (3.130) | +0.333 | 4.00 | 3.40 to 3.50 | 2.90 to 3.30 |"
    assert lines[3] == "| seed3 | 3 | 2.500 | 2.250 | 3.123 (3.130) | -0.623 | 4.00 | 3.40 to 3.50 | 2.90 to 3.30 |"
