"""The built-in Reacher behind the Python API of `unityagents.UnityEnvironment` (0.4.0): course code runs unchanged.

env = ReacherEnvironment()                  # instead of UnityEnvironment(file_name=...)
brain_name = env.brain_names[0]
env_info = env.reset(train_mode=True)[brain_name]
env_info = env.step(actions)[brain_name]    # .vector_observations, .rewards, .local_done
"""

from __future__ import annotations

import numbers

import numpy as np

from .physics import ACTION_SIZE, DEFAULT_RESET_PARAMETERS, MAX_STEPS, OBSERVATION_SIZE, RESET_RANGES, ReacherPhysics

BRAIN_NAME = "ReacherBrain"
ACADEMY_NAME = "Academy"


class UnityEnvironmentException(RuntimeError):
    """The environment cannot do what was asked (closed, not reset, bad reset parameter...)."""


class UnityActionException(ValueError):
    """The actions passed to `step` are not what the brain expects."""


class BrainParameters:
    """What `env.brains[name]` holds; attribute names and printout as in unityagents 0.4.0."""

    def __init__(self, brain_name: str, observation_size: int, action_size: int):
        self.brain_name = brain_name
        self.vector_observation_space_size = observation_size
        self.num_stacked_vector_observations = 1
        self.number_visual_observations = 0
        self.camera_resolutions = []
        self.vector_action_space_size = action_size
        self.vector_action_descriptions = [""] * action_size
        self.vector_action_space_type = self.vector_observation_space_type = "continuous"

    def __str__(self) -> str:
        return f"""Unity brain name: {self.brain_name}
        Number of Visual Observations (per agent): {self.number_visual_observations}
        Vector Observation space type: {self.vector_observation_space_type}
        Vector Observation space size (per agent): {self.vector_observation_space_size}
        Number of stacked Vector Observation: {self.num_stacked_vector_observations}
        Vector Action space type: {self.vector_action_space_type}
        Vector Action space size (per agent): {self.vector_action_space_size}
        Vector Action descriptions: {", ".join(self.vector_action_descriptions)}"""


class BrainInfo:
    """One brain's view of a step, as the real client's: float64 observations of float32 values, and lists."""

    def __init__(self, observations: np.ndarray, rewards: np.ndarray, done: bool, previous_actions: np.ndarray):
        n = len(observations)
        self.vector_observations = observations.astype(np.float64)
        self.visual_observations = []
        self.text_observations = [""] * n
        self.memories = np.zeros((0, 0))
        self.rewards = rewards.astype(np.float64).tolist()
        self.local_done = [done] * n
        self.max_reached = [done] * n
        self.agents = list(range(n))
        self.previous_vector_actions = previous_actions.astype(np.float64)
        self.previous_text_actions = [""] * n


class ReacherEnvironment:
    """20 Reacher arms simulated in this process; `seed` seeds the goals, `joint_model` is one of JOINT_MODELS."""

    def __init__(
        self, num_agents: int = 20, seed: int | None = 0, verbose: bool = True, joint_model: str | None = None
    ):
        self._physics = ReacherPhysics(num_agents, seed, joint_model)
        self._brains = {BRAIN_NAME: BrainParameters(BRAIN_NAME, OBSERVATION_SIZE, ACTION_SIZE)}
        self._steps = None  # None until the first reset, as unityagents requires one
        self._closed = False
        if verbose:
            print(f"'{ACADEMY_NAME}' started successfully!\n{self}")
            print(f"({self.description}: {num_agents} agents, seed {seed})")

    academy_name, number_brains, number_external_brains = ACADEMY_NAME, 1, 1
    global_done = False  # agents reset themselves at their step limit; the academy never ends

    @property
    def brain_names(self) -> list[str]:
        return [BRAIN_NAME]

    @property
    def external_brain_names(self) -> list[str]:
        return [BRAIN_NAME]

    @property
    def brains(self) -> dict[str, BrainParameters]:
        return self._brains

    @property
    def reset_parameters(self) -> dict[str, float]:
        return dict(self._physics.reset_parameters)

    @property
    def description(self) -> str:
        """What results files call this environment."""
        return f"built-in replica (PhysX frame pipeline, joint model {self._physics.joint_model})"

    @property
    def physics(self) -> ReacherPhysics:
        """The simulation itself, for renderers and scripted controllers."""
        return self._physics

    def __str__(self) -> str:
        params = "\n\t\t".join(f"{k} -> {v}" for k, v in self._physics.reset_parameters.items())
        return (
            f"Unity Academy name: {ACADEMY_NAME}\n"
            f"        Number of Brains: 1\n"
            f"        Number of External Brains : 1\n"
            f"        Lesson number : 0\n"
            f"        Reset Parameters :\n\t\t{params}\n" + str(self._brains[BRAIN_NAME])
        )

    def reset(self, train_mode: bool = True, config: dict | None = None, lesson=None) -> dict:
        """Start a new episode for every agent, with no physics step (spec, Interface). `config` may change
        `goal_speed` and `goal_size`; they stay in force for later resets, as in Unity."""
        self._check_open()
        self._physics.reset_parameters.update(self._checked_config(config or {}))
        observations = self._physics.reset()
        self._steps = 0
        rewards = np.zeros(self.num_agents, np.float32)
        return {BRAIN_NAME: BrainInfo(observations, rewards, False, self._physics.actions)}

    def step(self, vector_action=None, memory=None, text_action=None) -> dict:
        """Advance 4 physics frames with actions (agents x 4, in [-1, 1]). The 1001st step after a reset
        reports done with its reward, and already returns the next episode's start state (spec, Episodes)."""
        self._check_open()
        if self._steps is None:
            raise UnityEnvironmentException(
                "You cannot conduct step without first calling reset. Reset the environment with 'reset()'"
            )
        actions = self._checked_actions(vector_action)
        observations, rewards = self._physics.step(actions)
        applied = self._physics.actions.copy()
        self._steps += 1
        done = self._steps >= MAX_STEPS
        if done:
            observations = self._physics.reset()
            self._steps = 0
        return {BRAIN_NAME: BrainInfo(observations, rewards, done, applied)}

    def seed(self, seed: int | None) -> None:
        """From the next reset on, the episodes of `ReacherEnvironment(seed=seed)` (not in unityagents' API)."""
        self._physics.rng = np.random.default_rng(seed)

    def close(self) -> None:
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def num_agents(self) -> int:
        return self._physics.num_agents

    def _check_open(self) -> None:
        if self._closed:
            raise UnityEnvironmentException("This environment is closed; create a new one.")

    @staticmethod
    def _checked_config(config: dict) -> dict:
        if not isinstance(config, dict):
            raise UnityEnvironmentException(f"config must be a dict of reset parameters, got {type(config).__name__}")
        for key, value in config.items():
            if key not in DEFAULT_RESET_PARAMETERS:
                raise UnityEnvironmentException(
                    f"The parameter '{key}' is not a valid parameter; the Reacher's reset "
                    f"parameters are {sorted(DEFAULT_RESET_PARAMETERS)}."
                )
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
                raise UnityEnvironmentException(
                    f"The value for parameter '{key}' must be a finite Integer or Float, got {value!r}."
                )
            low, high = RESET_RANGES[key]
            if not low <= value <= high:
                raise UnityEnvironmentException(f"{key} must be in [{low:g}, {high:g}], got {value!r}.")
        return {k: float(v) for k, v in config.items()}

    def _checked_actions(self, vector_action) -> np.ndarray:
        n = self.num_agents
        if isinstance(vector_action, dict):
            unknown = set(vector_action) - {BRAIN_NAME}
            if unknown:
                raise UnityActionException(
                    f"The name {sorted(unknown)[0]} does not correspond to an external brain in the environment"
                )
            vector_action = vector_action.get(BRAIN_NAME)
        if vector_action is None:
            return np.zeros((n, ACTION_SIZE))  # unityagents sends zeros for a missing action
        try:
            raw = np.asarray(vector_action)
        except (TypeError, ValueError):
            raw = np.array(None, dtype=object)
        if raw.dtype.kind not in "iuf":  # not strings, complex numbers, booleans or objects
            raise UnityActionException(
                f"Actions must be real numbers, an array of shape ({n}, {ACTION_SIZE}); "
                f"got {type(vector_action).__name__} "
                f"of {raw.dtype.name if raw.dtype.kind != 'O' else 'mixed or ragged items'}."
            )
        actions = raw.astype(np.float64)
        if (
            actions.size != n * ACTION_SIZE
            or actions.ndim > 2
            or (actions.ndim == 2 and actions.shape[1] != ACTION_SIZE)
        ):
            raise UnityActionException(
                f"There was a mismatch between the provided action and environment's expectation: "
                f"the brain {BRAIN_NAME} expected actions of shape ({n}, {ACTION_SIZE}) (or {n * ACTION_SIZE} "
                f"numbers), but was given shape {actions.shape}."
            )
        actions = actions.reshape(n, ACTION_SIZE)
        bad = ~np.isfinite(actions)
        if bad.any():
            agents = np.unique(np.nonzero(bad)[0]).tolist()
            raise UnityActionException(f"Actions contain NaN or inf (agents {agents}); actions must be finite.")
        return actions
