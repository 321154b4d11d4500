"""One flat tensor per network, for speed.

A learning update ends with three operations over every parameter of a network: the optimiser's
step, the critic's gradient clip and the soft target update. Done tensor by tensor, each is a
Python loop of small operations whose overhead, on a CPU, costs more than their arithmetic. With
the parameters moved into one flat tensor (each layer's weight a view into it, and likewise the
gradients) the layers compute as before, and each of the three is one operation per network.
"""
import torch
import torch.nn as nn


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
