"""The report's ablations that the lesson's `Config` cannot express: variants of the notebook's agent.

`Ablation` is the lesson's Config plus the fields below; each swaps one part of the lesson's agent by a subclass,
so the lesson's classes stay as their math. At the defaults an `AblationAgent` is the lesson's `Agent`, step for
step (tested).
"""

import functools
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from continuous_control.agent import (
    Actor,
    Agent,
    Config,
    NoisyActor,
    NoisyLinear,
    OrnsteinUhlenbeck,
    PrioritizedReplay,
)
from continuous_control.agent import train as lesson_train
from continuous_control.behaviour import ActionNoise, Behaviour
from reacher.physics import OBSERVATION_SIZE

EXPLORATIONS = ("noisynet", "ou", "none")
NEW_PRIORITIES = ("recent", "largest_ever", "mean")


@dataclass
class Ablation(Config):
    # The ranges of the fields below, which check_config (continuous_control/config.py) adds to the lesson's.
    RANGES = {
        "exploration": (lambda v: v in EXPLORATIONS, f"one of {', '.join(map(repr, EXPLORATIONS))}"),
        "new_priority": (lambda v: v in NEW_PRIORITIES, f"one of {', '.join(map(repr, NEW_PRIORITIES))}"),
    }

    exploration: str = "noisynet"
    """'noisynet' (the lesson's), 'ou' (Ornstein-Uhlenbeck action noise, a plain actor), or 'none'."""
    noise_per_arm: bool = False
    """NoisyNet acting noise: one sample per arm (True), or one shared by all arms (the lesson's)."""
    new_priority: str = "recent"
    """A new transition's priority: 'recent' (the lesson's), 'largest_ever' ([3]'s), or 'mean' (a typical one's)."""
    mirror: bool = False
    """Mirror (x -> -x) goals orbiting one way into the other: the networks learn one direction only."""

    def __post_init__(self):
        if torch.device(self.device).type == "cuda":  # the GPU path would replace the parts a variant swaps
            raise ValueError("The report's ablations train on the CPU: the GPU path runs the lesson's agent only.")
        super().__post_init__()
        if self.noise_per_arm and self.exploration != "noisynet":
            raise ValueError(f"Config.noise_per_arm=True needs exploration='noisynet', got {self.exploration!r}")


# The Reacher's mirror symmetry x -> -x (same reward): the numbers that change sign. Per link (A at 0, B at
# 13): position x, rotation y and z, angular velocity x and y, linear velocity x; the goal's x and speed (32);
# the torques about y and the other reversed axis (actions 1 and 3).
MIRROR_OBS = np.ones(OBSERVATION_SIZE, np.float32)
for link in (0, 13):
    MIRROR_OBS[[link + 0, link + 4, link + 5, link + 8, link + 9, link + 10]] = -1
MIRROR_OBS[[26, 32]] = -1
MIRROR_ACT = np.array([1, -1, 1, -1], np.float32)
GOAL_SPEED = 32


def mirrored(x, flip, signs):
    """`x` with the rows where `flip` is set mirrored by `signs` (numpy or torch)."""
    if isinstance(x, torch.Tensor):
        return torch.where(flip[:, None], x * torch.as_tensor(signs, dtype=x.dtype), x)
    return np.where(flip[:, None], x * signs, x).astype(np.asarray(x).dtype)


class MirroredPolicy(torch.nn.Module):
    """A mirroring agent's exported policy: mirror states of negative goal speed, act, mirror the action back."""

    # What results.policy_files saves of it as data: the state whose sign decides, and the signs that mirror.
    mirror = {"index": GOAL_SPEED, "states": MIRROR_OBS.tolist(), "actions": MIRROR_ACT.tolist()}

    def __init__(self, norm: torch.nn.Module, actor: torch.nn.Module):
        super().__init__()
        self.norm, self.actor = norm, actor

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        flip = states[:, GOAL_SPEED] < 0
        return mirrored(self.actor(self.norm(mirrored(states, flip, MIRROR_OBS))), flip, MIRROR_ACT)


class PerRowNoisyLinear(NoisyLinear):
    """NoisyLinear with one noise sample per row of x, and no weight matrix made per row:
    (sigma_w * f_out f_in^T) x = f_out * (sigma_w (f_in * x))."""

    def __init__(self, in_features: int, out_features: int, sigma0: float, rows: int):
        super().__init__(in_features, out_features, sigma0)
        self.eps_in, self.eps_out = torch.zeros(rows, in_features), torch.zeros(rows, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.noisy:
            return F.linear(x, self.weight_mean, self.bias_mean)
        noise = F.linear(x * self.eps_in, self.weight_sigma, self.bias_sigma)
        return F.linear(x, self.weight_mean, self.bias_mean) + self.eps_out * noise


class Deterministic(Actor):
    """A plain actor for the action-noise variants: it has no weight noise to set."""

    noise_size = 0

    def set_noise(self, eps) -> None:
        pass


class PerArmBehaviour(Behaviour):
    """NoisyNet acting with one noise sample per arm: a copy of the learner's noisy actor, built of
    PerRowNoisyLinear layers, under this step's per-arm noise (`noise` is shaped arms x noise_size)."""

    @torch.no_grad()
    def refresh(self) -> None:
        self.copy_norm()
        self.copy_actor()
        self.actor.set_noise(self.noise.sample())


class LargestEverReplay(PrioritizedReplay):
    """A new transition enters at the largest priority ever seen [3]: the lesson's update, then its ring of
    recent largest priorities holds the largest of all, so that it never forgets."""

    def update_priorities(self, idx, td_errors) -> None:
        ever = self.recent.max()
        super().update_priorities(idx, td_errors)
        self.recent[:] = max(ever, self.recent.max())


class MeanPriorityReplay(PrioritizedReplay):
    """A new transition enters at a typical priority: its p^alpha is the mean of the stored ones."""

    @property
    def entry_priority(self) -> float:
        if self.size == 0 or self.alpha == 0:
            return 1.0
        return float((self.priorities.total() / self.size) ** (1 / self.alpha))


class AblationAgent(Agent):
    """The lesson's Agent, with the parts its `Ablation` config swaps."""

    def make_memory(self):
        cfg = self.cfg
        if cfg.new_priority == "recent":
            return super().make_memory()
        replay = LargestEverReplay if cfg.new_priority == "largest_ever" else MeanPriorityReplay
        window = 1 if replay is LargestEverReplay else cfg.priority_window
        return replay(cfg.buffer_size, *self.sizes[1:], cfg.alpha, cfg.priority_offset, self.rng, window)

    def act(self, states: np.ndarray, explore: bool = True) -> np.ndarray:
        if not self.cfg.mirror:
            return super().act(states, explore)
        flip = states[:, GOAL_SPEED] < 0
        return mirrored(super().act(mirrored(states, flip, MIRROR_OBS), explore), flip, MIRROR_ACT)

    def step(self, states, actions, rewards, next_states, done: bool) -> dict:
        if self.cfg.mirror:  # within an episode a goal keeps its direction: one flip for s and s'
            flip = states[:, GOAL_SPEED] < 0
            states, actions = mirrored(states, flip, MIRROR_OBS), mirrored(actions, flip, MIRROR_ACT)
            next_states = next_states if done else mirrored(next_states, flip, MIRROR_OBS)
        return super().step(states, actions, rewards, next_states, done)

    def policy_network(self) -> torch.nn.Module:
        """What results.exported_policy exports: the target actor behind the normaliser, mirrored if asked."""
        if self.cfg.mirror:
            return MirroredPolicy(self.norm, self.actor_target)
        return torch.nn.Sequential(self.norm, self.actor_target)

    def make_actor(self) -> torch.nn.Module:
        if self.cfg.exploration == "noisynet":
            return super().make_actor()
        return Deterministic(*self.sizes[1:], self.cfg.hidden)

    def make_behaviour(self) -> torch.nn.Module:
        cfg, (arms, state_size, action_size) = self.cfg, self.sizes
        if cfg.exploration == "noisynet" and not cfg.noise_per_arm:
            return super().make_behaviour()
        if cfg.exploration == "noisynet":
            layer = functools.partial(PerRowNoisyLinear, rows=arms)
            actor = NoisyActor(state_size, action_size, cfg.hidden, cfg.noisy_sigma0, layer=layer)
            noise = OrnsteinUhlenbeck((arms, actor.noise_size), cfg.ou_kappa, 1.0, self.gen)
            return PerArmBehaviour(self, actor, noise)
        # Plain DDPG's action noise (section 3); 'none' is that noise at scale 0.
        scale = cfg.action_noise if cfg.exploration == "ou" else 0.0
        noise = OrnsteinUhlenbeck((arms, action_size), cfg.ou_kappa, scale, self.gen)
        return ActionNoise(self, Deterministic(state_size, action_size, cfg.hidden), noise)


def train(cfg: Config, env, run_dir: str, max_episodes: int = 200, stop_when_solved: bool = True, **options) -> dict:
    """The lesson's `train`, with an AblationAgent when `cfg` is an Ablation."""
    agent_class = AblationAgent if isinstance(cfg, Ablation) else Agent
    return lesson_train(
        cfg, env, run_dir, max_episodes, agent_class=agent_class, stop_when_solved=stop_when_solved, **options
    )


def config_for(changes: dict, **fields) -> Config:
    """The lesson's Config with `changes` and `fields`, or an Ablation where one names a field it lacks."""
    lesson = set(Config.__dataclass_fields__)
    kind = Config if lesson >= set(changes) | set(fields) else Ablation
    return kind(**changes, **fields)


def make_agent(cfg: Config, state_size: int, action_size: int, num_agents: int) -> Agent:
    """An AblationAgent for an Ablation, the lesson's Agent for a Config."""
    return (AblationAgent if isinstance(cfg, Ablation) else Agent)(cfg, state_size, action_size, num_agents)
