"""The lesson's agent on a GPU with no host synchronisation per update: `for_device(Agent, "cuda")`, which the
lesson's `train` asks for, mixes `GraphedAgent` into the agent's class (a CPU runs the lesson as written):
- the replay and its priorities move to the GPU (`DeviceReplay`). A prefix-sum search is `searchsorted` on
  the priorities' running sum, which finds the leaf the sum tree's walk finds: no TD error goes to the host;
- one whole update (sampling, critic, priorities, actor, targets), the behaviour policy's refresh and its
  actions are each captured in a CUDA graph (`Graph`) and replayed. The host feeds them the random numbers,
  drawn from the agent's own streams in the CPU's order, and the counters; only the actions come back.
"""

import functools

import numpy as np
import torch

from .behaviour import draw
from .networks import to_device

EAGER_UPDATES = 3  # updates run eagerly on a side stream before the capture, as torch.cuda.graph asks


class Priorities:
    """The sum tree's interface (`total`, indexing) over one flat tensor of p^alpha on the replay's device."""

    def __init__(self, capacity: int, device):
        self.p = torch.zeros(capacity, dtype=torch.float64, device=device)

    def __getitem__(self, index) -> torch.Tensor:
        return self.p[torch.as_tensor(index, device=self.p.device)]

    def __setitem__(self, index, values) -> None:
        self.p[torch.as_tensor(index, device=self.p.device)] = torch.as_tensor(values, dtype=torch.float64).to(
            self.p.device
        )

    def total(self) -> float:
        return float(self.p.sum())


class DeviceReplay:
    """PrioritizedReplay (5.2) with its storage on `device`: each transition one row of one tensor,
    whose column blocks are the lesson's arrays (`states`, `actions`, ... are views of it)."""

    def __init__(self, memory, device):
        vars(self).update(
            {
                k: v
                for k, v in vars(memory).items()
                if k in ("capacity", "alpha", "offset", "rng", "window", "next", "size", "updates")
            }
        )
        state_size, action_size = memory.states.shape[1], memory.actions.shape[1]
        self.blocks = (state_size, action_size, 1, state_size, 1)
        self.device = device
        self.rows = torch.zeros(memory.capacity, sum(self.blocks), device=device)
        self.states, self.actions, returns, self.next_states, discounts = self.rows.split(self.blocks, 1)
        self.returns, self.discounts = returns[:, 0], discounts[:, 0]
        self.priorities = Priorities(memory.capacity, device)
        self.recent = torch.ones(memory.window, dtype=torch.float64, device=device)  # each update's largest p

    def add(self, states, actions, returns, next_states, discounts) -> torch.Tensor:
        rows = np.concatenate(
            [states, actions, np.asarray(returns)[:, None], next_states, np.asarray(discounts)[:, None]],
            1,
            dtype=np.float32,
        )
        idx = (self.next + torch.arange(len(rows), device=self.rows.device)) % self.capacity
        self.rows[idx] = to_device(rows, self.rows.device)
        self.priorities.p[idx] = self.recent.max() ** self.alpha  # the entry priority, never read on the host
        self.next = (self.next + len(rows)) % self.capacity
        self.size = min(self.size + len(rows), self.capacity)
        return idx

    @property
    def entry_priority(self) -> float:
        return float(self.recent.max())


def update(agent, inputs: torch.Tensor) -> dict:
    """The full agent's `learn` (3.3, with the hooks of 5 and 6) in tensors on the device: `inputs` holds the
    replay's uniform draws, the actor's noise, beta, the replay's size and the ring slot of this update's largest
    priority."""
    m, batch = agent.memory, agent.cfg.batch_size
    u, eps, (beta, size, slot) = inputs.split([batch, agent.actor.noise_size, 3])
    cumulative = m.priorities.p.cumsum(0)
    total = cumulative[-1]
    bounds = (torch.arange(batch, device=u.device) + u) * (total / batch)  # 4.2's equal segments
    idx = torch.minimum(torch.searchsorted(cumulative, bounds, right=True), size.long() - 1)
    weights = (size * m.priorities.p[idx] / total) ** -beta  # 4.2's importance_weights
    weights = (weights / weights.max()).float()
    s, a, ret, s_next, disc = m.rows[idx].split(m.blocks, 1)
    s, s_next = agent.norm(s), agent.norm(s_next)
    td, critic_loss, q = agent.update_critic(s, a, ret[:, 0], s_next, disc[:, 0], weights)
    priorities = td.abs() + m.offset  # 4.2's update_priorities
    m.recent[slot.long()[None]] = priorities.max().double()  # a 1-d index: no .item()
    m.priorities.p[idx] = (priorities**m.alpha).double()
    agent.actor.set_noise(eps)
    actor_loss = agent.update_actor(s)
    agent.update_targets()
    return {"critic_loss": critic_loss, "actor_loss": actor_loss, "q": q, "idx": idx, "td": td}


class Graph:
    """`fn(*inputs)` on fixed input tensors: run eagerly EAGER_UPDATES times on a side stream, as
    torch.cuda.graph asks, then captured once and replayed. Off CUDA, or with `capture=False`, always eager.
    A call copies its arguments into the inputs; its result is `fn`'s outputs, overwritten by the next call."""

    def __init__(self, fn, *inputs: torch.Tensor, capture: bool = True):
        self.fn = fn
        self.inputs = inputs
        self.calls = 0
        self.capture = capture and inputs[0].is_cuda

    def __call__(self, *values):
        for static, value in zip(self.inputs, values):  # one copy each, from pinned memory to a GPU
            value = torch.as_tensor(value)
            static.copy_(value.pin_memory() if static.is_cuda and not value.is_cuda else value, non_blocking=True)
        if not self.capture:
            return self.fn(*self.inputs)
        if self.calls < EAGER_UPDATES:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.out = self.fn(*self.inputs)
            torch.cuda.current_stream().wait_stream(side)
        else:
            if self.calls == EAGER_UPDATES:
                self.captured = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.captured):  # records the kernels, runs nothing
                    self.out = self.fn(*self.inputs)
            self.captured.replay()
        self.calls += 1
        return self.out


class GraphedAgent:
    """The lesson's agent (or a subclass with its parts) with its replay on its networks' device, its update as
    one Graph, and its behaviour's refresh and actions as Graphs (see the module's docstring). A mixin: use
    `for_device(Agent, "cuda")`, which puts it before the agent's class."""

    capture = True  # False: the same tensor path, run eagerly (no CUDA graph)

    def make_memory(self):
        return DeviceReplay(lesson_part(super().make_memory(), "PrioritizedReplay"), torch.device(self.cfg.device))

    def make_behaviour(self):
        behaviour = lesson_part(super().make_behaviour(), "Behaviour")
        return GraphedBehaviour(behaviour, self.sizes) if self.capture else behaviour

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        lesson_part(self.actor, "NoisyActor")
        inputs = torch.zeros(
            self.cfg.batch_size + self.actor.noise_size + 3, dtype=torch.float64, device=self.cfg.device
        )
        self.graph = Graph(functools.partial(update, self), inputs, capture=self.capture)
        for group in (g for opt in (self.actor_opt, self.critic_opt) for g in opt.param_groups):
            group["capturable"] = self.graph.capture  # Adam's step count on the device, read inside the graph

    def learn(self) -> dict:
        """`update` fed by the host its random numbers, drawn from the agent's streams in the CPU's order, and its
        counters."""
        m = self.memory
        u = m.rng.random(self.cfg.batch_size)  # the draws of memory.sample
        eps = torch.randn(self.actor.noise_size, generator=self.gen)  # then learn's fresh noise
        out = self.graph(np.concatenate([u, eps.double().numpy(), [self.beta(), m.size, m.updates % m.window]]))
        m.updates += 1
        self.updates += 1
        return out  # still on the device


class GraphedBehaviour(torch.nn.Module):
    """The full agent's behaviour policy (6.2), its refresh and its actions for all arms each one Graph, fed the noise
    and the states. Anything else (`noise`, `mean_actor`, ...) is the lesson's."""

    def __init__(self, lesson: torch.nn.Module, sizes: tuple):
        super().__init__()
        self.lesson = lesson
        self.arms, self.state_size = sizes[:2]
        self.graphs = None  # made at the first refresh, on the networks' final device

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if "lesson" not in vars(self).get("_modules", {}):  # half made (a copy, an unpickling): nothing to ask
                raise
            return getattr(self._modules["lesson"], name)

    def make_graphs(self) -> None:
        b = self.lesson
        weight = next(b.learner.critic.parameters())

        @torch.no_grad()
        def refresh(eps):
            for copy, source in zip(b.norm.buffers(), b.learner.norm.buffers()):
                copy.copy_(source)
            draw(b.learner.actor, eps, into=b.actor)

        zeros = functools.partial(torch.zeros, dtype=weight.dtype, device=weight.device)
        self.graphs = (
            Graph(refresh, zeros(b.learner.actor.noise_size)),
            Graph(b.forward, zeros(self.arms, self.state_size)),
        )

    def refresh(self) -> None:
        if self.graphs is None:
            self.make_graphs()
        self.graphs[0](self.lesson.noise.sample())

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        if self.graphs is None or len(states) != self.arms:
            return self.lesson(states)
        return self.graphs[1](states)


def lesson_part(part, name: str):
    """`part`, if it is the lesson's `name`: a variant's own part (the report's ablations) has no tensor path."""
    if type(part).__name__ != name:
        raise ValueError(
            f"The GPU path knows the lesson's replay, behaviour and actor, not {type(part).__name__}: "
            f"train this agent on the CPU."
        )
    return part


def graphed(agent_class: type, capture: bool = True) -> type:
    """`agent_class` on its device's tensor path: GraphedAgent mixed in before it (a new class each call, so that
    nothing keeps it, or an agent through it, alive)."""
    return type(f"Graphed{agent_class.__name__}", (GraphedAgent, agent_class), {"capture": capture})


def for_device(agent_class: type, device: str) -> type:
    """The class that trains `agent_class` fastest on `device`: itself on a CPU (or if already graphed), its
    graphed form on a GPU."""
    if issubclass(agent_class, GraphedAgent) or torch.device(device).type != "cuda":
        return agent_class
    return graphed(agent_class)
