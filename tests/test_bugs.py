"""The lesson's checks catch the classic bugs. Each bug below is planted, alone, in the lesson's code (a
string substitution on its cells). A bug in the code around the blanks must fail at least one check of the
whole lesson; a bug in a blank must fail that blank's graded check (visible and hidden tests), run alone as
grading runs it (grader.Grader: one forked process per program, the libraries loaded once)."""
import nbformat
import pytest

import grader
from tools import student

LESSON = nbformat.read(student.LESSON, as_version=4)
SOLVED = grader.blank_sources(LESSON)

# The steps of `learn`, as the lesson writes them.
CRITIC_STEP = ("    td, critic_loss, q = self.update_critic(s, a, ret, s_next, disc, self.tensor(weights))\n"
               "    self.memory.update_priorities(idx, td.cpu().numpy())\n")
NOISE = "    self.actor.set_noise(torch.randn(self.actor.noise_size, generator=self.gen))    # fresh noise: sigma learns too\n"
ACTOR_STEP = "    actor_loss = self.update_actor(s)\n"

# (what, the text in the lesson's code, what it becomes, the blank it is in or None for the code around them)
BUGS = [
    # 2.1 the networks
    ("no tanh on the actor's output", "return torch.tanh(self.layers[-1](x))", "return self.layers[-1](x)", None),
    ("the normaliser's batch share fixed at one half", "w = x.shape[0] / (self.count + x.shape[0])", "w = 0.5", None),
    # 2.2 DDPG
    ("the online actor in the TD target", "self.critic_target(s_next, self.actor_target(s_next))",
     "self.critic_target(s_next, self.actor(s_next))", "ddpg-target"),
    ("the online critic in the TD target", "self.critic_target(s_next, self.actor_target(s_next))",
     "self.critic(s_next, self.actor_target(s_next))", "ddpg-target"),
    ("the discount dropped", "return ret + disc * self.critic_target", "return ret + self.critic_target", "ddpg-target"),
    ("gamma instead of each transition's discount", "return ret + disc * self.critic_target",
     "return ret + self.cfg.gamma * self.critic_target", "ddpg-target"),
    ("the TD error's sign flipped", "    td = y - q\n", "    td = q - y\n", "ddpg-critic-loss"),
    ("the importance weights left out of the loss", "return td, (w * td.pow(2)).mean()", "return td, td.pow(2).mean()",
     "ddpg-critic-loss"),
    ("the weights applied before squaring", "return td, (w * td.pow(2)).mean()", "return td, (w * td).pow(2).mean()",
     "ddpg-critic-loss"),
    ("the actor's loss flipped", "return -self.critic(s, self.actor(s)).mean()", "return self.critic(s, self.actor(s)).mean()",
     "ddpg-actor-loss"),
    ("the actor climbs the target critic", "return -self.critic(s, self.actor(s)).mean()",
     "return -self.critic_target(s, self.actor(s)).mean()", "ddpg-actor-loss"),
    ("the actor target never soft-updated",
     "    for target, online in ((self.actor_target, self.actor), (self.critic_target, self.critic)):\n        torch._foreach_lerp_",
     "    for target, online in ((self.critic_target, self.critic),):\n        torch._foreach_lerp_", "ddpg-soft-update"),
    ("tau and 1 - tau swapped", "list(online.parameters()), self.cfg.tau)", "list(online.parameters()), 1 - self.cfg.tau)",
     "ddpg-soft-update"),
    ("the online networks moved toward their targets", "_lerp_(list(target.parameters()), list(online.parameters())",
     "_lerp_(list(online.parameters()), list(target.parameters())", "ddpg-soft-update"),
    # 2.3 clipped double-Q
    ("max instead of min over the two critics", "return torch.minimum(self.q1(state, action), self.q2(state, action))",
     "return torch.maximum(self.q1(state, action), self.q2(state, action))", "clipped-double-q"),
    ("only the first target critic", "return torch.minimum(self.q1(state, action), self.q2(state, action))",
     "return self.q1(state, action)", "clipped-double-q"),
    # 3 n-step targets
    ("the n-step rewards not discounted", 'np.einsum("k,ka->a", self.discounts[:self.n], self.rewards)',
     'np.einsum("k,ka->a", np.ones(self.n), self.rewards)', "n-step-return"),
    ("gamma^(n-1) for the bootstrap", "disc = np.full(len(ret), self.discounts[self.n], np.float32)",
     "disc = np.full(len(ret), self.discounts[self.n - 1], np.float32)", "n-step-return"),
    ("the newest step as the transition's start", "return self.states[0].copy(), self.actions[0].copy()",
     "return self.states[-1].copy(), self.actions[-1].copy()", "n-step-return"),
    ("a flush that bootstraps from the next episode's first state", "out = self.flush(states)",
     "out = self.flush(next_states)", None),
    ("the window not emptied after a flush", "            out = self.flush(states)\n            self.count = 0\n",
     "            out = self.flush(states)\n", None),
    ("a flush that emits the full window's oldest step again", "first = 1 if self.count == self.n else 0", "first = 0",
     "n-step-flush"),
    ("a flush that discounts every bootstrap by gamma^n", "disc = np.repeat(self.discounts[lengths], agents)",
     "disc = np.repeat(np.full(len(lengths), self.discounts[self.n]), agents)", "n-step-flush"),
    # 4.1 the sum tree
    ("a walk that forgets to go down on the left", "\n    return 2 * node, u", "\n    return node, u", "sum-tree-walk"),
    ("a walk that forgets to subtract the left sum", "return 2 * node + 1, u - left", "return 2 * node + 1, u",
     "sum-tree-walk"),
    ("a walk that sends the boundary left", "    if u >= left:\n        return 2 * node + 1",
     "    if u > left:\n        return 2 * node + 1", "sum-tree-walk"),
    ("an update that never reaches the root", "        while node >= 1:\n            tree[node]",
     "        while node > 1:\n            tree[node]", None),
    # 4.2 importance weights and priorities
    ("the weights divided by their smallest", "return weights / weights.max()", "return weights / weights.min()",
     "importance-weights"),
    ("the weights' exponent +beta", "weights = (size * priorities / total) ** -beta", "weights = (size * priorities / total) ** beta",
     "importance-weights"),
    ("the weights not divided by their largest", "return weights / weights.max()", "return weights", "importance-weights"),
    ("a priority from the signed TD error", "priorities = np.abs(td_errors) + self.offset", "priorities = td_errors + self.offset",
     "new-priority"),
    ("a priority without its offset", "priorities = np.abs(td_errors) + self.offset", "priorities = np.abs(td_errors)",
     "new-priority"),
    ("new transitions at the largest priority ever", "self.recent[self.updates % self.window] = priorities.max()",
     "self.recent[0] = max(self.recent[0], priorities.max())", "new-priority"),
    ("a ring that never turns", "    self.updates += 1\n    self._set_priority", "    self._set_priority", "new-priority"),
    ("priorities stored without the exponent alpha", "self.priorities[idx] = priorities ** self.alpha",
     "self.priorities[idx] = priorities", None),
    # 5.1 noisy layers
    ("noise without f(x) = sgn(x) sqrt(|x|)", "        f = signed_sqrt(eps)\n        self.eps_in",
     "        f = eps\n        self.eps_in", None),
    ("weight noise not scaled by sigma", "torch.addcmul(self.weight_mean, self.weight_sigma, torch.outer(f_out, f_in))",
     "self.weight_mean + torch.outer(f_out, f_in)", "noisy-weights"),
    ("no noise on the bias", "torch.addcmul(self.bias_mean, self.bias_sigma, f_out))", "self.bias_mean)", "noisy-weights"),
    # 5.2 the Ornstein-Uhlenbeck process
    ("OU noise that returns the white increment", "* xi\n    return self.state", "* xi\n    return xi", "ou-step"),
    ("an OU increment scaled by kappa", "self.scale * (1 - (1 - self.kappa) ** 2) ** 0.5 * xi", "self.scale * self.kappa * xi",
     "ou-step"),
    ("an OU decay of kappa instead of 1 - kappa", "self.state = (1 - self.kappa) * self.state", "self.state = self.kappa * self.state",
     "ou-step"),
    # 6.1 the behaviour policy
    ("a behaviour policy with stale state statistics", "            copy.copy_(source)\n", "            pass\n", None),
    ("an agent that never explores", "policy = self.behaviour if explore else self.behaviour.mean_actor",
     "policy = self.behaviour.mean_actor", None),
    # 6.2 the agent: schedules, learn, step
    ("n ramped one episode early", "1 + (episode - 1) // cfg.n_step_ramp", "1 + episode // cfg.n_step_ramp", None),
    ("the fast episodes one short", "episode <= cfg.learn_every_until", "episode < cfg.learn_every_until", None),
    ("beta never reaching 1", "return min(1.0, self.cfg.beta_start", "return min(0.9, self.cfg.beta_start", None),
    ("learning one step after the warm-up", "self.memory.size >= self.cfg.warmup", "self.memory.size > self.cfg.warmup", None),
    ("the behaviour policy not refreshed each step", "            self.behaviour.refresh()                      # the next step's",
     "            pass                      # the next step's", None),
    ("the actor's step before the critic's", CRITIC_STEP + NOISE + ACTOR_STEP, NOISE + ACTOR_STEP + CRITIC_STEP, "learn"),
    ("priorities never updated", "    self.memory.update_priorities(idx, td.cpu().numpy())\n", "", "learn"),
    ("no fresh noise for the actor's step", NOISE, "", "learn"),
    ("raw states in the update", "    s, s_next = self.norm(s), self.norm(s_next)              # the replay keeps raw states\n", "",
     "learn"),
    ("the actor's noise from the global generator", "torch.randn(self.actor.noise_size, generator=self.gen))    # fresh noise",
     "torch.randn(self.actor.noise_size))    # fresh noise", "learn"),
    # 7 the training loop
    ("the state never advanced", "            states = next_states\n", "", None),
    ("the done step never given to the agent", "            agent.step(states, actions, rewards, next_states, done)",
     "            if done:\n                break\n            agent.step(states, actions, rewards, next_states, done)", None),
    ("the score counting only the last step", "            scores += rewards\n", "            scores = rewards\n", None),
]


def plant(program: list[dict], old: str, new: str) -> list[dict]:
    """`program` with `old` replaced by `new` in the one cell that holds it (it must be there exactly once)."""
    where = [k for k, cell in enumerate(program) if old in cell["source"]]
    assert len(where) == 1 and program[where[0]]["source"].count(old) == 1, f"{old!r} is not in exactly one place"
    cell = dict(program[where[0]], source=program[where[0]]["source"].replace(old, new))
    compile(cell["source"], cell["name"], "exec")                    # a bug, not a syntax error
    return program[:where[0]] + [cell] + program[where[0] + 1:]


def lesson() -> list[dict]:
    """The whole lesson's code and checks, in order, as one program."""
    return grader.program(grader.cells(LESSON))


def test_the_checks_pass_on_the_lessons_code(checks):
    assert checks.run(lesson())["failed"] == {}


def test_the_list_covers_thirty_bugs_in_every_section_and_every_blank():
    assert len(BUGS) >= 30
    assert {blank for *_, blank in BUGS} - {None} == set(student.blank_ids())


@pytest.mark.parametrize("what, old, new, blank", BUGS, ids=[b[0] for b in BUGS])
def test_a_check_catches_the_bug(checks, what, old, new, blank):
    if blank is None:
        failed = checks.run(plant(lesson(), old, new), first=True)["failed"]
        assert failed, f"no check fails with {what}"
    else:
        [cell] = plant([{"name": blank, "source": SOLVED[blank]}], old, new)
        failed = checks.check(blank, cell["source"], student.HIDDEN[f"check-{blank}"])["failed"]
        assert f"check-{blank}" in failed, f"{what}: check-{blank} passes ({failed})"
