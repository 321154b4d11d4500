import pytest
import torch

# Small networks: one thread is as fast, and two threads on a busy 2-core machine spin against each other.
torch.set_num_threads(1)

from grader.judge import Judge
from reacher import ReacherEnvironment


@pytest.fixture(scope="session")
def judge():
    """The judge (grader.judge.Judge), with its reference's and its contestant's sandboxes, started once:
    each blank, or program, runs in a fork of the contestant. Many hand-ins' worth of calls: no budget."""
    referee = Judge(budget=float("inf"))
    yield referee
    referee.close()


@pytest.fixture
def env():
    with ReacherEnvironment(seed=0, verbose=False) as environment:
        yield environment
