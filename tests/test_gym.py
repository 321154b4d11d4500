"""The Gymnasium interface (reacher/gym.py) and its SB3 adapter (reacher/sb3.py), at small size:
the checkers, the time limit at step 1001, autoreset, seeding, the spaces, rendering."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import reacher.gym as rg
from reacher import BRAIN_NAME, ReacherEnvironment
from reacher.physics import MAX_STEPS


def bang_bang(rng, shape):
    """Full torques with random signs: the hardest actions for the bounds."""
    return rng.choice([-1.0, 1.0], size=shape).astype(np.float32)


# --- registration and spaces -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*maximum and minimum values are equal")  # the hand's constant position
def test_ids_make_the_two_environments():
    one = gym.make(rg.ONE_ARM_ID)
    arms = gym.make_vec(rg.ARMS_ID)
    assert isinstance(one.unwrapped, rg.ReacherEnv)
    assert isinstance(arms.unwrapped, rg.ReacherVectorEnv) and arms.num_envs == 20
    assert arms.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP


def test_spaces_have_the_replicas_bounds():
    env = rg.ReacherVectorEnv()
    single = env.single_observation_space
    assert single.shape == (33,) and single.dtype == np.float32
    assert env.observation_space.shape == (20, 33) and env.action_space.shape == (20, 4)
    assert np.all(env.single_action_space.low == -1) and np.all(env.single_action_space.high == 1)
    # A's and B's centres within their reach of the shoulder, the goal on its circle, the hand constant
    assert single.high[0] == pytest.approx(4.02, abs=2e-3) and single.high[13] == pytest.approx(10.02, abs=2e-3)
    assert single.high[26] == pytest.approx(8, abs=2e-3) and single.low[27] == pytest.approx(-1, abs=2e-3)
    np.testing.assert_allclose(single.low[29:32], [0, 1, 0], atol=2e-3)  # within float rounding, not equal bounds
    np.testing.assert_allclose(single.high[29:32], [0, 1, 0], atol=2e-3)
    assert np.all(single.low[29:32] < single.high[29:32])
    assert np.isinf(single.high[7:13]).all(), "velocities have no bound the physics guarantees"


@pytest.mark.parametrize("actions", ["random", "bang_bang"])
def test_observations_stay_inside_the_space(actions):
    env, rng = rg.ReacherVectorEnv(), np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    seen = [obs]
    for _ in range(400):
        a = rng.uniform(-1, 1, (20, 4)) if actions == "random" else bang_bang(rng, (20, 4))
        seen.append(env.step(a)[0])
    seen = np.concatenate(seen)
    space = env.single_observation_space
    assert np.all(seen >= space.low) and np.all(seen <= space.high)
    # the bounds are the links' reach: A's centre stays on its sphere about the shoulder pivot, B's
    # inside its own (7.02 to the elbow, 3 beyond), and the bent elbow does bring it closer
    shoulder = np.array([0, rg.SHOULDER_Y, 0])
    np.testing.assert_allclose(np.linalg.norm(seen[:, 0:3] - shoulder, axis=1), rg.REACH_A, atol=1e-4)
    reach_b = np.linalg.norm(seen[:, 13:16] - shoulder, axis=1)
    assert reach_b.max() <= rg.REACH_B + 1e-4 and reach_b.min() < rg.REACH_B - 1


# --- the time limit and autoreset --------------------------------------------------------------


def test_step_1001_truncates_every_arm_and_resets_in_the_same_step():
    env, rng = rg.ReacherVectorEnv(), np.random.default_rng(1)
    env.reset(seed=2)
    for t in range(1, MAX_STEPS):
        obs, rewards, terminated, truncated, info = env.step(rng.uniform(-1, 1, (20, 4)))
        assert not terminated.any() and not truncated.any() and info == {}, f"step {t}"
    last = env.physics.observe()
    obs, rewards, terminated, truncated, info = env.step(rng.uniform(-1, 1, (20, 4)))
    assert truncated.all() and not terminated.any()
    assert info["_final_obs"].all() and info["final_obs"].shape == (20,)
    final = np.stack(info["final_obs"])
    assert final.shape == (20, 33) and not np.array_equal(final, last), "the last state follows from the last action"
    # the returned observation is already the next episode's start: both links hang straight down
    np.testing.assert_array_equal(obs[:, 0:3], np.tile([0, -4, 0], (20, 1)))
    np.testing.assert_array_equal(obs[:, 13:16], np.tile([0, -10, 0], (20, 1)))
    assert not np.array_equal(final[:, 0:3], obs[:, 0:3])
    _, _, _, truncated, _ = env.step(np.zeros((20, 4)))
    assert not truncated.any(), "the new episode runs on without a reset"


def test_the_vector_env_plays_exactly_as_the_unityagents_environment():
    """Same seed, same actions: the same rewards and start states, episode end included."""
    env, unity, rng = (
        rg.ReacherVectorEnv(episode_steps=MAX_STEPS),
        ReacherEnvironment(seed=5, verbose=False),
        np.random.default_rng(2),
    )
    obs, _ = env.reset(seed=5)
    info = unity.reset(train_mode=True)[BRAIN_NAME]
    np.testing.assert_array_equal(obs, info.vector_observations)
    for _ in range(MAX_STEPS + 3):
        a = rng.uniform(-1, 1, (20, 4))
        obs, rewards, _, truncated, _ = env.step(a)
        info = unity.step(a)[BRAIN_NAME]
        np.testing.assert_array_equal(rewards, info.rewards)
        np.testing.assert_array_equal(obs, info.vector_observations)
        assert truncated.all() == all(info.local_done)


def test_one_arm_truncates_at_1001_and_wants_a_reset():
    env = rg.ReacherEnv()
    env.reset(seed=0)
    zero = np.zeros(4, np.float32)
    for t in range(1, MAX_STEPS):
        _, reward, terminated, truncated, _ = env.step(zero)
        assert not terminated and not truncated, f"step {t}"
        assert isinstance(reward, float)
    _, _, terminated, truncated, _ = env.step(zero)
    assert truncated and not terminated
    with pytest.raises(RuntimeError, match="reset"):
        env.step(zero)


# --- seeding -----------------------------------------------------------------------------------


def play(env, seed, steps=50):
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(steps):
        out.append(env.step(rng.uniform(-1, 1, env.action_space.shape))[0])
    return np.array(out)


@pytest.mark.parametrize("make", [rg.ReacherEnv, rg.ReacherVectorEnv])
def test_reset_with_a_seed_is_reproducible(make):
    a, b = play(make(), 7), play(make(), 7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[0, ..., 26:29], play(make(), 8)[0, ..., 26:29]), "another seed, other goals"


def test_the_seed_gives_the_goals_of_the_same_seed_in_reacher_environment():
    obs, _ = rg.ReacherVectorEnv().reset(seed=11)
    np.testing.assert_array_equal(
        obs, ReacherEnvironment(seed=11, verbose=False).reset()[BRAIN_NAME].vector_observations
    )


# --- bad input ---------------------------------------------------------------------------------


def test_bad_input_is_refused_with_a_reason():
    env = rg.ReacherVectorEnv()
    with pytest.raises(ValueError, match="one seed"):
        env.reset(seed=[1, 2])
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(20, 4\)"):
        env.step(np.zeros((19, 4)))
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.full((20, 4), np.nan))
    with pytest.raises(ValueError, match="episode_steps"):
        rg.ReacherEnv(episode_steps=0)
    with pytest.raises(ValueError, match="render_mode"):
        rg.ReacherEnv(render_mode="human")
    with pytest.raises(ValueError, match="num_envs"):
        rg.ReacherVectorEnv(num_envs=0)
    with pytest.raises(RuntimeError, match="reset"):
        rg.ReacherVectorEnv().step(np.zeros((20, 4)))


# --- the checkers ------------------------------------------------------------------------------

# What gymnasium's checker says of the replica's spaces, each for a reason: velocities have no
# bound the physics guarantees, and the hand's local position in B is the constant (0, 1, 0).
EXPECTED_WARNINGS = ("minimum value is -infinity", "maximum value is infinity", "maximum and minimum values are equal")


def test_gymnasium_check_env_accepts_one_arm():
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(rg.ONE_ARM_ID, render_mode="rgb_array").unwrapped, skip_render_check=not _has_gl())
    said = [str(w.message) for w in caught]
    assert all(any(e in s for e in EXPECTED_WARNINGS) for s in said), said


def test_sb3_check_env_accepts_one_arm_without_a_warning():
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(rg.ReacherEnv(), warn=True)
    assert [str(w.message) for w in caught] == []


def test_one_arm_runs_in_sb3s_dummy_vec_env():
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: rg.ReacherEnv(episode_steps=3)])
    venv.seed(0)
    venv.reset()
    for _ in range(2):
        assert not venv.step(np.zeros((1, 4)))[2].any()
    _, _, dones, infos = venv.step(np.zeros((1, 4)))
    assert dones[0] and infos[0]["TimeLimit.truncated"] and infos[0]["terminal_observation"].shape == (33,)


def test_sb3_vec_env_reports_the_time_limit_as_sb3_expects():
    venv = rg.sb3_vec_env(episode_steps=4)
    venv.seed(3)
    first = venv.reset()
    np.testing.assert_array_equal(first, rg.ReacherVectorEnv().reset(seed=3)[0])
    for _ in range(3):
        _, _, dones, infos = venv.step(np.full((20, 4), 0.5, np.float32))
        assert not dones.any() and infos == [{}] * 20
    last = venv.env.physics.observe()
    obs, rewards, dones, infos = venv.step(np.full((20, 4), 0.5, np.float32))
    assert dones.all() and rewards.shape == (20,)
    assert all(info["TimeLimit.truncated"] for info in infos)
    terminal = np.stack([info["terminal_observation"] for info in infos])
    assert not np.array_equal(terminal, last) and not np.array_equal(terminal, obs)
    np.testing.assert_array_equal(obs[:, 0:3], np.tile([0, -4, 0], (20, 1)))


def test_sb3_stores_the_last_state_and_bootstraps_from_it():
    """A few TD3 steps on 20 arms: at the episode end the replay holds the true last state as the
    next state, and marks the end as a timeout, which SB3 does not treat as terminal."""
    from stable_baselines3 import TD3

    venv = rg.sb3_vec_env(episode_steps=5)
    model = TD3("MlpPolicy", venv, learning_starts=1000, buffer_size=1000, seed=0, device="cpu")
    seen = []
    from stable_baselines3.common.callbacks import BaseCallback

    class Watch(BaseCallback):
        def _on_step(self):
            if self.locals["dones"].any():
                seen.append(np.stack([i["terminal_observation"] for i in self.locals["infos"]]))
            return True

    model.learn(total_timesteps=5 * 20, callback=Watch())
    buffer = model.replay_buffer
    assert buffer.pos == 5 and len(seen) == 1
    np.testing.assert_array_equal(buffer.dones[:5].any(1), [False] * 4 + [True])
    assert buffer.timeouts[4].all(), "a time limit, so SB3 bootstraps: done * (1 - timeout) = 0"
    np.testing.assert_array_equal(buffer.next_observations[4], seen[0])


def test_sb3_vec_env_refuses_a_next_step_autoreset():
    from reacher.sb3 import GymnasiumVecEnv

    sync = gym.vector.SyncVectorEnv([lambda: rg.ReacherEnv()] * 2)
    with pytest.raises(ValueError, match="SAME_STEP"):
        GymnasiumVecEnv(sync)


# --- rendering ---------------------------------------------------------------------------------


def _has_gl() -> bool:
    try:
        from reacher.render import MujocoView

        MujocoView(rg.ReacherEnv().physics, 32, 32).close()
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _has_gl(), reason="no OpenGL context for MuJoCo")
@pytest.mark.parametrize("make", [rg.ReacherEnv, rg.ReacherVectorEnv])
def test_rgb_array_frames_come_from_mujoco_and_leave_the_state_alone(make):
    env = make(render_mode="rgb_array")
    env.reset(seed=0)
    before = env.physics.observe()
    frame = env.render()
    np.testing.assert_array_equal(env.physics.observe(), before)
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    blue = (frame[..., 2] > 150) & (frame[..., 0] < 100)
    assert blue.any(), "the arms are drawn"
    assert env.render() is not frame and make().render() is None
    env.close()


@pytest.mark.parametrize("n", [0, -1, 1000, 2, 2.5, "3", True])
def test_the_20_arm_id_refuses_another_number_of_arms(n):
    with pytest.raises(ValueError, match="num_envs must be 20"):
        gym.make_vec(rg.ARMS_ID, num_envs=n)


def test_the_20_arm_id_gives_20_arms_when_asked_or_not():
    for kwargs in ({}, {"num_envs": 20}):
        envs = gym.make_vec(rg.ARMS_ID, **kwargs)
        assert envs.num_envs == 20 and envs.reset(seed=0)[0].shape == (20, 33)
        envs.close()


def test_reset_options_set_the_reset_parameters_or_are_refused():
    envs = gym.make_vec(rg.ARMS_ID)
    obs, _ = envs.reset(seed=0, options={"goal_speed": 0.0})
    assert np.all(obs[:, 32] == 0.0)  # the goals' speed, observed
    with pytest.raises(ValueError, match="goal_size must be in"):
        envs.reset(options={"goal_size": -1.0})
    with pytest.raises(ValueError, match="not a valid parameter"):
        envs.reset(options={"gravity": 1.0})
    one = gym.make(rg.ONE_ARM_ID)
    obs, _ = one.reset(seed=0, options={"goal_speed": 0.0})
    assert obs[32] == 0.0


@pytest.mark.parametrize("make", [rg.ReacherEnv, rg.ReacherVectorEnv])
def test_a_negative_goal_speed_resets_and_the_env_stays_usable(make):
    env = make()
    for speed in (-2.0, -360.0, 3.0):  # goalSpeed is uniform(-1, 1) * goal_speed
        obs, _ = env.reset(seed=0, options={"goal_speed": speed})
        space = env.observation_space
        assert space.contains(obs) and np.all(np.abs(obs[..., 32]) <= abs(speed))
        assert space.contains(env.step(np.zeros(space.shape[:-1] + (4,), np.float32))[0])
    env.close()


def test_step_after_close_raises():
    envs = gym.make_vec(rg.ARMS_ID)
    envs.reset(seed=0)
    envs.close()
    with pytest.raises(RuntimeError, match="closed"):
        envs.step(np.zeros((20, 4)))
    one = rg.ReacherEnv()
    one.reset(seed=0)
    one.close()
    with pytest.raises(RuntimeError, match="closed"):
        one.step(np.zeros(4))
