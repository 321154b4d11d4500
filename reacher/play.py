"""The one episode loop of the project: a policy plays the Reacher from a reset.

    scores = play(env, policy, episodes=5)                  # (episodes, agents) undiscounted scores
    scores = play(env, policy, steps=300, on_step=draw)     # the first 300 steps of one episode

`policy(info) -> actions` gets the environment's BrainInfo; `on_step(t, info)` is called after the
reset (t = 0) and after every step t = 1, 2, ... (to draw a frame, or to count).
"""
import numpy as np

from .environment import BRAIN_NAME


def play(env, policy, episodes: int = 1, steps: int | None = None, on_step=None) -> np.ndarray:
    """Each episode's per-agent score: whole episodes, or at most `steps` steps of each."""
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
