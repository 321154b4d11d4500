"""The calibration suite at a fast size (benchmarks/calibration.py, doc/calibration.md): the
replica against numbers measured on the Unity build. The joint model was chosen on these numbers
(doc/environment.md), so they check that the chosen replica still meets them, not its fidelity."""

import os

import numpy as np
import pytest

from benchmarks import calibration

ACTORS = tuple(calibration.ACTORS)
have_actors = all(os.path.exists(os.path.join(calibration.CALIBRATION_DIR, f"{a}.npz")) for a in ACTORS)


@pytest.fixture(scope="module")
def measured():
    return calibration.measure(None, episodes=2, actors=ACTORS if have_actors else ())


def test_random_play_scores_as_on_unity(measured):
    """Unity: 0.10 to 0.15 per episode over 20 arms, about half the arms at 0."""
    for policy in ("random_normal", "random_uniform"):
        assert 0.03 <= measured[policy]["mean"] <= 0.30, measured[policy]
    assert measured["random_normal"]["arms_at_zero"] >= 0.3


def test_scripted_controller_reaches_trained_agents_scores(measured):
    """Trained agents reach 37 to 39.5 on Unity."""
    assert measured["scripted"]["mean"] >= 37.0, measured["scripted"]


@pytest.mark.skipif(
    not have_actors,
    reason=f"calibration actors not found in {calibration.CALIBRATION_DIR} "
    "(set CALIBRATION_DIR; the weights are not part of this project)",
)
def test_unity_trained_actors_transfer(measured):
    """Actors that scored 35 to 39 on Unity, run noise-free: mean over the four >= 34, each >= 25."""
    means = {a: measured[a]["mean"] for a in ACTORS}
    assert np.mean(list(means.values())) >= 34.0, means
    assert min(means.values()) >= 25.0, means


def test_actor_loader_names_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="CALIBRATION_DIR"):
        calibration.load_actor("1jsingh", str(tmp_path))


@pytest.mark.parametrize("craft", ["pickle", "symlink", "not an actor", "nan", "fifo", "duplicate"])
def test_a_crafted_actor_file_is_refused_naming_it(tmp_path, craft):
    """The calibration actors come from outside the project: each is read as data and checked, or refused.
    A small actor of this file format (33 -> 8 -> 4), loaded first, then each crafted copy of it."""
    import warnings
    import zipfile

    from continuous_control.files import FileRefused

    rng = np.random.default_rng(0)
    arrays = {
        "layers": np.array(["linear:0", "relu", "linear:1", "tanh"]),
        "0.weight": rng.standard_normal((8, 33)).astype(np.float32),
        "0.bias": np.zeros(8, np.float32),
        "1.weight": rng.standard_normal((4, 8)).astype(np.float32),
        "1.bias": np.zeros(4, np.float32),
    }
    (tmp_path / "good").mkdir()
    np.savez(tmp_path / "good" / "actor.npz", **arrays)
    assert calibration.load_actor("actor", str(tmp_path / "good"))(np.zeros((2, 33))).shape == (2, 4)
    path = tmp_path / "actor.npz"
    if craft == "pickle":
        np.savez(path, **{**arrays, "layers": np.array([{"run": "code"}], dtype=object)})
    elif craft == "symlink":
        path.symlink_to(tmp_path / "good" / "actor.npz")
    elif craft == "not an actor":
        np.savez(path, **{**arrays, "layers": np.array(["linear:nothing"])})
    elif craft == "nan":
        np.savez(path, **{**arrays, "0.weight": np.full((8, 33), np.nan, np.float32)})
    elif craft == "fifo":
        os.mkfifo(path)
    else:
        np.savez(path, **arrays)
        with zipfile.ZipFile(path, "a") as archive, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate it is asked to write
            archive.writestr("layers.npy", b"")
    with pytest.raises(FileRefused, match=str(path)):
        calibration.load_actor("actor", str(tmp_path))
