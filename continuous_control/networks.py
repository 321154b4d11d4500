"""`Normalizer`, the states' running standardisation; `Networks`, which moves the networks of the lesson's DDPG
and their optimisers together; `to_device`; and `compiled`, numba's compilation of the lesson's functions, cached."""

import functools

import numba
import numpy as np
import torch
import torch.nn as nn


def to_device(x: np.ndarray, device: torch.device, dtype=None) -> torch.Tensor:
    """An array on `device` without waiting: copied from pinned memory, which torch frees once the copy is done (a
    tensor already on a GPU stays there)."""
    x = torch.as_tensor(x, dtype=dtype)
    return x.pin_memory().to(device, non_blocking=True) if device.type == "cuda" and x.is_cpu else x.to(device)


@functools.cache
def compiled(function):
    """`function` compiled by numba, once per definition (running its cell again compiles the new one)."""
    return numba.njit(function)


class Normalizer(nn.Module):
    """Standardises states by the running mean and variance of all states seen (buffers: saved with the weights)."""

    def __init__(self, size: int, clip: float = 5.0):
        super().__init__()
        self.clip = clip
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.tensor(1e-4))

    def update(self, x: torch.Tensor) -> None:
        """Merge a batch's mean and variance into the running ones (Chan et al., *Updating formulae and a pairwise
        algorithm for computing sample variances*, 1979): with w = n / (count + n) the batch's share,
        var <- (1 - w) var + w (var_x + (1 - w) delta^2)."""
        var, mean = torch.var_mean(x, 0, correction=0)
        w = x.shape[0] / (self.count + x.shape[0])
        delta = mean - self.mean
        self.var.lerp_(var + (1 - w) * delta.square(), w)
        self.mean.add_(w * delta)
        self.count.add_(x.shape[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / (self.var + 1e-8).sqrt()).clamp(-self.clip, self.clip)


class Networks:
    """A holder of networks and their Adam optimisers (`actor_opt`, `critic_opt`) that moves them together."""

    def to(self, *args, **kwargs):
        """Move or cast every network, as nn.Module.to does (`.to("cuda")`, `.to(torch.float64)`), and Adam's state."""
        for net in vars(self).values():
            if isinstance(net, nn.Module):
                net.to(*args, **kwargs)
        for opt in (self.actor_opt, self.critic_opt):
            opt.load_state_dict(opt.state_dict())  # casts Adam's moments to their parameters' device and dtype
        vars(self).pop("where", None)  # tensor() looks again
        return self

    def tensor(self, x) -> torch.Tensor:
        """An array as a tensor on the networks' device, in their dtype (to a GPU without waiting for it)."""
        if "where" not in vars(self):  # found once, not by a walk of the critic's parameters each call
            weight = next(self.critic.parameters())
            self.where = weight.device, weight.dtype
        return to_device(x, *self.where)
