"""What the judge asks of a blank: for each blank, fresh inputs, and the harness that feeds them to the code.

Trusted by: both sides. The judge runs `run(blank, ns, inputs)` on the reference, the contestant on the
student's code, and the judge compares the two results. Nothing here is secret: it holds no expected value,
no reference and no verdict. `draw(blank, rng)` makes the inputs at grading time, from a seed the judge picks
afresh, so that no code can know them in advance; `run` builds the lesson's own objects from the given code,
calls the blank the way the given code calls it, and returns plain data (arrays and numbers).

Where a blank's code calls other blanks (`learn`, `flush`), those are replaced, on both sides, by stand-ins
that are deliberately not the answers (`_decoys`): they are other functions of the same shape, so a blank
earns its point by its own code alone, and the stand-ins give nothing away.

Each blank is one `Case` of `CASES`: how its inputs are drawn, the harness that feeds them to the code, and
why no fixed structure can stand in for its computation (`shortcut`). Every input is drawn afresh, every
result is compared whole and exactly (`grader.judge.differs`), and the inputs are drawn so that each quantity
a blank reads changes its result.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader import ACTION, STATE


def _tensor(ns, x):
    return ns["torch"].as_tensor(np.asarray(x))


def _flat(net) -> np.ndarray:
    return np.concatenate([p.detach().reshape(-1).numpy() for p in net.parameters()])


def _array(x) -> np.ndarray:
    """A result as a plain array (a tensor is detached and copied out of torch)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.array(x)


def _ddpg(ns, seed: int, hidden: tuple, tau: float = 0.005):
    torch = ns["torch"]
    torch.manual_seed(seed)
    cfg = ns["Config"](hidden=tuple(hidden), tau=tau)
    nets = [ns["Actor"](STATE, ACTION, cfg.hidden), ns["Actor"](STATE, ACTION, cfg.hidden)]
    nets += [ns["Critic"](STATE, ACTION, cfg.hidden), ns["Critic"](STATE, ACTION, cfg.hidden)]
    ddpg = ns["DDPG"](cfg, *nets, STATE)
    with torch.no_grad():  # targets unlike their online networks, as after some learning
        for net in (ddpg.actor_target, ddpg.critic_target):
            for p in net.parameters():
                p.add_(0.3 * torch.randn_like(p))
    return ddpg


# --- the stand-ins for other blanks: functions of the right shape that are not the answers ---


def _decoys(ns) -> dict:
    torch = ns["torch"]

    def td_target(self, ret, s_next, disc):
        return ret - 0.5 * disc * self.critic_target(s_next, torch.tanh(s_next[..., :ACTION])).cos()

    def critic_loss(self, q, y, w):
        return torch.tanh(y - q), (w * torch.log(torch.cosh(y - q))).mean()

    def actor_loss(self, s):
        actions = self.actor(s)
        return self.critic(s, actions).square().mean()

    @torch.no_grad()
    def update_targets(self):
        for name in ("actor", "critic"):
            online = dict(getattr(self, name).named_parameters())
            for key, p in getattr(self, name + "_target").named_parameters():
                p.add_(0.01 * torch.sin(p + 1) + 0.001 * online[key].sign())

    def noisy_weights(self, f_in, f_out):
        return self.weight_mean + self.weight_sigma * torch.tanh(f_out)[:, None] * torch.cos(f_in)[None, :], (
            self.bias_mean - self.bias_sigma * f_out.abs()
        )

    def pair(self, state, action):
        return 0.5 * (self.q1(state, action) + self.q2(state, action))

    def emit(self, next_states):
        k = len(next_states)
        return (
            self.states[0] + 1,
            self.actions[0] * 2,
            self.rewards[0] - 1,
            next_states * 3,
            np.full(k, 0.5, np.float32),
        )

    def flush(self, last_states):
        return None if self.count == 0 else (self.states[0] - 1, last_states * 2)

    return {
        ("DDPG", "td_target"): td_target,
        ("DDPG", "critic_loss"): critic_loss,
        ("DDPG", "actor_loss"): actor_loss,
        ("DDPG", "update_targets"): update_targets,
        ("NoisyLinear", "noisy_weights"): noisy_weights,
        ("TwinCriticTarget", "forward"): pair,
        ("NStepAccumulator", "emit"): emit,
        ("NStepAccumulator", "flush"): flush,
    }


def _stand_in(ns, *names: tuple) -> None:
    decoys = _decoys(ns)
    for cls, method in names:
        setattr(ns[cls], method, decoys[cls, method])


class _Memory:
    """The replay, as `learn` sees it: the batch it is given, and a note of each priority update."""

    def __init__(self, idx, weights, batch):
        self.idx, self.weights, self.batch, self.calls, self.updated = idx, weights, batch, [], []

    def sample(self, batch, beta):
        self.calls.append((batch, beta))
        return self.idx.copy(), self.weights.copy(), tuple(x.copy() for x in self.batch)

    def update_priorities(self, idx, td_errors):
        self.updated.append((np.array(idx), _array(td_errors)))


# --- the inputs, drawn at grading time, and the harness, the same on both sides: one function of each a blank ---


def _f32(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _seed(rng) -> int:
    return int(rng.integers(2**31))


def _draw_nets(rng, variant) -> dict:
    batch = int(rng.integers(5, 40))
    return {
        "seed": _seed(rng),
        "hidden": [int(rng.integers(8, 33)), int(rng.integers(8, 33))],
        "tau": float(rng.uniform(0.01, 0.5)),
        "s": _f32(rng, batch, STATE),
        "a": np.tanh(_f32(rng, batch, ACTION)),
        "ret": _f32(rng, batch),
        "disc": (0.99 ** rng.integers(1, 6, batch)).astype(np.float32),
        **variant,
    }


def _run_target(ns, x) -> dict:
    ddpg, torch = _ddpg(ns, x["seed"], x["hidden"]), ns["torch"]
    with torch.no_grad():
        return {"y": _array(ddpg.td_target(_tensor(ns, x["ret"]), _tensor(ns, x["s"]), _tensor(ns, x["disc"])))}


def _draw_critic_loss(rng, variant) -> dict:
    batch = int(rng.integers(5, 40))
    return {"q2": _f32(rng, 2, batch), "y": _f32(rng, batch), "w": rng.random(batch).astype(np.float32), **variant}


def _run_critic_loss(ns, x) -> dict:
    ddpg = _ddpg(ns, 0, [8, 8])
    q = _tensor(ns, x["q2"][: x["rows"]]).clone().requires_grad_(True)
    td, loss = ddpg.critic_loss(q, _tensor(ns, x["y"]), _tensor(ns, x["w"]))
    loss.backward()
    return {"td": _array(td), "loss": _array(loss), "grad": _array(q.grad)}


def _run_actor_loss(ns, x) -> dict:
    ddpg, torch = _ddpg(ns, x["seed"], x["hidden"]), ns["torch"]
    loss = ddpg.actor_loss(_tensor(ns, x["s"]))
    loss.backward()
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in ddpg.actor.parameters()]
    return {"loss": _array(loss), "actor_grad": np.concatenate([_array(g).reshape(-1) for g in grads])}


def _run_soft_update(ns, x) -> dict:
    ddpg = _ddpg(ns, x["seed"], x["hidden"], x["tau"])
    ddpg.update_targets()
    ddpg.update_targets()
    names = ("actor", "critic", "actor_target", "critic_target")
    return {name: _flat(getattr(ddpg, name)) for name in names}


def _run_twin(ns, x) -> dict:
    torch = ns["torch"]
    torch.manual_seed(x["seed"])
    twin = ns["TwinCriticTarget"](STATE, ACTION, tuple(x["hidden"]))
    s, a = _tensor(ns, x["s"]), _tensor(ns, x["a"])
    with torch.no_grad():  # two heads drawn independently, each centred on the batch: each is the smaller
        for head in (twin.q1, twin.q2):  # for about half the transitions
            head.out.bias.sub_(head(s, a).median())
        return {"q": _array(twin(s, a))}


def _draw_transitions(p_done: float):
    def draw(rng, variant) -> dict:
        arms, steps = int(rng.integers(1, 5)), int(rng.integers(8, 20))
        return {
            "n": int(rng.integers(1, 6)),
            "gamma": float(rng.uniform(0.5, 0.99)),
            "states": _f32(rng, steps + 1, arms, 3),
            "actions": _f32(rng, steps, arms, 2),
            "rewards": _f32(rng, steps, arms),
            "done": rng.random(steps) < p_done,
            **variant,
        }

    return draw


def _run_n_step(other: str):
    def run(ns, x) -> dict:
        _stand_in(ns, ("NStepAccumulator", other))
        acc = ns["NStepAccumulator"](x["n"], x["gamma"], *x["rewards"].shape[1:], 3, 2)
        out = {}
        for t in range(len(x["rewards"])):
            got = acc.push(x["states"][t], x["actions"][t], x["rewards"][t], x["states"][t + 1], bool(x["done"][t]))
            for k, column in enumerate(got or ()):
                out[f"{t}.{k}"] = _array(column)
            out[f"{t}.none"] = got is None
        return out

    return run


def _draw_tree(rng, variant) -> dict:
    size = int(rng.integers(3, 70))
    priorities = rng.random(size) * (rng.random(size) < 0.8)  # some leaves empty
    priorities[0] += 0.1
    return {
        "priorities": priorities,
        "u": rng.random(500),
        "steps": rng.integers(0, 8, (40, 8)).astype(np.float64),  # small integers: ties between u and a sum
        **variant,
    }


def _run_tree(ns, x) -> dict:
    tree = ns["SumTree"](len(x["priorities"]), ns["walk_step"])
    tree[np.arange(len(x["priorities"]))] = x["priorities"]
    found = tree.find_prefix_sum(x["u"] * tree.total())
    small = np.concatenate([[0.0], x["steps"][0, 1:]])  # a tree of 8 nodes, for single steps
    nodes, us = [1, 2, 3] * 10, x["steps"][:30, 0].copy()
    us[::2] = [small[2 * node] for node in nodes[::2]]  # u on a boundary: exactly the left subtree's sum
    steps = [ns["walk_step"](small, node, u) for node, u in zip(nodes, us)]
    return {"found": _array(found), "steps": np.array([[float(c), float(u)] for c, u in steps])}


def _draw_weights(rng, variant) -> dict:
    batch = int(rng.integers(5, 40))
    priorities = rng.random(batch) + 0.05
    return {
        "priorities": priorities,
        "total": float(priorities.sum() * rng.uniform(1, 20)),
        "size": int(rng.integers(batch, 500)),
        "beta": float(rng.uniform(0, 1)),
        **variant,
    }


def _run_weights(ns, x) -> dict:
    return {"w": _array(ns["importance_weights"](x["priorities"].copy(), x["total"], x["size"], x["beta"]))}


def _draw_priorities(rng, variant) -> dict:
    scales = np.sort(rng.uniform(0.1, 5, 8))[::-1]  # TD errors that shrink: a ring that forgets shows
    return {
        "alpha": float(rng.uniform(0.2, 1)),
        "offset": float(rng.uniform(0, 0.5)),
        "updates": [
            (rng.choice(16, int(rng.integers(1, 8)), replace=False), rng.standard_normal(8) * scale) for scale in scales
        ],
        "adds": int(rng.integers(1, 6)),
        **variant,
    }


def _run_priorities(ns, x) -> dict:
    replay = ns["PrioritizedReplay"](16, 1, 1, x["alpha"], x["offset"], np.random.default_rng(0), window=x["window"])
    zeros = np.zeros((x["adds"], 1), np.float32)
    out = {}
    for k, (idx, td) in enumerate(x["updates"]):
        replay.update_priorities(np.array(idx), td[: len(idx)].copy())
        replay.add(zeros, zeros, zeros[:, 0], zeros, np.ones(x["adds"], np.float32))
        out[f"{k}.priorities"] = replay.priorities[np.arange(16)].copy()
        out[f"{k}.entry"] = float(replay.entry_priority)
    return out


def _draw_noisy(rng, variant) -> dict:
    n_in = int(rng.integers(2, 12))
    n_out = n_in if variant.get("square") else int(rng.integers(2, 11))
    n_out += not variant.get("square") and n_out >= n_in  # otherwise never square
    return {
        "seed": _seed(rng),
        "n_in": n_in,
        "n_out": n_out,
        "sigma0": float(rng.uniform(0.1, 1)),
        "f_in": _f32(rng, n_in),
        "f_out": _f32(rng, n_out),
        "g_w": _f32(rng, n_out, n_in),
        "g_b": _f32(rng, n_out),
    }


def _run_noisy(ns, x) -> dict:
    torch = ns["torch"]
    torch.manual_seed(x["seed"])
    layer = ns["NoisyLinear"](x["n_in"], x["n_out"], sigma0=x["sigma0"])
    w, b = layer.noisy_weights(_tensor(ns, x["f_in"]), _tensor(ns, x["f_out"]))
    ((w * _tensor(ns, x["g_w"])).sum() + (b * _tensor(ns, x["g_b"])).sum()).backward()
    out = {"w": _array(w), "b": _array(b)}
    for name in ("weight_mean", "weight_sigma", "bias_mean", "bias_sigma"):
        grad = getattr(layer, name).grad
        out[name] = _array(grad) if grad is not None else np.zeros(0)
    return out


def _draw_ou(rng, variant) -> dict:
    return {
        "seed": _seed(rng),
        "size": int(rng.integers(100, 400)),
        "kappa": float(rng.uniform(0.05, 0.5)),
        "scale": float(rng.uniform(0.2, 3)),
        "steps": 12,
        **variant,
    }


def _run_ou(ns, x) -> dict:  # the path from a seeded generator, for two seeds: compared with the reference's
    torch, out = ns["torch"], {}
    for name, seed in (("path", x["seed"]), ("other", x["seed"] + 1)):
        ou = ns["OrnsteinUhlenbeck"](x["size"], x["kappa"], x["scale"], torch.Generator().manual_seed(seed))
        path = [_array(ou.state)]
        for _ in range(x["steps"]):
            path.append(_array(ou.sample()))
        out[name], out[name + ".last"] = np.stack(path), _array(ou.state)
    return out


def _draw_learn(rng, variant) -> dict:
    batch = int(rng.integers(5, 40))
    return {
        "seed": _seed(rng),
        "batch": batch,
        "steps": int(rng.integers(0, 50_000)),
        "idx": rng.integers(0, 1000, batch),
        "weights": rng.uniform(0.1, 1, batch).astype(np.float32),
        "s": _f32(rng, batch, STATE) * 3 + 1,
        "a": np.tanh(_f32(rng, batch, ACTION)),
        "ret": _f32(rng, batch),
        "s_next": _f32(rng, batch, STATE) * 3 + 1,
        "disc": (0.99 ** rng.integers(1, 6, batch)).astype(np.float32),
        "seen": _f32(rng, 200, STATE) * 3 + 1,
        **variant,
    }


def _run_learn(ns, x) -> dict:
    _stand_in(ns, *(key for key in _decoys(ns) if key[0] != "NStepAccumulator"))
    cfg = ns["Config"](
        seed=x["seed"], buffer_size=1000, batch_size=x["batch"], warmup=x["batch"], hidden=(16, 16),
        clipped_double_q=x["double_q"],
    )  # fmt: skip
    agent = ns["Agent"](cfg, STATE, ACTION, 2)
    agent.norm.update(_tensor(ns, x["seen"]))
    agent.steps = x["steps"]
    batch = tuple(x[k] for k in ("s", "a", "ret", "s_next", "disc"))
    agent.memory = memory = _Memory(x["idx"], x["weights"], batch)
    out = agent.learn()
    result = {key: _array(out.get(key, np.nan)) for key in ("critic_loss", "actor_loss", "q", "idx", "td")}
    result["keys"] = ",".join(sorted(map(str, out)))
    result["sampled"] = np.array(memory.calls, np.float64)
    result["updated"] = len(memory.updated)
    for k, (idx, td) in enumerate(memory.updated):
        result[f"updated.{k}.idx"], result[f"updated.{k}.td"] = idx, td
    for name in ("actor", "critic", "actor_target", "critic_target"):
        result[name] = _flat(getattr(agent, name))
    result["updates"] = int(agent.updates)
    result["gen"] = agent.gen.get_state().numpy().copy()
    return result


@dataclass(frozen=True)
class Case:
    """What the judge asks of one blank: its inputs, drawn for each variant (`draw(rng, variant)`), the harness
    that feeds them to the code (`run(ns, x)`, plain data back), and why no fixed structure can stand in for
    the computation on those inputs (`shortcut`). `exact_dtype`: the docstring promises the result's dtype."""

    draw: Callable[[np.random.Generator, dict], dict]
    run: Callable[[dict, dict], dict]
    shortcut: str
    variants: tuple = ({},)
    exact_dtype: bool = False


N_STEPS = tuple({"n": n} for n in (1, 2, 3, 5))
CASES = {
    "ddpg-target": Case(
        _draw_nets,
        _run_target,
        "random networks, the targets moved away from their online copies, random returns and discounts: the "
        "online networks, a missing discount or a missing target action each give other values",
    ),
    "ddpg-critic-loss": Case(
        _draw_critic_loss,
        _run_critic_loss,
        "random q (one critic and two), y and w: the TD errors, the loss and its gradient in q are compared, so "
        "a sign, a missing weight or another reduction shows",
        ({"rows": 1}, {"rows": 2}),
    ),
    "ddpg-actor-loss": Case(
        _draw_nets, _run_actor_loss, "random networks and states: the loss and the actor's gradient are compared"
    ),
    "ddpg-soft-update": Case(
        _draw_nets,
        _run_soft_update,
        "random tau in [0.01, 0.5] and two updates: tau and 1 - tau, a hard copy, or updating the online "
        "networks each give other weights",
    ),
    "clipped-double-q": Case(
        _draw_nets,
        _run_twin,
        "two heads drawn independently, each centred on the batch, so that each is the smaller for about half "
        "of the transitions: reading one head, or a mirror of it, fails",
    ),
    "ou-step": Case(
        _draw_ou,
        _run_ou,
        "the path of 12 steps from a seeded generator, against the reference's for the same seed, and for "
        "another seed: white noise, noise of another law, or draws from another generator give another path; "
        "any way of writing the same step from self.generator gives the same",
    ),
    "learn": Case(
        _draw_learn,
        _run_learn,
        "random batches, weights, step counts and statistics seen, with both settings of the twin critic; the "
        "stand-ins for the other blanks are not the answers, so only this blank's own sequence is compared",
        ({"double_q": False}, {"double_q": True}),
    ),
    "n-step-return": Case(
        _draw_transitions(0.1),
        _run_n_step("flush"),
        "random gamma, rewards and episode ends, for n of 1, 2, 3 and 5",
        N_STEPS,
        exact_dtype=True,
    ),
    "n-step-flush": Case(
        _draw_transitions(0.3),
        _run_n_step("emit"),
        "as n-step-return, with more episode ends, so that flushing is exercised at every fill",
        N_STEPS,
        exact_dtype=True,
    ),
    "sum-tree-walk": Case(
        _draw_tree, _run_tree, "random trees with empty leaves, and values of u that fall exactly on a subtree's sum"
    ),
    "importance-weights": Case(_draw_weights, _run_weights, "random priorities, totals, sizes and beta"),
    "new-priority": Case(
        _draw_priorities,
        _run_priorities,
        "random alpha, offset and windows 1-3, with TD errors that shrink, so a window that forgets and one that "
        "does not give other entry priorities",
        ({"window": 1}, {"window": 2}, {"window": 3}),
    ),
    "noisy-weights": Case(
        _draw_noisy,
        _run_noisy,
        "random sizes, one case square (where a transposed outer product is no error of shape), random factors "
        "and output gradients: a transposed product or a missing sigma shows in the weights or the gradients",
        ({}, {"square": True}),
    ),
}


def draw(blank: str, rng: np.random.Generator) -> list[dict]:
    """Fresh inputs for each of `blank`'s cases: plain data only."""
    case = CASES[blank]
    return [case.draw(rng, variant) for variant in case.variants]


def run(blank: str, ns: dict, inputs: list[dict]) -> list[dict]:
    """`blank`'s code fed each case's inputs (from `draw`); what it gives, as plain data."""
    ns["torch"].set_num_threads(1)
    return [CASES[blank].run(ns, x) for x in inputs]
