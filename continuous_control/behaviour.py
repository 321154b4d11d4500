"""The policies that act for the lesson's agents, so that acting never reads the networks while they learn.

Each is a copy of the learner's normaliser and actor, refreshed once per environment step, before that step's
update: the next action comes from the policy as it was before the update (so that on a GPU acting need not wait
for learning). `noise` is the lesson's Ornstein-Uhlenbeck process, stepped once per refresh.
- `ActionNoise`: plain DDPG's (section 3), the noise added to the actor's actions.
- `Behaviour`: NoisyNet's (section 6), the noise in the weights, drawn once per step into a plain actor: a
  plain actor's forward pass is cheaper than the noisy layers', and acts exactly as they would.
"""

import torch
import torch.nn as nn


class _Copy(nn.Module):
    def __init__(self, learner, actor: nn.Module, noise):
        super().__init__()
        self.learner = learner
        self.norm = type(learner.norm)(learner.norm.mean.numel())
        self.actor = actor.requires_grad_(False)
        self.noise = noise
        self.copied = None  # the learner's update count when copy_actor last copied its actor

    def copy_norm(self) -> None:
        for copy, source in zip(self.norm.buffers(), self.learner.norm.buffers()):
            copy.copy_(source)

    def copy_actor(self) -> None:
        """Copy the learner's actor's parameters into `actor`, unless no update has changed them since."""
        if self.copied != self.learner.updates:
            for copy, source in zip(self.actor.parameters(), self.learner.actor.parameters()):
                copy.copy_(source)
            self.copied = self.learner.updates


class ActionNoise(_Copy):
    """mu(s) + epsilon_t, clamped to [-1, 1]: the learner's actor and normaliser as they were at the last refresh."""

    def __init__(self, learner, actor: nn.Module, noise):
        super().__init__(learner, actor, noise)
        self.register_buffer("action_noise", torch.zeros_like(noise.state))

    @torch.no_grad()
    def refresh(self) -> None:
        self.copy_norm()
        self.copy_actor()
        self.action_noise.copy_(self.noise.sample())

    @torch.inference_mode()  # no_grad, and none of autograd's bookkeeping (version counters) either
    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return (self.actor(self.norm(states)) + self.action_noise).clamp(-1, 1)

    @torch.no_grad()
    def mean_actor(self, states: torch.Tensor) -> torch.Tensor:
        """The learner's actor without noise."""
        return self.learner.actor(self.learner.norm(states)).clamp(-1, 1)


class Behaviour(_Copy):
    """The learner's noisy actor under this step's noise epsilon_t, drawn into the plain actor `actor`."""

    @torch.no_grad()
    def refresh(self) -> None:
        self.copy_norm()
        draw(self.learner.actor, self.noise.sample(), into=self.actor)

    @torch.inference_mode()
    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.actor(self.norm(states)).clamp(-1, 1)

    @torch.no_grad()
    def mean_actor(self, states: torch.Tensor) -> torch.Tensor:
        """The learner's actor without noise; this policy is left as it is (it goes on exploring)."""
        self.learner.actor.set_noise(None)  # the mean weights; learn() draws fresh noise before using it
        return self.learner.actor(self.learner.norm(states)).clamp(-1, 1)


@torch.no_grad()
def draw(noisy: nn.Module, eps: torch.Tensor, into: nn.Module) -> None:
    """Write into the plain actor `into` the weights of the lesson's `NoisyActor` `noisy` under the noise `eps`
    (`noise_size` numbers), which `noisy` then holds: `into` acts as `noisy` with that noise."""
    noisy.set_noise(eps)
    for layer, plain in zip(noisy.layers, into.layers):
        weight, bias = layer.noisy_weights(layer.eps_in, layer.eps_out)
        plain.weight.copy_(weight)
        plain.bias.copy_(bias)
