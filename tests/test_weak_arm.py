"""experiments/weak_arm.py: its mirror (an involution that turns a goal orbiting backwards into one orbiting
forwards), that the mirror is a symmetry of the Reacher's dynamics and rewards (so a mirrored policy
plays a legitimate policy), that a mirrored policy sees one direction only, and its table."""

import numpy as np
import torch

from experiments.ablations import GOAL_SPEED, MIRROR_ACT, MIRROR_OBS, mirrored
from experiments.weak_arm import mirror_policy
from reacher import ReacherEnvironment


def states(rows=6, seed=0):
    s = np.random.default_rng(seed).standard_normal((rows, 33)).astype(np.float32)
    s[:, GOAL_SPEED] = np.where(np.arange(rows) % 2, -1, 1) * (0.1 + np.abs(s[:, GOAL_SPEED]))
    return s


def test_mirroring_twice_is_the_identity_and_turns_negative_goal_speeds_positive():
    s = states()
    flip = s[:, GOAL_SPEED] < 0
    once = mirrored(s, flip, MIRROR_OBS)
    assert np.all(once[:, GOAL_SPEED] > 0)
    np.testing.assert_array_equal(once[~flip], s[~flip])
    np.testing.assert_array_equal(mirrored(once, flip, MIRROR_OBS), s)
    t, flip = torch.as_tensor(s), torch.as_tensor(flip)
    torch.testing.assert_close(mirrored(mirrored(t, flip, MIRROR_OBS), flip, MIRROR_OBS), t)


def test_the_mirror_maps_the_reachers_dynamics_and_rewards_onto_themselves():
    """Arm 1 starts as arm 0's mirror image (goal at 360 - angle, opposite speed) and gets arm 0's actions
    mirrored: it stays arm 0's mirror image and earns arm 0's rewards."""
    env = ReacherEnvironment(num_agents=2, seed=0, verbose=False)
    env.reset(config={"goal_size": 16.0})  # large goals: random actions reach them at times
    env.physics.set_goal(np.array([70.0, 290.0]), np.array([0.8, -0.8], np.float32))
    rng, rewarded = np.random.default_rng(2), 0.0
    for _ in range(60):
        a = rng.uniform(-1, 1, 4).astype(np.float32)
        info = env.step(np.stack([a, a * MIRROR_ACT]))["ReacherBrain"]
        obs = info.vector_observations
        np.testing.assert_allclose(obs[0] * MIRROR_OBS, obs[1], atol=1e-4)
        assert info.rewards[0] == info.rewards[1]
        rewarded += info.rewards[0]
    assert rewarded > 0


def test_a_mirrored_policy_sees_one_direction_and_mirrors_its_actions_back():
    seen = []

    def policy(s):  # any function of the state, not mirror-symmetric
        seen.append(s.clone())
        return torch.tanh(s[:, :4] + s[:, GOAL_SPEED:] * torch.arange(1.0, 5.0))

    s = states()
    np.testing.assert_allclose(mirror_policy(policy, 0)(s), policy(torch.as_tensor(s)).numpy())
    for into in (1, -1):
        actions = mirror_policy(policy, into)(s)
        assert torch.all(seen[-1][:, GOAL_SPEED] * into > 0)
        flip = s[:, GOAL_SPEED] * into < 0
        expected = mirrored(policy(torch.as_tensor(mirrored(s, flip, MIRROR_OBS))).numpy(), flip, MIRROR_ACT)
        np.testing.assert_allclose(actions, expected)
        np.testing.assert_allclose(actions[~flip], policy(torch.as_tensor(s[~flip])).numpy())
