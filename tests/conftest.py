import numpy as np
import pytest
import torch

# Small networks: one thread is as fast, and two threads on a busy 2-core machine spin against each other.
torch.set_num_threads(1)

from reacher import BRAIN_NAME, ReacherEnvironment


@pytest.fixture
def env():
    with ReacherEnvironment(seed=0, verbose=False) as environment:
        yield environment


def run_episode(env, policy):
    """Play one episode from reset until done; return per-agent scores and the step count."""
    info = env.reset()[BRAIN_NAME]
    scores, steps = np.zeros(len(info.agents)), 0
    while True:
        info = env.step(policy(info))[BRAIN_NAME]
        scores += info.rewards
        steps += 1
        if np.any(info.local_done):
            return scores, steps
