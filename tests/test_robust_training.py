"""A trained run is never destroyed: a failed checkpoint write, a full disk, a run of no episodes, a
resume into another environment, float64 observations or a smoke run leave the files as they were
or whole, and nothing behind."""

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from continuous_control import checkpoints, results
from continuous_control.agent import Agent, Config, train
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(32, 32))
NO_SPACE = OSError(28, "No space left on device")


def run(run_dir, episodes=1, arms=20, resume=False):
    return train(
        Config(**SMALL),
        ReacherEnvironment(num_agents=arms, seed=0, verbose=False),
        str(run_dir),
        episodes,
        resume=resume,
        live=False,
        checkpoint_every=1,
    )


def files(folder) -> dict:
    """Every file under `folder`, relative path: bytes."""
    return {
        os.path.relpath(os.path.join(d, f), folder): Path(d, f).read_bytes()
        for d, _, names in os.walk(folder)
        for f in names
    }


def test_a_run_whose_checkpoints_cannot_be_written_still_writes_its_results(tmp_path, monkeypatch, capsys):
    real = checkpoints.atomic_file

    @contextlib.contextmanager
    def disk_full(path, mode="w"):
        with real(path, mode) as f:
            f.write(b"part of a checkpoint")
            raise NO_SPACE
        yield f

    monkeypatch.setattr(checkpoints, "atomic_file", disk_full)
    history = run(tmp_path, 2)
    err = capsys.readouterr().err
    assert str(tmp_path / "resume" / checkpoints.FILE) in err and f"[Errno {NO_SPACE.errno}]" in err
    assert len(history["mean"]) == 2
    scores = np.genfromtxt(tmp_path / "scores.csv", delimiter=",", names=True)
    assert list(scores["episode"]) == [1, 2] and (tmp_path / "summary.json").exists()
    assert not [name for name in files(tmp_path) if name.endswith(".tmp")]


@pytest.mark.parametrize("episodes", [0, -1])
def test_a_run_of_no_episodes_is_refused_before_anything_is_written(tmp_path, episodes):
    (tmp_path / "actor.pt").write_bytes(b"trained weights")
    (tmp_path / "scores.csv").write_text("episode,mean\n1,30.0\n")
    before = files(tmp_path)
    with pytest.raises(ValueError, match=f"max_episodes.*{episodes}"):
        run(tmp_path, episodes)
    assert files(tmp_path) == before


def test_a_checkpoint_is_not_resumed_into_an_environment_of_another_shape(tmp_path):
    run(tmp_path, 1, arms=20)
    before = files(tmp_path / "resume")
    with pytest.raises(checkpoints.CheckpointError) as refused:
        run(tmp_path, 2, arms=5, resume=True)
    assert "20 arms" in str(refused.value) and "5 arms" in str(refused.value)
    assert files(tmp_path / "resume") == before


def test_the_exported_policy_takes_the_environments_float64_observations(tmp_path):
    agent = Agent(Config(**SMALL), 33, 4, 20)
    (tmp_path / "actor.pt2").write_bytes(results.exported_policy(agent, 33))
    policy = torch.export.load(str(tmp_path / "actor.pt2")).module()
    observations = ReacherEnvironment(seed=3, verbose=False).reset()["ReacherBrain"].vector_observations
    assert observations.dtype == np.float64
    actions = policy(torch.as_tensor(observations))
    assert actions.dtype == torch.float32 and actions.shape == (20, 4)
    torch.testing.assert_close(actions, policy(torch.as_tensor(observations, dtype=torch.float32)), rtol=0, atol=0)


@pytest.mark.parametrize("smoke", ["1", "0"])
def test_a_smoke_run_leaves_nothing_behind(tmp_path, smoke):
    script = textwrap.dedent("""
        import os
        from continuous_control.config import run_setup
        smoke, resume, run_dir = run_setup()
        print(smoke, resume, run_dir)
        if smoke:
            open(os.path.join(run_dir, "scores.csv"), "w").write("episode\\n")
    """)
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "SMOKE": smoke, "RESUME": "yes", "TMPDIR": str(tmp_path)},
    ).stdout.split()
    assert out[:2] == [str(smoke == "1"), "True"]
    if smoke == "1":
        assert out[2].startswith(str(tmp_path)) and os.listdir(tmp_path) == []
    else:
        assert out[2] == "checkpoints"
