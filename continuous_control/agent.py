"""The agent of Continuous_Control.ipynb: DDPG with n-step targets, prioritized replay and NoisyNet.

GENERATED from the notebook's cells tagged `export` by `python -m continuous_control.export`.
Do not edit: edit the notebook, then export (`make export`). Each block below names its section.
"""

# --- 1. The environment ---
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from continuous_control.behaviour import ActionNoise, Behaviour
from continuous_control.checkpoints import code_fingerprint
from continuous_control.config import check_config, refuse_non_finite, seed_streams
from continuous_control.devices import for_device
from continuous_control.networks import Networks, Normalizer
from continuous_control.sumtree import SumTree
from continuous_control.training import TrainingRun


# --- 1.3 The hyperparameters, in one place ---
@dataclass
class Config:
    seed: int = 0
    """Root of the independent random streams of the goals, the replay sampler, the weights and the noise (3.3)."""
    device: str = "cpu"
    """Where the networks live and learn: "cpu", or "cuda" (a GPU), section 7.1."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 5
    """Rewards summed before bootstrapping (1 is plain DDPG's one-step target), section 4."""
    n_step_ramp: int = 4
    """Episodes at each n on the way up: n = 1 in episodes 1-4, 2 in 5-8, ..., then `n_step` (0: no ramp)."""
    buffer_size: int = 1_000_000
    """Replay capacity in transitions (about 50 episodes of 20 arms)."""
    batch_size: int = 256
    """Transitions per learning update."""
    warmup: int = 5_000
    """Transitions stored before the first update."""
    learn_every: int = 1
    """Environment steps (of all 20 arms) between updates in episodes 1 to `learn_every_until`, section 3.3."""
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
    """Prioritization exponent; 0 gives uniform replay, section 5."""
    beta_start: float = 0.4
    """Importance-sampling exponent at the start, annealed linearly to 1."""
    beta_steps: int = 110_000
    """Environment steps over which beta reaches 1 (about 110 episodes)."""
    priority_offset: float = 1e-3
    """c in p = |TD error| + c: no transition's priority is zero."""
    priority_window: int = 100
    """New transitions get the largest priority of the last `priority_window` updates, section 5.2."""
    noisy_sigma0: float = 0.5
    """NoisyNet's initial sigma, as sigma0 / sqrt(fan_in)."""
    action_noise: float = 0.2
    """Spread of plain DDPG's Ornstein-Uhlenbeck action noise, section 3.1."""
    ou_kappa: float = 0.15
    """Ornstein-Uhlenbeck mean reversion per step: the noise is correlated over about 1/kappa steps."""
    clipped_double_q: bool = False
    """Two critics, and targets from the smaller of their estimates (TD3's clipped double-Q), section 7.2."""

    def __post_init__(self):
        check_config(self)  # each field's type and range, and the device: a bad value fails here, named


# --- 2.1 The actor, the critic and the deterministic policy gradient ---
class Actor(nn.Module):
    """mu_theta(s): ReLU hidden layers, tanh output, each linear layer made by `layer`."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple, layer=nn.Linear):
        super().__init__()
        sizes = (state_size, *hidden, action_size)
        self.layers = nn.ModuleList(layer(i, o) for i, o in zip(sizes[:-1], sizes[1:]))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        x = state
        *hidden, last = self.layers  # unpacked, not sliced: a slice of a ModuleList builds a new module each call
        for layer in hidden:
            x = F.relu(layer(x))
        return torch.tanh(last(x))


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
        """Every estimate of Q(s, a) the critic makes, one row each: one row here, two in section 7.2."""
        return self(state, action)[None]


# --- 2.2 Target networks and the update ---
class DDPG(Networks):
    """DDPG's four networks, their optimisers and the steps of an update (2.2); `Networks` adds `to`, `tensor`."""

    def __init__(self, cfg: Config, actor, actor_target, critic, critic_target, state_size: int):
        self.cfg = cfg
        self.actor, self.actor_target = actor, actor_target
        self.critic, self.critic_target = critic, critic_target
        for online, target in ((actor, actor_target), (critic, critic_target)):
            target.requires_grad_(False)
            target.load_state_dict(online.state_dict())  # the targets start as copies
        self.norm = Normalizer(state_size)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr, fused=True)

    def update_critic(self, s, a, ret, s_next, disc, w) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Step 1: one step on the weighted squared TD errors; returns the TD errors, the loss and the mean Q."""
        with torch.no_grad():
            y = self.td_target(ret, s_next, disc)
        q = self.critic.values(s, a)  # (critics, batch): one row here (7.2 adds a second)
        td, loss = self.critic_loss(q, y, w)
        self.critic_opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.critic.parameters(), self.cfg.grad_clip, foreach=True)
        self.critic_opt.step()
        return td[0].detach(), loss.detach(), q[0].mean().detach()

    def update_actor(self, s) -> torch.Tensor:
        """Step 2: one step on the actor's loss; only the actor's gradients are computed (`inputs`)."""
        loss = self.actor_loss(s)
        self.actor_opt.zero_grad()
        loss.backward(inputs=list(self.actor.parameters()))
        self.actor_opt.step()
        return loss.detach()

    def td_target(self, ret: torch.Tensor, s_next: torch.Tensor, disc: torch.Tensor) -> torch.Tensor:
        """The TD targets y, shape (B,), from ret and disc, shape (B,), and s_next, shape (B, state_size) (2.2)."""
        return ret + disc * self.critic_target(s_next, self.actor_target(s_next))

    def critic_loss(self, q: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The TD errors, shaped as q (K, B), and the loss: w * delta^2 averaged over critics and transitions (2.2)."""
        td = y - q
        return td, (w * td.pow(2)).mean()

    def actor_loss(self, s: torch.Tensor) -> torch.Tensor:
        """Minus the critic's mean value of the actor's actions in the states s, (B, state_size): a 0-d tensor."""
        return -self.critic(s, self.actor(s)).mean()

    @torch.no_grad()
    def update_targets(self) -> None:
        """Step 3: every target parameter moves tau of the way to its network's."""
        for target, online in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            for t, o in zip(target.parameters(), online.parameters()):
                t.lerp_(o, self.cfg.tau)  # t <- t + tau (o - t)


# --- 3.1 Noise correlated in time ---
class OrnsteinUhlenbeck:
    """x <- (1 - kappa) x + scale sqrt(1 - (1 - kappa)^2) xi: std `scale`, correlation (1 - kappa)^k at lag k."""

    def __init__(self, shape, kappa: float, scale: float, generator: torch.Generator):
        self.kappa, self.scale, self.generator = kappa, scale, generator
        self.state = scale * torch.randn(shape, generator=generator)  # start in the stationary law

    def sample(self) -> torch.Tensor:
        """The process's next state, shaped as self.state, kept in self.state and returned; xi from self.generator."""
        xi = torch.randn(self.state.shape, generator=self.generator)
        self.state = (1 - self.kappa) * self.state + self.scale * (1 - (1 - self.kappa) ** 2) ** 0.5 * xi
        return self.state


# --- 3.2 A replay buffer ---
class UniformReplay:
    """Replay of transitions (s, a, R, s', discount), each row drawn equally often."""

    def __init__(self, capacity: int, state_size: int, action_size: int, rng: np.random.Generator):
        self.capacity = capacity
        self.rng = rng
        self.states = np.zeros((capacity, state_size), np.float32)
        self.actions = np.zeros((capacity, action_size), np.float32)
        self.returns = np.zeros(capacity, np.float32)
        self.next_states = np.zeros((capacity, state_size), np.float32)
        self.discounts = np.zeros(capacity, np.float32)
        self.next = 0  # the row the next transition goes to
        self.size = 0  # transitions stored

    def add(self, states, actions, returns, next_states, discounts) -> np.ndarray:
        """Store a batch of transitions over the oldest; return the rows they went to."""
        idx = (self.next + np.arange(len(returns))) % self.capacity
        self.states[idx], self.actions[idx], self.returns[idx] = states, actions, returns
        self.next_states[idx], self.discounts[idx] = next_states, discounts
        self.next = (self.next + len(idx)) % self.capacity
        self.size = min(self.size + len(idx), self.capacity)
        return idx

    def rows(self, idx: np.ndarray) -> tuple:
        return tuple(x[idx] for x in (self.states, self.actions, self.returns, self.next_states, self.discounts))

    def sample(self, batch: int):
        """Indices, weights (all 1) and the batch: one row from each of `batch` equal segments of the rows."""
        u = (np.arange(batch) + self.rng.random(batch)) * (self.size / batch)
        idx = np.minimum(u.astype(np.int64), self.size - 1)
        return idx, np.ones(batch, np.float32), self.rows(idx)


# --- 3.3 The agent ---
class DDPGAgent(DDPG):
    """Plain DDPG (2) for all arms at once: OU action noise (3.1), uniform replay (3.2), one-step targets."""

    def __init__(self, cfg: Config, state_size: int, action_size: int, num_agents: int):
        seeds = seed_streams(cfg.seed)
        self.cfg = cfg
        self.sizes = (num_agents, state_size, action_size)
        self.rng = np.random.default_rng(seeds["replay"])  # the replay's sampler
        self.gen = torch.Generator().manual_seed(seeds["noise"])  # the exploration noise
        torch.manual_seed(seeds["weights"])
        super().__init__(cfg, self.make_actor(), self.make_actor(), *self.make_critics(), state_size)
        self.behaviour = self.make_behaviour()
        self.memory = self.make_memory()
        self.steps = self.updates = 0  # environment steps, and updates, so far
        self.to(cfg.device)

    def make_actor(self) -> nn.Module:
        return Actor(*self.sizes[1:], self.cfg.hidden)

    def make_critics(self) -> tuple:
        critic, target = (TwinCritic, TwinCriticTarget) if self.cfg.clipped_double_q else (Critic, Critic)  # 7.2
        return critic(*self.sizes[1:], self.cfg.hidden), target(*self.sizes[1:], self.cfg.hidden)

    def make_behaviour(self) -> nn.Module:
        noise = OrnsteinUhlenbeck(self.sizes[::2], self.cfg.ou_kappa, self.cfg.action_noise, self.gen)
        return ActionNoise(self, Actor(*self.sizes[1:], self.cfg.hidden), noise)

    def make_memory(self):
        return UniformReplay(self.cfg.buffer_size, *self.sizes[1:], self.rng)

    def begin_episode(self, episode: int) -> None:
        """Episode `episode`'s learning interval, and its first policy."""
        cfg = self.cfg
        self.learn_every = cfg.learn_every if episode <= cfg.learn_every_until else cfg.learn_every_later
        self.behaviour.refresh()

    def act(self, states: np.ndarray, explore: bool = True) -> np.ndarray:
        policy = self.behaviour if explore else self.behaviour.mean_actor  # explore=False: no noise
        return policy(self.tensor(states)).to("cpu", torch.float32).numpy()

    def step(self, states, actions, rewards, next_states, done: bool) -> dict:
        """Store the step's transitions, learn when due; what it did: the rows stored, learn's dict (None: none)."""
        refuse_non_finite(self.steps + 1, states=states, rewards=rewards, next_states=next_states)
        if not done:
            self.behaviour.refresh()  # the next step's policy, before this step's update
        self.norm.update(self.tensor(states))
        transitions = self.transitions(states, actions, rewards, next_states, done)
        stored = None if transitions is None else self.memory.add(*transitions)
        self.steps += 1
        learns = self.memory.size >= self.cfg.warmup and self.steps % self.learn_every == 0
        return {"stored": stored, "update": self.learn() if learns else None}

    def transitions(self, states, actions, rewards, next_states, done: bool) -> tuple | None:
        """This step's one-step transitions, one per arm, or None for the done step."""
        discounts = np.full(len(rewards), self.cfg.gamma, np.float32)  # gamma: one step
        return None if done else (states, actions, rewards, next_states, discounts)

    def replay_batch(self) -> tuple:
        """(indices, weights, arrays) of one batch: uniform here; section 5 samples by priority."""
        return self.memory.sample(self.cfg.batch_size)

    def after_critic(self, idx: np.ndarray, td: torch.Tensor) -> None:
        """Between the critic's step and the actor's: nothing here; sections 5 and 6 fill it in."""

    def learn(self) -> dict:
        """One update of the networks on a batch from the replay (2.2); counts it in self.updates; returns a dict."""
        idx, weights, batch = self.replay_batch()
        s, a, ret, s_next, disc = (self.tensor(x) for x in batch)
        s, s_next = self.norm(s), self.norm(s_next)  # the replay keeps raw states
        td, critic_loss, q = self.update_critic(s, a, ret, s_next, disc, self.tensor(weights))
        self.after_critic(idx, td)
        actor_loss = self.update_actor(s)
        self.update_targets()
        self.updates += 1
        return {"critic_loss": critic_loss, "actor_loss": actor_loss, "q": q, "idx": idx, "td": td}


# --- 3.4 The training loop, and plain DDPG trained ---
def train(cfg: Config, env, run_dir: str, max_episodes: int = 200, resume=False, agent_class=None, **options) -> dict:
    """Train until solved (or `max_episodes`) the full `Agent` (7), or `agent_class`; results in `run_dir`."""
    brain_name = env.brain_names[0]
    if hasattr(env, "seed"):  # the built-in Reacher: goals from cfg.seed's stream (a Unity build seeds itself)
        env.seed(seed_streams(cfg.seed)["goals"])
    states = env.reset(train_mode=True)[brain_name].vector_observations
    num_agents, state_size = states.shape
    agent_class = for_device(agent_class or Agent, cfg.device)  # on a GPU, the same agent on the GPU's tensor path
    agent = agent_class(cfg, state_size, env.brains[brain_name].vector_action_space_size, num_agents)
    run = TrainingRun(run_dir, agent, env, code_fingerprint(), max_episodes, **options)  # live=False: no plot
    for episode in range(run.start(resume), max_episodes + 1):
        states = env.reset(train_mode=True)[brain_name].vector_observations
        agent.begin_episode(episode)  # n, and how often to learn, this episode
        scores = np.zeros(num_agents)
        while True:
            actions = agent.act(states)  # every arm at once, with exploration
            env_info = env.step(actions)[brain_name]
            rewards, next_states = np.asarray(env_info.rewards), env_info.vector_observations
            done = any(env_info.local_done)
            run.end_step(agent.step(states, actions, rewards, next_states, done))  # store, learn; the run notes it
            scores += rewards
            states = next_states
            if done:
                break
        if run.end_episode(episode, scores):  # scores, log, checkpoint; True when finished
            break
    return run.finish()  # result files in run_dir


# --- 4. n-step targets ---
class NStepAccumulator:
    """Turns the stream of (s, a, r, s', done) of all arms into n-step transitions."""

    def __init__(self, n: int, gamma: float, num_agents: int, state_size: int, action_size: int):
        self.n, self.gamma = n, gamma
        self.states = np.zeros((n, num_agents, state_size), np.float32)
        self.actions = np.zeros((n, num_agents, action_size), np.float32)
        self.rewards = np.zeros((n, num_agents), np.float32)
        self.count = 0  # steps in the window
        self.discounts = gamma ** np.arange(n + 1)  # 1, g, g^2, ..., g^n

    def push(self, states, actions, rewards, next_states, done: bool):
        """Add one step of all arms; return a batch of transitions (a tuple of arrays) or None."""
        if done:  # next_states is the next episode's start: drop this step, flush the window
            out = self.flush(states)
            self.count = 0
            return out
        if self.count == self.n:  # slide: forget the oldest step
            for window in (self.states, self.actions, self.rewards):
                window[:-1] = window[1:]
            self.count -= 1
        k = self.count
        self.states[k], self.actions[k], self.rewards[k] = states, actions, rewards
        self.count += 1
        return self.emit(next_states) if self.count == self.n else None

    def emit(self, next_states: np.ndarray) -> tuple:
        """(s_t, a_t, R_t, s_{t+n}, gamma^n) for every arm: five arrays, float32, one row per arm."""
        ret = sum(self.discounts[k] * self.rewards[k] for k in range(self.n))  # sum_k gamma^k r_{t+k}, per arm
        disc = np.full(len(ret), self.discounts[self.n], np.float32)
        return self.states[0].copy(), self.actions[0].copy(), ret.astype(np.float32), next_states.copy(), disc

    def flush(self, last_states: np.ndarray) -> tuple | None:
        """The pending starts as emit's five arrays, rows ordered by start then arm; None when none is pending."""
        first = 1 if self.count == self.n else 0  # a full window already emitted its oldest step
        m = self.count
        if m - first <= 0:
            return None
        rows = []
        for j in range(first, m):  # start j covers steps j..m-1, then the last real state
            ret = sum(self.discounts[k] * self.rewards[j + k] for k in range(m - j))
            disc = np.full(len(ret), self.discounts[m - j])
            rows.append((self.states[j], self.actions[j], ret, last_states, disc))
        return tuple(np.concatenate(column, dtype=np.float32) for column in zip(*rows))


class Agent(DDPGAgent):
    """Plain DDPG's agent (3.3) with n-step targets (4), prioritized replay (5) and NoisyNet (6)."""

    nstep = None  # the n-step window, made by begin_episode

    def begin_episode(self, episode: int) -> None:
        """Episode `episode`'s n (growing from 1), then its learning interval and first policy (3.3)."""
        cfg = self.cfg
        n = min(cfg.n_step, 1 + (episode - 1) // cfg.n_step_ramp) if cfg.n_step_ramp else cfg.n_step
        if self.nstep is None or n != self.nstep.n:  # between episodes the window is empty
            self.nstep = NStepAccumulator(n, cfg.gamma, *self.sizes)
        super().begin_episode(episode)

    def transitions(self, states, actions, rewards, next_states, done: bool) -> tuple | None:
        """What the n-step window emits: nothing, one transition per arm, or at the episode's end the rest."""
        return self.nstep.push(states, actions, rewards, next_states, done)

    def make_memory(self):
        cfg = self.cfg
        return PrioritizedReplay(
            cfg.buffer_size, *self.sizes[1:], cfg.alpha, cfg.priority_offset, self.rng, cfg.priority_window
        )

    def beta(self) -> float:
        return min(1.0, self.cfg.beta_start + (1 - self.cfg.beta_start) * self.steps / self.cfg.beta_steps)

    def replay_batch(self) -> tuple:
        """(indices, importance weights, arrays) of a batch drawn by priority, at this step's beta."""
        return self.memory.sample(self.cfg.batch_size, self.beta())

    def make_actor(self) -> nn.Module:
        return NoisyActor(*self.sizes[1:], self.cfg.hidden, self.cfg.noisy_sigma0)

    def make_behaviour(self) -> nn.Module:
        noise = OrnsteinUhlenbeck(self.actor.noise_size, self.cfg.ou_kappa, 1.0, self.gen)  # epsilon_t (3.1)
        return Behaviour(self, Actor(*self.sizes[1:], self.cfg.hidden), noise)

    def after_critic(self, idx: np.ndarray, td: torch.Tensor) -> None:
        """The sampled transitions' new priorities (5.2), then fresh noise for the actor's step: sigma learns too."""
        self.memory.update_priorities(idx, td.cpu().numpy())
        self.actor.set_noise(torch.randn(self.actor.noise_size, generator=self.gen))


# --- 5.1 Sampling by priority, with a sum tree ---
def walk_step(tree: np.ndarray, node: int, u: float) -> tuple[int, float]:
    """(child, u within the child's sum), one level down from `node`."""
    left = tree[2 * node]
    if u >= left:
        return 2 * node + 1, u - left
    return 2 * node, u


# --- 5.2 Importance weights, and the buffer ---
class PrioritizedReplay(UniformReplay):
    """The replay of 3.2, sampled by priority."""

    def __init__(self, capacity, state_size, action_size, alpha: float, offset: float, rng, window: int = 1):
        super().__init__(capacity, state_size, action_size, rng)
        self.alpha, self.offset, self.window = alpha, offset, window
        self.priorities = SumTree(capacity, walk_step)  # holds p_i^alpha
        self.recent = np.ones(window)  # the largest p_i of each of the last `window` updates
        self.updates = 0  # updates of the priorities so far

    def add(self, states, actions, returns, next_states, discounts) -> np.ndarray:
        """Store a batch of transitions over the oldest, at the entry priority; return their rows."""
        idx = super().add(states, actions, returns, next_states, discounts)
        self._set_priority(idx, np.full(len(idx), self.entry_priority))
        return idx

    def sample(self, batch: int, beta: float):
        """Indices, importance weights and the batch, drawn in `batch` equal segments of the total."""
        total = self.priorities.total()
        bounds = (np.arange(batch) + self.rng.random(batch)) * (total / batch)
        idx = np.minimum(self.priorities.find_prefix_sum(bounds), self.size - 1)
        return idx, self.weights(idx, total, self.size, beta).astype(np.float32), self.rows(idx)

    def weights(self, idx, total, size: int, beta: float):
        """The importance weights of the rows `idx`, of `size` transitions whose p^alpha sum to `total` (5.2)."""
        return importance_weights(self.priorities[idx], total, size, beta)

    @property
    def entry_priority(self) -> float:
        """A new transition's p: the largest of the last `window` updates."""
        return float(self.recent.max())

    def _set_priority(self, idx, priorities) -> None:
        self.priorities[idx] = priorities**self.alpha

    def update_priorities(self, idx: np.ndarray, td_errors: np.ndarray) -> None:
        """Store the sampled transitions' new priorities, and note this update's largest for new ones (5.2)."""
        priorities = abs(td_errors) + self.offset  # abs takes an array, and a tensor on a GPU (7.1)
        self.recent[self.updates % self.window] = priorities.max()  # a ring of the updates' largest
        self.updates += 1
        self._set_priority(idx, priorities)


def importance_weights(priorities: np.ndarray, total: float, size: int, beta: float) -> np.ndarray:
    """The batch's importance weights, the largest of them 1 (5.2)."""
    weights = (size * priorities / total) ** -beta
    return weights / weights.max()


# --- 6.1 Noisy layers ---
class NoisyLinear(nn.Module):
    """y = (w_mean + w_sigma * f(eps_out) f(eps_in)^T) x + b_mean + b_sigma * f(eps_out)  [4]."""

    def __init__(self, in_features: int, out_features: int, sigma0: float = 0.5):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = in_features**-0.5
        self.weight_mean = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma0 * bound))
        self.bias_mean = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma0 * bound))
        self.register_buffer("eps_in", torch.zeros(in_features))  # f(eps_i), set by the agent
        self.register_buffer("eps_out", torch.zeros(out_features))  # f(eps_j)
        self.noisy = False  # the mean weights until noise is set: the target actor's stay so

    def set_noise(self, eps: torch.Tensor | None) -> None:
        """eps: in_features + out_features standard normal numbers, or None for the mean weights."""
        self.noisy = eps is not None
        if self.noisy:  # f once for the layer; copy_ also moves it to the buffers' device and dtype
            f = eps.sign() * eps.abs().sqrt()  # f(x) = sgn(x) sqrt(|x|)
            self.eps_in.copy_(f[..., : self.in_features])  # ...: a row of noise per arm works too
            self.eps_out.copy_(f[..., self.in_features :])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.noisy:
            return F.linear(x, self.weight_mean, self.bias_mean)
        return F.linear(x, *self.noisy_weights(self.eps_in, self.eps_out))

    def noisy_weights(self, f_in: torch.Tensor, f_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's weight and bias under the noise f_in (one per input) and f_out (one per output) (6.1)."""
        weight = torch.addcmul(self.weight_mean, self.weight_sigma, torch.outer(f_out, f_in))
        return weight, torch.addcmul(self.bias_mean, self.bias_sigma, f_out)


# --- 6.2 The noisy actor ---
class NoisyActor(Actor):
    """The actor with NoisyLinear layers (`layer`), one noise sample for a whole batch."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple, sigma0: float, layer=NoisyLinear):
        super().__init__(state_size, action_size, hidden, layer=lambda i, o: layer(i, o, sigma0))
        self.sizes = [layer.in_features + layer.out_features for layer in self.layers]
        self.noise_size = sum(self.sizes)

    def set_noise(self, eps: torch.Tensor | None) -> None:
        """Noise for every layer (`noise_size` standard normal numbers, split in order), or None: the mean weights."""
        for layer, part in zip(self.layers, [None] * len(self.layers) if eps is None else eps.split(self.sizes, -1)):
            layer.set_noise(part)


# --- 7.2 A variant: clipped double-Q ---
class TwinCritic(nn.Module):
    """Two critics trained on the same targets; the actor climbs Q_1 [14]."""

    def __init__(self, state_size: int, action_size: int, hidden: tuple):
        super().__init__()
        self.q1, self.q2 = Critic(state_size, action_size, hidden), Critic(state_size, action_size, hidden)

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.q1(state, action)

    def values(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.q1(state, action), self.q2(state, action)])


class TwinCriticTarget(TwinCritic):
    """The target copy of a TwinCritic: its value is the smaller of its two estimates."""

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """min(Q'_1(s, a), Q'_2(s, a)), one per transition."""
        return torch.minimum(self.q1(state, action), self.q2(state, action))
