"""A gymnasium `VectorEnv` as a Stable-Baselines3 `VecEnv` (`reacher.gym.sb3_vec_env()`: the 20 arms).

SB3 adapts only lists of single environments, and the 20 arms share one world. This adapter passes whole
batches through and turns gymnasium's SAME_STEP episode ends into SB3's `dones`, with `terminal_observation`
and `TimeLimit.truncated`, so that SB3 bootstraps at the time limit (NEXT_STEP is refused).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.vec_env import VecEnv


class GymnasiumVecEnv(VecEnv):
    """SB3's VecEnv over one gymnasium VectorEnv; one sub-environment per arm. `seed(k)` seeds the
    whole vector env with k at the next reset; attributes and methods are reported once per arm."""

    def __init__(self, env: VectorEnv):
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"GymnasiumVecEnv needs a VectorEnv with autoreset_mode SAME_STEP, got {mode!r}")
        self.env = env
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self._actions = None

    def reset(self):
        observations, info = self.env.reset(seed=self._seeds[0], options=self._options[0] or None)
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return observations

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        observations, rewards, terminated, truncated, info = self.env.step(self._actions)
        dones = terminated | truncated
        infos = [{} for _ in range(self.num_envs)]  # SB3's API: one dict per sub-environment
        for i in np.flatnonzero(dones):  # episode ends only
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return observations, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self.env, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        if indices is not None and sorted(self._get_indices(indices)) != list(range(self.num_envs)):
            raise ValueError("the arms share one vector env: set an attribute for all of them (indices=None)")
        setattr(self.env, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]  # no per-arm gymnasium wrappers exist

    def get_images(self):
        return [self.env.render()]  # one frame of the shared world
