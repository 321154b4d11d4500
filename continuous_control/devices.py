"""The lesson's agent on a GPU with no host synchronisation per update: `for_device(Agent, "cuda")`, which the
lesson's `train` asks for, mixes `GraphedAgent` into the agent's class (a CPU runs the lesson as written).
Only what must differ on a GPU is here; the math is the lesson's:
- `DeviceReplay`: the lesson's PrioritizedReplay (5.2) with its storage and its sampler on the device. It keeps
  the lesson's `update_priorities`, `_set_priority`, `weights` and `rows`; the sum tree's walk is `searchsorted` on
  the priorities' running sum, which finds the same leaf up to rounding. No TD error goes to the host.
- `GraphedAgent`: the lesson's own `learn`, and the two calls of `Behaviour.refresh` with the host's noise, each
  captured in a CUDA graph (`Graph`) and replayed. The host draws their random numbers from the agent's
  streams in the CPU's order and copies them in with beta; only the actions come back.
"""

import numpy as np
import torch

from .behaviour import draw
from .networks import to_device

EAGER_CALLS = 3  # calls run eagerly on a side stream before the capture, as torch.cuda.graph asks


class Priorities:
    """The sum tree's interface (`total`, `find_prefix_sum`, indexing) over one flat tensor of p^alpha on the replay's
    device."""

    def __init__(self, capacity: int, device):
        self.p = torch.zeros(capacity, dtype=torch.float64, device=device)

    def __getitem__(self, index) -> torch.Tensor:
        return self.p[torch.as_tensor(index, device=self.p.device)]

    def __setitem__(self, index, values) -> None:
        values = torch.as_tensor(values, dtype=torch.float64)
        self.p[torch.as_tensor(index, device=self.p.device)] = values.to(self.p.device)

    def total(self) -> torch.Tensor:
        return self.p.sum()

    def find_prefix_sum(self, u: torch.Tensor) -> torch.Tensor:
        """The leaf the sum tree's walk finds for each u: the first whose running sum passes u."""
        return torch.searchsorted(self.p.cumsum(0), u, right=True)


class DeviceReplay:
    """The storage and the sampler of the lesson's PrioritizedReplay on `device`, mixed in before the lesson's class
    (`device_replay`), whose `update_priorities`, `_set_priority`, `weights` and `rows` then run on tensors (and
    `entry_priority`, read once an episode by the diagnostics, on the host). `sample` reads its
    `batch` uniform numbers from `u`, which the caller fills, so that a CUDA graph replays it with new ones."""

    def __init__(self, memory, device: torch.device, batch: int):
        keep = ("capacity", "alpha", "offset", "rng", "window", "next", "size")
        vars(self).update({k: v for k, v in vars(memory).items() if k in keep})
        state_size, action_size = memory.states.shape[1], memory.actions.shape[1]
        self.blocks = (state_size, action_size, 1, state_size, 1)
        self.device = device
        self.table = torch.zeros(memory.capacity, sum(self.blocks), device=device)  # one row per transition
        self.states, self.actions, returns, self.next_states, discounts = self.table.split(self.blocks, 1)
        self.returns, self.discounts = returns[:, 0], discounts[:, 0]
        self.priorities = Priorities(memory.capacity, device)
        self.recent = torch.ones(memory.window, device=device)  # each update's largest p, float32 as the TD errors
        self._updates = torch.zeros(1, dtype=torch.int64, device=device)  # a 1-d index into `recent`: no .item()
        self.filled = torch.zeros((), dtype=torch.float64, device=device)  # `size`, for the sampler
        self.u = torch.zeros(batch, dtype=torch.float64, device=device)

    @property
    def updates(self) -> torch.Tensor:
        return self._updates

    @updates.setter
    def updates(self, value) -> None:
        # The lesson's `+=` adds in place and hands back this very tensor (copy_ of itself does nothing); a checkpoint
        # sets a number. Either way the tensor a CUDA graph captured holds the count.
        self._updates.copy_(torch.as_tensor(value))

    def add(self, states, actions, returns, next_states, discounts) -> torch.Tensor:
        """The lesson's `add`: a batch of transitions over the oldest, at the entry priority; their rows."""
        columns = [states, actions, np.asarray(returns)[:, None], next_states, np.asarray(discounts)[:, None]]
        idx = (self.next + torch.arange(len(columns[2]), device=self.table.device)) % self.capacity
        self.table[idx] = to_device(np.concatenate(columns, 1, dtype=np.float32), self.table.device)
        self._set_priority(idx, self.recent.max().double().expand(len(idx)))  # entry_priority, never on the host
        self.next = (self.next + len(idx)) % self.capacity
        self.size = min(self.size + len(idx), self.capacity)
        self.filled.fill_(self.size)
        return idx

    def sample(self, batch: int, beta):
        """The lesson's `sample` on the device: `batch` equal segments of the total, the leaf under each by the
        running sum, the lesson's `weights` (beta a number or a tensor)."""
        total = self.priorities.total()
        bounds = (torch.arange(batch, device=self.u.device) + self.u) * (total / batch)
        idx = torch.minimum(self.priorities.find_prefix_sum(bounds), self.filled.long() - 1)
        return idx, self.weights(idx, total, self.filled, beta).float(), self.rows(idx)


def device_replay(memory, device: torch.device, batch: int):
    """`memory`, the lesson's PrioritizedReplay, on `device`: DeviceReplay mixed in before its class, which the
    notebook defines (so it is taken from `memory`, not imported)."""

    class OnDevice(DeviceReplay, type(memory)):
        pass

    return OnDevice(memory, device, batch)  # DeviceReplay's __init__: the lesson's would allocate its arrays


class Graph:
    """`fn()` reading fixed input tensors: run eagerly EAGER_CALLS times on a side stream, as torch.cuda.graph asks,
    then captured once and replayed. Off CUDA, or with `capture=False`, always eager. A call first copies its
    arguments into the inputs; its result is `fn`'s (once captured, the same tensors, overwritten by the next call)."""

    def __init__(self, fn, *inputs: torch.Tensor, capture: bool = True):
        self.fn = fn
        self.inputs = inputs
        self.calls = 0
        self.captured = None
        self.capture = capture and inputs[0].is_cuda

    def __call__(self, *values):
        for static, value in zip(self.inputs, values):  # one copy each, from pinned memory to a GPU
            value = torch.as_tensor(value, dtype=static.dtype)
            static.copy_(value.pin_memory() if static.is_cuda and value.is_cpu else value, non_blocking=True)
        if not self.capture:
            return self.fn()
        if self.calls < EAGER_CALLS:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.out = self.fn()
            torch.cuda.current_stream().wait_stream(side)
        else:
            if self.captured is None:
                self.captured = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.captured):  # records the kernels, runs none; fn's Python runs once
                    self.out = self.fn()
            self.captured.replay()
        self.calls += 1
        return self.out


class GraphedAgent:
    """The lesson's agent (or a subclass with its parts) with its replay on its networks' device and its `learn`,
    and its behaviour's refresh and actions, replayed as Graphs (see the module's docstring). A mixin: use
    `for_device(Agent, "cuda")`, which puts it before the agent's class."""

    capture = True  # False: the same tensor path, run eagerly (no CUDA graph)
    fed = None  # while the lesson's learn runs in a Graph: (the actor's noise, beta), inputs the host fills

    def make_memory(self):
        return device_replay(super().make_memory(), torch.device(self.cfg.device), self.cfg.batch_size)

    def make_behaviour(self):
        behaviour = super().make_behaviour()
        return GraphedBehaviour(behaviour, self.sizes) if self.capture else behaviour

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        zeros = lambda *shape: torch.zeros(shape, dtype=torch.float64, device=self.cfg.device)
        # the inputs: the replay's uniform numbers, then the actor's noise, and beta
        self.graph = Graph(
            self.lesson_learn, self.memory.u, zeros(self.actor.noise_size), zeros(), capture=self.capture
        )
        for group in (g for opt in (self.actor_opt, self.critic_opt) for g in opt.param_groups):
            group["capturable"] = self.graph.capture  # Adam's step count on the device, read inside the graph

    def lesson_learn(self) -> dict:
        """The lesson's `learn` (3.3), reading the inputs the host filled."""
        self.fed = self.graph.inputs[1:]
        try:
            return super().learn()
        finally:
            self.fed = None

    def learn(self) -> dict:
        """The lesson's `learn` as a Graph, fed its random numbers (the replay's draws, then the actor's fresh noise)
        and beta. It counts the update here: a replayed graph runs no Python."""
        updates = self.updates
        u = self.memory.rng.random(self.cfg.batch_size)
        eps = torch.randn(self.actor.noise_size, generator=self.gen)
        out = self.graph(u, eps, super().beta())
        self.updates = updates + 1
        return out  # still on the device

    def beta(self):
        return super().beta() if self.fed is None else self.fed[1]

    def after_critic(self, idx: torch.Tensor, td: torch.Tensor) -> None:
        """The lesson's hook (5.2, 6.2) with the TD errors left on the device and the noise the host drew."""
        self.memory.update_priorities(idx, td)
        self.actor.set_noise(self.fed[0])


class GraphedBehaviour(torch.nn.Module):
    """The full agent's behaviour policy (6.2) with its refresh and its actions for all arms each a Graph, fed this
    step's noise and the states; its noise, acting actor and mean actor are the lesson's."""

    def __init__(self, lesson: torch.nn.Module, sizes: tuple):
        super().__init__()
        self.lesson = lesson
        self.arms, self.state_size = sizes[:2]
        self.graphs = None  # made at the first refresh, on the networks' final device

    @property
    def noise(self):
        """The lesson's noise process, which each refresh steps (a checkpoint keeps its state)."""
        return self.lesson.noise

    @property
    def actor(self) -> torch.nn.Module:
        """The lesson's acting actor, which the refresh's Graph writes."""
        return self.lesson.actor

    def mean_actor(self, states: torch.Tensor) -> torch.Tensor:
        return self.lesson.mean_actor(states)

    def make_graphs(self) -> None:
        b = self.lesson
        weight = next(b.learner.critic.parameters())
        eps, states = (
            torch.zeros(shape, dtype=weight.dtype, device=weight.device)
            for shape in (b.learner.actor.noise_size, (self.arms, self.state_size))
        )

        @torch.no_grad()
        def refresh():  # Behaviour.refresh's two calls, with this step's noise from the host
            b.copy_norm()
            draw(b.learner.actor, eps, into=b.actor)

        self.graphs = Graph(refresh, eps), Graph(lambda: b(states), states)

    def refresh(self) -> None:
        if self.graphs is None:
            self.make_graphs()
        self.graphs[0](self.lesson.noise.sample())

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        if self.graphs is None or len(states) != self.arms:
            return self.lesson(states)
        return self.graphs[1](states)


def graphed(agent_class: type, capture: bool = True) -> type:
    """`agent_class` on its device's tensor path: GraphedAgent mixed in before it (a new class each call, so that
    nothing keeps it, or an agent through it, alive). The lesson's parts only: a variant of a part (the report's
    ablations, which their config keeps on the CPU) may lose what it changes."""

    class Graphed(GraphedAgent, agent_class):
        pass

    Graphed.capture = capture
    return Graphed


def for_device(agent_class: type, device: str) -> type:
    """The class that trains `agent_class` fastest on `device`: itself on a CPU (or if already graphed), its
    graphed form on a GPU."""
    if issubclass(agent_class, GraphedAgent) or torch.device(device).type != "cuda":
        return agent_class
    return graphed(agent_class)
