import pytest
import torch

# Small networks: one thread is as fast, and two threads on a busy 2-core machine spin against each other.
torch.set_num_threads(1)

import grader
from reacher import ReacherEnvironment


@pytest.fixture(scope="session")
def checks():
    """The check server (grader.Grader), started once: each program runs in a fork of it."""
    server = grader.Grader()
    yield server
    server.close()


@pytest.fixture
def env():
    with ReacherEnvironment(seed=0, verbose=False) as environment:
        yield environment
