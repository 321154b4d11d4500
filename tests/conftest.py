import pytest
import torch

# Small networks: one thread is as fast, and two threads on a busy 2-core machine spin against each other.
torch.set_num_threads(1)

from reacher import ReacherEnvironment


@pytest.fixture
def env():
    with ReacherEnvironment(seed=0, verbose=False) as environment:
        yield environment
