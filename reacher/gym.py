"""Gymnasium interface to the built-in Reacher: one arm, or the course's 20 arms in one world.

    import gymnasium as gym
    import reacher.gym                                   # registers the two ids below
    envs = gym.make_vec("ReacherReplica-20Arms-v0")      # the course's 20 arms: one world, one clock
    obs, info = envs.reset(seed=0)                       # (20, 33) float32
    obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())

`ReacherReplica-OneArm-v0` (`gym.make`) is `ReacherEnv`, one arm; the 20 arms share one world and one
clock, so `ReacherVectorEnv` steps them in one call. Episodes, autoreset (SAME_STEP, as Unity), spaces
and seeding: doc/environment.md, "Gymnasium interface".
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .physics import (
    ACTION_SIZE,
    FRAME_DT,
    FRAMES_PER_STEP,
    GOAL_HEIGHT,
    GOAL_RADIUS,
    MAX_STEPS,
    OBSERVATION_SIZE,
    ReacherPhysics,
)

ONE_ARM_ID, ARMS_ID, NUM_ARMS = "ReacherReplica-OneArm-v0", "ReacherReplica-20Arms-v0", 20
RENDER_FPS = 1.0 / (FRAME_DT * FRAMES_PER_STEP)  # one step is 4 frames of 0.02 s: 12.5 per second

# Each link's centre stays on a sphere about the shoulder pivot (doc/environment.md, Bodies): A's
# 4.02 from it, B's 7.02 + 3. ROUNDING covers float32 differences of world positions up to 60.
SHOULDER_Y, REACH_A, REACH_B, ROUNDING = 0.02, 4.02, 10.02, 1e-3


def observation_space(goal_speed: float = 1.0) -> spaces.Box:
    """The low and high of each of the 33 floats (doc/environment.md, Observation). Velocities have
    no bound the physics guarantees (the 7 rad/s cap applies before the joint solve): infinite."""
    low, high = np.full(OBSERVATION_SIZE, -np.inf), np.full(OBSERVATION_SIZE, np.inf)

    def around(index, centre, radius):
        margin = np.add(radius, ROUNDING)
        low[index], high[index] = np.subtract(centre, margin), np.add(centre, margin)

    around(slice(0, 3), (0.0, SHOULDER_Y, 0.0), REACH_A)  # A's centre
    around(slice(13, 16), (0.0, SHOULDER_Y, 0.0), REACH_B)  # B's centre
    low[3:7], high[3:7] = -1.0, 1.0  # rotations: unit quaternions
    low[16:20], high[16:20] = -1.0, 1.0
    around(slice(26, 29), (0.0, GOAL_HEIGHT, 0.0), (GOAL_RADIUS, 0.0, GOAL_RADIUS))  # the goal's circle
    around(slice(29, 32), (0.0, 1.0, 0.0), 0.0)  # the hand's local position: constant
    low[32], high[32] = -abs(goal_speed), abs(goal_speed)  # goalSpeed: uniform(-1, 1) * goal_speed
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def action_space() -> spaces.Box:
    """Torques as fractions of 150: the replica clamps each float to [-1, 1] (doc, Actions)."""
    return spaces.Box(-1.0, 1.0, (ACTION_SIZE,), dtype=np.float32)


def _checked_actions(actions, shape: tuple) -> np.ndarray:
    """The actions as floats of the given shape; a wrong shape or a NaN is an error, not a clamp."""
    try:
        actions = np.asarray(actions, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"actions must be numbers of shape {shape}: {error}") from None
    if actions.shape != shape:
        raise ValueError(
            f"actions must have shape {shape} (arms x {ACTION_SIZE} torques in [-1, 1]), got {actions.shape}"
        )
    if not np.isfinite(actions).all():
        raise ValueError("actions contain NaN or inf; they must be finite (values outside [-1, 1] are clamped)")
    return actions


class _Arms:
    """What both environments share: the checks of their arguments, the world, its options, its frames."""

    def _make(self, arms: int, render_mode, episode_steps, joint_model) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(
                f"render_mode must be None or 'rgb_array' (MuJoCo's offscreen renderer), got {render_mode!r}"
            )
        if isinstance(episode_steps, bool) or not isinstance(episode_steps, (int, np.integer)) or episode_steps < 1:
            raise ValueError(
                f"episode_steps must be a positive integer (the course's is {MAX_STEPS}), got {episode_steps!r}"
            )
        self.render_mode, self.episode_steps = render_mode, int(episode_steps)
        self.physics = ReacherPhysics(arms, None, joint_model)
        self._view, self._view_options = None, {}  # the view (MuJoCo's, or matplotlib's) made on the first frame
        self._steps, self.closed = None, False  # None: reset first

    def _reset_options(self, options: dict | None) -> spaces.Box:
        """reset(options=...) sets `goal_speed` and `goal_size` as the Unity API's reset(config=...) does; the
        observation space that follows."""
        if self.closed:
            raise RuntimeError("this environment is closed; make a new one")
        if options is not None:
            from .environment import ReacherEnvironment, UnityEnvironmentException

            try:
                self.physics.reset_parameters.update(ReacherEnvironment._checked_config(options))
            except UnityEnvironmentException as error:
                raise ValueError(f"reset(options=...): {error}") from None
        return observation_space(self.physics.reset_parameters["goal_speed"])

    def _step(self, actions, shape: tuple):
        if self.closed:
            raise RuntimeError("this environment is closed; make a new one")
        if self._steps is None or self._steps >= self.episode_steps:
            raise RuntimeError("call reset() before step(), and again after an episode is truncated")
        actions = _checked_actions(actions, shape)
        self._steps += 1
        return self.physics.step(actions)

    def render(self):
        if self.render_mode is None:
            return None
        if self._view is None:
            from .render import make_view

            self._view = make_view(self.physics, **self._view_options)
        return self._view()

    def _close_view(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None


class ReacherEnv(_Arms, gymnasium.Env):
    """One Reacher arm (a world of its own). `render_mode`: None or "rgb_array" (reacher/render.py);
    `episode_steps`: the time limit (the course's 1001); `joint_model`: of `reacher.physics.JOINT_MODELS`."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}

    def __init__(self, render_mode: str | None = None, episode_steps: int = MAX_STEPS, joint_model: str | None = None):
        self._make(1, render_mode, episode_steps, joint_model)
        origin = self.physics.origins[0] * (1.0, 1.0, -1.0)  # the arm's origin, MuJoCo frame
        self._view_options = dict(
            width=480, height=360, eye=origin + (0.0, 12.0, 30.0), lookat=origin + (0.0, -6.0, 0.0)
        )
        self.observation_space, self.action_space = self._reset_options(None), action_space()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.observation_space = self._reset_options(options)
        super().reset(seed=seed)
        self.physics.rng = self.np_random  # the goals' generator: reset(seed=k) is default_rng(k)
        self._steps = 0
        return self.physics.reset()[0], {}

    def step(self, action):
        observation, reward = self._step(action, (ACTION_SIZE,))
        return observation[0], float(reward[0]), False, self._steps >= self.episode_steps, {}

    def close(self):
        self.closed = True
        self._close_view()


class ReacherVectorEnv(_Arms, VectorEnv):
    """The course's Reacher: `num_envs` arms (20) in one world, stepped in one call, one clock. The
    other arguments are ReacherEnv's; a frame shows all the arms."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS, "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int = NUM_ARMS,
        render_mode: str | None = None,
        episode_steps: int = MAX_STEPS,
        joint_model: str | None = None,
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(
                f"num_envs (arms) must be a positive integer (the course has {NUM_ARMS}), got {num_envs!r}"
            )
        self.num_envs = int(num_envs)
        self._make(self.num_envs, render_mode, episode_steps, joint_model)
        self.single_observation_space, self.single_action_space = self._reset_options(None), action_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Every arm to a start state. One world has one goal generator: `seed` is an int (or None),
        not one seed per arm. `options` may set the reset parameters `goal_speed` and `goal_size`."""
        self.single_observation_space = self._reset_options(options)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(
                f"seed must be an int or None: the {self.num_envs} arms share one world and one goal "
                f"generator, so they take one seed, not {type(seed).__name__} {seed!r}"
            )
        super().reset(seed=None if seed is None else int(seed))
        self.physics.rng = self.np_random
        self._steps = 0
        return self.physics.reset(), {}

    def step(self, actions):
        observations, rewards = self._step(actions, (self.num_envs, ACTION_SIZE))
        terminated = np.zeros(self.num_envs, bool)  # no arm's task ever ends early
        if self._steps < self.episode_steps:
            return observations, rewards.astype(np.float64), terminated, np.zeros(self.num_envs, bool), {}
        # Step 1001: a time limit for every arm at once; the next episode starts in this same step.
        final = np.fromiter(observations, dtype=object, count=self.num_envs)  # gymnasium's layout: one array per arm
        every = np.ones(self.num_envs, bool)
        info = {"final_obs": final, "_final_obs": every, "final_info": {}, "_final_info": every.copy()}
        self._steps = 0
        return self.physics.reset(), rewards.astype(np.float64), terminated, every.copy(), info

    def close_extras(self, **kwargs):
        self._close_view()


def sb3_vec_env(**kwargs):
    """A new `ReacherVectorEnv(**kwargs)` as Stable-Baselines3's VecEnv (`reacher.sb3.GymnasiumVecEnv`)."""
    from .sb3 import GymnasiumVecEnv

    return GymnasiumVecEnv(ReacherVectorEnv(**kwargs))


def twenty_arms(num_envs: int = 1, **kwargs) -> ReacherVectorEnv:
    """`gym.make_vec(ARMS_ID)`: the course's 20 arms. gymnasium passes num_envs=1 when none is given, so
    1 and 20 give the 20 arms; any other number is refused (ReacherVectorEnv(num_envs=n) makes n arms)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs not in (1, NUM_ARMS):
        raise ValueError(
            f"{ARMS_ID} is the course's {NUM_ARMS} arms in one world, so num_envs must be {NUM_ARMS} "
            f"(or left out), got {num_envs!r}; for another number of arms use "
            f"reacher.gym.ReacherVectorEnv(num_envs=n)"
        )
    return ReacherVectorEnv(num_envs=NUM_ARMS, **kwargs)


def register() -> None:
    """Register both ids with gymnasium (done on import; again is harmless)."""
    if ONE_ARM_ID not in gymnasium.registry:
        gymnasium.register(ONE_ARM_ID, entry_point=ReacherEnv)
    if ARMS_ID not in gymnasium.registry:
        gymnasium.register(ARMS_ID, vector_entry_point=twenty_arms)


register()
