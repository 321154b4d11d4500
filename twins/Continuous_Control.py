# ---
# jupyter:
#   jupytext:
#     formats: ipynb,twins//py:percent
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
# The task counts as **solved when the mean over 100 consecutive episodes of the 20-arm mean
# score reaches 30**.
#
# This notebook builds the agent one idea at a time. Each section states the idea and its math,
# implements it in a short cell, and checks it in the next cell with an `assert` that fails if
# the idea is implemented wrong:
#
# 1. the environment, a random agent, and the hyperparameters;
# 2. DDPG: the actor and the critic, target networks and the update;
# 3. $n$-step targets;
# 4. prioritized replay: the sum tree and importance weights;
# 5. NoisyNet exploration, with noise correlated in time;
# 6. the agent that combines them; 7. the training loop; 8. the results; 9. a replay.
#
# Run it top to bottom. With the environment variable `SMOKE=1` it runs a short configuration
# that writes to a temporary folder: that is what the tests do. The committed notebook holds
# the outputs of the full run. The cells tagged `export` are the agent: `make export` writes
# them to `continuous_control/agent.py`, which the experiments and tests import. What is not the
# lesson (checkpoints, the progress display, result files, figures, the replay panel) comes from
# the `continuous_control` package in one import line; you never need to open it to follow along.

# %% [markdown]
# ### The whole algorithm at a glance
#
# The DDPG paper [1] and Spinning Up state the algorithm as one box; here is this notebook's, each
# line with the section that builds it. All 20 arms act and learn together: every line that
# touches a state, an action or a reward does so for the 20 arms at once.
#
# > **DDPG with $n$-step targets, prioritized replay and NoisyNet**
# >
# > Initialise the noisy actor $\mu_\theta$ and the critic $Q_\phi$ (§2.1, §5.1); targets $\theta' \leftarrow \theta$, $\phi' \leftarrow \phi$ (§2.2); an empty replay $\mathcal{D}$ with a sum tree (§4.1)<br>
# > **for** episode $= 1, 2, \dots$ **do**<br>
# > &emsp; $n \leftarrow$ this episode's target length (1, then growing to 5), and the learning interval $k$ (§3, §6.2)<br>
# > &emsp; **for** $t = 1, \dots, 1001$ **do**<br>
# > &emsp;&emsp; step the noise $\varepsilon_t$ (Ornstein-Uhlenbeck, §5.2) and act $a_t = \mu_{\theta, \varepsilon_t}(s_t)$ (§6.1)<br>
# > &emsp;&emsp; observe $r_t$, $s_{t+1}$; from the last $n$ steps form $(s, a, R^{(n)}, s', \gamma^{n})$ and store it in $\mathcal{D}$ at the largest recent priority (§3, §4.2)<br>
# > &emsp;&emsp; **every** $k$ steps, once $\mathcal{D}$ holds `warmup` transitions:<br>
# > &emsp;&emsp;&emsp; sample a batch with $P(j) = p_j^\alpha / \sum_i p_i^\alpha$, weights $w_j \propto (N P(j))^{-\beta}$ (§4.1, §4.2)<br>
# > &emsp;&emsp;&emsp; $y_j = R_j + \gamma_j\, Q_{\phi'}(s'_j, \mu_{\theta'}(s'_j))$; step $\phi$ on $\frac{1}{B}\sum_j w_j (y_j - Q_\phi(s_j, a_j))^2$; $p_j \leftarrow |y_j - Q_\phi(s_j, a_j)| + c$ (§2.2, §3, §4.2)<br>
# > &emsp;&emsp;&emsp; draw fresh noise $\varepsilon$; step $\theta$ on $-\frac{1}{B}\sum_j Q_\phi(s_j, \mu_{\theta, \varepsilon}(s_j))$ (§2.1, §5.1)<br>
# > &emsp;&emsp;&emsp; $\theta' \leftarrow \theta' + \tau(\theta - \theta')$, $\phi' \leftarrow \phi' + \tau(\phi - \phi')$ (§2.2)<br>
# > &emsp; **until** the mean of the last 100 episodes' scores reaches 30 (§7)

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

# %% tags=["export"]
from dataclasses import asdict, dataclass

import numba
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from continuous_control import Networks, TrainingRun, check_config, code_fingerprint

# %%
import os

import matplotlib.pyplot as plt
from IPython.display import Markdown

import reacher
from continuous_control.config import run_setup
from continuous_control.figures import plot_diagnostics, q_reference
from continuous_control.playback import replay_panel
from continuous_control.results import EVAL_SEED, load_run
from experiments import runs, stats

# SMOKE=1: a short run into a temporary folder; RESUME=1: continue an interrupted run.
SMOKE, RESUME, RUN_DIR = run_setup()
UNITY_BUILD = os.environ.get("REACHER_UNITY_BUILD")   # None: the built-in replica
np.set_printoptions(precision=3, suppress=True, linewidth=100)
torch.set_num_threads(1)      # small networks: one thread is as fast, and leaves a core to the environment

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
print("The state for the first agent looks like:\n", states[0])

# %% [markdown]
# ### 1.1 A random agent
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
# ### 1.2 How an episode ends
#
# A Reacher episode ends because a clock runs out at 1001 steps, not because the arm reached a
# state with no future. And the step that reports `done` has already reset the arm: its "next
# state" is the **next** episode's first state. Both facts shape how transitions are stored
# (sections 2.2 and 3). The environment shows the second: after 1000 steps of random play,
# the 1001st step reports `done` for every arm and returns the start state (both links hanging
# straight down, at rest).

# %% tags=["nbval-check-output"]
rng = np.random.default_rng(1)
env_info = env.reset(train_mode=True)[brain_name]
for step in range(1, 1002):
    env_info = env.step(np.clip(rng.standard_normal((num_agents, action_size)), -1, 1))[brain_name]
    if step == 1000:
        last = env_info.vector_observations
        assert not any(env_info.local_done)
start = env_info.vector_observations
at_rest = np.all(start[:, [0, 1, 2, 13, 14, 15]] == [0, -4, 0, 0, -10, 0]) and np.all(start[:, 7:13] == 0) and np.all(start[:, 20:26] == 0)
moved = not np.allclose(last[:, :3], [0, -4, 0])
print("step 1001 reports done for every arm:", all(env_info.local_done))
print("step 1000 had moved the arms:", moved)
print("step 1001 returns the start state, arms hanging at rest:", at_rest)
assert all(env_info.local_done) and moved and at_rest

# %% [markdown]
# ### 1.3 The hyperparameters, in one place
#
# One dataclass, one docstring per field (CleanRL's style); each field is explained in the
# section that uses it. How long to train, and when to checkpoint, are arguments of the training
# loop (section 7), not of the agent.

# %% tags=["export"]
@dataclass
class Config:
    seed: int = 0
    """Root of the independent random streams of the goals, the replay sampler, the weights and the noise (6.2)."""
    device: str = "cpu"
    """Where the networks live and learn: "cpu", or "cuda" (a GPU), section 6.2."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 5
    """Rewards summed before bootstrapping (1 is plain DDPG's one-step target), section 3."""
    n_step_ramp: int = 4
    """Episodes at each n on the way up: n = 1 in episodes 1-4, 2 in 5-8, ..., then `n_step` (0: no ramp)."""
    buffer_size: int = 1_000_000
    """Replay capacity in transitions (about 50 episodes of 20 arms)."""
    batch_size: int = 256
    """Transitions per learning update."""
    warmup: int = 5_000
    """Transitions stored before the first update."""
    learn_every: int = 1
    """Environment steps (of all 20 arms) between updates in episodes 1 to `learn_every_until`, section 6.2."""
    learn_every_until: int = 20
    """The last episode that learns every `learn_every` steps; later episodes learn every `learn_every_later`."""
    learn_every_later: int = 8
    """Environment steps between updates after episode `learn_every_until`."""
    actor_lr: float = 1e-3
    """Adam learning rate of the actor."""
    critic_lr: float = 1e-3
    """Adam learning rate of the critic."""
    tau: float = 5e-3
    """Soft-update rate of the target networks: an average over about 1/tau updates."""
    hidden: tuple = (128, 128)
    """Hidden layer sizes of both networks."""
    grad_clip: float = 1.0
    """Largest norm of the critic's gradient."""
    alpha: float = 0.5
    """Prioritization exponent; 0 gives uniform replay, section 4."""
    beta_start: float = 0.4
    """Importance-sampling exponent at the start, annealed linearly to 1."""
    beta_steps: int = 110_000
    """Environment steps over which beta reaches 1 (about 110 episodes)."""
    priority_offset: float = 1e-3
    """c in p = |TD error| + c: no transition's priority is zero."""
    priority_window: int = 100
    """New transitions get the largest priority of the last `priority_window` updates, section 4.2."""
    noisy_sigma0: float = 0.5
    """NoisyNet's initial sigma, as sigma0 / sqrt(fan_in)."""
    ou_kappa: float = 0.15
    """Ornstein-Uhlenbeck mean reversion per step: the noise is correlated over about 1/kappa steps."""
    clipped_double_q: bool = False
    """Two critics, and targets from the smaller of their estimates (TD3's clipped double-Q), section 2.3."""

    def __post_init__(self):
        check_config(self)                     # each field's type and range: a bad value fails here, named
        torch.empty(0, device=self.device)     # an unknown or absent device fails here, with torch's reason


# %% [markdown]
# **This agent against the DDPG paper.** Lillicrap et al. [1] set the recipe; the table lists every
# place where this notebook departs from it, why, and the report's ablation that measures the
# change where one exists (its results are in `Report.ipynb`). The middle column is read from
# `Config()`, so it cannot drift from the code.

# %%
from continuous_control.variants import LABELS

c = Config()
departures = [  # (what, the paper [1], this notebook, why, the ablation in Report.ipynb)
    ("hidden layers", "400, 300", ", ".join(map(str, c.hidden)), "a small task: fewer weights, cheaper steps", None),
    ("action enters the critic", "at the 2nd hidden layer", "with the state, at the input", "simpler, as in Spinning Up and CleanRL", None),
    ("learning rates: actor, critic", "1e-4, 1e-3", f"{c.actor_lr:g}, {c.critic_lr:g}", "one rate for both, as CleanRL", None),
    ("critic weight decay", "1e-2", "none", "none in TD3, Spinning Up or CleanRL either", None),
    ("tau, batch", "0.001, 64", f"{c.tau:g}, {c.batch_size}", "20 arms add 20 transitions a step", None),
    ("state scaling", "batch normalization", "running mean and variance (2.1)", "the same statistics for acting and learning", None),
    ("critic gradient", "unclipped", f"norm clipped at {c.grad_clip:g}", "a guard against one huge TD error", None),
    ("targets", "1-step", f"{c.n_step}-step, n ramped from 1 (3)", "rewards reach the critic sooner", "one_step"),
    ("replay", "uniform", f"prioritized, alpha {c.alpha:g} (4)", "here mostly: new transitions first (4)", "uniform"),
    ("exploration", "OU action noise", "NoisyNet, OU-correlated noise (5)", "noise in the weights: it depends on the state", "action_noise"),
    ("learning schedule", "every step", f"every step for {c.learn_every_until} episodes, then every {c.learn_every_later} (6.2)", "time: late episodes need fewer updates", "learn_every_step"),
]
rows = [f"| {what} | {paper} | {ours} | {why} | {LABELS[ablation] if ablation else '-'} |"
        for what, paper, ours, why, ablation in departures]
Markdown("| | Lillicrap et al. [1] | this notebook | why | ablation |\n|---|---|---|---|---|\n" + "\n".join(rows))

# %% [markdown]
# ## 2. DDPG
#
# ### 2.1 The actor, the critic and the deterministic policy gradient
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
#
# The actor maps a state to 4 actions through hidden ReLU layers and a $\tanh$, which keeps the
# actions in $[-1, 1]$; `layer` makes its linear layers (section 5 swaps in noisy ones). The
# critic takes state and action together through hidden ReLU layers to one value. Both see
# states standardised by the running mean and variance of every state seen (`Normalizer`): the
# Reacher's inputs range from quaternions within $[-1, 1]$ to velocities near 50.

# %% tags=["export"]
class Normalizer(nn.Module):
    """Standardises states with the running mean and variance of every state seen so far. Its
    statistics are buffers: saved with the weights, and traced into the exported policy."""

    def __init__(self, size: int, clip: float = 5.0):
        super().__init__()
        self.clip = clip
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.tensor(1e-4))

    def update(self, x: torch.Tensor) -> None:
        """Merge a batch's mean and variance into the running ones (Chan et al.'s formula [13]):
        with w = n / (count + n) the batch's share, var <- (1 - w) var + w (var_x + (1 - w) delta^2)."""
        var, mean = torch.var_mean(x, 0, correction=0)
        w = x.shape[0] / (self.count + x.shape[0])
        delta = mean - self.mean
        self.var.lerp_(var + (1 - w) * delta.square(), w)
        self.mean.add_(w * delta)
        self.count.add_(x.shape[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / (self.var + 1e-8).sqrt()).clamp(-self.clip, self.clip)


class Actor(nn.Module):
    """mu_theta(s): ReLU hidden layers, tanh output, each linear layer made by `layer`."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple, layer=nn.Linear):
        super().__init__()
        sizes = (state_size, *hidden, action_size)
        self.layers = nn.ModuleList(layer(i, o) for i, o in zip(sizes[:-1], sizes[1:]))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        x = state
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return torch.tanh(self.layers[-1](x))


class Critic(nn.Module):
    """Q_phi(s, a): state and action concatenated, ReLU hidden layers, one output."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple):
        super().__init__()
        sizes = (state_size + action_size, *hidden)
        self.hidden = nn.ModuleList(nn.Linear(i, o) for i, o in zip(sizes[:-1], sizes[1:]))
        self.out = nn.Linear(sizes[-1], 1)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([state, action], dim=-1)
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.out(x).squeeze(-1)

    def values(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Every estimate of Q(s, a) the critic makes, one row each: one row here, two in section 2.3."""
        return self(state, action)[None]


# %% [markdown]
# Check: the networks at the sizes the training uses (`Config().hidden`), their output shapes and
# ranges; and the normaliser, fed batch by batch from a drifting stream, holds the mean and the
# variance of all the states seen together, and standardises new states to mean 0 and deviation 1.

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
hidden = Config().hidden
actor, critic = Actor(state_size, action_size, hidden), Critic(state_size, action_size, hidden)
print(actor)
print(critic)
count = lambda m: sum(p.numel() for p in m.parameters())
print(f"parameters: actor {count(actor):,}, critic {count(critic):,}")
s = 10 * torch.randn(20, state_size)
a, q = actor(s), critic(s, actor(s))
print("actions:", tuple(a.shape), "within [-1, 1]:", bool(a.abs().max() <= 1), "  Q:", tuple(q.shape))
assert a.shape == (20, action_size) and a.abs().max() <= 1 and q.shape == (20,)
norm, seen = Normalizer(state_size), []
for b in range(50):                               # the batches' means drift from 0 to 4.9
    seen.append(b / 10 + 2 * torch.randn(20, state_size))
    norm.update(seen[-1])
seen = torch.cat(seen)
exact = torch.allclose(norm.mean, seen.mean(0), atol=1e-4) and torch.allclose(norm.var, seen.var(0, unbiased=False), rtol=1e-3)
z = norm(seen.mean(0) + seen.std(0) * torch.randn(1000, state_size))
print(f"running mean and variance equal those of all {len(seen)} states:", exact,
      f"- standardised: mean {round(z.mean().item(), 1) + 0.0}, std {z.std():.1f}")
assert exact and abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05

# %% [markdown]
# ### 2.2 Target networks and the update
#
# The critic's target uses the critic itself, so a plain regression chases a moving target.
# DDPG keeps slowly moving copies $Q_{\phi'}$ and $\mu_{\theta'}$ for the targets, and after each
# update moves them a little toward the learned networks:
# $$\phi' \leftarrow \tau\,\phi + (1 - \tau)\,\phi', \qquad \theta' \leftarrow \tau\,\theta + (1 - \tau)\,\theta', \qquad \tau \ll 1.$$
# This "Polyak averaging" is an exponential moving average of the learned weights with a time
# constant of $1/\tau$ updates (200 here): each target lags its network by about that many updates.
#
# One update, on a batch of $B$ transitions $(s_i, a_i, R_i, s'_i, \gamma_i)$ from the replay
# buffer, where $R_i$ is the (discounted) reward and $\gamma_i$ the discount of the bootstrap
# ($R_i = r_i$ and $\gamma_i = \gamma$ for the one-step transitions of plain DDPG; section 3
# makes them $n$-step), each weighted by $w_i$ ($w_i = 1$ for uniform replay; section 4):
#
# 1. **critic:** the target $y_i = R_i + \gamma_i\, Q_{\phi'}(s'_i, \mu_{\theta'}(s'_i))$, the TD error
#    $\delta_i = y_i - Q_\phi(s_i, a_i)$; one Adam step on $\frac{1}{B}\sum_i w_i\,\delta_i^2$, its
#    gradient clipped to norm `grad_clip`;
# 2. **actor:** one Adam step on $-\frac{1}{B}\sum_i Q_\phi(s_i, \mu_\theta(s_i))$, with $\phi$ held fixed;
# 3. **targets:** the soft update above, $\phi' \leftarrow \phi' + \tau(\phi - \phi')$, likewise $\theta'$.
#
# No transition has a terminal flag: the Reacher's episodes end on a clock, and a state near the
# clock's end is worth as much as any other, which the critic cannot see. So targets bootstrap
# through the time limit [7]. The soft update is one `lerp` over each network's parameter list.

# %% nbgrader={"grade": false, "grade_id": "ddpg-update", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["export"]
class DDPG(Networks):
    """The four networks of DDPG, their optimisers, and the three steps of one update (2.2). `Networks`
    (from the package) adds `to(...)`, which moves or casts them all, and `tensor(x)`, an array on their device."""

    def __init__(self, cfg: Config, actor: nn.Module, actor_target: nn.Module, critic: nn.Module,
                 critic_target: nn.Module, state_size: int):
        self.cfg, self.actor, self.actor_target, self.critic, self.critic_target = cfg, actor, actor_target, critic, critic_target
        for target, online in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            target.requires_grad_(False)
            target.load_state_dict(online.state_dict())          # the targets start as copies
        self.norm = Normalizer(state_size)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr, fused=True)

    def update_critic(self, s, a, ret, s_next, disc, w) -> tuple[torch.Tensor, float, float]:
        """Step 1: y = R + gamma_i Q'(s', mu'(s')), one step on mean(w delta^2); the TD errors, the loss, mean Q.
        With two critics (2.3) y takes the smaller target estimate and each critic learns y; the first one's
        TD errors are returned."""
        ### BEGIN SOLUTION: the target y = R + gamma_i Q'(s', mu'(s')) from the TARGET networks (no gradient; the smallest of `values`), q = Q(s, a) per critic, td = y - q, loss = mean(w td^2)
        with torch.no_grad():
            y = ret + disc * self.critic_target.values(s_next, self.actor_target(s_next)).min(0).values
        q = self.critic.values(s, a)                       # (critics, batch)
        td = y - q
        loss = (w * td.pow(2)).mean()
        ### END SOLUTION
        self.critic_opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.critic.parameters(), self.cfg.grad_clip, foreach=True)
        self.critic_opt.step()
        return td[0].detach(), loss.item(), q[0].mean().item()

    def update_actor(self, s) -> float:
        """Step 2: one step on -mean Q(s, mu(s)). The critic is frozen for this pass: its input
        gradient dQ/da is needed, its weight gradients are not."""
        self.critic.requires_grad_(False)
        ### BEGIN SOLUTION: the actor's loss: minus the critic's mean Q(s, mu(s)), so that a step on it climbs the critic
        loss = -self.critic(s, self.actor(s)).mean()
        ### END SOLUTION
        self.actor_opt.zero_grad()
        loss.backward()
        self.critic.requires_grad_(True)
        self.actor_opt.step()
        return loss.item()

    @torch.no_grad()
    def update_targets(self) -> None:
        """Step 3: target <- target + tau (online - target), in place, for every parameter."""
        ### BEGIN SOLUTION: move every target parameter tau of the way to its network's: torch._foreach_lerp_(targets, onlines, tau)
        for target, online in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            torch._foreach_lerp_(list(target.parameters()), list(online.parameters()), self.cfg.tau)
        ### END SOLUTION


# %% [markdown]
# Check, on a made-up batch: with a target critic that outputs 2 everywhere, the TD errors are
# $R_i + 2\gamma_i - Q_\phi(s_i, a_i)$ (they use the target networks and each transition's own
# discount), the loss weights each squared error by $w_i$, and the critic's step lowers it; the actor's step raises
# $Q_\phi(s, \mu_\theta(s))$ (it climbs the critic, not down it); the targets move by exactly
# $\tau$ of the gap.

# %% nbgrader={"grade": true, "grade_id": "check-ddpg-update", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false} tags=["nbval-check-output"]
torch.manual_seed(0)
cfg = Config(hidden=(32, 32))
ddpg = DDPG(cfg, Actor(state_size, action_size, cfg.hidden), Actor(state_size, action_size, cfg.hidden),
            Critic(state_size, action_size, cfg.hidden), Critic(state_size, action_size, cfg.hidden), state_size)
with torch.no_grad():
    ddpg.critic_target.out.weight.zero_()
    ddpg.critic_target.out.bias.fill_(2.0)               # Q'(s', a') = 2 for every input
s, a, s_next = torch.randn(64, state_size), torch.rand(64, action_size) * 2 - 1, torch.randn(64, state_size)
ret, disc, w = torch.rand(64), cfg.gamma ** torch.randint(1, 6, (64,)).float(), torch.rand(64)
q_before = ddpg.critic(s, a).detach()
td, loss, _ = ddpg.update_critic(s, a, ret, s_next, disc, w)
print("TD errors are R + 2 gamma_i - Q(s, a):", torch.allclose(td, ret + 2 * disc - q_before, atol=1e-6))
assert torch.allclose(td, ret + 2 * disc - q_before, atol=1e-6)
assert abs(loss - (w * td.pow(2)).mean().item()) < 1e-6          # each squared error weighted by its w_i
new_loss = (w * (ret + 2 * disc - ddpg.critic(s, a)).pow(2)).mean().item()
print(f"critic loss on the batch: {loss:.4f} before its step, {new_loss:.4f} after")
assert new_loss < loss
q_of_actor = lambda: ddpg.critic(s, ddpg.actor(s)).mean().item()
before = q_of_actor()
ddpg.update_actor(s)
print(f"mean Q(s, mu(s)): {before:.4f} before the actor's step, {q_of_actor():.4f} after")
assert q_of_actor() > before
flat = lambda net: nn.utils.parameters_to_vector(net.parameters())         # all weights in one vector
targets = flat(ddpg.critic_target)
ddpg.update_targets()
moved = torch.allclose(flat(ddpg.critic_target), targets + cfg.tau * (flat(ddpg.critic) - targets), atol=1e-7)
print("targets moved by tau of the gap:", moved)
assert moved

# %% [markdown]
# A picture of the soft update: one weight of the critic, moved as learning might move it (a drift, then a
# reversal, plus noise), and the same weight of its target after each update. The target starts where the check
# above left it (2) and catches up at the rate $\tau$.

# %%
# One weight of the critic, moved as learning might move it (a drift, then a reversal, plus noise),
# and the same weight of its target network after each soft update.
generator = torch.Generator().manual_seed(0)
online, target = [], []
with torch.no_grad():
    for k in range(1200):
        ddpg.critic.out.bias.add_(0.004 * (1 if k < 600 else -1) + 0.03 * torch.randn(1, generator=generator))
        ddpg.update_targets()
        online.append(ddpg.critic.out.bias.item())
        target.append(ddpg.critic_target.out.bias.item())
fig, ax = plt.subplots(figsize=(8, 2.8))
ax.plot(online, lw=0.8, label="the critic's weight (online)")
ax.plot(target, lw=2, label=rf"its target, $\tau$ = {cfg.tau}: an average over about {1 / cfg.tau:.0f} updates")
ax.set(xlabel="update", ylabel="weight (output bias)", title="The target network follows its network, smoothly and late")
ax.legend(loc="lower center", fontsize=8)
plt.show()

# %% [markdown]
# **Exercises.**
# 1. Make the targets plain copies: `Config(tau=1.0)`. Train 30 episodes
#    (`train(Config(tau=1.0), env, "runs/tau1", 30, live=False)`) and compare the diagnostics' mean
#    $Q$ and the scores with the default's first 30 episodes: does $Q$ swing more, and do the scores rise later?
# 2. In `update_actor`, leave the critic's weights trainable (delete the `requires_grad_` lines) and
#    run the check above: which assertion still holds, and what does the actor's loss now also change?

# %% [markdown]
# ### 2.3 Overestimation, and clipped double-Q
#
# The critic's errors are not harmless noise. The actor climbs $Q_\phi$ (2.1), so it seeks out the
# actions whose value the critic happens to overestimate, and the target
# $Q_{\phi'}(s', \mu_{\theta'}(s'))$ evaluates exactly those actions: the errors that survive are
# the upward ones, and each target passes them on. This is Q-learning's overestimation bias, which
# Fujimoto et al. [14] measured in DDPG. Their remedy in TD3, **clipped double-Q**, learns two
# critics $Q_{\phi_1}$, $Q_{\phi_2}$ (independently initialised, trained on the same batches) and
# bootstraps from the smaller of their targets:
# $$y_i = R_i + \gamma_i \min_{k=1,2} Q_{\phi'_k}(s'_i, \mu_{\theta'}(s'_i)).$$
# Both critics regress on this one $y_i$; the actor climbs $Q_{\phi_1}$. An error must now appear in
# both critics to pass into the target, at the price of a small underestimate. `TwinCritic` is the
# pair; `Critic.values` (2.1) and `TwinCritic.values` give one row of estimates per critic, which is
# all `DDPG.update_critic` needs. `Config(clipped_double_q=True)` switches it on; the default agent
# has one critic, and section 8 shows where its $Q$ ends.

# %% tags=["export"]
class TwinCritic(nn.Module):
    """Two critics trained on the same targets: the actor climbs Q_1, a target takes min(Q_1, Q_2) [14]."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple):
        super().__init__()
        self.q1, self.q2 = Critic(state_size, action_size, hidden), Critic(state_size, action_size, hidden)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.q1(state, action)

    def values(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.q1(state, action), self.q2(state, action)])


# %% [markdown]
# Check: with target critics that answer 2 and 3 everywhere, the target is $R_i + 2\gamma_i$ (the
# smaller); both critics move toward it (each one's loss on the batch falls); and the actor's step
# climbs $Q_{\phi_1}$.

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
twin = DDPG(cfg, Actor(state_size, action_size, cfg.hidden), Actor(state_size, action_size, cfg.hidden),
            TwinCritic(state_size, action_size, cfg.hidden), TwinCritic(state_size, action_size, cfg.hidden), state_size)
with torch.no_grad():
    for critic, value in ((twin.critic_target.q1, 2.0), (twin.critic_target.q2, 3.0)):
        critic.out.weight.zero_()
        critic.out.bias.fill_(value)                     # Q'_1 = 2 and Q'_2 = 3 everywhere
y = ret + 2 * disc
losses = lambda: [(w * (y - q).pow(2)).mean().item() for q in twin.critic.values(s, a)]
before, q1 = losses(), twin.critic.q1(s, a).detach()
td, _, _ = twin.update_critic(s, a, ret, s_next, disc, w)
print("TD errors are R + 2 gamma_i - Q_1(s, a), the smaller target:", torch.allclose(td, y - q1, atol=1e-6))
assert torch.allclose(td, y - q1, atol=1e-6)
after = losses()
print(f"each critic's loss on the batch: {np.round(before, 4)} before, {np.round(after, 4)} after")
assert all(b > a for b, a in zip(before, after))
q_of_actor = lambda: twin.critic.q1(s, twin.actor(s)).mean().item()
before = q_of_actor()
twin.update_actor(s)
print(f"mean Q_1(s, mu(s)): {before:.4f} before the actor's step, {q_of_actor():.4f} after")
assert q_of_actor() > before

# %% [markdown]
# **What clipped double-Q measurably does.** The report's runs (`results/`, on the built-in
# replica, made by `make experiments`) change one thing at a time in the *full agent*, this
# notebook's default `Config()`, and compare each variant with it seed by seed (the same goals and
# initial weights) on the mean score of episodes 1-100. Here, and at the end of sections 3 to 5:
# the mean of the paired differences (variant minus full agent), its 95% interval, in how many
# seeds the variant scored higher, and the report's verdict (`Report.ipynb` section 4 gives the
# test behind it).

# %% tags=["nbval-check-output"]
table = runs.load()
e = stats.effect(table, "clipped_double_q")
Markdown(f"Over {e['seeds']} seeds, clipped double-Q changed the mean of episodes 1-100 by {e['mean']:+.2f} "
         f"(95% interval {e['low']:+.2f} to {e['high']:+.2f}); it scored higher in {e['better_in']} of them. "
         f"The report's verdict: {e['verdict']}.")

# %% [markdown]
# ## 3. n-step targets
#
# The one-step target $r_t + \gamma\,Q_{\phi'}(s_{t+1}, \mu_{\theta'}(s_{t+1}))$ leans entirely on
# the critic, which is poor early on, and passes a reward back one step per update. The
# $n$-step target [5, 6] uses $n$ real rewards before it bootstraps:
# $$y_t = \sum_{k=0}^{n-1} \gamma^k\, r_{t+k} + \gamma^n\, Q_{\phi'}\big(s_{t+n}, \mu_{\theta'}(s_{t+n})\big),$$
# that is, the update of 2.2 for the transition $i$ that starts at step $t$, with
# $R_i = \sum_{k=0}^{n-1}\gamma^k r_{t+k}$ (written $R_t$ below, by its step) and $\gamma_i = \gamma^n$.
# Rewards reach the critic $n$ times faster and the target depends less on the critic's errors
# (less bias). In exchange the sum carries the noise of $n$ rewards (more variance).
#
# **This target is uncorrected off-policy.** The rewards $r_{t+1}, \dots, r_{t+n-1}$ follow the
# actions $a_{t+1}, \dots, a_{t+n-1}$ that the behaviour policy took: the actor of that time, with
# exploration noise, not the current $\mu_\theta$. The buffer holds about 50 episodes of such
# older policies. So $y_t$ estimates the return of a mixture of past noisy policies for $n - 1$
# steps, then of $\mu_{\theta'}$; the critic is biased toward that mixture, the more so the
# larger $n$ and the faster the policy changes. D4PG [5] and Rainbow accept the same bias for
# the faster flow of reward [9]. The corrections that remove it weight each further reward by how likely
# the target policy $\pi$ was to take the action the behaviour policy $b$ took: by
# $\min(1, \pi(a|s)/b(a|s))$ in Retrace [8], by $\pi(a|s)$ in tree-backup [10]. The target policy
# here is deterministic: the noisy action actually taken has probability zero under it, so every
# trace is cut after one step and both collapse to the one-step target. They cannot help a
# deterministic actor.
#
# **n grows from 1** (a design choice). The policy changes fastest at the start, when its noisy
# behaviour earns almost nothing, so $n$ starts at 1 and grows by one every `n_step_ramp` = 4
# episodes, to $n = 5$ from episode 17 on. The report's ablation "5-step targets from episode 1"
# measures what the ramp changes. The transitions stored with a smaller $n$ stay in the buffer;
# each carries its own discount ($\gamma^n$ for the $n$ of its episode) for its bootstrap, so each
# stays a valid target.
#
# **The done step** (1.2) is not stored: its next state belongs to the next episode. Its reward
# still counts in the score, and the steps before it whose $n$-step window it would have closed
# get shorter returns that bootstrap from the last real state: for the transition starting at
# $t$ with $m < n$ real steps left,
# $y_t = \sum_{k=0}^{m-1}\gamma^k r_{t+k} + \gamma^m Q_{\phi'}(s_{t+m}, \mu_{\theta'}(s_{t+m}))$.
# Nothing crosses an episode boundary.
#
# All 20 arms step in lockstep and their episodes end together, so one window of the last $n$
# steps, as arrays of shape (steps, arms, ...), serves all of them. When the window is full it
# emits, for every arm at once, the transition that starts at its oldest step:
# $(s_t, a_t, R_t, s_{t+n}, \gamma^n)$.

# %% nbgrader={"grade": false, "grade_id": "n-step-return", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["export"]
class NStepAccumulator:
    """Turns the stream of (s, a, r, s', done) of all arms into n-step transitions."""

    def __init__(self, n: int, gamma: float, num_agents: int, state_size: int, action_size: int):
        self.n, self.gamma = n, gamma
        self.states = np.zeros((n, num_agents, state_size), np.float32)
        self.actions = np.zeros((n, num_agents, action_size), np.float32)
        self.rewards = np.zeros((n, num_agents), np.float32)
        self.count = 0                                        # steps in the window
        self.discounts = gamma ** np.arange(n + 1)             # 1, g, g^2, ..., g^n

    def push(self, states, actions, rewards, next_states, done: bool):
        """Add one step of all arms; return a batch of transitions (a tuple of arrays) or None."""
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
        ### BEGIN SOLUTION: ret = sum_k gamma^k r_{t+k} over the n steps in the window (self.discounts[k] = gamma^k), disc = gamma^n for every arm
        ret = np.einsum("k,ka->a", self.discounts[:self.n], self.rewards)
        disc = np.full(len(ret), self.discounts[self.n], np.float32)
        ### END SOLUTION
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
        ret = weights @ self.rewards[:m]                       # (starts, arms)
        agents = self.rewards.shape[1]
        disc = np.repeat(self.discounts[lengths], agents).astype(np.float32)
        boot = np.broadcast_to(bootstrap_states, (len(starts),) + bootstrap_states.shape)
        flat = lambda x: x.reshape((-1,) + x.shape[2:])
        return (flat(self.states[starts]), flat(self.actions[starts]), ret.reshape(-1).astype(np.float32),
                flat(np.array(boot, np.float32)), disc)


# %% [markdown]
# Check with $n = 3$, $\gamma = 0.5$, two arms and rewards $1, 2, 3, 4$ (the second arm gets 10
# times more): the first transition's return is $1 + 0.5 \cdot 2 + 0.25 \cdot 3 = 2.75$ with
# discount $0.125$. On the done step, the two pending starts get returns $3 + 0.5 \cdot 4 = 5$ and
# $4$, bootstrapping from the last real state with discounts $0.25$ and $0.5$, and the next
# episode starts with an empty window. An episode that ends before the window fills (rewards 1,
# 2, then done) flushes both its steps: returns $1 + 0.5 \cdot 2 = 2$ and $2$.

# %% nbgrader={"grade": true, "grade_id": "check-n-step-return", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["nbval-check-output"]
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
acc.push(state(1), state(1), np.array([2.0, 2.0]), state(2), done=False)   # done before the window fills:
s, a, ret, s_next, disc = acc.push(state(2), state(2), np.array([3.0, 3.0]), state(0), done=True)
print(f"done after 2 steps: starts s={s[:, 0]}, returns={ret}, discounts={disc}")
assert list(s[:, 0]) == [0, 0, 1, 1] and list(ret) == [2, 2, 2, 2] and list(disc) == [0.25, 0.25, 0.5, 0.5]

# %% [markdown]
# The $n$-step window in one picture: one arm's episode of 9 steps with $n = 4$, each stored transition
# drawn as the rewards it sums and the state it bootstraps from; the flush at the episode's end gives shorter
# returns that bootstrap from the last real state.

# %%
# One arm's episode of 9 steps with n = 4: each stored transition as the rewards it sums (bar) and the
# state it bootstraps from (dot). The last step reports done: it is dropped, and the window flushes.
acc = NStepAccumulator(n=4, gamma=0.9, num_agents=1, state_size=1, action_size=1)
rows = []
for t in range(9):
    out = acc.push(np.full((1, 1), t, np.float32), np.zeros((1, 1), np.float32), np.ones(1), np.full((1, 1), t + 1, np.float32), done=t == 8)
    for s, s_next, disc in zip(*(out[i] for i in (0, 3, 4))) if out is not None else ():
        rows.append((int(s[0]), int(round(np.log(disc) / np.log(0.9))), int(s_next[0]), t == 8))
fig, ax = plt.subplots(figsize=(8, 2.8))
for k, (start, length, boot, flushed) in enumerate(rows):
    colour = "tab:orange" if flushed else "tab:blue"
    ax.barh(k, length, left=start, height=0.5, color=colour, alpha=0.6)
    ax.plot(boot, k, "o", color=colour)
ax.set(xlabel="step t of the episode (step 8 reports done and is dropped)", ylabel="stored transition",
       title=r"$n$-step returns (bars: rewards summed; dots: bootstrap state); orange: flushed at the episode's end")
ax.invert_yaxis()
plt.show()
print(rows)

# %% [markdown]
# **Exercises.**
# 1. Train with one-step targets, `Config(n_step=1)`, for 60 episodes and compare the first
#    episode whose mean reached 30, and the diagnostics' mean $Q$ at the end, with the default run
#    (`checkpoints/`): which rises sooner, and whose $Q$ ends higher?
# 2. Start at $n = 5$ from the first episode, `Config(n_step_ramp=0)`: look at the first 10
#    episodes' scores and mean $Q$ (section 3 says why a long $n$ is off-policy early on).

# %% [markdown]
# **What $n$-step targets measurably do.** Both help here: 1-step targets, and 5-step targets
# from the first episode without the ramp of $n$, each score lower than the full agent, and the
# report finds both clearly worse.

# %% tags=["nbval-check-output"]
one, ramp = stats.effect(table, "one_step"), stats.effect(table, "no_ramp")
Markdown(f"Over {one['seeds']} seeds, 1-step targets scored {-one['mean']:.1f} points lower on the mean of "
         f"episodes 1-100 (95% interval {-one['high']:.1f} to {-one['low']:.1f}), lower in {one['worse_in']} of "
         f"{one['seeds']}. Without the ramp, 5-step targets scored {-ramp['mean']:.1f} lower (95% interval "
         f"{-ramp['high']:.1f} to {-ramp['low']:.1f}), lower in {ramp['worse_in']} of {ramp['seeds']}. The report's "
         f"verdicts: {one['verdict']} and {ramp['verdict']}.")

# %% [markdown]
# ## 4. Prioritized replay
#
# ### 4.1 Sampling by priority, with a sum tree
#
# Uniform replay draws every stored transition equally often, those the critic already predicts
# well and those it gets badly wrong alike. Prioritized replay [3] bets that the second kind teach
# more, and samples transition $i$ with probability
# $$P(i) = \frac{p_i^\alpha}{\sum_k p_k^\alpha}, \qquad p_i = |\delta_i| + c,$$
# where $\delta_i$ is its last TD error, $c > 0$ (`priority_offset`) keeps every transition
# reachable, and $\alpha$ sets how strongly to prioritise ($\alpha = 0$ is uniform). The buffer
# stores $p_i^\alpha$, so it samples in proportion to what it stores. New transitions get a
# large priority (4.2 says which), so they are likely to be drawn soon; with this stochastic
# prioritization that is likely, not certain.
#
# A **sum tree** makes this fast: a binary tree whose leaves hold the stored priorities and whose
# every node holds the sum of its children, so the root holds $\sum_k p_k^\alpha$. Changing a
# priority updates one path to the root, and finding the leaf where a prefix sum
# $u \in [0, \sum_k p_k^\alpha)$ falls walks one path down: both take as many steps as the tree
# has levels.
#
# In one numpy array of size $2M$ ($M$ a power of two at least the capacity), node $q$ has
# children $2q$ and $2q+1$, the root is node 1, and the leaves are nodes $M \dots 2M-1$. An
# update writes a leaf, then walks up to the root, recomputing each parent from its two
# children (a leaf written twice keeps its last value). Sampling walks $u$ down from the root:
# at each node, go left if $u$ falls within the left child's sum, else subtract that sum and go
# right. Each walk visits $\log_2 M = 20$ levels for a million transitions, for each of the 256
# transitions of a batch, every update. Vectorised over the batch one level at a time, that is a
# few numpy calls per level, whose call overhead exceeds their arithmetic; so the walks are
# plain loops compiled by numba (which also compiles the Reacher's physics).

# %% nbgrader={"grade": false, "grade_id": "sum-tree-walk", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["export"]
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
        ### BEGIN SOLUTION: walk down from the root (node 1) while node < leaves: left if u < the left child's sum, else subtract it and go right
        while node < leaves:
            left = tree[2 * node]
            if u >= left:
                u -= left
                node = 2 * node + 1
            else:
                node = 2 * node
        ### END SOLUTION
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

# %% nbgrader={"grade": true, "grade_id": "check-sum-tree-walk", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["nbval-check-output"]
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
# ### 4.2 Importance weights, and the buffer
#
# Sampling by priority changes the distribution the critic's expectation is taken over, so each
# sample's squared TD error is weighted by
# $$w_i = \frac{(N \cdot P(i))^{-\beta}}{\max_j\, (N \cdot P(j))^{-\beta}}, \qquad j \text{ over the batch},$$
# which undoes the bias fully at $\beta = 1$ ($N$ is the number of stored transitions). Dividing by the largest weight only ever scales
# updates down [3]. We take that maximum over the sampled batch, as Dopamine's implementation
# does [11]. The maximum over the whole buffer, $(N \min_j P(j))^{-\beta}$, lets one stale tiny
# priority shrink every update, a smaller learning rate in disguise whose shrinkage grows as
# $\beta \to 1$. The price of the batch maximum: it changes from batch to batch, so the
# correction is exact only up to a per-batch scale factor (the relative weights within a batch
# are exact, the step size is not). The actor's step uses the same prioritized batch without
# weights, so its expectation is over $P(i)$ rather than over the buffer: one more
# approximation. $\beta$ grows linearly from $\beta_0 = 0.4$ to 1 over
# `beta_steps` = 110,000 environment steps, about 110 episodes, where [3] anneals it to 1 by the
# end of training: a run that solves at episode 100 stops at $\beta \approx 0.95$.
#
# Preallocated arrays hold the transitions; a ring index overwrites the oldest. Sampling is
# stratified: the total is cut into `batch` equal segments and one prefix sum is drawn in each,
# which spreads the batch over the whole distribution.
#
# **A new transition's priority.** It has no TD error yet, so [3] gives it the largest priority
# seen so far, to replay it soon. But the TD errors shrink as the critic learns, while that
# maximum, set early, stays: with $\alpha = 0.5$ a priority $k$ times the typical one is drawn
# $\sqrt{k}$ times as often, and after episode 20 (6.2), when the agent stores 20 transitions a
# step and draws `batch_size / learn_every_later` = 32, many are never drawn at all and pile up
# at that stale maximum. So a new transition here gets the largest priority of the last
# `priority_window` = 100 updates; a report ablation keeps the largest ever, as in [3]. The
# report's section 2.1 measures both rules: how far above the TD errors a new transition's
# priority ends, how much of the sampling the never-replayed transitions take, and the scores.

# %% nbgrader={"grade": false, "grade_id": "importance-weights", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["export"]
class PrioritizedReplay:
    """Replay of n-step transitions (s, a, R, s', discount), sampled by priority."""

    def __init__(self, capacity: int, state_size: int, action_size: int, alpha: float,
                 offset: float, rng: np.random.Generator, window: int = 1):
        self.capacity, self.alpha, self.offset, self.rng, self.window = capacity, alpha, offset, rng, window
        self.states = np.zeros((capacity, state_size), np.float32)
        self.actions = np.zeros((capacity, action_size), np.float32)
        self.returns = np.zeros(capacity, np.float32)
        self.next_states = np.zeros((capacity, state_size), np.float32)
        self.discounts = np.zeros(capacity, np.float32)
        self.priorities = SumTree(capacity)       # holds p_i^alpha
        self.recent = np.ones(window)             # the largest p_i of each of the last `window` updates
        self.next, self.size, self.updates = 0, 0, 0

    def add(self, states, actions, returns, next_states, discounts) -> None:
        idx = (self.next + np.arange(len(returns))) % self.capacity
        self.states[idx], self.actions[idx], self.returns[idx] = states, actions, returns
        self.next_states[idx], self.discounts[idx] = next_states, discounts
        self._set_priority(idx, np.full(len(idx), self.entry_priority))
        self.next = (self.next + len(idx)) % self.capacity
        self.size = min(self.size + len(idx), self.capacity)

    def sample(self, batch: int, beta: float):
        """Indices, importance weights w_i = (N P(i))^-beta / max_j (N P(j))^-beta (j in the batch), the batch."""
        total = self.priorities.total()
        bounds = (np.arange(batch) + self.rng.random(batch)) * (total / batch)
        idx = np.minimum(self.priorities.find_prefix_sum(bounds), self.size - 1)
        ### BEGIN SOLUTION: w_i = (N P(i))^-beta with P(i) = priority / total, divided by the batch's largest
        weights = (self.size * self.priorities[idx] / total) ** -beta
        weights /= weights.max()
        ### END SOLUTION
        batch_arrays = tuple(x[idx] for x in (self.states, self.actions, self.returns, self.next_states, self.discounts))
        return idx, weights.astype(np.float32), batch_arrays

    @property
    def entry_priority(self) -> float:
        """A new transition's p: the largest of the last `window` updates."""
        return float(self.recent.max())

    def update_priorities(self, idx, td_errors) -> None:
        priorities = np.abs(td_errors) + self.offset
        self.recent[self.updates % self.window] = priorities.max()      # a ring of the updates' largest
        self.updates += 1
        self._set_priority(idx, priorities)

    def _set_priority(self, idx, priorities) -> None:
        self.priorities[idx] = priorities ** self.alpha


# %% [markdown]
# Check: after giving transition 0 a TD error 9 times larger than the others', it is drawn
# about 9/13 of the time with $\alpha = 1$, and $3/7$ of the time with $\alpha = 0.5$
# ($\sqrt 9 / (\sqrt 9 + 4)$); its weight is the smallest, and the weights equal
# $(N P(i))^{-\beta} / \max_j (N P(j))^{-\beta}$ computed directly. And updated out of order,
# each transition holds its own $p_i^\alpha = (|\delta_i| + c)^\alpha$.

# %% nbgrader={"grade": true, "grade_id": "check-importance-weights", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["nbval-check-output"]
zeros = np.zeros((5, 1), np.float32)
for alpha in (1.0, 0.5):
    buffer = PrioritizedReplay(8, state_size=1, action_size=1, alpha=alpha, offset=0.0, rng=np.random.default_rng(0))
    buffer.add(zeros, zeros, np.arange(5, dtype=np.float32), zeros, np.ones(5, np.float32))
    buffer.update_priorities(np.arange(5), np.array([9.0, 1.0, 1.0, 1.0, 1.0]))
    idx, weights, _ = buffer.sample(100_000, beta=0.5)
    P = np.array([9.0, 1, 1, 1, 1]) ** alpha / (9 ** alpha + 4)
    direct = (5 * P) ** -0.5 / ((5 * P) ** -0.5).max()
    found = weights[[np.argmax(idx == 0), np.argmax(idx == 1)]]
    print(f"alpha {alpha}: share of transition 0 {np.mean(idx == 0):.3f}, expected {P[0]:.3f}; "
          f"weights of 0 and 1 {np.round(found, 4)}, direct {np.round(direct[:2], 4)}")
    assert abs(np.mean(idx == 0) - P[0]) < 0.01 and np.allclose(found, direct[:2], rtol=1e-5)
pr = PrioritizedReplay(8, state_size=1, action_size=1, alpha=0.5, offset=0.25, rng=np.random.default_rng(0))
pr.add(zeros, zeros, np.zeros(5, np.float32), zeros, np.ones(5, np.float32))
td = np.array([0.0, -1.0, 2.0, -3.0, 4.0])
pr.update_priorities(np.array([3, 0, 4, 1, 2]), td[[3, 0, 4, 1, 2]])
print("stored priorities:", np.round(pr.priorities[np.arange(5)], 3), " expected (|td| + c)^alpha:",
      np.round((np.abs(td) + 0.25) ** 0.5, 3))
assert np.allclose(pr.priorities[np.arange(5)], (np.abs(td) + 0.25) ** 0.5)
for window in (2, 3):             # after one large TD error and two small ones: 2 forgets it, 3 keeps it
    pr = PrioritizedReplay(8, state_size=1, action_size=1, alpha=0.5, offset=0.0, rng=np.random.default_rng(0), window=window)
    for error in (9.0, 0.5, 0.25):
        pr.update_priorities(np.array([0]), np.array([error]))
    pr.add(zeros[:1], zeros[:1], zeros[0], zeros[:1], np.ones(1, np.float32))
    print(f"window {window}: a new transition's p = {pr.priorities[0] ** 2:.2f}")
    assert np.isclose(pr.priorities[0] ** 2, 0.5 if window == 2 else 9.0)

# %% [markdown]
# Prioritized sampling in one picture: 16 transitions with TD errors from 0.1 to 3, drawn 51,200 times;
# each is drawn as often as $P(i)$ says, and the importance weights undo it, fully at $\beta = 1$.

# %%
# 16 transitions with TD errors 0.1 to 3: how often each is drawn (200 batches of 256) against P(i),
# and the importance weight each gets, at the first beta and at 1.
zeros = np.zeros((16, 1), np.float32)
buffer = PrioritizedReplay(16, state_size=1, action_size=1, alpha=cfg.alpha, offset=cfg.priority_offset, rng=np.random.default_rng(0))
buffer.add(zeros, zeros, np.zeros(16, np.float32), zeros, np.ones(16, np.float32))
buffer.update_priorities(np.arange(16), np.linspace(0.1, 3.0, 16))
drawn = np.concatenate([buffer.sample(256, cfg.beta_start)[0] for _ in range(200)])
P = buffer.priorities[np.arange(16)] / buffer.priorities.total()
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.8))
left.bar(np.arange(16), np.bincount(drawn, minlength=16) / len(drawn), color="tab:blue", alpha=0.6, label="drawn")
left.plot(np.arange(16), P, "k_", ms=12, mew=2, label=r"$P(i) = p_i^\alpha / \sum_k p_k^\alpha$")
left.set(xlabel="transition i (TD error growing)", ylabel="share of draws", title=rf"Sampled as often as $P(i)$ says ($\alpha$ = {cfg.alpha})")
left.legend(fontsize=8)
for beta in (cfg.beta_start, 1.0):
    w = (16 * P) ** -beta
    right.plot(np.arange(16), w / w.max(), "o-", label=rf"$\beta$ = {beta}")
right.set(xlabel="transition i", ylabel=r"weight $w_i$", title="The more often drawn, the less weight")
right.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Exercises.**
# 1. Uniform replay is `Config(alpha=0.0)`: train 60 episodes and compare the worst arm's mean
#    score and the diagnostics' `unreplayed_share` with the default. Does prioritization change how
#    much of the buffer is never replayed?
# 2. Let new transitions enter at the largest priority of the last 10,000 updates, close to [3]'s
#    largest ever, `Config(priority_window=10_000)`, and watch `max_priority` in the diagnostics:
#    what happens to it after the first large TD errors?

# %% [markdown]
# **What prioritized replay measurably does here: no measurable gain.** After the first 20
# episodes the agent makes one update on a batch of 256 for every 160 new transitions, into a
# buffer of about 50 episodes, so much of the buffer is never replayed, and new transitions, which
# enter at a high priority, are drawn first (`Report.ipynb` section 2.1). Against uniform replay:

# %% tags=["nbval-check-output"]
e = stats.effect(table, "uniform")
Markdown(f"Over {e['seeds']} seeds, uniform replay changed the mean of episodes 1-100 by {e['mean']:+.2f} "
         f"(95% interval {e['low']:+.2f} to {e['high']:+.2f}); it scored lower in {e['worse_in']} of them. "
         f"The report's verdict: {e['verdict']}, as for the two other rules for new transitions.")

# %% [markdown]
# This is in line with Fujimoto et al. [15]: sampling by priority with a squared loss is the same,
# in expectation, as uniform sampling with another loss, and in their MuJoCo runs prioritized replay
# brought TD3, an actor-critic method like this one, little or nothing. The new-transition priority
# of 4.2 is a choice: the rule of [3] (the largest priority ever) scores no differently.

# %% [markdown]
# ## 5. NoisyNet exploration
#
# ### 5.1 Noisy layers
#
# DDPG usually explores by adding noise to the actor's actions. NoisyNet [4] instead makes the
# actor's weight matrices noisy, $W = \bar W + \sigma^W \odot \varepsilon^W$ (and likewise the
# biases, $b = \bar b + \sigma^b \odot \varepsilon^b$), and learns the mean weights $\bar W$ and the
# noise scales $\sigma^W$ by gradient descent with everything else. In DQN, where the noise enters
# the TD loss, that lets the network learn how much to explore and where; in DDPG's actor loss
# nothing rewards exploring, and 5.2 says why $\sigma$ then tends to shrink. With factorised Gaussian noise a layer with $d_\text{in}$ inputs and
# $d_\text{out}$ outputs needs only $d_\text{in} + d_\text{out}$ standard normal numbers,
# $\varepsilon^{in}_i$ for the inputs and $\varepsilon^{out}_j$ for the outputs:
# $$\varepsilon^W_{ji} = f(\varepsilon^{out}_j)\,f(\varepsilon^{in}_i), \qquad \varepsilon^b_j = f(\varepsilon^{out}_j), \qquad f(x) = \operatorname{sgn}(x)\sqrt{|x|},$$
# with $\bar W$ initialised uniformly in $\pm 1/\sqrt{d_\text{in}}$ and $\sigma^W$ at
# $\sigma_0/\sqrt{d_\text{in}}$. In the code, `weight_mean` is $\bar W$, `weight_sigma` is
# $\sigma^W$, and the buffers `eps_in` and `eps_out` hold $f(\varepsilon^{in})$ and
# $f(\varepsilon^{out})$. The agent sets them: noise when acting and when learning, none (the mean
# weights) for evaluation and for the target actor.

# %% nbgrader={"grade": false, "grade_id": "noisy-weights", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["export"]
def signed_sqrt(eps: torch.Tensor) -> torch.Tensor:
    """f(x) = sgn(x) sqrt(|x|), applied to factorised noise [4]."""
    return eps.sign() * eps.abs().sqrt()


class NoisyLinear(nn.Module):
    """y = (w_mean + w_sigma * f(eps_out) f(eps_in)^T) x + b_mean + b_sigma * f(eps_out)  [4]."""

    def __init__(self, in_features: int, out_features: int, sigma0: float = 0.5):
        super().__init__()
        self.in_features, self.out_features, bound = in_features, out_features, in_features ** -0.5
        self.weight_mean = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma0 * bound))
        self.bias_mean = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma0 * bound))
        self.register_buffer("eps_in", torch.zeros(in_features))      # f(eps_i), set by the agent
        self.register_buffer("eps_out", torch.zeros(out_features))    # f(eps_j)
        self.noisy = False                     # the mean weights until noise is set: the target actor's stay so

    def set_noise(self, eps: torch.Tensor) -> None:
        """eps: in_features + out_features standard normal numbers."""
        f = signed_sqrt(eps)
        self.eps_in.copy_(f[:self.in_features])
        self.eps_out.copy_(f[self.in_features:])
        self.noisy = True

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"

    def noisy_weights(self, f_in: torch.Tensor, f_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The weight and bias of one noise sample: w_mean + w_sigma * (f_out f_in^T), b_mean + b_sigma * f_out."""
        ### BEGIN SOLUTION: return w_mean + w_sigma * outer(f_out, f_in) and b_mean + b_sigma * f_out (factorised noise)
        return (torch.addcmul(self.weight_mean, self.weight_sigma, torch.outer(f_out, f_in)),
                torch.addcmul(self.bias_mean, self.bias_sigma, f_out))
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.noisy:
            return F.linear(x, self.weight_mean, self.bias_mean)
        return F.linear(x, *self.noisy_weights(self.eps_in, self.eps_out))


# %% [markdown]
# Check: the noise is factorised as in [4]: $f$ of the input and output noise, their outer
# product on the weights; $\sigma^W$ starts at $\sigma_0/\sqrt{d_\text{in}}$ and $\bar W$ within
# $\pm 1/\sqrt{d_\text{in}}$. Without noise the output uses the mean weights alone; and a gradient
# step changes $\sigma^W$, so it is learned.

# %% nbgrader={"grade": true, "grade_id": "check-noisy-weights", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["nbval-check-output"]
torch.manual_seed(0)
layer = NoisyLinear(3, 2, sigma0=0.5)
print(layer)
x = torch.randn(4, 3)
assert torch.allclose(layer.weight_sigma, torch.full((2, 3), 0.5 / 3 ** 0.5))     # sigma0 / sqrt(d_in)
assert layer.weight_mean.abs().max() <= 3 ** -0.5 and layer.bias_mean.abs().max() <= 3 ** -0.5
layer.noisy = False
assert torch.allclose(layer(x), x @ layer.weight_mean.T + layer.bias_mean)
eps = torch.tensor([4.0, -0.25, 0.0, -9.0, 1.0])      # 3 inputs, then 2 outputs
layer.noisy = True
layer.set_noise(eps)
f = lambda e: e.sign() * e.abs().sqrt()
print("f(eps_in):", layer.eps_in.tolist(), " f(eps_out):", layer.eps_out.tolist())
assert layer.eps_in.tolist() == [2.0, -0.5, 0.0] and layer.eps_out.tolist() == [-3.0, 1.0]
weight = layer.weight_mean + layer.weight_sigma * torch.outer(f(eps[3:]), f(eps[:3]))   # factorised
bias = layer.bias_mean + layer.bias_sigma * f(eps[3:])
assert torch.allclose(layer(x), x @ weight.T + bias)
sigma_before = layer.weight_sigma.detach().clone()
layer(x).sum().backward()
torch.optim.SGD(layer.parameters(), lr=0.1).step()
print("sigma changed by a gradient step:", not torch.equal(sigma_before, layer.weight_sigma))
assert not torch.equal(sigma_before, layer.weight_sigma)

# %% [markdown]
# ### 5.2 The noisy actor, and noise correlated in time
#
# `NoisyActor` is the actor of 2.1 with `NoisyLinear` layers. Its `set_noise` takes one vector of
# `noise_size` standard normal numbers and gives each layer its share, which the layer keeps in
# its own buffers (no buffer is a view into another, so moving the actor keeps the noise). Its
# `draw` instead writes the weights of one noise sample into a plain `Actor`, which then acts as
# the noisy actor with that noise at the cost of a plain forward pass: the behaviour policy of 6.1
# acts so.
#
# An arm has inertia, so noise drawn afresh every step may average out before the arm moves.
# This project's design therefore **draws the acting noise $\varepsilon_t$ (all of the actor's
# noise numbers at step $t$) from an Ornstein-Uhlenbeck process** [1] of unit variance (a design
# choice that the report's ablations do not isolate):
# $$\varepsilon_{t+1} = (1 - \kappa)\,\varepsilon_t + \sqrt{1 - (1 - \kappa)^2}\;\xi_t, \qquad \xi_t \sim \mathcal{N}(0, I).$$
# Each $\varepsilon_t$ is still $\mathcal{N}(0, I)$, as NoisyNet assumes, but steps $\ell$ apart are
# correlated by $(1 - \kappa)^\ell$, so a perturbed policy persists for about $1/\kappa$ steps
# ($\kappa$ = `ou_kappa`). The process returns its **state** $\varepsilon_t$, which is what makes
# it correlated (returning $\xi_t$ gives white noise). The report's action-noise ablations add
# such a process, scaled, to the actions instead. The learning updates draw fresh,
# independent noise, as in [4].
#
# Three departures from [4], named:
# * **What trains $\sigma$.** In DQN the noise enters the TD loss; here the actor's only loss is
#   $-Q_\phi(s, \mu_\theta(s))$, and nothing in it rewards exploring: near a maximum of the critic a
#   noisy action scores lower on average, so the gradient tends to shrink $\sigma$. The report
#   (section 1.2) shows how far it fell in the solving run. Parameter-space noise for DDPG [12]
#   avoids this by adapting the noise scale to a target distance in action space instead of
#   learning it.
# * **One noise sample for all 20 arms.** One $\varepsilon$ drives all 20 arms at a time, so
#   their exploration is correlated (the arms still differ in state). A report ablation gives each
#   arm its own sample, as the action-noise variants do.
# * **The target actor uses the mean weights** (no noise), where [4] also perturbs the target
#   network; this keeps the bootstrap target deterministic.

# %% nbgrader={"grade": false, "grade_id": "ou-step", "locked": false, "schema_version": 3, "solution": true, "task": false} tags=["export"]
class NoisyActor(Actor):
    """The actor with NoisyLinear layers (`layer`), one noise sample for a whole batch."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple, sigma0: float, layer=NoisyLinear):
        super().__init__(state_size, action_size, hidden, layer=lambda i, o: layer(i, o, sigma0))
        self.sizes = [n for layer in self.layers for n in (layer.in_features, layer.out_features)]
        self.noise_size = sum(self.sizes)

    def set_noise(self, eps: torch.Tensor | None) -> None:
        """Noise for every layer (`noise_size` standard normal numbers), or None for the mean weights."""
        for layer in self.layers:
            layer.noisy = eps is not None
        if eps is not None:
            f = signed_sqrt(eps).split(self.sizes, dim=-1)     # f(eps) of NoisyLinear, all layers at once
            buffers = (b for layer in self.layers for b in (layer.eps_in, layer.eps_out))
            for buffer, part in zip(buffers, f):
                buffer.copy_(part)                     # copy_ also moves it to the buffer's device and dtype

    @torch.no_grad()
    def draw(self, eps: torch.Tensor, into: Actor) -> None:
        """Write into the plain actor `into` the weights of one noise sample (`noise_size` numbers;
        zeros give the mean weights): `into` then acts as this actor with that noise."""
        f = signed_sqrt(eps.to(self.layers[0].weight_mean)).split(self.sizes)
        for k, (layer, plain) in enumerate(zip(self.layers, into.layers)):
            weight, bias = layer.noisy_weights(f[2 * k], f[2 * k + 1])
            plain.weight.copy_(weight)
            plain.bias.copy_(bias)


class OrnsteinUhlenbeck:
    """x <- (1 - kappa) x + scale sqrt(1 - (1 - kappa)^2) xi: stationary std `scale`, and
    correlation (1 - kappa)^k between steps k apart. Returns the process's state."""

    def __init__(self, shape, kappa: float, scale: float, generator: torch.Generator):
        self.kappa, self.scale, self.generator = kappa, scale, generator
        self.state = scale * torch.randn(shape, generator=generator)   # start in the stationary law

    def sample(self) -> torch.Tensor:
        xi = torch.randn(self.state.shape, generator=self.generator)
        ### BEGIN SOLUTION: the OU step x <- (1 - kappa) x + scale sqrt(1 - (1 - kappa)^2) xi, kept in self.state
        self.state = (1 - self.kappa) * self.state + self.scale * (1 - (1 - self.kappa) ** 2) ** 0.5 * xi
        ### END SOLUTION
        return self.state


# %% [markdown]
# Check: one call sets every layer's noise ($f(\varepsilon)$ in each layer's buffers); with noise
# the same states give other actions, with `None` the mean weights; a plain actor drawn with the
# same noise acts exactly as the noisy one; and the process keeps unit
# variance (a wrong increment scale would drift from it) with a correlation of about
# $(1 - 0.15)^\ell$ at lag $\ell$.

# %% nbgrader={"grade": true, "grade_id": "check-ou-step", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["nbval-check-output"]
torch.manual_seed(0)
noisy_actor = NoisyActor(state_size, action_size, hidden, sigma0=0.5)
print(noisy_actor)
assert noisy_actor.noise_size == sum(i + o for i, o in zip((state_size, *hidden), (*hidden, action_size)))
eps = torch.randn(noisy_actor.noise_size)
noisy_actor.set_noise(eps)
in_layers = torch.cat([torch.cat([layer.eps_in, layer.eps_out]) for layer in noisy_actor.layers])
print("every layer's buffers hold its share of f(eps), in order:", torch.equal(in_layers, f(eps)))
assert torch.equal(in_layers, f(eps))
s = torch.randn(20, state_size)
with torch.no_grad():
    acting = noisy_actor(s)
    noisy_actor.set_noise(None)
    mean_only = noisy_actor(s)
print(f"largest change of an action by the noise: {(acting - mean_only).abs().max():.3f}")
assert not torch.allclose(acting, mean_only)
drawn = Actor(state_size, action_size, hidden)
noisy_actor.draw(eps, into=drawn)
with torch.no_grad():
    print("a plain actor drawn with the same noise acts as the noisy actor:", torch.equal(drawn(s), acting))
    assert torch.equal(drawn(s), acting)
ou = OrnsteinUhlenbeck(20_000, kappa=0.15, scale=1.0, generator=torch.Generator().manual_seed(0))
path = torch.stack([ou.sample() for _ in range(11)])
lags = [torch.corrcoef(torch.stack([path[0], path[k]]))[0, 1].item() for k in (1, 5, 10)]
for _ in range(100):
    ou.sample()
print(f"OU std after 111 steps: {ou.state.std():.3f}; correlation at lags 1, 5, 10:", [round(c, 2) for c in lags],
      " expected:", [round(0.85 ** k, 2) for k in (1, 5, 10)])
assert abs(ou.state.std() - 1) < 0.015 and np.allclose(lags, [0.85 ** k for k in (1, 5, 10)], atol=0.03)

# %% [markdown]
# Both kinds of noise in one picture: on the left, noise correlated in time against white noise of the same
# spread; on the right, what the noise does to the actions: one state's first two torques under 300 noise
# samples of a fresh noisy actor, around the action of its mean weights.

# %%
# Left: noise correlated in time (OU, kappa 0.15) against white noise of the same spread. Right: one
# state's actions (the first two of 4) under 300 noise samples of a fresh noisy actor, and its mean weights.
generator = torch.Generator().manual_seed(0)
ou = OrnsteinUhlenbeck((1,), kappa=cfg.ou_kappa, scale=1.0, generator=generator)
steps = np.arange(150)
actor = NoisyActor(state_size, action_size, cfg.hidden, cfg.noisy_sigma0)
s = torch.randn(1, state_size, generator=generator)
with torch.no_grad():
    samples = []
    for _ in range(300):
        actor.set_noise(torch.randn(actor.noise_size, generator=generator))
        samples.append(actor(s)[0].numpy())
    actor.set_noise(None)
    mean_action = actor(s)[0].numpy()
samples = np.array(samples)
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.8))
left.plot(steps, [ou.sample().item() for _ in steps], label=rf"OU, $\kappa$ = {cfg.ou_kappa}")
left.plot(steps, torch.randn(len(steps), generator=generator), lw=0.7, alpha=0.7, label="white")
left.set(xlabel="step", ylabel=r"noise $\varepsilon$", title=rf"OU noise: correlated over about $1/\kappa$ = {1 / cfg.ou_kappa:.0f} steps")
left.legend(fontsize=8)
right.scatter(samples[:, 0], samples[:, 1], s=6, alpha=0.5, label="one noise sample each")
right.plot(*mean_action[:2], "k*", ms=14, label="mean weights")
right.set(xlabel="torque 1", ylabel="torque 2", title=rf"One state, 300 noise samples ($\sigma_0$ = {cfg.noisy_sigma0})")
right.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Exercises.**
# 1. Explore with Ornstein-Uhlenbeck action noise instead of NoisyNet, and with none at all. These are
#    report ablations, which the package builds as variants of this agent: `from continuous_control
#    import ablations`, then `ablations.train(ablations.Ablation(exploration="ou"), env, "runs/ou", 20,
#    live=False)`, and the same with `exploration="none"`. Compare the first 20 episodes' scores:
#    with 20 arms in 20 different states, how much does the noise still matter?
# 2. Print the mean $|\sigma|$ of each noisy layer (the diagnostics' `sigma_k`) over a run: does
#    $\sigma$ grow or shrink, as 5.2 predicts?

# %% [markdown]
# **What NoisyNet measurably does here: no measurable gain.** Neither Ornstein-Uhlenbeck noise of
# the same correlation added to the actions nor no exploration noise at all scores clearly
# differently: 20 arms in 20 different states explore for the agent.

# %% tags=["nbval-check-output"]
ou, none = stats.effect(table, "action_noise"), stats.effect(table, "no_noise")
Markdown(f"Over {ou['seeds']} seeds, OU action noise changed the mean of episodes 1-100 by {ou['mean']:+.2f} "
         f"(95% interval {ou['low']:+.2f} to {ou['high']:+.2f}), and no noise by {none['mean']:+.2f} "
         f"({none['low']:+.2f} to {none['high']:+.2f}). The report's verdicts: {ou['verdict']} and {none['verdict']}.")

# %% [markdown]
# ## 6. The agent
#
# ### 6.1 The behaviour policy
#
# What acts is the **behaviour policy**: a copy of the normaliser and an actor with this step's
# exploration noise. The agent refreshes it once per step, after the environment step and before
# that step's update, so each step acts with the weights of one update before: a difference of
# one learning-rate step, and it lets the update and the acting never share a tensor.
#
# The refresh steps the Ornstein-Uhlenbeck noise $\varepsilon_t$ of 5.2 and writes the weights it
# gives, $\bar W + \sigma^W \odot f(\varepsilon^{out}) f(\varepsilon^{in})^\top$ for each layer, into
# a plain `Actor` (`NoisyActor.draw`): one noise sample for all 20 arms, its weights made once per
# step, and acting costs one plain forward pass. `mean_actor` acts without noise (the mean weights),
# for evaluation; it leaves the behaviour policy as it is, so the next step explores again.

# %% tags=["export"]
class Behaviour(nn.Module):
    """What acts: a copy of the learner's normaliser, and its actor's weights under this step's noise."""

    def __init__(self, cfg: Config, learner: DDPG, actor: Actor, generator: torch.Generator):
        super().__init__()
        self.learner, self.norm, self.actor = learner, Normalizer(learner.norm.mean.numel()), actor.requires_grad_(False)
        self.noise = OrnsteinUhlenbeck(learner.actor.noise_size, cfg.ou_kappa, 1.0, generator)    # epsilon_t (5.2)

    @torch.no_grad()
    def refresh(self) -> None:
        """Copy the learner's state statistics, and draw its actor's weights with the next noise sample."""
        for copy, source in zip(self.norm.buffers(), self.learner.norm.buffers()):
            copy.copy_(source)
        self.learner.actor.draw(self.noise.sample(), into=self.actor)

    @torch.inference_mode()        # no_grad, and none of autograd's bookkeeping (version counters) either
    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.actor(self.norm(states)).clamp(-1, 1)

    @torch.no_grad()
    def mean_actor(self, states: torch.Tensor) -> torch.Tensor:
        """The learner's actor without noise; this policy is left as it is (it goes on exploring)."""
        self.learner.actor.set_noise(None)     # the mean weights; learn() draws fresh noise before using it
        return self.learner.actor(self.learner.norm(states)).clamp(-1, 1)


# %% [markdown]
# ### 6.2 The agent: all of it together
#
# `Agent` is DDPG (2.2) with the rest around it. Per step, for all 20 arms at once, `step`
# refreshes the behaviour policy for the next step, updates the state statistics, feeds the
# $n$-step window (3) and stores what it emits in the prioritized buffer (4) at the largest
# priority of the last `priority_window` updates (4.2). Once the buffer holds `warmup` transitions it learns every `learn_every`
# steps: `learn` samples a batch by priority with its importance weights, makes the critic's
# step, sets the sampled transitions' priorities from this update's TD errors, draws fresh
# NoisyNet noise (5) for the actor's step, and soft-updates the targets.
#
# **How often to learn** (the replay ratio). Each step stores 20 transitions, and an update
# draws 256: learning every step, that is about 13 draws per stored transition. The updates are
# where the time goes. Early on they are what makes the scores rise; once the arms score near
# the maximum, the updates only have to keep them there. So the agent learns
# every step in its fast episodes, the first `learn_every_until` = 20, and every `learn_every_later`
# = 8 steps after them, which cuts the later episodes' time to a fraction. This is a design choice
# for speed; the report's ablation "learning every step throughout" measures what it costs in
# score. `begin_episode` sets the episode's $n$ (3) and its learning interval.

# %% [markdown]
# The networks live on `cfg.device`; `agent.to(...)` (from `DDPG`) moves or casts them all later,
# for example `agent.to(torch.float64)`, and each batch follows them. `learn` returns the losses
# and the mean $Q$ of its update, for the training run's diagnostics (which the package records).

# %% [markdown]
# **Seeds.** One `numpy.random.SeedSequence(cfg.seed)` spawns independent streams for
# the environment's goals, the replay sampler (`rng`), the weights (the global torch generator)
# and the noise (`gen`): generators merely started from the same number would draw the same
# stream, so the goals would repeat the replay sampler's draws.

# %% tags=["export"]
def seed_streams(seed: int) -> dict:
    """A 64-bit seed for each source of randomness, from independent streams spawned by one SeedSequence."""
    names = ("goals", "replay", "weights", "noise")
    return {name: int(seq.generate_state(1, np.uint64)[0]) for name, seq in zip(names, np.random.SeedSequence(seed).spawn(4))}


# %% tags=["export"]
class Agent(DDPG):
    """DDPG (2) with n-step targets (3), prioritized replay (4) and NoisyNet (5), for all arms at once."""

    def __init__(self, cfg: Config, state_size: int, action_size: int, num_agents: int):
        seeds, self.cfg, self.sizes = seed_streams(cfg.seed), cfg, (num_agents, state_size, action_size)
        self.rng, self.gen = np.random.default_rng(seeds["replay"]), torch.Generator().manual_seed(seeds["noise"])
        torch.manual_seed(seeds["weights"])
        critic = TwinCritic if cfg.clipped_double_q else Critic                # 2.3
        super().__init__(cfg, self.make_actor(), self.make_actor(), critic(state_size, action_size, cfg.hidden),
                         critic(state_size, action_size, cfg.hidden), state_size)
        self.behaviour = self.make_behaviour()
        self.memory = PrioritizedReplay(cfg.buffer_size, state_size, action_size, cfg.alpha, cfg.priority_offset, self.rng,
                                        cfg.priority_window)
        self.nstep, self.steps, self.updates = None, 0, 0
        self.to(cfg.device)

    def make_actor(self) -> nn.Module:         # the parts a variant of this agent (the report's ablations) may swap
        return NoisyActor(*self.sizes[1:], self.cfg.hidden, self.cfg.noisy_sigma0)

    def make_behaviour(self) -> nn.Module:     # 6.1: acts with a plain actor, drawn from the noisy one
        return Behaviour(self.cfg, self, Actor(*self.sizes[1:], self.cfg.hidden), self.gen)

    def begin_episode(self, episode: int) -> None:
        """Episode `episode`'s n (growing from 1), learning interval and first policy."""
        cfg = self.cfg
        n = min(cfg.n_step, 1 + (episode - 1) // cfg.n_step_ramp) if cfg.n_step_ramp else cfg.n_step
        if self.nstep is None or n != self.nstep.n:       # between episodes the window is empty
            self.nstep = NStepAccumulator(n, cfg.gamma, *self.sizes)
        self.learn_every = cfg.learn_every if episode <= cfg.learn_every_until else cfg.learn_every_later
        self.behaviour.refresh()

    def act(self, states: np.ndarray, explore: bool = True) -> np.ndarray:
        policy = self.behaviour if explore else self.behaviour.mean_actor     # explore=False: the mean actor, no noise
        return policy(self.tensor(states)).to("cpu", torch.float32).numpy()

    def step(self, states, actions, rewards, next_states, done: bool) -> None:
        if not done:
            self.behaviour.refresh()                      # the next step's policy, before this step's update
        self.norm.update(self.tensor(states))
        transitions = self.nstep.push(states, actions, rewards, next_states, done)
        if transitions is not None:
            self.memory.add(*transitions)
        self.steps += 1
        if self.memory.size >= self.cfg.warmup and self.steps % self.learn_every == 0:
            self.learn()

    def beta(self) -> float:
        return min(1.0, self.cfg.beta_start + (1 - self.cfg.beta_start) * self.steps / self.cfg.beta_steps)

    def learn(self) -> dict:
        idx, weights, batch = self.memory.sample(self.cfg.batch_size, self.beta())
        s, a, ret, s_next, disc = (self.tensor(x) for x in batch)
        s, s_next = self.norm(s), self.norm(s_next)              # the replay keeps raw states
        td, critic_loss, q = self.update_critic(s, a, ret, s_next, disc, self.tensor(weights))
        self.memory.update_priorities(idx, td.cpu().numpy())
        self.actor.set_noise(torch.randn(self.actor.noise_size, generator=self.gen))    # fresh noise: sigma learns too
        actor_loss = self.update_actor(s)
        self.update_targets()
        self.updates += 1
        return {"critic_loss": critic_loss, "actor_loss": actor_loss, "q": q}


# %% [markdown]
# Check: after 12 steps of made-up transitions with learning from the start and $n = 5$, the
# buffer holds the $20 \times 8$ transitions emitted so far (the first at step 5), and the agent
# has learned at every step since the buffer first held a batch of 32 (steps 6 to 12); the
# updates have set the sampled priorities from their TD errors; and the behaviour policy without
# noise acts as the actor's mean weights.

# %% tags=["nbval-check-output"]
check = Agent(Config(buffer_size=1000, batch_size=32, warmup=32, n_step_ramp=0), state_size, action_size, num_agents)
check.begin_episode(1)
fake = np.random.default_rng(1)
for t in range(12):
    s = fake.standard_normal((num_agents, state_size)).astype(np.float32)
    check.step(s, check.act(s), fake.random(num_agents).astype(np.float32), s, done=False)
print("transitions stored:", check.memory.size, " updates so far:", check.updates)
assert check.memory.size == num_agents * (12 - 4) and check.updates == 12 - 5   # 8 emissions of 20; 7 updates
changed = not np.allclose(check.memory.priorities[np.arange(check.memory.size)], 1.0)
print("priorities no longer all at their initial value:", changed)
assert changed
check.actor.set_noise(None)
mean_actions = check.actor(check.norm(torch.as_tensor(s))).clamp(-1, 1)
noise_free = torch.equal(torch.as_tensor(check.act(s, explore=False)), mean_actions)
print("the behaviour policy without noise acts as the actor's mean weights:", noise_free)
assert noise_free

# %% [markdown]
# Check: the episodes' $n$ (section 3) and learning interval follow the schedule.

# %% tags=["nbval-check-output"]
ramp = Agent(Config(buffer_size=5000), state_size, action_size, num_agents)
schedule = {}
fast = ramp.cfg.learn_every_until
for episode in (1, 4, 5, 9, 13, 17, fast, fast + 1, 100):
    ramp.begin_episode(episode)
    schedule[episode] = (ramp.nstep.n, ramp.learn_every)
print("episode: (n, learn every k steps):", schedule)
assert schedule[1] == (1, 1) and schedule[5] == (2, 1) and schedule[17] == (5, 1)
assert schedule[fast] == (5, 1) and schedule[fast + 1] == (5, ramp.cfg.learn_every_later)

# %% [markdown]
# The schedule in one picture, read from `begin_episode`: this episode's $n$ and the steps between updates.

# %%
# The schedule of section 6.2, read from the check's agent `ramp`: each episode's n and steps between updates.
episodes = np.arange(1, 41)
schedule = []
for episode in episodes:
    ramp.begin_episode(episode)
    schedule.append((ramp.nstep.n, ramp.learn_every))
schedule = np.array(schedule)
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.5))
left.step(episodes, schedule[:, 0], where="post")
left.set(xlabel="episode", ylabel="n", title="n-step targets: n grows from 1 (section 3)")
right.step(episodes, schedule[:, 1], where="post", color="tab:green")
right.set(xlabel="episode", ylabel="steps between updates", title="Learning: every step, then every 8")
plt.show()

# %% [markdown]
# **Exercises.**
# 1. Learn every step throughout, `Config(learn_every_later=1)`: the later episodes take several
#    times longer (the progress bar shows it). Does the mean of episodes 1-100 change?
# 2. Halve the fast episodes, `Config(learn_every_until=10)`, and compare the minutes to solve and the
#    scores with the default: do episodes 11-20 need an update every step?

# %% [markdown]
# ## 7. Training
#
# One loop for all 20 arms, readable top to bottom: each step, the agent acts for every arm
# at once, the environment steps, and the agent stores the step and learns. After each episode,
# `TrainingRun` (from the package) does the bookkeeping: the scores, the solve test, a log line
# every 5 episodes, the progress bar (`tqdm.auto`), one live learning curve, a checkpoint every 5
# episodes (atomic: one file renamed into place) and, at the end, the result files: weights,
# `scores.csv`, `summary.json`, and the policy exported with `torch.export` (the target actor
# with its normaliser, loadable without these classes).
#
# **Seeds.** On the built-in Reacher, `train` seeds the environment's goals from `cfg.seed`
# before it starts, so a run is the same whatever the environment did before (the cells above
# stepped it): on the same kind of processor, this notebook's run repeats seed 0 of the report's
# seeds episode by episode. Another processor may round differently, and training amplifies it:
# `results/processor_check/full/seed0`, made on an AMD EPYC as this run was, is the same run;
# `results/full/seed0`, made on an Intel Xeon, is not. (A Unity build seeds its goals itself.)
#
# **Starting and resuming.** Each run starts afresh; a checkpoint left by an earlier run is set
# aside, not deleted. With `RESUME=1` in the environment (`make run RESUME=1`) it continues an
# interrupted run from its last checkpoint instead, if that checkpoint was made by the same
# configuration and the same code.

# %% tags=["export"]
def train(cfg: Config, env, run_dir: str, max_episodes: int = 200, stop_when_solved: bool = True,
          resume: bool = False, live: bool = True, agent_class: type = Agent, **bookkeeping) -> dict:
    """Train until solved or `max_episodes`; write checkpoints and results to `run_dir`. `agent_class`:
    `Agent`, or a variant of it (the report's ablations)."""
    brain_name = env.brain_names[0]
    if hasattr(env, "seed"):                   # the built-in Reacher: goals from cfg.seed's stream (a Unity build seeds itself)
        env.seed(seed_streams(cfg.seed)["goals"])
    states = env.reset(train_mode=True)[brain_name].vector_observations
    num_agents, state_size = states.shape
    agent = agent_class(cfg, state_size, env.brains[brain_name].vector_action_space_size, num_agents)
    run = TrainingRun(run_dir, agent, env, code_fingerprint(), max_episodes, stop_when_solved, live, **bookkeeping)
    for episode in range(run.start(resume), max_episodes + 1):
        states = env.reset(train_mode=True)[brain_name].vector_observations
        agent.begin_episode(episode)                             # n, and how often to learn, this episode
        scores = np.zeros(num_agents)
        while True:
            actions = agent.act(states)                            # every arm at once, with exploration
            env_info = env.step(actions)[brain_name]
            rewards, next_states = np.asarray(env_info.rewards), env_info.vector_observations
            done = any(env_info.local_done)
            agent.step(states, actions, rewards, next_states, done)    # store, and learn
            scores += rewards
            states = next_states
            if done:
                break
        if run.end_episode(episode, scores):                      # scores, log, checkpoint; True when finished
            break
    return run.finish()                                           # result files in run_dir


# %% [markdown]
# The configuration: the defaults above, or the smoke configuration (two episodes, a small
# buffer, early learning) when `SMOKE=1`.

# %%
cfg = Config(buffer_size=20_000, batch_size=64, warmup=1_000) if SMOKE else Config()
max_episodes = 2 if SMOKE else 200
print("\n".join(f"{name:18s} {value}" for name, value in asdict(cfg).items()))

# %%
history = train(cfg, env, RUN_DIR, max_episodes, resume=RESUME)

# %% [markdown]
# ## 8. Results
#
# The summary below is read from the run's own `summary.json`. "Solved at episode $E$" means
# that episodes $E-99, \dots, E$ average at least 30; 100 is the earliest the criterion allows.
# The learning curve is the one drawn live in section 7: each episode's 20-arm mean with the band
# from the worst to the best arm, and the running 100-episode average.
# [`Report.ipynb`](Report.ipynb) sets this run beside the other seeds and the ablations.

# %%
run = load_run(RUN_DIR)
summary = run["summary"]
solved = summary["solved_at"]
print(f"Environment: {summary['environment']}; seed {summary['seed']}; machine: {summary['machine']}")
if solved:
    print(f"Solved at episode {solved}: the mean of episodes {solved - 99}-{solved} is "
          f"{history['avg100'][solved - 1]:.2f} >= 30, after {summary['wall_seconds_to_solve'] / 60:.1f} minutes.")
else:
    print(f"Not solved in {summary['episodes']} episodes (last 100-episode average {summary['final_avg100']:.2f}).")
print(f"First episode whose 20-arm mean reached 30: {summary['first_episode_mean_30']}; "
      f"worst arm over episodes 1-{min(100, summary['episodes'])}: {min(summary['arm_means_episodes_1_100']):.2f}")
print(f"Wall time, environment included: {summary['wall_seconds'] / 60:.1f} minutes for {summary['episodes']} episodes.")

# %% [markdown]
# What learning saw, episode by episode (`diagnostics.csv`, written with the scores), one quantity
# per panel: the critic's mean $Q(s, a)$ and the two losses over the episode's updates, the mean
# $|\delta|$, NoisyNet's mean $\sigma^W$ in each layer, and the share of sampled transitions that
# were added in the last 1000 insertions (about one episode) next to their share of the buffer:
# where the first stands well above the second, new transitions are replayed more often than old
# ones, because they enter at the largest priority of the recent updates (4.2). The transitions
# never replayed since they were stored, and their share of the sampling probability, show whether
# the updates keep up with the 20 transitions stored per step.
#
# **Two lines to read $Q$ against.** No policy can earn more than $r_\max/(1-\gamma)$: every step in
# the goal, $0.04$ a step, for ever. And the arms' own scores give the return they earned, about
# (score / 1001) / $(1-\gamma)$. A critic whose mean $Q$ passes the ceiling is wrong, not good.

# %%
d = run["diagnostics"]
last = len(d["episode"]) - 1
reference = q_reference(run["scores"]["mean"], run["config"]["gamma"])
print(f"Episode {last + 1}: sampled young share {d['young_share'][last]:.3f} against {d['young_share_stored'][last]:.3f} "
      f"of the stored; a new transition's priority {d['max_priority'][last]:.3f}")
print(f"Never replayed: {d['unreplayed_share'][last]:.1%} of the stored, holding {d['unreplayed_mass'][last]:.1%} "
      "of the sampling probability")
print(f"Mean Q in episode {last + 1}: {d['q'][last]:.2f}; ceiling {reference['ceiling']:.2f}; "
      f"return earned (from the score) {reference['earned'][last]:.2f}")
plot_diagnostics(d, "Diagnostics of the run", reference)
plt.show()

# %% [markdown]
# **The critic overestimates.** Where the mean $Q$ passes the ceiling, it cannot be right: this is
# the overestimation bias of section 2.3. Why it shows with $n$-step targets and not with 1-step
# ones, likely: an $n$-step target brings the rewards $n$ steps closer, so the critic reaches the
# true level within these 100 episodes and errs above it, while a 1-step critic is still climbing
# from below. The cell reads the report's 1-step runs, and its clipped double-Q runs (2.3), to show it.

# %%
from continuous_control.results import load_variant

for variant in ("full", "one_step", "clipped_double_q"):
    runs = load_variant(variant)
    if not runs:
        print(f"{variant}: no runs in results/ yet (make experiments)")
        continue
    q = np.array([r["diagnostics"]["q"][:100] for r in runs])
    earned = np.array([q_reference(r["scores"]["mean"][:100], r["config"]["gamma"])["earned"] for r in runs])
    print(f"{variant:8s} ({len(runs)} seeds in results/): mean Q in episodes 80 and 100: {q[:, 79].mean():.2f}, "
          f"{q[:, 99].mean():.2f}; return earned in episode 100: {earned[:, 99].mean():.2f}; "
          f"ceiling {reference['ceiling']:.2f}")

# %% [markdown]
# ## 9. Watch the trained agent
#
# Load the exported policy (`torch.export`: it needs none of the classes above, only torch) and
# run it without exploration noise on goals it never saw (environment seed `EVAL_SEED` + the
# run's seed, as in the report), 5 episodes.
# An arm's score is its mean over them; the worst arm is reported with the mean, since a high
# mean can hide a weak arm.
#
# Which actor to keep? The exported policy is the **target actor**, the moving average of the
# recent actors (2.2), not the last online actor: each update moves the online weights a little
# at random (the batch, and the noise the actor learns with), and the average smooths that out.
# The cell below plays both; one run and 5 episodes can show the idea but cannot settle it.

# %%
policy = torch.export.load(os.path.join(RUN_DIR, "actor.pt2")).module()
last_online = NoisyActor(state_size, action_size, cfg.hidden, cfg.noisy_sigma0)
last_online.load_state_dict(torch.load(os.path.join(RUN_DIR, "actor.pt"), map_location="cpu"))
last_online.set_noise(None)                            # the mean weights
norm = Normalizer(state_size)
norm.load_state_dict(torch.load(os.path.join(RUN_DIR, "normalizer.pt"), map_location="cpu"))
candidates = {"target actor (exported)": policy, "last online actor": lambda x: last_online(norm(x))}
for name, act in candidates.items():
    with torch.no_grad():
        arm_scores = reacher.play(reacher.ReacherEnvironment(seed=EVAL_SEED + cfg.seed, verbose=False),
                                  lambda info: act(torch.as_tensor(info.vector_observations, dtype=torch.float32)).numpy(),
                                  episodes=5).mean(0)
    print(f"{name:24s} mean {arm_scores.mean():.2f}, worst arm {arm_scores.min():.2f}, best {arm_scores.max():.2f}")

# %% [markdown]
# ### A replay you can play and scrub
#
# The exported policy on the built-in Reacher, drawn by MuJoCo's offscreen renderer (or from
# above with matplotlib where no OpenGL context exists), on goals the run never saw. Pick the
# goals' speed and size (the environment's reset parameters; the actor trained at speed 1 and
# size 5) and press *replay*; then play or drag the slider. Where no kernel runs (GitHub,
# nbviewer, a static HTML export), the panel shows its middle frame as an image instead.

# %%
replay_panel(policy)

# %%
env.close()

# %% [markdown]
# ## 10. References
#
# 1. T. P. Lillicrap et al., *Continuous control with deep reinforcement learning*, ICLR 2016, arXiv:1509.02971.
# 2. D. Silver et al., *Deterministic policy gradient algorithms*, ICML 2014.
# 3. T. Schaul, J. Quan, I. Antonoglou, D. Silver, *Prioritized experience replay*, ICLR 2016, arXiv:1511.05952.
# 4. M. Fortunato et al., *Noisy networks for exploration*, ICLR 2018, arXiv:1706.10295.
# 5. G. Barth-Maron et al., *Distributed distributional deterministic policy gradients* (D4PG), ICLR 2018, arXiv:1804.08617.
# 6. R. S. Sutton, A. G. Barto, *Reinforcement learning: an introduction*, 2nd ed., 2018, chapter 7 (n-step bootstrapping).
# 7. F. Pardo, A. Tavakoli, V. Levdik, P. Kormushev, *Time limits in reinforcement learning*, ICML 2018, arXiv:1712.00378.
# 8. R. Munos, T. Stepleton, A. Harutyunyan, M. G. Bellemare, *Safe and efficient off-policy reinforcement learning* (Retrace), NeurIPS 2016, arXiv:1606.02647.
# 9. M. Hessel et al., *Rainbow: combining improvements in deep reinforcement learning*, AAAI 2018, arXiv:1710.02298.
# 10. D. Precup, R. S. Sutton, S. Singh, *Eligibility traces for off-policy policy evaluation* (tree-backup), ICML 2000.
# 11. P. S. Castro et al., *Dopamine: a research framework for deep reinforcement learning*, 2018, arXiv:1812.06110.
# 12. M. Plappert et al., *Parameter space noise for exploration*, ICLR 2018, arXiv:1706.01905.
# 13. T. F. Chan, G. H. Golub, R. J. LeVeque, *Updating formulae and a pairwise algorithm for computing sample variances*, Stanford report STAN-CS-79-773, 1979.
# 14. S. Fujimoto, H. van Hoof, D. Meger, *Addressing function approximation error in actor-critic methods* (TD3), ICML 2018, arXiv:1802.09477.
# 15. S. Fujimoto, D. Meger, D. Precup, *An equivalence between loss functions and non-uniform sampling in experience replay*, NeurIPS 2020, arXiv:2007.06049.
