# ---
# jupyter:
#   jupytext:
#     formats: ipynb,scripts//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Continuous Control: DDPG with n-step targets, prioritized replay and NoisyNet on the 20-arm Reacher
#
# Twenty two-jointed arms must keep their hands inside goal spheres that circle around them.
# Each arm sees 33 numbers (positions, rotations and velocities of its two links, and the goal)
# and sets 4 torques in $[-1, 1]$. A step in which the hand is in the goal earns up to $0.04$
# (0.01 per physics frame, 4 frames per step), so an episode of 1001 steps is worth about 40.
# The task counts as **solved when the mean over 100 consecutive episodes of the 20-agent mean
# score reaches 30**.
#
# This notebook builds a DDPG agent from its parts, explains each one before its code, checks
# each one right after, and trains it. The agent extends DDPG [1] with three ideas: n-step
# targets [5, 6], prioritized experience replay [3] and NoisyNet exploration [4].
#
# Run it top to bottom. With the environment variable `SMOKE=1` it runs a short configuration
# that writes to a temporary folder: that is what the tests do. The committed notebook holds
# the outputs of the full run.

# %% [markdown]
# ## 1. The environment
#
# The course runs a Unity build of ML-Agents' Reacher through the `unityagents` client. This
# project ships a replica of that build with the same Python API (`reacher/`: MuJoCo for the
# model, each physics frame stepped as PhysX 3.3 steps it), and trains on it by default.
# [`doc/environment.md`](doc/environment.md) gives every number of it and its source, and
# [`doc/calibration.md`](doc/calibration.md) measures it against the Unity build. To use a Unity
# build (the course's downloads are listed in the README), set the environment variable
# `REACHER_UNITY_BUILD` to its path (for example `Reacher_Linux_NoVis/Reacher.x86_64`); the rest
# of the notebook is the same either way.

# %% tags=["definitions"]
import copy
import hashlib
import io
import json
import multiprocessing
import os
import platform
import signal
import tempfile
import time
import types
from dataclasses import asdict, dataclass

import matplotlib.pyplot as plt
import numba
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from IPython.display import display
from tqdm.auto import tqdm

import reacher

# %%

SMOKE = os.environ.get("SMOKE", "0") == "1"
UNITY_BUILD = os.environ.get("REACHER_UNITY_BUILD")   # None: the built-in replica
# The full run writes the solving run to checkpoints/; the smoke run never touches it.
RUN_DIR = tempfile.mkdtemp(prefix="reacher-smoke-") if SMOKE else "checkpoints"
print(f"SMOKE = {SMOKE}; results go to {'a temporary folder' if SMOKE else RUN_DIR}")

env = reacher.open_environment(UNITY_BUILD, seed=0)
brain_name = env.brain_names[0]
brain = env.brains[brain_name]

# %%
env_info = env.reset(train_mode=True)[brain_name]
num_agents = len(env_info.agents)
action_size = brain.vector_action_space_size
states = env_info.vector_observations
state_size = states.shape[1]
print("Number of agents:", num_agents)
print("Size of each action:", action_size)
print(f"There are {states.shape[0]} agents. Each observes a state with length: {state_size}")
print("The state for the first agent looks like:", states[0])

# %% [markdown]
# ## 2. A random agent
#
# Normal actions clipped to $[-1, 1]$, as in the course's notebook: a baseline to beat.

# %%
rng = np.random.default_rng(0)
env_info = env.reset(train_mode=True)[brain_name]
scores = np.zeros(num_agents)
while True:
    actions = np.clip(rng.standard_normal((num_agents, action_size)), -1, 1)
    env_info = env.step(actions)[brain_name]
    scores += env_info.rewards
    if np.any(env_info.local_done):
        break
print(f"Random agent: mean score over the {num_agents} agents this episode: {scores.mean():.2f}")

# %% [markdown]
# ## 3. Theory
#
# ### 3.1 Actor-critic and the deterministic policy gradient
#
# The actions are continuous, so instead of a $\max_a Q(s, a)$ over a finite set, DDPG [1]
# learns two networks:
#
# * a **critic** $Q_\phi(s, a)$ that estimates the return of taking action $a$ in state $s$ and
#   following the policy afterwards, trained on the Bellman equation
#   $Q(s, a) = \mathbb{E}\,[\,r + \gamma\, Q(s', \mu(s'))\,]$;
# * an **actor** $\mu_\theta(s)$ that outputs one action, trained to climb the critic. The
#   deterministic policy gradient theorem [2] says that the gradient of the expected return is
#   $$\nabla_\theta J = \mathbb{E}_{s \sim \rho^{\mu}}\left[\nabla_a Q^{\mu}(s, a)\big|_{a=\mu_\theta(s)}\,\nabla_\theta \mu_\theta(s)\right],$$
#   an expectation over $\rho^\mu$, the discounted state distribution of the policy $\mu$ itself.
#   DDPG takes it over the replay buffer $\mathcal{D}$ instead, with the learned $Q_\phi$ in
#   place of $Q^\mu$: the off-policy approximation [1, 2],
#   $$\nabla_\theta J \approx \mathbb{E}_{s \sim \mathcal{D}}\left[\nabla_a Q_\phi(s, a)\big|_{a=\mu_\theta(s)}\,\nabla_\theta \mu_\theta(s)\right],$$
#   which autograd computes when we minimise $-Q_\phi(s, \mu_\theta(s))$ with respect to $\theta$ only.
#
# Both learn off-policy from a replay buffer $\mathcal{D}$ of past transitions, which decorrelates
# the samples and reuses each transition many times.

# %% [markdown]
# ### 3.2 Target networks and soft updates
#
# The critic's target uses the critic itself, so a plain regression chases a moving target.
# DDPG keeps slowly moving copies $Q_{\phi'}$ and $\mu_{\theta'}$ for the targets and after each
# update moves them a little toward the learned networks (Polyak averaging):
# $$\phi' \leftarrow \tau\,\phi + (1 - \tau)\,\phi', \qquad \theta' \leftarrow \tau\,\theta + (1 - \tau)\,\theta', \qquad \tau \ll 1.$$
#
# ### 3.3 The algorithm
#
# 1. Initialise actor $\mu_\theta$, critic $Q_\phi$, targets $\theta' \leftarrow \theta$, $\phi' \leftarrow \phi$, an empty replay buffer.
# 2. For every step, for all 20 agents at once:
#    1. act $a = \mu_\theta(s)$ with exploration (here: the NoisyNet actor's own noise; the
#       weights are those of one update ago, so that the environment can step while the
#       networks learn, 4.9);
#    2. step the environment, get $r$ and $s'$; turn the last $n$ steps into $n$-step transitions
#       and store them with the highest priority seen so far;
#    3. sample a batch by priority, with importance weights $w_i$;
#    4. critic: minimise $\frac{1}{B}\sum_i w_i\,\delta_i^2$, $\delta_i = y_i - Q_\phi(s_i, a_i)$, with the $n$-step target $y_i$ below;
#       set each sampled priority to $p_i = (|\delta_i| + \epsilon)^\alpha$;
#    5. actor: minimise $-\frac{1}{B}\sum_i Q_\phi(s_i, \mu_\theta(s_i))$;
#    6. soft-update both targets.
#
#    Steps 3 to 6 run every step in the first 20 episodes and every 8th step after them (3.8).

# %% [markdown]
# ### 3.4 n-step targets
#
# The one-step target $r_t + \gamma\,Q'(s_{t+1}, \mu'(s_{t+1}))$ leans entirely on the critic,
# which is poor early on, and passes a reward back one step per update. The $n$-step target
# [5, 6] uses $n$ real rewards before it bootstraps:
# $$y_t = \sum_{k=0}^{n-1} \gamma^k\, r_{t+k} + \gamma^n\, Q'\big(s_{t+n}, \mu'(s_{t+n})\big).$$
# Rewards reach the critic $n$ times faster and the target depends less on the critic's errors
# (less bias). In exchange the sum carries the noise of $n$ rewards (more variance).
#
# **This target is uncorrected off-policy.** The rewards $r_{t+1}, \dots, r_{t+n-1}$ follow the
# actions $a_{t+1}, \dots, a_{t+n-1}$ that the behaviour policy took: the actor of that time, with
# exploration noise, not the current $\mu$. The buffer holds about 50 episodes of such older
# policies. So $y_t$ estimates the return of a mixture of past noisy policies for $n - 1$ steps,
# then of $\mu'$; the critic is biased toward that mixture, the more so the larger $n$ and the
# faster the policy changes. D4PG [5] and Rainbow accept the same bias for the same speed-up.
# The corrections that remove it, importance ratios truncated as in Retrace (Munos et al., 2016)
# or tree-backup, need action probabilities that a deterministic actor with noise does not
# provide cheaply; they are not used here.
#
# **n grows from 1.** The bias is worst at the start: the policy changes fastest, its noisy
# early behaviour earns almost nothing, and an $n$-step sum of those rewards pins the critic to
# the value of that behaviour. Later the policy changes slowly and the longer return carries
# reward back faster. So $n$ starts at 1 and grows by one every `n_step_ramp` = 4 episodes, to
# $n = 5$ from episode 17 on. The transitions stored with a smaller $n$ stay in the buffer; each
# carries its own discount $\gamma^m$ for its bootstrap, so each stays a valid target for its own $n$.

# %% [markdown]
# ### 3.5 Prioritized experience replay
#
# Uniform replay spends most updates on transitions the critic already predicts well.
# Prioritized replay [3] samples transition $i$ with probability
# $$P(i) = \frac{p_i}{\sum_k p_k}, \qquad p_i = (|\delta_i| + \epsilon)^\alpha,$$
# where $\delta_i$ is its last TD error, $\epsilon > 0$ keeps every transition reachable, and
# $\alpha$ sets how strongly to prioritise ($\alpha = 0$ is uniform). New transitions get the
# largest priority so far, so they are likely to be drawn soon; with this stochastic
# prioritization that is likely, not certain (only greedy prioritization, which always replays
# the largest priority, sees every transition at least once). Sampling by priority changes the
# distribution the expectation is taken over, so each sample's loss is weighted by
# $$w_i = \frac{(N \cdot P(i))^{-\beta}}{\max_j w_j},$$
# with $N$ the number of stored transitions. Dividing by the largest weight only ever scales
# updates down [3]. We take that maximum over the sampled batch, as Dopamine's implementation
# does; the maximum over the whole buffer, $(N \min_j P(j))^{-\beta}$, lets one stale tiny
# priority shrink every update, a smaller learning rate in disguise that grows as $\beta \to 1$.
# The price: the batch maximum changes from batch to batch, so the correction is exact only up
# to a per-batch scale factor (the relative weights within a batch are exact, the step size is
# not). $\beta$ grows linearly from $\beta_0 = 0.4$ to 1 over `beta_steps` = 110,000 environment
# steps, about 110 episodes, where [3] anneals it to 1 by the end of training: a run that
# solves at episode 100 stops at $\beta \approx 0.95$, its last updates not quite corrected.
#
# A **sum tree** makes this fast: a binary tree whose leaves hold the priorities and whose
# every node holds the sum of its children, so the root holds $\sum_k p_k$. Changing a priority
# updates one path to the root, and finding the leaf where a prefix sum $u \in [0, \sum_k p_k)$
# falls walks one path down: both $O(\log N)$.

# %% [markdown]
# ### 3.6 NoisyNet exploration
#
# DDPG usually explores by adding noise to the actor's actions. NoisyNet [4] instead makes the
# actor's weights noisy, $w = \mu^w + \sigma^w \odot \varepsilon^w$, and learns $\sigma$ by
# gradient descent with everything else, so the network decides how much to explore and where.
# With factorised Gaussian noise a layer with $p$ inputs and $q$ outputs needs only $p + q$
# noise variables:
# $$\varepsilon^w_{ij} = f(\varepsilon_i)\,f(\varepsilon_j), \qquad \varepsilon^b_j = f(\varepsilon_j), \qquad f(x) = \operatorname{sgn}(x)\sqrt{|x|},$$
# with $\mu$ initialised uniformly in $\pm 1/\sqrt{p}$ and $\sigma$ at $\sigma_0/\sqrt{p}$.
#
# An arm has inertia: noise drawn afresh every step averages out before the arm moves. This
# project's design therefore **draws the acting noise $\varepsilon$ from an Ornstein-Uhlenbeck
# process** [1], parametrised by its stationary standard deviation (1 here; `action_noise` for
# the action-noise variants) rather than by Lillicrap's increment scale:
# $\varepsilon_{t+1} = (1 - \theta)\,\varepsilon_t + \sqrt{1 - (1 - \theta)^2}\;\xi_t$,
# $\xi_t \sim \mathcal{N}(0, I)$: each $\varepsilon$ is still $\mathcal{N}(0, 1)$, as NoisyNet
# assumes, but successive steps are correlated by $(1 - \theta)^k$, so a perturbed policy
# persists for about $1/\theta$ steps. The learning updates draw fresh independent noise, as in [4].
#
# Three departures from [4], named:
# * **What trains $\sigma$.** In DQN the noise enters the TD loss; here the actor's only loss is
#   $-Q_\phi(s, \mu_\theta(s))$, and nothing in it rewards exploring: near a maximum of the critic a
#   noisy action scores lower on average, so the gradient tends to shrink $\sigma$. The report
#   (section 1.2) shows how far it fell in the solving run. Parameter-space noise for DDPG
#   (Plappert et al., *Parameter space noise for exploration*, ICLR 2018) avoids this by adapting
#   the noise scale to a target distance in action space instead of learning it.
# * **One noise sample for all 20 arms.** The actor is one network, and one $\varepsilon$ drives
#   all 20 arms at a time, so their exploration is correlated (the arms still differ in state).
#   The action-noise variants in the report draw independent noise per arm; so that the two can
#   be compared without that confound, `Config(noise_per_arm=True)` gives each arm its own
#   NoisyNet sample (an ablation in the report). A layer's output for arm $k$ needs no weight
#   matrix of its own:
#   $(\sigma^w \odot f(\varepsilon^{out}_k) f(\varepsilon^{in}_k)^\top)\,x_k
#   = f(\varepsilon^{out}_k) \odot \sigma^w (f(\varepsilon^{in}_k) \odot x_k)$.
# * **The target actor uses the mean weights** $\mu$ (no noise), where [4] also perturbs the
#   target network; this keeps the bootstrap target deterministic.

# %% [markdown]
# ### 3.7 Time limits are not terminal states
#
# A Reacher episode ends because a clock runs out at 1001 steps, not because the arm reached a
# state with no future. Treating that step as terminal (target $y = r$) would teach the critic
# that the same state is worth less near the clock's end, which it cannot see. So we bootstrap
# through the time limit [7]: no transition here has a terminal flag.

# %% [markdown]
# ### 3.8 How often to learn: the replay ratio
#
# Each step stores 20 transitions, and an update draws a batch of 256: learning every step,
# that is about 13 draws per stored transition. The updates are where the time goes (a step of
# the environment is far cheaper), and early on the agent needs every one of them to learn
# fast. Once the 20 arms score near the maximum, the updates only have to keep them there. So
# the agent learns every step in the first `fast_episodes` = 20 episodes and every
# `learn_every_later` = 8 steps after them, which cuts the later episodes' time to a fraction.
# The seed table in the README shows what it costs in score (the mean of episodes 1-100 and the
# noise-free evaluation of every arm).

# %% [markdown]
# ### 3.9 The Reacher's done step
#
# The step that reports `done` has already reset the arm: its "next state" is the **next**
# episode's first state. Stored as is, it would teach that the arm teleports. We therefore drop
# that one step (its reward still counts in the score), and the steps before it whose $n$-step
# window it would have closed get shorter returns that bootstrap from the last real state:
# for the transition starting at $t$ with $m < n$ real steps left,
# $y_t = \sum_{k=0}^{m-1}\gamma^k r_{t+k} + \gamma^m Q'(s_{t+m}, \mu'(s_{t+m}))$.
# Nothing crosses an episode boundary.

# %% [markdown]
# The environment itself shows it: after 1000 steps of random play, the 1001st step reports
# `done` for every arm and already returns the next episode's first state (both links hanging
# straight down, at rest).

# %%
# NBVAL_CHECK_OUTPUT
rng = np.random.default_rng(1)
env_info = env.reset(train_mode=True)[brain_name]
for step in range(1, 1002):
    env_info = env.step(np.clip(rng.standard_normal((num_agents, action_size)), -1, 1))[brain_name]
    if step == 1000:
        last = env_info.vector_observations
        assert not any(env_info.local_done)
start = env_info.vector_observations
at_rest = np.all(start[:, [0, 1, 2, 13, 14, 15]] == [0, -4, 0, 0, -10, 0]) and np.all(start[:, [7, 8, 9, 10, 11, 12]] == 0)
print("step 1001 reports done for every arm:", all(env_info.local_done))
print("step 1000 had moved the arms:", not np.allclose(last[:, :3], [0, -4, 0]))
print("step 1001 returns the start state, arms hanging at rest:", at_rest)
assert all(env_info.local_done) and at_rest

# %% [markdown]
# ## 4. Implementation
#
# ### 4.1 Hyperparameters
#
# One dataclass, one docstring per field. The smoke configuration shrinks the run, not the
# algorithm.

# %% tags=["definitions"]
@dataclass
class Config:
    seed: int = 0
    """Seed of numpy, torch and the environment's goals."""
    max_episodes: int = 200
    """Stop after this many episodes, solved or not."""
    stop_when_solved: bool = True
    """Stop as soon as the 100-episode average reaches `target_score`."""
    target_score: float = 30.0
    """The solve criterion: mean over 100 episodes of the 20-agent mean score."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 5
    """Rewards summed before bootstrapping (1 is plain DDPG's one-step target)."""
    n_step_ramp: int = 4
    """Episodes at each n on the way up: n = 1 in episodes 1-4, 2 in 5-8, ..., then `n_step` (0: no ramp)."""
    buffer_size: int = 1_000_000
    """Replay capacity in transitions (about 50 episodes of 20 agents)."""
    batch_size: int = 256
    """Transitions per learning update."""
    warmup: int = 5_000
    """Transitions stored before the first update."""
    learn_every: int = 1
    """Environment steps (of all 20 agents) between learning rounds, in the first `fast_episodes`."""
    fast_episodes: int = 20
    """Episodes that learn every `learn_every` steps; later ones every `learn_every_later` steps."""
    learn_every_later: int = 8
    """Environment steps between learning rounds after `fast_episodes`."""
    updates_per_learn: int = 1
    """Gradient updates per learning round."""
    actor_lr: float = 1e-3
    """Adam learning rate of the actor."""
    critic_lr: float = 1e-3
    """Adam learning rate of the critic."""
    tau: float = 5e-3
    """Polyak factor of the soft target updates."""
    hidden: tuple = (128, 128)
    """Hidden layer sizes of both networks."""
    grad_clip: float = 1.0
    """Max gradient norm of the critic's updates."""
    alpha: float = 0.5
    """Prioritization exponent; 0 gives uniform replay."""
    beta_start: float = 0.4
    """Importance-sampling exponent at the start, annealed linearly to 1."""
    beta_steps: int = 110_000
    """Environment steps over which beta reaches 1 (about 110 episodes)."""
    priority_eps: float = 1e-3
    """Added to the absolute TD error so that no transition's priority is zero."""
    exploration: str = "noisynet"
    """'noisynet' (noisy actor weights), action noise ('ou' or 'gaussian'), or 'none' (an ablation)."""
    noise_per_arm: bool = False
    """NoisyNet acting noise: one sample per arm (True) or one shared by all 20 arms (False)."""
    noisy_sigma0: float = 0.5
    """NoisyNet's initial sigma, as sigma0 / sqrt(fan_in)."""
    noise_theta: float = 0.15
    """Ornstein-Uhlenbeck mean reversion per step: correlation time about 1/theta steps."""
    action_noise: float = 0.2
    """Std of the action noise when exploration is 'ou' or 'gaussian'."""
    checkpoint_every: int = 5
    """Episodes between checkpoints (weights, scores, replay) for resuming."""
    env_process: bool = False
    """Step the built-in Reacher in a second process while this one learns (4.9); same results."""

    def __post_init__(self):
        if self.exploration not in ("noisynet", "ou", "gaussian", "none"):
            raise ValueError(f"Config.exploration: unknown {self.exploration!r}; "
                             "use 'noisynet', 'ou', 'gaussian' or 'none'")
        if self.noise_per_arm and self.exploration != "noisynet":
            raise ValueError("Config.noise_per_arm needs exploration='noisynet'")


# %% [markdown]
# ### 4.2 The sum tree
#
# One numpy array of size $2M$ ($M$ a power of two at least the capacity): node $i$ has children
# $2i$ and $2i+1$, the root is node 1, and the leaves are nodes $M \dots 2M-1$. An update writes
# a leaf, then walks up to the root, recomputing each parent from its two children (a leaf
# written twice keeps its last value, and every parent ends up the sum of its final children).
# Sampling walks a prefix sum $u$ down from the root: at each node, go left if $u$ falls within
# the left child's sum, else subtract that sum and go right.
#
# Both walks take $\log_2 M = 20$ steps for a million transitions, for each of the 256
# transitions of a batch, every training step. Written as numpy operations over the whole batch,
# one tree level at a time, that is about 100 numpy calls per walk, and their call overhead
# outweighs the arithmetic (the README's training profile shows both versions). So the two
# walks are plain loops compiled by numba, which also compiles the built-in Reacher's physics.

# %% tags=["definitions"]
@numba.njit
def tree_set(tree: np.ndarray, leaves: int, index: np.ndarray, values: np.ndarray) -> None:
    """Write each leaf, then recompute its ancestors from their children, up to the root."""
    for k in range(len(index)):
        node = index[k] + leaves
        tree[node] = values[k]
        node //= 2
        while node >= 1:
            tree[node] = tree[2 * node] + tree[2 * node + 1]
            node //= 2


@numba.njit
def tree_find(tree: np.ndarray, leaves: int, values: np.ndarray) -> np.ndarray:
    """For each prefix sum u: walk down, left if u < left child's sum, else subtract it and go right."""
    found = np.empty(len(values), np.int64)
    for k in range(len(values)):
        node, u = 1, values[k]
        while node < leaves:
            left = tree[2 * node]
            if u >= left:
                u -= left
                node = 2 * node + 1
            else:
                node = 2 * node
        found[k] = node - leaves
    return found


class SumTree:
    """A complete binary tree in one array: leaves hold priorities, each node its children's sum."""

    def __init__(self, capacity: int):
        self.leaves = 1 << max(0, capacity - 1).bit_length()   # M: a power of two >= capacity
        self.tree = np.zeros(2 * self.leaves)

    def __getitem__(self, index):
        return self.tree[np.asarray(index) + self.leaves]

    def __setitem__(self, index, values):
        index = np.ascontiguousarray(index, dtype=np.int64).reshape(-1)
        tree_set(self.tree, self.leaves, index, np.ascontiguousarray(np.broadcast_to(values, index.shape), np.float64))

    def total(self) -> float:
        """The sum of all leaves: the root."""
        return self.tree[1]

    def find_prefix_sum(self, values: np.ndarray) -> np.ndarray:
        """For each u in [0, total): the leaf i with sum(p[:i]) <= u < sum(p[:i+1])."""
        return tree_find(self.tree, self.leaves, np.ascontiguousarray(values, dtype=np.float64))


# %% [markdown]
# Check: priorities 1, 2, 3, 4 must be sampled about 10%, 20%, 30%, 40% of the time, and
# after an update every node still holds the sum of its children.

# %%
# NBVAL_CHECK_OUTPUT
tree = SumTree(5)
tree[np.arange(4)] = [1.0, 2.0, 3.0, 4.0]
print("total:", tree.total())
draws = tree.find_prefix_sum(np.random.default_rng(0).uniform(0, tree.total(), 100_000))
frequencies = np.bincount(draws, minlength=5) / len(draws)
print("sampled frequencies:", np.round(frequencies, 2))
assert tree.total() == 10 and np.allclose(frequencies, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.01)
tree[np.array([0, 0, 3])] = [5.0, 5.0, 0.0]          # repeated indices are harmless
sums_agree = all(tree.tree[i] == tree.tree[2 * i] + tree.tree[2 * i + 1] for i in range(1, tree.leaves))
print("after setting leaf 0 to 5 and leaf 3 to 0: total", tree.total(), "- node sums agree:", sums_agree)
assert tree.total() == 10 and sums_agree and list(tree[np.arange(4)]) == [5.0, 2.0, 3.0, 0.0]

# %% [markdown]
# ### 4.3 The n-step accumulator
#
# All 20 agents step in lockstep and their episodes end together, so one window of the last
# $n$ steps, as arrays of shape (steps, agents, ...), serves all of them. When the window is
# full it emits, for every agent at once, the transition that starts at its oldest step:
# $(s_t, a_t, \sum_{k=0}^{n-1}\gamma^k r_{t+k}, s_{t+n}, \gamma^n)$, where the last field is the
# discount to apply to the bootstrap $Q'(s_{t+n}, \cdot)$. On the done step it drops that
# step (see 3.9) and flushes the window with shorter returns.

# %% tags=["definitions"]
class NStepAccumulator:
    """Turns the stream of (s, a, r, s', done) of all agents into n-step transitions."""

    def __init__(self, n: int, gamma: float, num_agents: int, state_size: int, action_size: int):
        self.n, self.gamma = n, gamma
        self.states = np.zeros((n, num_agents, state_size), np.float32)
        self.actions = np.zeros((n, num_agents, action_size), np.float32)
        self.rewards = np.zeros((n, num_agents), np.float32)
        self.count = 0                                        # steps in the window
        self.discounts = gamma ** np.arange(n + 1)             # 1, g, g^2, ..., g^n

    def push(self, states, actions, rewards, next_states, done: bool):
        """Add one step of all agents; return a batch of transitions (a tuple of arrays) or None."""
        if done:      # next_states is the next episode's start: drop this step, flush the window
            out = self._flush(bootstrap_states=states)
            self.count = 0
            return out
        if self.count == self.n:                              # slide: forget the oldest step
            for window in (self.states, self.actions, self.rewards):
                window[:-1] = window[1:]
            self.count -= 1
        k = self.count
        self.states[k], self.actions[k], self.rewards[k] = states, actions, rewards
        self.count += 1
        if self.count < self.n:
            return None
        # The window holds t .. t+n-1: emit the transition starting at t, bootstrapping at t+n.
        ret = np.einsum("k,ka->a", self.discounts[:self.n], self.rewards)
        disc = np.full(len(ret), self.discounts[self.n], np.float32)
        return self.states[0].copy(), self.actions[0].copy(), ret.astype(np.float32), next_states.copy(), disc

    def _flush(self, bootstrap_states):
        """The window's steps not yet emitted as starts, with returns truncated at the last real state.

        After a full window, its oldest step was already emitted: steps 1..count-1 remain.
        Before the window first fills, all `count` steps remain."""
        first = 1 if self.count == self.n else 0
        m = self.count
        if m - first <= 0:
            return None
        starts = np.arange(first, m)                           # start j covers steps j..m-1
        lengths = m - starts
        # Return of start j: sum_k gamma^k r_{j+k} over the remaining steps, as a triangular sum.
        weights = np.where(np.arange(m)[None, :] >= starts[:, None],
                           self.discounts[np.clip(np.arange(m)[None, :] - starts[:, None], 0, None)], 0.0)
        ret = weights @ self.rewards[:m]                       # (starts, agents)
        agents = self.rewards.shape[1]
        disc = np.repeat(self.discounts[lengths], agents).astype(np.float32)
        boot = np.broadcast_to(bootstrap_states, (len(starts),) + bootstrap_states.shape)
        flat = lambda x: x.reshape((-1,) + x.shape[2:])
        return (flat(self.states[starts]), flat(self.actions[starts]), ret.reshape(-1).astype(np.float32),
                flat(np.array(boot, np.float32)), disc)


# %% [markdown]
# Check with $n = 3$, $\gamma = 0.5$, two agents and rewards $1, 2, 3, 4$ (agent 1 gets 10 times
# more): the first transition's return is $1 + 0.5 \cdot 2 + 0.25 \cdot 3 = 2.75$ with discount
# $0.125$. On the done step, the two pending starts get returns $3 + 0.5 \cdot 4 = 5$ and $4$,
# bootstrapping from the last real state with discounts $0.25$ and $0.5$, and the next episode
# starts with an empty window.

# %%
# NBVAL_CHECK_OUTPUT
acc = NStepAccumulator(n=3, gamma=0.5, num_agents=2, state_size=1, action_size=1)
state = lambda t: np.full((2, 1), t, np.float32)       # the state at time t is "t"
emitted = []
for t, r in enumerate([1.0, 2.0, 3.0, 4.0]):
    out = acc.push(state(t), state(t), np.array([r, 10 * r]), state(t + 1), done=False)
    if out is not None:
        s, a, ret, s_next, disc = out
        emitted.append((s[0, 0], ret[0], s_next[0, 0], disc[0]))
        print(f"t={t}: start s={s[:, 0]}, return={ret}, bootstrap s={s_next[:, 0]}, discount={disc}")
assert emitted == [(0, 2.75, 3, 0.125), (1, 4.5, 4, 0.125)]     # 1 + 2/2 + 3/4; 2 + 3/2 + 4/4
s, a, ret, s_next, disc = acc.push(state(4), state(4), np.array([5.0, 50.0]), state(0), done=True)
print(f"done: starts s={s[:, 0]}, returns={ret}, bootstrap s={s_next[:, 0]}, discounts={disc}")
assert list(s[:, 0]) == [2, 2, 3, 3] and list(ret) == [5, 50, 4, 40] and list(disc) == [0.25, 0.25, 0.5, 0.5]
assert list(s_next[:, 0]) == [4, 4, 4, 4]         # the last real state, never the next episode's
first = acc.push(state(0), state(0), np.array([1.0, 1.0]), state(1), done=False)
print("next episode, first push:", first)
assert first is None

# %% [markdown]
# ### 4.4 The prioritized replay buffer
#
# Preallocated arrays hold the transitions; a ring index overwrites the oldest. The sum tree
# holds $p_i = (|\delta_i| + \epsilon)^\alpha$. Sampling is
# stratified: the total is cut into `batch` equal segments and one prefix sum is drawn in each,
# which spreads the batch over the whole distribution.

# %% tags=["definitions"]
class PrioritizedReplay:
    """Replay of n-step transitions (s, a, R, s', discount), sampled by priority."""

    def __init__(self, capacity: int, state_size: int, action_size: int, alpha: float,
                 eps: float, rng: np.random.Generator):
        self.capacity, self.alpha, self.eps, self.rng = capacity, alpha, eps, rng
        self.states = np.zeros((capacity, state_size), np.float32)
        self.actions = np.zeros((capacity, action_size), np.float32)
        self.returns = np.zeros(capacity, np.float32)
        self.next_states = np.zeros((capacity, state_size), np.float32)
        self.discounts = np.zeros(capacity, np.float32)
        self.priorities = SumTree(capacity)
        self.max_priority = 1.0          # new transitions get the largest priority so far
        self.next, self.size = 0, 0

    def add(self, states, actions, returns, next_states, discounts) -> None:
        idx = (self.next + np.arange(len(returns))) % self.capacity
        self.states[idx], self.actions[idx], self.returns[idx] = states, actions, returns
        self.next_states[idx], self.discounts[idx] = next_states, discounts
        self._set_priority(idx, np.full(len(idx), self.max_priority))
        self.next = (self.next + len(idx)) % self.capacity
        self.size = min(self.size + len(idx), self.capacity)

    def sample(self, batch: int, beta: float):
        """Indices, importance weights w_i = (N P(i))^-beta / max_j w_j (j in the batch), the batch."""
        total = self.priorities.total()
        bounds = (np.arange(batch) + self.rng.random(batch)) * (total / batch)
        idx = np.minimum(self.priorities.find_prefix_sum(bounds), self.size - 1)
        weights = (self.size * self.priorities[idx] / total) ** -beta
        weights /= weights.max()
        batch_arrays = (self.states[idx], self.actions[idx], self.returns[idx],
                        self.next_states[idx], self.discounts[idx])
        return idx, weights.astype(np.float32), batch_arrays

    def update_priorities(self, idx, td_errors) -> None:
        priorities = np.abs(td_errors) + self.eps
        self.max_priority = max(self.max_priority, float(priorities.max()))
        self._set_priority(idx, priorities)

    def _set_priority(self, idx, priorities) -> None:
        self.priorities[idx] = priorities ** self.alpha


# %% [markdown]
# Check: after giving transition 0 a TD error 9 times larger than the others', it is drawn
# about 9/13 of the time with $\alpha = 1$, and its weight is the smallest. The weights equal
# $(N P(i))^{-\beta} / \max_j w_j$ computed directly. And updated out of order, each transition
# holds its own $p_i = (|\delta_i| + \epsilon)^\alpha$.

# %%
# NBVAL_CHECK_OUTPUT
buffer = PrioritizedReplay(8, state_size=1, action_size=1, alpha=1.0, eps=0.0,
                           rng=np.random.default_rng(0))
zeros = np.zeros((5, 1), np.float32)
buffer.add(zeros, zeros, np.arange(5, dtype=np.float32), zeros, np.ones(5, np.float32))
buffer.update_priorities(np.arange(5), np.array([9.0, 1.0, 1.0, 1.0, 1.0]))
idx, weights, _ = buffer.sample(100_000, beta=0.5)
share = np.mean(idx == 0)
print("share of transition 0:", round(share, 3), " expected", round(9 / 13, 3))
assert abs(share - 9 / 13) < 0.01
p = np.array([9.0, 1, 1, 1, 1]) / 13
direct = (5 * p) ** -0.5 / ((5 * p) ** -0.5).max()
found = weights[[np.argmax(idx == 0), np.argmax(idx == 1)]]
print("weights of 0 and 1:", np.round(found, 4), " direct:", np.round(direct[:2], 4))
assert np.allclose(found, direct[:2], rtol=1e-5)
# Each transition gets its own priority p_i = (|delta_i| + eps)^alpha, not a neighbour's.
pr = PrioritizedReplay(8, state_size=1, action_size=1, alpha=0.5, eps=0.25, rng=np.random.default_rng(0))
pr.add(zeros, zeros, np.zeros(5, np.float32), zeros, np.ones(5, np.float32))
td = np.array([0.0, -1.0, 2.0, -3.0, 4.0])
pr.update_priorities(np.array([3, 0, 4, 1, 2]), td[[3, 0, 4, 1, 2]])
print("priorities:", np.round(pr.priorities[np.arange(5)], 3), " expected (|td| + eps)^alpha:",
      np.round((np.abs(td) + 0.25) ** 0.5, 3))
assert np.allclose(pr.priorities[np.arange(5)], (np.abs(td) + 0.25) ** 0.5)

# %% [markdown]
# ### 4.5 NoisyLinear
#
# A linear layer with learnable $\mu$ and $\sigma$ for its weights and biases, and factorised
# noise held in two buffers that the agent sets: Ornstein-Uhlenbeck noise when acting, fresh
# Gaussian noise when learning, nothing (the mean weights $\mu$) for evaluation and for the
# target actor.

# %% tags=["definitions"]
class NoisyLinear(nn.Module):
    """y = (mu_w + sigma_w * f(eps_out) f(eps_in)^T) x + mu_b + sigma_b * f(eps_out)  [4]."""

    def __init__(self, in_features: int, out_features: int, sigma0: float = 0.5):
        super().__init__()
        bound = in_features ** -0.5
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma0 * bound))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma0 * bound))
        self.register_buffer("eps_in", torch.zeros(in_features))
        self.register_buffer("eps_out", torch.zeros(out_features))
        self.noisy = True

    def set_noise(self, eps: torch.Tensor) -> None:
        """eps: in_features + out_features standard normal numbers."""
        f = eps.sign() * eps.abs().sqrt()
        self.eps_in.copy_(f[: self.eps_in.numel()])
        self.eps_out.copy_(f[self.eps_in.numel():])

    def extra_repr(self) -> str:
        return f"in_features={self.eps_in.numel()}, out_features={self.eps_out.numel()}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.noisy:
            return F.linear(x, self.weight_mu, self.bias_mu)
        if self.eps_in.dim() == 2:       # a noise sample per row of x: (sigma_w * f_out f_in^T) x = f_out * (sigma_w (f_in * x))
            noise = F.linear(x * self.eps_in, self.weight_sigma, self.bias_sigma)
            return F.linear(x, self.weight_mu, self.bias_mu) + self.eps_out * noise
        weight = self.weight_mu + self.weight_sigma * torch.outer(self.eps_out, self.eps_in)
        return F.linear(x, weight, self.bias_mu + self.bias_sigma * self.eps_out)


# %% [markdown]
# Check: the noise is factorised as in [4]: $f(x) = \operatorname{sgn}(x)\sqrt{|x|}$ of the input
# and output noise, their outer product on the weights; $\sigma$ starts at $\sigma_0/\sqrt{p}$ and
# $\mu$ within $\pm 1/\sqrt{p}$. With noise off the output uses $\mu$ alone; and a gradient step
# changes $\sigma$, so $\sigma$ is learned.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
layer = NoisyLinear(3, 2, sigma0=0.5)
print(layer)
x = torch.randn(4, 3)
assert torch.allclose(layer.weight_sigma, torch.full((2, 3), 0.5 / 3 ** 0.5))     # sigma0 / sqrt(p)
assert layer.weight_mu.abs().max() <= 3 ** -0.5 and layer.bias_mu.abs().max() <= 3 ** -0.5
layer.noisy = False
assert torch.allclose(layer(x), x @ layer.weight_mu.T + layer.bias_mu)
eps = torch.tensor([4.0, -0.25, 0.0, -9.0, 1.0])      # 3 inputs, then 2 outputs
layer.noisy = True
layer.set_noise(eps)
f = lambda e: e.sign() * e.abs().sqrt()
print("f(eps_in):", layer.eps_in.tolist(), " f(eps_out):", layer.eps_out.tolist())
assert layer.eps_in.tolist() == [2.0, -0.5, 0.0] and layer.eps_out.tolist() == [-3.0, 1.0]
weight = layer.weight_mu + layer.weight_sigma * torch.outer(f(eps[3:]), f(eps[:3]))   # factorised
bias = layer.bias_mu + layer.bias_sigma * f(eps[3:])
assert torch.allclose(layer(x), x @ weight.T + bias)
sigma_before = layer.weight_sigma.detach().clone()
layer(x).sum().backward()
torch.optim.SGD(layer.parameters(), lr=0.1).step()
print("sigma changed by a gradient step:", not torch.equal(sigma_before, layer.weight_sigma))
assert not torch.equal(sigma_before, layer.weight_sigma)
# One noise sample per row (per arm): each row's output is that of its own factorised weights.
f_in, f_out = f(torch.randn(4, 3)), f(torch.randn(4, 2))
layer.eps_in, layer.eps_out = f_in, f_out
own = torch.stack([x[k] @ (layer.weight_mu + layer.weight_sigma * torch.outer(f_out[k], f_in[k])).T
                   + layer.bias_mu + layer.bias_sigma * f_out[k] for k in range(4)])
print("per-row noise gives each row its own noisy weights:", torch.allclose(layer(x), own, atol=1e-6))
assert torch.allclose(layer(x), own, atol=1e-6)

# %% [markdown]
# ### 4.6 Actor, critic and the Ornstein-Uhlenbeck process
#
# The actor maps a state to 4 actions through two hidden ReLU layers and a $\tanh$, which keeps
# actions in $[-1, 1]$. With NoisyNet exploration all its layers are `NoisyLinear`; otherwise
# plain `Linear` (the ablations use that). The critic takes state and action together through
# two hidden ReLU layers to one value. Both see states standardised by the running mean and
# variance of all states seen (`Normalizer`). The Ornstein-Uhlenbeck process returns its
# **state**, which is what makes it correlated in time (returning the fresh Gaussian increment
# instead gives white noise).

# %% tags=["definitions"]
class Actor(nn.Module):
    def __init__(self, state_size: int, action_size: int, hidden=(256, 256), noisy: bool = True,
                 sigma0: float = 0.5, noise_rows: int | None = None):
        """noise_rows: None for one noise sample for a whole batch; k for one per row of k states."""
        super().__init__()
        sizes = (state_size, *hidden, action_size)
        make = (lambda i, o: NoisyLinear(i, o, sigma0)) if noisy else nn.Linear
        self.layers = nn.ModuleList(make(i, o) for i, o in zip(sizes[:-1], sizes[1:]))
        self.noisy_layers = [m for m in self.layers if isinstance(m, NoisyLinear)]
        self.noise_size = sum(m.eps_in.numel() + m.eps_out.numel() for m in self.noisy_layers)
        # All layers' noise in one buffer, the layers' buffers views into it: new noise is one operation.
        shape = (self.noise_size,) if noise_rows is None else (noise_rows, self.noise_size)
        self.register_buffer("noise", torch.zeros(shape))
        start = 0
        for layer in self.noisy_layers:
            for name in ("eps_in", "eps_out"):
                size = getattr(layer, name).numel()
                setattr(layer, name, self.noise[..., start:start + size])
                start += size

    def set_noise(self, eps: torch.Tensor | None) -> None:
        """Noise for every noisy layer (`noise_size` numbers, or a row of them for each of
        `noise_rows` states), or None for the mean weights."""
        for layer in self.noisy_layers:
            layer.noisy = eps is not None
        if eps is not None:
            self.noise.copy_(eps.sign() * eps.abs().sqrt())      # f(eps) of NoisyLinear, all layers at once

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        x = state
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return torch.tanh(self.layers[-1](x))


class Critic(nn.Module):
    def __init__(self, state_size: int, action_size: int, hidden=(256, 256)):
        super().__init__()
        sizes = (state_size + action_size, *hidden)
        self.hidden = nn.ModuleList(nn.Linear(i, o) for i, o in zip(sizes[:-1], sizes[1:]))
        self.out = nn.Linear(sizes[-1], 1)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([state, action], dim=-1)
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.out(x).squeeze(-1)


class Normalizer(nn.Module):
    """Standardises states with the running mean and variance of every state seen so far.

    The Reacher's inputs range from quaternions within [-1, 1] to linear velocities near 50;
    scaled alike, they train faster. Its statistics are buffers, so they are saved with the
    weights and traced into the exported actor."""

    def __init__(self, size: int, clip: float = 5.0):
        super().__init__()
        self.clip = clip
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.tensor(1e-4))

    def update(self, x: torch.Tensor) -> None:
        """Merge a batch's mean and variance into the running ones (Chan et al.'s formula)."""
        n, mean, var = x.shape[0], x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = mean - self.mean
        self.var.copy_((self.var * self.count + var * n + delta.pow(2) * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / (self.var + 1e-8).sqrt()).clamp(-self.clip, self.clip)


class OrnsteinUhlenbeck:
    """x <- (1 - theta) x + sigma sqrt(1 - (1 - theta)^2) xi: stationary std sigma, and
    correlation (1 - theta)^k between steps k apart. Returns the process's state."""

    def __init__(self, shape, theta: float, sigma: float, generator: torch.Generator):
        self.theta, self.sigma, self.generator = theta, sigma, generator
        self.state = sigma * torch.randn(shape, generator=generator)   # start in the stationary law

    def sample(self) -> torch.Tensor:
        kick = torch.randn(self.state.shape, generator=self.generator)
        self.state = (1 - self.theta) * self.state + self.sigma * (1 - (1 - self.theta) ** 2) ** 0.5 * kick
        return self.state


# %% [markdown]
# Check: the networks at the sizes the training uses (`Config().hidden`) and their output
# ranges; the normaliser turns states of mean 3 and standard deviation 2 into mean 0 and
# deviation 1; the process's correlation is about $(1 - 0.15)^{k}$ at lag $k$, with unit variance.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
hidden = Config().hidden
actor, critic = Actor(33, 4, hidden), Critic(33, 4, hidden)
print(actor)
print(critic)
count = lambda m: sum(p.numel() for p in m.parameters())
print(f"parameters: actor {count(actor):,}, critic {count(critic):,}")
s = torch.randn(20, 33)
actor.set_noise(torch.randn(actor.noise_size))
a, q = actor(s), critic(s, actor(s))
print("actions:", tuple(a.shape), "within [-1, 1]:", bool(a.abs().max() <= 1), " Q:", tuple(q.shape))
assert a.shape == (20, 4) and a.abs().max() <= 1 and q.shape == (20,)
assert actor.noise_size == sum(i + o for i, o in zip((33, *hidden), (*hidden, 4)))
eps = torch.randn(actor.noise_size)
actor.set_noise(eps)
first = actor.noisy_layers[0]
f = lambda e: e.sign() * e.abs().sqrt()
assert torch.equal(first.eps_in, f(eps[:33])) and torch.equal(first.eps_out, f(eps[33:33 + hidden[0]]))
norm = Normalizer(33)
for _ in range(50):
    norm.update(3 + 2 * torch.randn(20, 33))
z = norm(3 + 2 * torch.randn(1000, 33))
print(f"normaliser: mean {norm.mean.mean():.1f}, std {norm.var.sqrt().mean():.1f}; "
      f"standardised: mean {z.mean():.1f}, std {z.std():.1f}")
assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
ou = OrnsteinUhlenbeck(20_000, theta=0.15, sigma=1.0, generator=torch.Generator().manual_seed(0))
path = torch.stack([ou.sample() for _ in range(11)])
lags = [torch.corrcoef(torch.stack([path[0], path[k]]))[0, 1].item() for k in (1, 5, 10)]
print("OU std:", round(path.std().item(), 1), " correlation at lags 1, 5, 10:", [round(c, 2) for c in lags],
      " expected:", [round(0.85 ** k, 2) for k in (1, 5, 10)])
assert abs(path.std() - 1) < 0.05 and np.allclose(lags, [0.85 ** k for k in (1, 5, 10)], atol=0.03)

# %% [markdown]
# ### 4.7 One flat tensor per network
#
# A learning update ends with three operations over every parameter of a network: the
# optimiser's step, the critic's gradient clip and the soft target update. Done layer by layer,
# each is a Python loop of small operations, and on a CPU their overhead costs more than their
# arithmetic. So each network's parameters are moved into **one flat tensor**, each layer's
# weight becoming a view into it, and likewise their gradients: the layers compute as before,
# and the optimiser, the clip and the soft update each see one tensor, one operation per network.

# %% tags=["definitions"]
def flatten_parameters(module: nn.Module) -> nn.Parameter:
    """Move all of `module`'s parameters into one flat parameter; each becomes a view into it,
    and each gradient a view into its gradient (kept allocated: zero it, do not set it to None)."""
    params = list(module.parameters())
    flat = nn.Parameter(torch.cat([p.detach().reshape(-1) for p in params]), params[0].requires_grad)
    flat.grad = torch.zeros_like(flat)
    start = 0
    for p in params:
        p.data = flat.data[start:start + p.numel()].view_as(p)
        p.grad = flat.grad[start:start + p.numel()].view_as(p)
        start += p.numel()
    return flat


# %% [markdown]
# Check: the network computes the same after flattening; a backward pass writes the gradients
# into the flat gradient; one in-place operation on the flat tensor changes every layer.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
net = Critic(33, 4, (16, 16))
s, a = torch.randn(8, 33), torch.randn(8, 4)
before = net(s, a).detach().clone()
flat = flatten_parameters(net)
print(f"one flat tensor of {flat.numel()} parameters for {len(list(net.parameters()))} weight and bias tensors")
assert torch.equal(net(s, a), before)
net(s, a).sum().backward()
print("the gradients landed in the flat gradient:", bool(flat.grad.abs().sum() > 0))
assert flat.grad.abs().sum() > 0 and torch.equal(flat.grad, torch.cat([p.grad.reshape(-1) for p in net.parameters()]))
with torch.no_grad():
    flat.mul_(0)
print("after one in-place operation on the flat tensor, every layer is zero:",
      all(p.abs().max() == 0 for p in net.parameters()))
assert all(p.abs().max() == 0 for p in net.parameters())

# %% [markdown]
# ### 4.8 The agent
#
# `act` runs the **behaviour policy** on all 20 states at once: a copy of the normaliser and the
# actor, plus the exploration noise of this step, refreshed from the learner's networks by
# `refresh_behaviour`. A separate copy lets another process act with it while this one learns
# (4.9). `begin_episode` sets the episode's $n$ (3.4) and how often it learns (3.8). `step`
# updates the state statistics, feeds the n-step accumulator, stores what it emits, and learns
# every `learn_every` steps once the buffer holds `warmup` transitions.
# `learn` is section 3.3's steps 3 to 6; the soft update is one in-place `lerp_` per network.

# %% tags=["definitions"]
class Behaviour(nn.Module):
    """What acts: a copy of the normaliser and the actor, and the action noise of this step."""

    def __init__(self, norm: Normalizer, actor: Actor, num_agents: int, action_size: int):
        super().__init__()
        self.norm, self.actor = norm, actor
        self.register_buffer("action_noise", torch.zeros(num_agents, action_size))

    @torch.no_grad()
    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return (self.actor(self.norm(states)) + self.action_noise).clamp(-1, 1)


class Agent:
    def __init__(self, cfg: Config, state_size: int, action_size: int, num_agents: int):
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        noisy = cfg.exploration == "noisynet"
        make_actor = lambda rows=None: Actor(state_size, action_size, cfg.hidden, noisy, cfg.noisy_sigma0, rows)
        self.actor, self.actor_target = make_actor(), make_actor()
        self.critic = Critic(state_size, action_size, cfg.hidden)
        self.critic_target = Critic(state_size, action_size, cfg.hidden)
        self.actor_target.requires_grad_(False)
        self.critic_target.requires_grad_(False)
        self.actor_target.load_state_dict(self.actor.state_dict())
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.actor_target.set_noise(None)                # targets use the mean weights
        # Each network as one flat tensor (4.7): one optimiser step, clip and soft update each.
        self.actor_params, self.critic_params = flatten_parameters(self.actor), flatten_parameters(self.critic)
        self.actor_target_params = flatten_parameters(self.actor_target)
        self.critic_target_params = flatten_parameters(self.critic_target)
        self.norm = Normalizer(state_size)
        self.actor_opt = torch.optim.Adam([self.actor_params], lr=cfg.actor_lr, fused=True)
        self.critic_opt = torch.optim.Adam([self.critic_params], lr=cfg.critic_lr, fused=True)
        rows = num_agents if cfg.noise_per_arm else None              # the acting noise: per arm or shared
        self.behaviour = Behaviour(Normalizer(state_size), make_actor(rows).requires_grad_(False), num_agents, action_size)
        behaviour_params = flatten_parameters(self.behaviour.actor)
        self.behaviour_copies = [(behaviour_params, self.actor_params),         # (to, from), refreshed each step
                                 *zip(self.behaviour.norm.buffers(), self.norm.buffers())]
        self.memory = PrioritizedReplay(cfg.buffer_size, state_size, action_size, cfg.alpha,
                                        cfg.priority_eps, self.rng)
        self.sizes = (num_agents, state_size, action_size)
        self.nstep = NStepAccumulator(cfg.n_step, cfg.gamma, *self.sizes)
        self.begin_episode(1)
        shape = tuple(self.behaviour.actor.noise.shape) if noisy else (num_agents, action_size)
        sigma = 1.0 if noisy else cfg.action_noise
        self.noise = OrnsteinUhlenbeck(shape, cfg.noise_theta, sigma, self.gen)
        self.steps, self.updates = 0, 0

    @torch.no_grad()
    def refresh_behaviour(self, explore: bool = True) -> None:
        """Copy the learner's actor and state statistics into the behaviour policy, with this
        step's exploration noise (none: NoisyNet's noise at zero gives the mean weights)."""
        b = self.behaviour
        for to, source in self.behaviour_copies:
            to.copy_(source)
        if self.cfg.exploration == "noisynet":
            b.actor.set_noise(self.noise.sample() if explore else torch.zeros(b.actor.noise_size))
        elif explore and self.cfg.exploration == "ou":
            b.action_noise.copy_(self.noise.sample())
        elif explore and self.cfg.exploration == "gaussian":
            b.action_noise.normal_(0, self.cfg.action_noise, generator=self.gen)
        else:
            b.action_noise.zero_()

    def begin_episode(self, episode: int) -> None:
        """This episode's n (growing from 1, 3.4) and learning interval (3.8); episodes count from 1."""
        cfg = self.cfg
        n = min(cfg.n_step, 1 + (episode - 1) // cfg.n_step_ramp) if cfg.n_step_ramp else cfg.n_step
        if n != self.nstep.n:                            # between episodes the window is empty
            self.nstep = NStepAccumulator(n, cfg.gamma, *self.sizes)
        self.learn_every = cfg.learn_every if episode <= cfg.fast_episodes else cfg.learn_every_later

    def act(self, states: np.ndarray, explore: bool = True) -> np.ndarray:
        self.refresh_behaviour(explore)
        return self.behaviour(torch.as_tensor(states, dtype=torch.float32)).numpy()

    def step(self, states, actions, rewards, next_states, done: bool) -> None:
        self.norm.update(torch.as_tensor(states, dtype=torch.float32))
        transitions = self.nstep.push(states, actions, rewards, next_states, done)
        if transitions is not None:
            self.memory.add(*transitions)
        self.steps += 1
        ready = self.memory.size >= max(self.cfg.warmup, self.cfg.batch_size)
        if ready and self.steps % self.learn_every == 0:
            for _ in range(self.cfg.updates_per_learn):
                self.learn()

    def beta(self) -> float:
        return min(1.0, self.cfg.beta_start + (1 - self.cfg.beta_start) * self.steps / self.cfg.beta_steps)

    def learn(self) -> tuple[float, float]:
        idx, weights, batch = self.memory.sample(self.cfg.batch_size, self.beta())
        s, a, ret, s_next, disc = (torch.from_numpy(x) for x in batch)
        s, s_next = self.norm(s), self.norm(s_next)      # the replay keeps raw states
        w = torch.from_numpy(weights)
        # Critic: y = R + gamma^m Q'(s', mu'(s')), no terminal flag (time limits bootstrap).
        with torch.no_grad():
            y = ret + disc * self.critic_target(s_next, self.actor_target(s_next))
        td = y - self.critic(s, a)
        critic_loss = (w * td.pow(2)).mean()
        self.critic_params.grad.zero_()                  # zero, not None: the layers' gradients are views
        critic_loss.backward()
        grad = self.critic_params.grad                   # clip its norm to grad_clip: one flat tensor, two operations
        grad.mul_((self.cfg.grad_clip / (torch.linalg.vector_norm(grad) + 1e-6)).clamp_(max=1.0))
        self.critic_opt.step()
        self.updates += 1
        self.memory.update_priorities(idx, td.detach().numpy())
        # Actor: climb Q with fresh independent noise, so that sigma is learned too. The critic is
        # frozen for this pass: its input gradient dQ/da is needed, its weight gradients are not.
        if self.cfg.exploration == "noisynet":
            self.actor.set_noise(torch.randn(self.actor.noise_size, generator=self.gen))
        self.critic.requires_grad_(False)
        actor_loss = -self.critic(s, self.actor(s)).mean()
        self.actor_params.grad.zero_()
        actor_loss.backward()
        self.critic.requires_grad_(True)
        self.actor_opt.step()
        # Soft updates, in place, one operation per network: target <- target + tau (online - target).
        with torch.no_grad():
            self.actor_target_params.lerp_(self.actor_params, self.cfg.tau)
            self.critic_target_params.lerp_(self.critic_params, self.cfg.tau)
        return critic_loss.item(), actor_loss.item()


# %% [markdown]
# Check: one learning update on made-up transitions gives finite losses, moves the targets by
# exactly $\tau$ of the gap, and changes the priorities of the sampled transitions.

# %%
# NBVAL_CHECK_OUTPUT
check = Agent(Config(buffer_size=1000, batch_size=32, warmup=0, n_step_ramp=0), state_size=33, action_size=4, num_agents=20)
fake = np.random.default_rng(1)
for t in range(12):
    s = fake.standard_normal((20, 33)).astype(np.float32)
    check.step(s, check.act(s), fake.random(20).astype(np.float32), s, done=False)
print("transitions stored:", check.memory.size, " updates so far:", check.updates)
assert check.memory.size == 20 * (12 - 4) and check.updates == 12 - 5   # first transition after n = 5 steps
before = [p.detach().clone() for p in check.critic_target.parameters()]
losses = check.learn()
after_online = list(check.critic.parameters())
moved = all(torch.allclose(t, b + check.cfg.tau * (o - b), atol=1e-7)
            for t, b, o in zip(check.critic_target.parameters(), before, after_online))
changed = not np.allclose(check.memory.priorities[np.arange(check.memory.size)], 1.0)
print("losses finite:", all(np.isfinite(losses)), " target moved by tau:", moved, " priorities changed:", changed)
assert all(np.isfinite(losses)) and moved and changed
check.actor.set_noise(None)
mean_actions = check.actor(check.norm(torch.as_tensor(s))).clamp(-1, 1)
noise_free = torch.equal(torch.as_tensor(check.act(s, explore=False)), mean_actions)
print("the behaviour policy without noise acts as the actor's mean weights:", noise_free)
assert noise_free
ramp = Agent(Config(buffer_size=1000), state_size=33, action_size=4, num_agents=20)
schedule = {}
fast = ramp.cfg.fast_episodes
for episode in (1, 4, 5, 9, 13, 17, fast, fast + 1, 100):
    ramp.begin_episode(episode)
    schedule[episode] = (ramp.nstep.n, ramp.learn_every)
print("episode: (n, learn every k steps):", schedule)
assert schedule[1] == (1, 1) and schedule[5] == (2, 1) and schedule[17] == (5, 1)
assert schedule[fast] == (5, 1) and schedule[fast + 1] == (5, ramp.cfg.learn_every_later)

# %% [markdown]
# ### 4.9 The environment worker: stepping while learning
#
# A training step has two halves: the environment steps the 20 arms with the behaviour policy,
# then the learner stores the step and updates the networks. Done one after the other, one of
# the machine's cores idles. `EnvRunner` moves the first half into a second process: `request`
# starts a step there and returns at once, `result` collects it. The training loop (5.3) asks
# for step $t+1$ **before** it learns from step $t$, so the environment steps while the networks
# update. The price: step $t+1$ acts with the weights from before the update of step $t$, one
# update behind (an update moves them by a learning rate of $10^{-3}$).
#
# The second process is a `fork` of this one: it inherits the environment as it is, and reads
# the behaviour policy from shared memory, which the learner refreshes only between `result`
# and the next `request`, when the worker waits. So every number is the same as when the runner
# does the work inline (`process=False`: `result` steps the environment itself), which is what
# happens for a Unity build (the Unity player already runs in a process of its own) and where
# `fork` does not exist (Windows). An error in the worker (a NaN action, a wrong shape) is raised
# again here, with its message; Ctrl-C stops the learner, which stops the worker.
#
# **Off by default** (`Config.env_process = False`). On the 2-core machine this project is
# measured on, the worker's gain is smaller than the machine's timings vary from one session to
# the next (the README's "Training speed" profiles both ways), and the report's experiments run
# two trainings at a time, one per core, where a worker per run would only crowd the cores.
# `Config(env_process=True)` turns it on; the numbers are the same either way.

# %% tags=["definitions"]
class EnvRunner:
    """Steps `env` with the `behaviour` policy, in a forked worker process or inline."""

    @staticmethod
    def can_fork(env) -> bool:
        """A worker process pays for the built-in Reacher, which steps in this process, where fork exists."""
        return hasattr(env, "physics") and "fork" in multiprocessing.get_all_start_methods()

    def __init__(self, env, behaviour: Behaviour, process: bool):
        self.env, self.behaviour, self.brain = env, behaviour, env.brain_names[0]
        self.states, self.pending, self.worker = None, None, None
        if process:
            behaviour.share_memory()                     # the worker reads the refreshed weights
            context = multiprocessing.get_context("fork")
            self.conn, child = context.Pipe()
            self.worker = context.Process(target=self._serve, args=(child,), daemon=True)
            self.worker.start()
            child.close()

    def _run(self, command: str):
        if command == "reset":
            self.states = self.env.reset(train_mode=True)[self.brain].vector_observations
            return self.states
        if command == "step":
            states = self.states
            actions = self.behaviour(torch.as_tensor(states, dtype=torch.float32)).numpy()
            info = self.env.step(actions)[self.brain]
            self.states = info.vector_observations
            return states, actions, np.asarray(info.rewards), self.states, any(info.local_done)
        if command == "random_state":                    # the goals' generator, for checkpoints
            return self.env.physics.rng.bit_generator.state if hasattr(self.env, "physics") else None
        raise ValueError(f"EnvRunner: unknown command {command!r}")

    def _serve(self, conn) -> None:
        """The worker's loop: run each command, send back (True, result) or (False, error)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the learner's to handle
        torch.set_num_threads(1)
        while (command := conn.recv()) != "close":
            try:
                conn.send((True, self._run(command)))
            except BaseException as error:
                conn.send((False, error))

    def request(self, command: str) -> None:
        if not self.worker:
            self.pending = command
            return
        try:
            self.conn.send(command)
        except OSError:                                  # a broken pipe: the worker is gone
            raise self._died() from None

    def result(self):
        if not self.worker:
            return self._run(self.pending)
        try:
            ok, value = self.conn.recv()
        except (EOFError, OSError):                      # nothing more will come: the worker is gone
            raise self._died() from None
        if not ok:
            raise value
        return value

    def _died(self) -> RuntimeError:
        self.worker.join(timeout=1)
        return RuntimeError(f"the environment worker died (exit code {self.worker.exitcode})")

    def __call__(self, command: str):
        self.request(command)
        return self.result()

    def close(self) -> None:
        if self.worker:
            if self.worker.is_alive():
                self.conn.send("close")
            self.worker.join(timeout=10)
            if self.worker.is_alive():
                self.worker.kill()
            self.conn.close()
            self.worker = None


# %% [markdown]
# Check: a worker process and the inline runner, each on its own copy of the environment and
# both fed the same behaviour policy, refreshed between steps as in training, return identical
# transitions; and the worker's errors arrive here. (The environment here is the notebook's
# `env`; for a Unity build the runner works inline.)

# %%
# NBVAL_CHECK_OUTPUT
def three_steps(process: bool) -> list:
    agent = Agent(Config(buffer_size=1000), state_size, action_size, num_agents)
    runner = EnvRunner(env, agent.behaviour, process=process and EnvRunner.can_fork(env))
    try:
        runner("reset")
        out = []
        for t in range(3):
            agent.refresh_behaviour()
            runner.request("step")
            out.append(runner.result())
            with torch.no_grad():
                agent.actor_params.add_(0.01)            # as if the learner had updated the actor
        return out
    finally:
        runner.close()


forked, inline = three_steps(process=True), three_steps(process=False)
same = all(all(np.array_equal(x, y) for x, y in zip(a, b)) for a, b in zip(forked, inline))
print("worker process and inline runner give identical transitions:", same)
assert same and not np.array_equal(forked[0][1], forked[1][1])
runner = EnvRunner(env, Agent(Config(buffer_size=1000), state_size, action_size, num_agents).behaviour,
                   process=EnvRunner.can_fork(env))
try:
    runner("teleport")
except ValueError as error:
    print("an error in the worker arrives here:", error)
finally:
    runner.close()

# %% [markdown]
# ## 5. Training
#
# ### 5.1 Checkpoints: nothing is lost, and nothing stale is reused
#
# Every `checkpoint_every` episodes the loop saves everything needed to go on: networks,
# optimisers, the replay buffer, the scores and every random state. A rerun resumes from it,
# so an interrupted run loses at most a few episodes. A checkpoint is reused only by the same
# configuration **and the same code**: it stores a fingerprint of the definitions above (their
# compiled code: comments and blank lines do not count, any change to what runs does). A student
# who edits `Agent.learn` and reruns gets a fresh run, with the old checkpoint kept aside.

# %% tags=["definitions"]
def code_fingerprint(*objects) -> str:
    """SHA-256 of the compiled code of classes and functions: bytecode, constants, names and
    default arguments, recursively; not comments, blank lines or line numbers."""
    digest = hashlib.sha256()

    def add(value):
        if isinstance(value, types.CodeType):
            digest.update(value.co_code + repr((value.co_names, value.co_varnames)).encode())
            for const in value.co_consts:
                add(const)
        elif isinstance(value, (staticmethod, classmethod)):
            add(value.__func__)
        elif isinstance(value, property):
            add(value.fget)
        elif isinstance(value, types.FunctionType):
            add(value.__code__)
            add(value.__defaults__)
        elif isinstance(value, type):
            for name, member in sorted(vars(value).items()):
                if not name.startswith("__") or isinstance(member, types.FunctionType):
                    digest.update(name.encode())
                    add(member)
        elif isinstance(value, tuple):
            for item in value:
                add(item)
        elif isinstance(value, frozenset):       # `x in {"a", "b"}` compiles to one: its order
            for item in sorted(value, key=repr):  # follows the string hash, new in every process
                add(item)
        elif value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            digest.update(repr(value).encode())

    for obj in objects:
        add(obj)
    return digest.hexdigest()


def save_checkpoint(path: str, agent: Agent, env_random, episode: int, history: dict, fingerprint: str) -> None:
    """Everything needed to resume after `episode`: a state file and the replay arrays."""
    os.makedirs(path, exist_ok=True)
    m = agent.memory
    np.savez(os.path.join(path, "replay.tmp.npz"), states=m.states[:m.size], actions=m.actions[:m.size],
             returns=m.returns[:m.size], next_states=m.next_states[:m.size], discounts=m.discounts[:m.size],
             priorities=m.priorities[np.arange(m.size)])
    state = {
        "config": asdict(agent.cfg), "code": fingerprint, "episode": episode, "history": history, "steps": agent.steps,
        "nets": {k: getattr(agent, k).state_dict() for k in ("actor", "critic", "actor_target", "critic_target", "norm")},
        "opts": {"actor": agent.actor_opt.state_dict(), "critic": agent.critic_opt.state_dict()},
        "memory": {"next": m.next, "size": m.size, "max_priority": m.max_priority},
        "random": {"numpy": agent.rng.bit_generator.state, "torch": agent.gen.get_state(),
                   "torch_global": torch.get_rng_state(), "noise": agent.noise.state,
                   "env": env_random},
    }
    torch.save(state, os.path.join(path, "state.tmp.pt"))
    os.replace(os.path.join(path, "replay.tmp.npz"), os.path.join(path, "replay.npz"))   # atomic
    os.replace(os.path.join(path, "state.tmp.pt"), os.path.join(path, "state.pt"))


def set_aside(path: str) -> str:
    """Rename a checkpoint folder to the first free `<path>.old-<k>`; never delete it."""
    k = 1
    while os.path.exists(f"{path}.old-{k}"):
        k += 1
    os.rename(path, f"{path}.old-{k}")
    return f"{path}.old-{k}"


def load_checkpoint(path: str, agent: Agent, env, fingerprint: str) -> tuple[int, dict] | None:
    """Restore a checkpoint of the same configuration and code; return (episode, history)."""
    file = os.path.join(path, "state.pt")
    if not os.path.exists(file):
        return None
    state = torch.load(file, weights_only=False)
    extendable = {"max_episodes", "stop_when_solved", "checkpoint_every"}     # may change on resume
    same = lambda cfg: {k: v for k, v in cfg.items() if k not in extendable}
    if same(state["config"]) != same(asdict(agent.cfg)):
        print(f"Checkpoint in {path} has another configuration: starting afresh (kept in {set_aside(path)}).")
        return None
    if state.get("code") != fingerprint:
        print(f"Checkpoint in {path} was made by other code (the definitions changed): starting afresh "
              f"(kept in {set_aside(path)}).")
        return None
    for k, sd in state["nets"].items():
        getattr(agent, k).load_state_dict(sd)
    agent.actor_target.set_noise(None)
    agent.actor_opt.load_state_dict(state["opts"]["actor"])
    agent.critic_opt.load_state_dict(state["opts"]["critic"])
    replay, m = np.load(os.path.join(path, "replay.npz")), agent.memory
    n = len(replay["returns"])
    for name in ("states", "actions", "returns", "next_states", "discounts"):
        getattr(m, name)[:n] = replay[name]
    m.priorities[np.arange(n)] = replay["priorities"]
    m.next, m.size, m.max_priority = state["memory"]["next"], state["memory"]["size"], state["memory"]["max_priority"]
    agent.rng.bit_generator.state = state["random"]["numpy"]
    agent.gen.set_state(state["random"]["torch"])
    torch.set_rng_state(state["random"]["torch_global"])
    agent.noise.state = state["random"]["noise"]
    if state["random"]["env"] is not None and hasattr(env, "physics"):
        env.physics.rng.bit_generator.state = state["random"]["env"]
    agent.steps = state["steps"]
    return state["episode"], state["history"]


# %% [markdown]
# ### 5.2 What the loop shows, and what it saves
#
# A progress bar (`tqdm.auto`: a widget in JupyterLab), a log line every 5 episodes, and one
# learning-curve figure redrawn in place through a display handle, so the printed log stays. The
# bar ends the way the run ended: full, at the episode where it stopped; its last state is also
# written as text, which is what GitHub and nbviewer show. At the end the actor, with its input
# normaliser, is exported with `torch.export`, loadable without these classes. The scores are
# saved per episode (`scores.csv`: mean, worst and best arm) and per arm (`arm_scores.csv`), so
# that the report can show the worst arm next to every mean.

# %% tags=["definitions"]
def plot_scores(history: dict, target: float, ax=None):
    """Per-episode 20-agent mean with the min-max band, 100-episode average, line at target."""
    ax = ax or plt.gca()
    ax.clear()
    episodes = np.arange(1, len(history["mean"]) + 1)
    ax.fill_between(episodes, history["min"], history["max"], alpha=0.25, label="min-max over the 20 agents")
    ax.plot(episodes, history["mean"], lw=1.5, label="mean over the 20 agents")
    ax.plot(episodes, history["avg100"], lw=2, label="mean of the last 100 episodes")
    ax.axhline(target, color="k", ls="--", lw=1, label=f"solved: {target:g}")
    if history.get("solved_at"):
        ax.axvline(history["solved_at"], color="g", ls=":", label=f"solved at episode {history['solved_at']}")
    ax.set_xlabel("episode")
    ax.set_ylabel("score")
    ax.set_ylim(0, 41)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    return ax


class Progress:
    """tqdm.auto's bar over episodes that ends at the episode where the run stopped. In a
    notebook it is shown through a display handle, so that its text form, which static
    renderers show instead of the widget, can be brought up to date when the run ends."""

    def __init__(self, total: int, initial: int, live: bool):
        notebook = live and any(c.__module__ == "tqdm.notebook" for c in tqdm.__mro__)   # the widget bar
        kwargs = {"display": False} if notebook else {"disable": not live}
        self.bar = tqdm(total=total, initial=initial, desc="episodes", unit="episode", **kwargs)
        self.handle = display(self.bar.container, display_id=True) if notebook else None

    def update(self, **scores) -> None:
        self.bar.set_postfix(scores, refresh=False)
        self.bar.update(1)

    def close(self, episode: int) -> None:
        self.bar.total = episode                      # stopped early because solved: still full
        if self.handle:
            self.bar.container.children[1].max = episode
        self.bar.close()
        if self.handle:
            self.handle.update(self.bar.container)    # its text form now reads episode/episode


def save_results(run_dir: str, agent: Agent, history: dict, state_size: int, env) -> None:
    """Weights, the exported policy, configuration, per-episode scores and a summary.

    The exported policy is the **target actor** (3.2) with the state normaliser: the Polyak
    average of the recent actors, without noise. The last online actor carries the noise of its
    last few updates; their average does not (section 7 plays both)."""
    os.makedirs(run_dir, exist_ok=True)
    torch.save(agent.actor.state_dict(), os.path.join(run_dir, "actor.pt"))
    torch.save(agent.actor_target.state_dict(), os.path.join(run_dir, "actor_target.pt"))
    torch.save(agent.critic.state_dict(), os.path.join(run_dir, "critic.pt"))
    torch.save(agent.norm.state_dict(), os.path.join(run_dir, "normalizer.pt"))
    policy = copy.deepcopy(nn.Sequential(agent.norm, agent.actor_target)).eval()
    for p in policy.parameters():
        p.data = p.data.clone()           # a tensor of its own for each weight, not a view into a flat one (4.7)
    # Any number of arms: the batch dimension is dynamic (an example of 2, since 1 would be specialised).
    exported = torch.export.export(policy, (torch.zeros(2, state_size),),
                                   dynamic_shapes=({0: torch.export.Dim("agents", min=1)},))
    torch.export.save(exported, os.path.join(run_dir, "actor.pt2"))
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        json.dump(asdict(agent.cfg), f, indent=2)
    with open(os.path.join(run_dir, "scores.csv"), "w") as f:
        f.write("episode,mean,min,max,avg100,wall_seconds\n")
        for i, row in enumerate(zip(history["mean"], history["min"], history["max"], history["avg100"], history["wall"])):
            f.write(f"{i + 1}," + ",".join(f"{v:.4f}" for v in row) + "\n")
    with open(os.path.join(run_dir, "arm_scores.csv"), "w") as f:
        f.write("episode," + ",".join(f"arm{k}" for k in range(len(history["arms"][0]))) + "\n")
        for i, row in enumerate(history["arms"]):
            f.write(f"{i + 1}," + ",".join(f"{v:.2f}" for v in row) + "\n")
    first30 = next((i + 1 for i, v in enumerate(history["mean"]) if v >= agent.cfg.target_score), None)
    summary = {"solved_at": history["solved_at"], "first_episode_mean_30": first30,
               "episodes": len(history["mean"]), "final_avg100": history["avg100"][-1],
               "mean_episodes_1_100": float(np.mean(history["mean"][:100])),
               "arm_means_episodes_1_100": np.mean(history["arms"][:100], axis=0).tolist(),
               "wall_seconds": history["wall"][-1],
               "wall_seconds_to_solve": history["wall"][history["solved_at"] - 1] if history["solved_at"] else None,
               "environment": getattr(env, "description", "Unity build"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
               "seed": agent.cfg.seed}
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


# %% [markdown]
# ### 5.3 The training loop
#
# One loop for all 20 agents, read top to bottom: collect a step from the environment runner
# (4.9), ask for the next one, hand this one to the agent (which stores and learns), keep score.
# Then the episode's bookkeeping: scores, the solve test, the log line, the figure, the
# checkpoint.

# %% tags=["definitions"]
def train(cfg: Config, env, run_dir: str, live: bool = True, log_every: int = 5) -> dict:
    """Train until solved or `cfg.max_episodes`; write checkpoints and results to `run_dir`."""
    brain_name = env.brain_names[0]
    info = env.reset(train_mode=True)[brain_name]
    num_agents, state_size = info.vector_observations.shape
    agent = Agent(cfg, state_size, env.brains[brain_name].vector_action_space_size, num_agents)
    fingerprint = code_fingerprint(Config, tree_set.py_func, tree_find.py_func, SumTree, NStepAccumulator, PrioritizedReplay, NoisyLinear, Actor,
                                   Critic, Normalizer, OrnsteinUhlenbeck, flatten_parameters, Behaviour, Agent,
                                   EnvRunner, train, save_checkpoint, load_checkpoint)
    resume_dir = os.path.join(run_dir, "resume")
    history = {"mean": [], "min": [], "max": [], "arms": [], "avg100": [], "wall": [], "solved_at": None}
    first, elapsed = 1, 0.0
    restored = load_checkpoint(resume_dir, agent, env, fingerprint)
    if restored:
        first, history = restored[0] + 1, restored[1]
        elapsed = history["wall"][-1] if history["wall"] else 0.0
        done_before = restored[0] >= cfg.max_episodes or (cfg.stop_when_solved and history["solved_at"])
        print(f"{'Finished' if done_before else 'Resuming'} after episode {restored[0]}, from {resume_dir}")
        if done_before:
            save_results(run_dir, agent, history, state_size, env)
            return history
    if live:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        figure = display(fig, display_id=True)
    progress = Progress(cfg.max_episodes, first - 1, live)
    runner = EnvRunner(env, agent.behaviour, process=cfg.env_process and EnvRunner.can_fork(env))   # 4.9
    start = time.perf_counter() - elapsed
    try:
        for episode in range(first, cfg.max_episodes + 1):
            runner("reset")
            scores = np.zeros(num_agents)
            agent.begin_episode(episode)                 # n and the learning interval of this episode
            agent.refresh_behaviour()
            runner.request("step")
            while True:
                states, actions, rewards, next_states, done = runner.result()
                if not done:
                    # Crucial for speed: start the next step before learning from this one, so the
                    # worker steps the arms while the networks update (it acts one update behind).
                    agent.refresh_behaviour()
                    runner.request("step")
                agent.step(states, actions, rewards, next_states, done)
                scores += rewards
                if done:
                    break
            # The episode's bookkeeping.
            for key, value in (("mean", scores.mean()), ("min", scores.min()), ("max", scores.max())):
                history[key].append(float(value))
            history["arms"].append(scores.tolist())       # each arm's score: worst and best arm in the report
            history["avg100"].append(float(np.mean(history["mean"][-100:])))
            history["wall"].append(time.perf_counter() - start)
            if history["solved_at"] is None and episode >= 100 and history["avg100"][-1] >= cfg.target_score:
                history["solved_at"] = episode
            progress.update(score=f"{scores.mean():.1f}", avg100=f"{history['avg100'][-1]:.1f}")
            if episode % log_every == 0 or episode == 1 or history["solved_at"] == episode:
                print(f"episode {episode:4d}  mean {scores.mean():5.2f}  min {scores.min():5.2f}  "
                      f"max {scores.max():5.2f}  avg100 {history['avg100'][-1]:5.2f}  {history['wall'][-1] / 60:5.1f} min")
                if live:
                    plot_scores(history, cfg.target_score, ax)
                    figure.update(fig)
            finished = episode == cfg.max_episodes or (cfg.stop_when_solved and history["solved_at"])
            if episode % cfg.checkpoint_every == 0 or finished:
                save_checkpoint(resume_dir, agent, runner("random_state"), episode, history, fingerprint)
            if finished:
                break
    finally:
        runner.close()                                   # also on Ctrl-C: no worker is left behind
    progress.close(episode)
    if live:
        plot_scores(history, cfg.target_score, ax)
        figure.update(fig)
        plt.close(fig)
    save_results(run_dir, agent, history, state_size, env)
    return history


# %% [markdown]
# The configuration: the defaults above, or the smoke configuration (two episodes, a small
# buffer, early learning) when `SMOKE=1`.

# %%
cfg = Config(max_episodes=2, buffer_size=20_000, batch_size=64, warmup=1_000, checkpoint_every=1) if SMOKE else Config()
torch.set_num_threads(1)      # small networks: one thread is as fast, and leaves a core to the environment
print(cfg)

# %%
history = train(cfg, env, RUN_DIR)

# %% [markdown]
# ## 6. Results

# %%
summary = json.load(open(os.path.join(RUN_DIR, "summary.json")))
solved = summary["solved_at"]
print(f"Environment: {summary['environment']}; seed {summary['seed']}; machine: {summary['machine']}")
if solved:
    print(f"Solved at episode {solved}: the mean of episodes {solved - 99}-{solved} is "
          f"{history['avg100'][solved - 1]:.2f} >= 30, after {summary['wall_seconds_to_solve'] / 60:.1f} minutes.")
else:
    print(f"Not solved in {summary['episodes']} episodes (last 100-episode average {summary['final_avg100']:.2f}).")
print(f"First episode whose 20-agent mean reached 30: {summary['first_episode_mean_30']}")
print(f"Wall time, environment included: {summary['wall_seconds'] / 60:.1f} minutes for {summary['episodes']} episodes.")

fig, ax = plt.subplots(figsize=(9, 4.5))
plot_scores(history, cfg.target_score, ax)
ax.set_title("DDPG (5-step, prioritized replay, NoisyNet) on the 20-arm Reacher")
plt.show()

# %% [markdown]
# ## 7. Watch the trained agent
#
# Load the exported policy (`torch.export`; it needs none of the classes above, only torch) and
# run one episode without exploration noise. The worst arm is reported with the mean: a mean
# of 38 can hide an arm at 15.

# %%
policy = torch.export.load(os.path.join(RUN_DIR, "actor.pt2")).module()
env_info = env.reset(train_mode=False)[brain_name]
states, scores = env_info.vector_observations, np.zeros(num_agents)
while True:
    with torch.no_grad():
        actions = policy(torch.as_tensor(states, dtype=torch.float32)).numpy()
    env_info = env.step(actions)[brain_name]
    scores += env_info.rewards
    states = env_info.vector_observations
    if np.any(env_info.local_done):
        break
print(f"Trained agent, one episode without noise: mean {scores.mean():.2f} "
      f"(worst arm {scores.min():.2f}, best {scores.max():.2f}) over the {num_agents} agents")

# %% [markdown]
# Which actor to keep. The exported policy is the **target actor**, the Polyak average of the
# recent actors (3.2), not the last online actor: each update moves the online weights a little
# at random (the batch, and the noise the actor learns with), and averaging removes most of
# that. Both without noise, on the same unseen goals of the built-in Reacher (environment seed
# 10000), 5 episodes each; an arm's score is its mean over them:

# %%
from reacher.demo import play

online = Actor(state_size, action_size, cfg.hidden, cfg.exploration == "noisynet", cfg.noisy_sigma0)
online.load_state_dict(torch.load(os.path.join(RUN_DIR, "actor.pt")))
online.set_noise(None)
norm = Normalizer(state_size)
norm.load_state_dict(torch.load(os.path.join(RUN_DIR, "normalizer.pt")))
candidates = {"target actor (exported)": lambda x: policy(x), "last online actor": lambda x: online(norm(x))}
for name, act in candidates.items():
    with torch.no_grad():
        arm_scores = play(reacher.ReacherEnvironment(seed=10_000, verbose=False),
                          lambda info: act(torch.as_tensor(info.vector_observations, dtype=torch.float32)).numpy(), 5).mean(0)
    print(f"{name:24s} mean {arm_scores.mean():.2f}, worst arm {arm_scores.min():.2f}, best {arm_scores.max():.2f}")

# %% [markdown]
# ### A replay you can play and scrub
#
# The built-in Reacher drawn by MuJoCo's offscreen renderer (or from above with matplotlib where
# no OpenGL context exists), on goals the run never saw. Pick the goals' speed and size (the
# environment's reset parameters; the actor trained at speed 1 and size 5) and press *replay*;
# then play or drag the slider. Where widgets cannot run (a static render of this notebook),
# the still frame below the panel, from the middle of the replay, stands in for it.

# %%
import ipywidgets as widgets
from PIL import Image as PILImage
from reacher.render import make_view, record


def replay(goal_speed: float = 1.0, goal_size: float = 5.0, steps: int = 200, every: int = 4):
    """Frames of the noise-free actor on unseen goals, and each arm's score over those steps."""
    watch_env = reacher.ReacherEnvironment(seed=10_000, verbose=False)
    watch_env.reset(config={"goal_speed": goal_speed, "goal_size": goal_size})
    view = make_view(watch_env.physics, 480, 270)
    act = lambda info: policy(torch.as_tensor(info.vector_observations, dtype=torch.float32)).detach().numpy()
    frames, arm_scores = record(watch_env, act, steps, every, view)
    view.close()
    return [png(f) for f in frames], arm_scores


def png(frame) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(frame).save(buffer, format="PNG")
    return buffer.getvalue()


frames, arm_scores = replay()
picture = widgets.Image(value=frames[0], format="png", width=480)
scrub = widgets.IntSlider(0, 0, len(frames) - 1, description="frame")
play = widgets.Play(value=0, min=0, max=len(frames) - 1, interval=80)
widgets.jslink((play, "value"), (scrub, "value"))
speed = widgets.FloatSlider(1.0, min=0.0, max=3.0, step=0.25, description="goal speed")
size = widgets.FloatSlider(5.0, min=1.0, max=8.0, step=0.5, description="goal size")
again = widgets.Button(description="replay")
status = widgets.Label(f"{len(frames)} frames; mean score over these steps {arm_scores.mean():.2f}")


def show(change):
    picture.value = frames[change["new"]]


def rerun(_):
    global frames
    status.value = "rendering..."
    frames, scores_now = replay(speed.value, size.value)
    scrub.max = play.max = len(frames) - 1
    scrub.value = 0
    picture.value = frames[0]
    status.value = f"{len(frames)} frames; mean score over these steps {scores_now.mean():.2f}"


scrub.observe(show, names="value")
again.on_click(rerun)
display(widgets.VBox([widgets.HBox([speed, size, again]), picture, widgets.HBox([play, scrub]), status]))
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.imshow(PILImage.open(io.BytesIO(frames[len(frames) // 2])))
ax.set_title("The replay's middle frame (static copy of the panel above)", fontsize=9)
ax.axis("off")
plt.show()

# %%
env.close()

# %% [markdown]
# ## 8. References
#
# 1. T. P. Lillicrap et al., *Continuous control with deep reinforcement learning*, ICLR 2016, arXiv:1509.02971.
# 2. D. Silver et al., *Deterministic policy gradient algorithms*, ICML 2014.
# 3. T. Schaul, J. Quan, I. Antonoglou, D. Silver, *Prioritized experience replay*, ICLR 2016, arXiv:1511.05952.
# 4. M. Fortunato et al., *Noisy networks for exploration*, ICLR 2018, arXiv:1706.10295.
# 5. G. Barth-Maron et al., *Distributed distributional deterministic policy gradients* (D4PG), ICLR 2018, arXiv:1804.08617.
# 6. R. S. Sutton, A. G. Barto, *Reinforcement learning: an introduction*, 2nd ed., 2018, chapter 7 (n-step bootstrapping).
# 7. F. Pardo, A. Tavakoli, V. Levdik, P. Kormushev, *Time limits in reinforcement learning*, ICML 2018, arXiv:1712.00378.
