"""The one episode loop of the project: a policy plays the Reacher from a reset."""

import numpy as np

from .environment import BRAIN_NAME


def play(env, policy, episodes: int = 1, steps: int | None = None, on_step=None) -> np.ndarray:
    """Each episode's per-agent undiscounted score (episodes, agents): whole episodes, or at most `steps` steps of
    each. `policy(info) -> actions` gets the BrainInfo; `on_step(t, info)` is called after the reset (t = 0) and
    each step."""
    scores, on_step = [], (lambda t, info: None) if on_step is None else on_step
    for _ in range(episodes):
        info = env.reset(train_mode=True)[BRAIN_NAME]
        score, t = np.zeros(len(info.agents)), 0
        on_step(0, info)
        while steps is None or t < steps:
            info = env.step(policy(info))[BRAIN_NAME]
            score += info.rewards
            t += 1
            on_step(t, info)
            if np.any(info.local_done):
                break
        scores.append(score)
    return np.array(scores)
