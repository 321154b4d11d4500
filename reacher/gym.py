"""Gymnasium interface to the built-in Reacher: one arm, or the course's 20 arms in one world.

    import gymnasium as gym
    import reacher.gym                                   # registers the two ids below
    envs = gym.make_vec("ReacherReplica-20Arms-v0")      # the course's 20 arms: one world, one clock
    obs, info = envs.reset(seed=0)                       # (20, 33) float32
    obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())

`ReacherReplica-OneArm-v0` (`gym.make`) is `ReacherEnv`, a `gymnasium.Env` of one arm;
`ReacherReplica-20Arms-v0` (`gym.make_vec`) is `ReacherVectorEnv`, a `gymnasium.vector.VectorEnv`
that steps all the arms in one call of the replica (`reacher.physics.ReacherPhysics`), as the
Unity build does: the 20 arms share one world and one episode clock, so they cannot be separate
environments in a `SyncVectorEnv`. `sb3_vec_env` hands it to Stable-Baselines3 (`reacher/sb3.py`).

Episodes. As the course sees them (doc/environment.md, Episodes): 1001 steps, then a new episode.
Nothing in the task ends an episode early, so `terminated` is always False, and step 1001 is a
time limit: `truncated` is True there, for every arm at once. A learner should bootstrap from it.

Autoreset (vector env). `AutoresetMode.SAME_STEP`, as the Unity build does: step 1001 already
returns the next episode's start state, and its true last state is in `info["final_obs"]` (an
object array, one observation per arm, with the mask `info["_final_obs"]`, gymnasium's
convention). Unlike `ReacherEnvironment`, which drops that state, the interface keeps it: it is
the state a learner bootstraps from.

Seeding. `reset(seed=k)` draws the goals from `numpy.random.default_rng(k)` (gymnasium's
`np_random`), as `ReacherEnvironment(seed=k)` does: the same k gives the same start states.

Rendering. `render_mode="rgb_array"`: MuJoCo's offscreen renderer (`reacher/render.py`), or its
matplotlib drawing from above where no OpenGL context can be made; one frame of the whole world
for the vector env.
"""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .physics import ACTION_SIZE, FRAME_DT, FRAMES_PER_STEP, MAX_STEPS, OBSERVATION_SIZE, ReacherPhysics

ONE_ARM_ID = "ReacherReplica-OneArm-v0"
ARMS_ID = "ReacherReplica-20Arms-v0"
NUM_ARMS = 20
RENDER_FPS = 1.0 / (FRAME_DT * FRAMES_PER_STEP)         # one step is 4 frames of 0.02 s: 12.5 per second

# --- the spaces -------------------------------------------------------------------------------
# Reach from the shoulder pivot (0, 0.02, 0) (doc/environment.md, Bodies): A's centre 4.02 below it
# at rest, B's centre 7.02 + 3 = 10.02; the links are rigid and the joints hold them exactly, so
# each centre stays on a sphere of that radius. Positions are float32 differences of world
# positions up to about 60 from the world origin: ROUNDING covers their error.
SHOULDER_Y, REACH_A, REACH_B, ROUNDING = 0.02, 4.02, 10.02, 1e-3
GOAL_RADIUS, GOAL_HEIGHT = 8.0, -1.0                     # doc/environment.md, Goal motion


def observation_bounds(goal_speed: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The low and high of each of the 33 floats (doc/environment.md, Observation). Velocities
    have no bound the physics guarantees (the 7 rad/s cap applies before the joint solve), so
    they are left infinite rather than given a bound that a state could break."""
    low, high = np.full(OBSERVATION_SIZE, -np.inf), np.full(OBSERVATION_SIZE, np.inf)

    def around(index, centre, radius):
        margin = np.add(radius, ROUNDING)
        low[index], high[index] = np.subtract(centre, margin), np.add(centre, margin)

    around(slice(0, 3), (0.0, SHOULDER_Y, 0.0), REACH_A)          # A's centre
    around(slice(13, 16), (0.0, SHOULDER_Y, 0.0), REACH_B)        # B's centre
    low[3:7], high[3:7] = -1.0, 1.0                               # rotations: unit quaternions
    low[16:20], high[16:20] = -1.0, 1.0
    around(slice(26, 29), (0.0, GOAL_HEIGHT, 0.0), (GOAL_RADIUS, 0.0, GOAL_RADIUS))   # the goal's circle
    low[29:32] = high[29:32] = (0.0, 1.0, 0.0)                    # the hand's local position: constant
    low[32], high[32] = -abs(goal_speed), abs(goal_speed)         # goalSpeed: uniform(-1, 1) * goal_speed
    return low.astype(np.float32), high.astype(np.float32)


def observation_space(goal_speed: float = 1.0) -> spaces.Box:
    return spaces.Box(*observation_bounds(goal_speed), dtype=np.float32)


def action_space() -> spaces.Box:
    """Torques as fractions of 150: the replica clamps each float to [-1, 1] (doc, Actions)."""
    return spaces.Box(-1.0, 1.0, (ACTION_SIZE,), dtype=np.float32)


def _checked_episode_steps(episode_steps: int) -> int:
    if isinstance(episode_steps, bool) or not isinstance(episode_steps, (int, np.integer)) or episode_steps < 1:
        raise ValueError(f"episode_steps must be a positive integer (the course's is {MAX_STEPS}), got {episode_steps!r}")
    return int(episode_steps)


def _checked_render_mode(render_mode) -> str | None:
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"render_mode must be None or 'rgb_array' (MuJoCo's offscreen renderer), got {render_mode!r}")
    return render_mode


def _checked_actions(actions, shape: tuple) -> np.ndarray:
    """The actions as floats of the given shape; a wrong shape or a NaN is an error, not a clamp."""
    try:
        actions = np.asarray(actions, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"actions must be numbers of shape {shape}: {error}") from None
    if actions.shape != shape:
        raise ValueError(f"actions must have shape {shape} (arms x {ACTION_SIZE} torques in [-1, 1]), got {actions.shape}")
    if not np.isfinite(actions).all():
        raise ValueError("actions contain NaN or inf; they must be finite (values outside [-1, 1] are clamped)")
    return actions


def _apply_options(physics: ReacherPhysics, options: dict | None) -> None:
    """reset(options=...) sets reset parameters, as the Unity API's reset(config=...) does: `goal_speed`
    and `goal_size`, in their ranges; anything else is refused."""
    if options is not None:
        from .environment import ReacherEnvironment, UnityEnvironmentException
        try:
            physics.reset_parameters.update(ReacherEnvironment._checked_config(options))
        except UnityEnvironmentException as error:
            raise ValueError(f"reset(options=...): {error}") from None


class _Camera:
    """Frames of a physics world, the view made on the first frame: MuJoCo's where OpenGL works,
    else matplotlib's drawing from above (reacher/render.py)."""

    def __init__(self, physics: ReacherPhysics, **view):
        self.physics, self.options, self.view = physics, view, None

    def __call__(self) -> np.ndarray:
        if self.view is None:
            from .render import make_view
            self.view = make_view(self.physics, **self.options)
        return self.view()

    def close(self) -> None:
        if self.view is not None:
            self.view.close()
            self.view = None


# --- one arm ----------------------------------------------------------------------------------
class ReacherEnv(gymnasium.Env):
    """One Reacher arm (a world of its own), with the course's episode of 1001 steps.

    Args:
        render_mode: None, or "rgb_array" for frames of the arm (reacher/render.py).
        episode_steps: steps before the time limit truncates the episode (1001 in the course;
            fewer only for quick tests).
        joint_model: the joint model of `reacher.physics.JOINT_MODELS` (default: the calibrated one).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}

    def __init__(self, render_mode: str | None = None, episode_steps: int = MAX_STEPS, joint_model: str | None = None):
        self.render_mode = _checked_render_mode(render_mode)
        self.episode_steps = _checked_episode_steps(episode_steps)
        self.physics = ReacherPhysics(1, None, joint_model)
        self.observation_space = observation_space(self.physics.reset_parameters["goal_speed"])
        self.action_space = action_space()
        origin = self.physics.origins[0] * (1.0, 1.0, -1.0)          # the arm's origin, MuJoCo frame
        self._camera = _Camera(self.physics, width=480, height=360,
                               eye=origin + (0.0, 12.0, 30.0), lookat=origin + (0.0, -6.0, 0.0))
        self._steps = None                                            # None: reset first
        self._closed = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self._closed:
            raise RuntimeError("this environment is closed; make a new one")
        _apply_options(self.physics, options)
        self.observation_space = observation_space(self.physics.reset_parameters["goal_speed"])
        super().reset(seed=seed)
        self.physics.rng = self.np_random          # the goals' generator: reset(seed=k) is default_rng(k)
        self._steps = 0
        return self.physics.reset()[0], {}

    def step(self, action):
        if self._closed:
            raise RuntimeError("this environment is closed; make a new one")
        if self._steps is None or self._steps >= self.episode_steps:
            raise RuntimeError("call reset() before step(), and again after an episode is truncated")
        observation, reward = self.physics.step(_checked_actions(action, (ACTION_SIZE,))[None])
        self._steps += 1
        return observation[0], float(reward[0]), False, self._steps >= self.episode_steps, {}

    def render(self):
        return None if self.render_mode is None else self._camera()

    def close(self):
        self._closed = True
        self._camera.close()


# --- the 20 arms ------------------------------------------------------------------------------
class ReacherVectorEnv(VectorEnv):
    """The course's Reacher: `num_envs` arms (20) in one world, stepped in one call, one clock.

    Args:
        num_envs: number of arms (20 in the course).
        render_mode: None, or "rgb_array" for one frame of all the arms (reacher/render.py).
        episode_steps: steps before every arm's episode is truncated (1001 in the course).
        joint_model: the joint model of `reacher.physics.JOINT_MODELS` (default: the calibrated one).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS, "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int = NUM_ARMS, render_mode: str | None = None, episode_steps: int = MAX_STEPS,
                 joint_model: str | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs (arms) must be a positive integer (the course has {NUM_ARMS}), got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.render_mode = _checked_render_mode(render_mode)
        self.episode_steps = _checked_episode_steps(episode_steps)
        self.physics = ReacherPhysics(self.num_envs, None, joint_model)
        self.single_observation_space = observation_space(self.physics.reset_parameters["goal_speed"])
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._camera = _Camera(self.physics)
        self._steps = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Every arm to a start state. One world has one goal generator: `seed` is an int (or None),
        not one seed per arm. `options` may set the reset parameters `goal_speed` and `goal_size`."""
        if self.closed:
            raise RuntimeError("this environment is closed; make a new one")
        _apply_options(self.physics, options)
        self.single_observation_space = observation_space(self.physics.reset_parameters["goal_speed"])
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be an int or None: the {self.num_envs} arms share one world and one goal "
                             f"generator, so they take one seed, not {type(seed).__name__} {seed!r}")
        super().reset(seed=None if seed is None else int(seed))
        self.physics.rng = self.np_random
        self._steps = 0
        return self.physics.reset(), {}

    def step(self, actions):
        if self.closed:
            raise RuntimeError("this environment is closed; make a new one")
        if self._steps is None:
            raise RuntimeError("call reset() before step()")
        observations, rewards = self.physics.step(_checked_actions(actions, (self.num_envs, ACTION_SIZE)))
        self._steps += 1
        terminated = np.zeros(self.num_envs, bool)                # no arm's task ever ends early
        if self._steps < self.episode_steps:
            return observations, rewards.astype(np.float64), terminated, np.zeros(self.num_envs, bool), {}
        # Step 1001: a time limit for every arm at once; the next episode starts in this same step.
        final = np.empty(self.num_envs, dtype=object)
        for arm, observation in enumerate(observations):      # gymnasium's layout: one array per arm
            final[arm] = observation
        every = np.ones(self.num_envs, bool)
        info = {"final_obs": final, "_final_obs": every, "final_info": {}, "_final_info": every.copy()}
        self._steps = 0
        return self.physics.reset(), rewards.astype(np.float64), terminated, every.copy(), info

    def render(self):
        return None if self.render_mode is None else self._camera()

    def close_extras(self, **kwargs):
        self._camera.close()


def sb3_vec_env(env: VectorEnv | None = None, **kwargs):
    """The vector env (by default a new `ReacherVectorEnv(**kwargs)`) as Stable-Baselines3's
    VecEnv (`reacher.sb3.GymnasiumVecEnv`); needs stable-baselines3."""
    from .sb3 import GymnasiumVecEnv
    return GymnasiumVecEnv(ReacherVectorEnv(**kwargs) if env is None else env)


def twenty_arms(num_envs: int = 1, **kwargs) -> ReacherVectorEnv:
    """`gym.make_vec(ARMS_ID)`: the course's 20 arms. gymnasium passes num_envs=1 when none is given, so
    1 and 20 give the 20 arms; any other number is refused (ReacherVectorEnv(num_envs=n) makes n arms)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs not in (1, NUM_ARMS):
        raise ValueError(f"{ARMS_ID} is the course's {NUM_ARMS} arms in one world, so num_envs must be {NUM_ARMS} "
                         f"(or left out), got {num_envs!r}; for another number of arms use "
                         f"reacher.gym.ReacherVectorEnv(num_envs=n)")
    return ReacherVectorEnv(num_envs=NUM_ARMS, **kwargs)


def register() -> None:
    """Register both ids with gymnasium (done on import; again is harmless)."""
    if ONE_ARM_ID not in gymnasium.registry:
        gymnasium.register(ONE_ARM_ID, entry_point=ReacherEnv)
    if ARMS_ID not in gymnasium.registry:
        gymnasium.register(ARMS_ID, vector_entry_point=twenty_arms)


register()
