"""Bad input gets an error that names the problem, and the environment stays usable."""

import os
import re

import numpy as np
import pytest

from reacher import (
    BRAIN_NAME,
    ReacherEnvironment,
    UnityActionException,
    UnityEnvironmentException,
    find_unity_build,
    open_environment,
)


@pytest.mark.parametrize(
    "actions, message",
    [
        (np.zeros((20, 3)), r"\(20, 4\).*\(20, 3\)"),
        (np.zeros((10, 4)), r"\(20, 4\).*\(10, 4\)"),
        (np.zeros(81), r"shape \(81,\)"),
        (np.zeros((20, 2, 2)), r"shape \(20, 2, 2\)"),
        (np.full((20, 4), np.nan), r"NaN or inf"),
        (np.where(np.eye(20, 4) > 0, np.inf, 0.0), r"NaN or inf \(agents \[0, 1, 2, 3\]\)"),
        ([["a"] * 4] * 20, r"must be real numbers.*str"),
        ([["0.5"] * 4] * 20, r"must be real numbers.*str"),
        (np.zeros((20, 4)) + 0.5j, r"must be real numbers.*complex128"),
        (np.zeros((20, 4), bool), r"must be real numbers.*bool"),
        ([[0.0] * 4] * 19 + [[0.0] * 3], r"must be real numbers.*mixed or ragged"),
        ({"OtherBrain": np.zeros((20, 4))}, r"OtherBrain does not correspond"),
    ],
)
def test_bad_actions_are_refused_and_env_still_works(env, actions, message):
    before = env.reset()[BRAIN_NAME].vector_observations
    with pytest.raises(UnityActionException, match=message):
        env.step(actions)
    np.testing.assert_array_equal(env.physics.observe(), before)  # nothing moved
    info = env.step(np.zeros((20, 4)))[BRAIN_NAME]
    assert info.vector_observations.shape == (20, 33)


def test_flat_and_dict_actions_are_accepted(env):
    env.reset()
    env.step(np.zeros(80))
    env.step({BRAIN_NAME: np.zeros((20, 4)).tolist()})
    env.step(np.full((20, 4), 5.0))  # out of range is clamped, as in Unity


@pytest.mark.parametrize(
    "config, message",
    [
        ({"goal_sped": 1.0}, r"'goal_sped'.*\['goal_size', 'goal_speed'\]"),
        ({"goal_speed": "fast"}, r"'goal_speed'.*'fast'"),
        ({"goal_size": float("nan")}, r"'goal_size'.*\bnan\b"),
        ({"goal_size": -1}, r"goal_size\b.*\[0, 100\].*-1\b"),
        ({"goal_size": 1e6}, r"goal_size\b.*\[0, 100\].*\b1000000\.0\b"),
        ({"goal_speed": 3e38}, r"goal_speed\b.*\[-360, 360\]"),
    ],
)
def test_bad_reset_parameters_are_refused(env, config, message):
    env.reset()
    with pytest.raises(UnityEnvironmentException, match=message):
        env.reset(config=config)
    assert env.reset_parameters == {"goal_speed": 1.0, "goal_size": 5.0}
    env.step(np.zeros((20, 4)))


def test_step_before_reset_and_calls_after_close(env):
    with pytest.raises(UnityEnvironmentException, match="without first calling reset"):
        env.step(np.zeros((20, 4)))
    env.reset()
    env.close()
    for call in (env.reset, lambda: env.step(np.zeros((20, 4)))):
        with pytest.raises(UnityEnvironmentException, match="closed"):
            call()


def test_missing_unity_build(tmp_path):
    with pytest.raises(UnityEnvironmentException, match=re.escape(str(tmp_path / "Reacher_Linux" / "Reacher.x86_64"))):
        open_environment(str(tmp_path / "Reacher_Linux" / "Reacher.x86_64"))


def test_non_executable_unity_build(tmp_path):
    build = tmp_path / "Reacher.x86_64"
    build.write_text("not a program")
    with pytest.raises(UnityEnvironmentException, match=re.escape(f"chmod +x {build}")):
        find_unity_build(str(build))
    os.chmod(build, 0o755)
    assert find_unity_build(str(tmp_path / "Reacher")) == str(build)


@pytest.mark.parametrize("n", [2.7, "3", True, 0, -1])
def test_a_number_of_arms_that_is_not_a_whole_positive_number_is_refused(n):
    with pytest.raises(ValueError, match=rf"num_agents\b.*{re.escape(repr(n))}"):
        ReacherEnvironment(num_agents=n, verbose=False)


def test_a_unity_build_that_is_a_folder_is_named_as_one(tmp_path):
    folder = tmp_path / "Reacher_Linux"
    folder.mkdir()
    (folder / "Reacher.x86_64").write_text("")
    with pytest.raises(UnityEnvironmentException, match=re.escape(str(folder / "Reacher.x86_64"))):  # the file to give
        find_unity_build(str(folder))
    (tmp_path / "Odd.x86_64").mkdir()
    with pytest.raises(UnityEnvironmentException, match="is a folder"):
        find_unity_build(str(tmp_path / "Odd"))
