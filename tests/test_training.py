"""Training saves checkpoints as it goes and resumes after an interruption (the notebook's code)."""
import numpy as np
import pytest

from experiments.notebook import load_definitions
from reacher import ReacherEnvironment


class InterruptAt:
    """The built-in Reacher, interrupted (as by Ctrl-C) at a given step."""

    def __init__(self, env, step):
        self.env, self.left = env, step

    def step(self, actions):
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return self.env.step(actions)

    def __getattr__(self, name):
        return getattr(self.env, name)


@pytest.fixture(scope="module")
def ns():
    return load_definitions()


def small(ns, **kw):
    return ns["Config"](max_episodes=2, buffer_size=5_000, batch_size=32, warmup=500, hidden=(32, 32),
                        checkpoint_every=1, **kw)


def test_interrupted_run_resumes_where_its_checkpoint_left(ns, tmp_path, capsys):
    reference = ns["train"](small(ns), ReacherEnvironment(seed=0, verbose=False), str(tmp_path / "ref"), live=False)
    run_dir = str(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):        # halfway through episode 2
        ns["train"](small(ns), InterruptAt(ReacherEnvironment(seed=0, verbose=False), 1500), run_dir, live=False)
    capsys.readouterr()
    resumed = ns["train"](small(ns), ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "Resuming after episode 1" in capsys.readouterr().out
    assert len(resumed["mean"]) == 2
    assert resumed["mean"][0] == reference["mean"][0]        # episode 1 was kept, not replayed
    assert np.isfinite(resumed["mean"][1])


def test_finished_run_is_not_trained_again_and_can_be_extended(ns, tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    cfg = small(ns)
    cfg.max_episodes = 1
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    capsys.readouterr()
    again = ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "Finished after episode 1" in capsys.readouterr().out and len(again["mean"]) == 1
    cfg.max_episodes = 2
    longer = ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "Resuming after episode 1" in capsys.readouterr().out and len(longer["mean"]) == 2


def test_other_configuration_starts_afresh(ns, tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    cfg = small(ns)
    cfg.max_episodes = 1
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    other = small(ns, n_step=3)
    other.max_episodes = 1
    ns["train"](other, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "another configuration: starting afresh" in capsys.readouterr().out
