"""The lesson's checks catch the classic bugs. Each bug below is planted, alone, in one function of the
lesson's code: the function is found by name in the cells (`Class.method` is a method written in its class
or attached with `@method_of(Class)`), and its syntax tree is changed (an expression or a statement
replaced, dropped or moved), so the bugs do not depend on how the code is laid out. A bug in the code around
the blanks must fail at least one check of the whole lesson; a bug in a blank must fail that blank's graded
point, judged alone as grading judges it (grader.judge: the blank's results on fresh inputs against the
reference's)."""

import ast
import copy
import textwrap

import nbformat
import pytest

import grader
from tools import student

LESSON = nbformat.read(student.LESSON, as_version=4)
EDITION = nbformat.read(student.EDITION, as_version=4)
SOLVED = grader.blank_sources(LESSON)


# --- patterns: Python code in which a name that starts with "_" stands for any expression (`torch.tanh(_x)`),
# and `f(...)` for a call of f with any arguments ---


def parse(code: str) -> ast.AST:
    """The expression, or else the one statement, that `code` is."""
    [node] = ast.parse(code).body
    return node.value if isinstance(node, ast.Expr) else node


def match(pattern: ast.AST, node: ast.AST, bound: dict) -> bool:
    """Whether `node` is `pattern`, binding each "_" name of the pattern to what it stands for in `bound`."""
    if isinstance(pattern, ast.Name) and pattern.id.startswith("_"):
        bound[pattern.id] = node
        return True
    if type(pattern) is not type(node):
        return False
    if isinstance(pattern, ast.Call) and len(pattern.args) == 1 and getattr(pattern.args[0], "value", None) is Ellipsis:
        return match(pattern.func, node.func, bound)
    for field in pattern._fields:
        if field in ("ctx", "type_comment", "kind"):
            continue
        mine, theirs = getattr(pattern, field), getattr(node, field, None)
        if isinstance(mine, list):
            if not (
                isinstance(theirs, list)
                and len(mine) == len(theirs)
                and all(match(p, n, bound) if isinstance(p, ast.AST) else p == n for p, n in zip(mine, theirs))
            ):
                return False
        elif isinstance(mine, ast.AST):
            if not (isinstance(theirs, ast.AST) and match(mine, theirs, bound)):
                return False
        elif mine != theirs:
            return False
    return True


def fill(template: ast.AST, bound: dict) -> ast.AST:
    """`template` with each "_" name replaced by what it was bound to."""

    class Fill(ast.NodeTransformer):
        def visit_Name(self, node):
            return copy.deepcopy(bound[node.id]) if node.id in bound else node

    return Fill().visit(copy.deepcopy(template))


def is_statement(pattern: ast.AST, statement: ast.stmt) -> bool:
    """Whether `statement` is `pattern` (a statement, or an expression written as a statement)."""
    return match(
        pattern, statement.value if isinstance(statement, ast.Expr) and isinstance(pattern, ast.expr) else statement, {}
    )


def blocks(function: ast.FunctionDef):
    """Every list of statements in `function`: its body, and those of its loops, ifs, withs and trys."""
    for node in ast.walk(function):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


# --- the mutations: each changes a function's tree in place, and returns how many places it changed ---


def replace(old: str, new: str, keep: str | None = None):
    """Every expression or statement `old` becomes `new` (except where it is `keep`)."""
    old, new, keep = parse(old), parse(new), keep and parse(keep)

    class Replace(ast.NodeTransformer):
        count = 0

        def visit(self, node):
            if keep is not None and match(keep, node, {}):
                return node
            bound = {}
            if match(old, node, bound):
                self.count += 1
                return fill(new, bound)
            return self.generic_visit(node)

    def mutate(function):
        replacing = Replace()
        for k, statement in enumerate(function.body):
            function.body[k] = replacing.visit(statement)
        return replacing.count

    return mutate


def drop(statement: str):
    """The statement `statement` left out (a block left empty becomes `pass`)."""
    pattern = parse(statement)

    def mutate(function):
        count = 0
        for body in blocks(function):
            kept = [s for s in body if not is_statement(pattern, s)]
            count += len(body) - len(kept)
            body[:] = kept or [ast.Pass()]
        return count

    return mutate


def insert(statement: str, before: str):
    """The statement `statement` added just before the statement `before`."""
    new, anchor = ast.parse(statement).body[0], parse(before)

    def mutate(function):
        for body in blocks(function):
            where = [k for k, s in enumerate(body) if is_statement(anchor, s)]
            for k in reversed(where):
                body.insert(k, copy.deepcopy(new))
            if where:
                return len(where)
        return 0

    return mutate


def move(*statements: str, before: str):
    """The statements `statements` moved, in their order, to just before the statement `before`."""
    patterns, anchor = [parse(s) for s in statements], parse(before)

    def mutate(function):
        for body in blocks(function):
            moved = [s for s in body if any(is_statement(p, s) for p in patterns)]
            if len(moved) == len(patterns) and any(is_statement(anchor, s) for s in body):
                rest = [s for s in body if s not in moved]
                k = next(k for k, s in enumerate(rest) if is_statement(anchor, s))
                body[:] = rest[:k] + moved + rest[k:]
                return len(moved)
        return 0

    return mutate


def swap_loop_variables(function):
    """The first loop over pairs, `for a, b in ...`, made `for b, a in ...`."""
    for node in ast.walk(function):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2:
            node.target.elts.reverse()
            return 1
    return 0


# --- planting a bug in a function of the lesson's cells ---


def find(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The function `name` ("function", or "Class.method": in the class, or attached by `@method_of(Class)`)."""
    owner, _, function = name.rpartition(".")
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == function:
                    return item
        if isinstance(node, ast.FunctionDef) and node.name == function:
            attached = [
                d.args[0].id
                for d in node.decorator_list
                if isinstance(d, ast.Call)
                and getattr(d.func, "id", None) == "method_of"
                and d.args
                and isinstance(d.args[0], ast.Name)
            ]
            if (attached == [owner]) if owner else not attached:
                return node
    return None


def plant(program: list[dict], function: str, mutation) -> list[dict]:
    """`program` with `mutation` applied to `function`, in the one code cell (not a check) that defines it."""
    where = [
        k for k, cell in enumerate(program) if cell.get("kind") != "check" and find(ast.parse(cell["source"]), function)
    ]
    assert len(where) == 1, f"{function} is defined in {len(where)} cells, not one"
    source = program[where[0]]["source"]
    node = find(ast.parse(source), function)
    assert mutation(node) >= 1, f"the mutation changes nothing in {function}"
    lines = source.splitlines(keepends=True)
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    text = textwrap.indent(ast.unparse(node), " " * node.col_offset) + "\n"
    cell = dict(program[where[0]], source="".join(lines[:start]) + text + "".join(lines[node.end_lineno :]))
    assert ast.dump(ast.parse(cell["source"])) != ast.dump(ast.parse(source))
    compile(cell["source"], cell["name"], "exec")  # a bug, not a syntax error
    return program[: where[0]] + [cell] + program[where[0] + 1 :]


ANY = "any check of the lesson"

# (what, the function, the mutation, the check that must fail: a blank's graded check, or ANY)
BUGS = [
    # 2.1 the networks
    ("no tanh on the actor's output", "Actor.forward", replace("torch.tanh(_x)", "_x"), ANY),
    # 2.2 DDPG
    (
        "the online actor in the TD target",
        "DDPG.td_target",
        replace("self.actor_target", "self.actor"),
        "check-ddpg-target",
    ),
    (
        "the online critic in the TD target",
        "DDPG.td_target",
        replace("self.critic_target", "self.critic"),
        "check-ddpg-target",
    ),
    ("the discount dropped", "DDPG.td_target", replace("disc", "1.0"), "check-ddpg-target"),
    (
        "gamma instead of each transition's discount",
        "DDPG.td_target",
        replace("disc", "self.cfg.gamma"),
        "check-ddpg-target",
    ),
    ("the TD error's sign flipped", "DDPG.critic_loss", replace("y - q", "q - y"), "check-ddpg-critic-loss"),
    (
        "the importance weights left out of the loss",
        "DDPG.critic_loss",
        replace("w * _x", "_x"),
        "check-ddpg-critic-loss",
    ),
    (
        "the weights applied before squaring",
        "DDPG.critic_loss",
        replace("w * _td.pow(2)", "(w * _td).pow(2)"),
        "check-ddpg-critic-loss",
    ),
    ("the actor's loss flipped", "DDPG.actor_loss", replace("-_q", "_q"), "check-ddpg-actor-loss"),
    (
        "the actor climbs the target critic",
        "DDPG.actor_loss",
        replace("self.critic", "self.critic_target"),
        "check-ddpg-actor-loss",
    ),
    (
        "the actor target never soft-updated",
        "DDPG.update_targets",
        replace("self.actor_target", "self.actor"),
        "check-ddpg-soft-update",
    ),
    (
        "tau and 1 - tau swapped",
        "DDPG.update_targets",
        replace("self.cfg.tau", "1 - self.cfg.tau"),
        "check-ddpg-soft-update",
    ),
    (
        "the online networks moved toward their targets",
        "DDPG.update_targets",
        swap_loop_variables,
        "check-ddpg-soft-update",
    ),
    # 2.2 the given parts of the update
    ("targets that do not start as copies", "DDPG.__init__", drop("target.load_state_dict(...)"), ANY),
    ("the critic's gradients never zeroed", "DDPG.update_critic", drop("self.critic_opt.zero_grad()"), ANY),
    ("the actor's gradients never zeroed", "DDPG.update_actor", drop("self.actor_opt.zero_grad()"), ANY),
    (
        "the actor's step writing gradients into the critic",
        "DDPG.update_actor",
        replace("loss.backward(inputs=_p)", "loss.backward()"),
        ANY,
    ),
    # 3.2 uniform replay
    (
        "a replay that never wraps around",
        "UniformReplay.add",
        replace("(self.next + _k) % self.capacity", "self.next + _k"),
        ANY,
    ),
    ("a replay whose size passes its capacity", "UniformReplay.add", replace("min(_n, self.capacity)", "_n"), ANY),
    (
        "uniform batches from rows not yet stored",
        "UniformReplay.sample",
        replace("self.size / batch", "self.capacity / batch"),
        ANY,
    ),
    # 7.2 clipped double-Q
    (
        "the second critic never trained",
        "TwinCritic.values",
        replace("torch.stack([_q1, _q2])", "torch.stack([_q1, _q1.detach()])"),
        ANY,
    ),
    (
        "no pessimistic target when clipped double-Q is on",
        "DDPGAgent.make_critics",
        replace("(TwinCritic, TwinCriticTarget)", "(TwinCritic, TwinCritic)"),
        ANY,
    ),
    # 7.2 clipped double-Q: the blank
    (
        "max instead of min over the two critics",
        "TwinCriticTarget.forward",
        replace("torch.minimum", "torch.maximum"),
        "check-clipped-double-q",
    ),
    (
        "only the first target critic",
        "TwinCriticTarget.forward",
        replace("torch.minimum(_q1, _q2)", "_q1"),
        "check-clipped-double-q",
    ),
    # 4 n-step targets
    (
        "the n-step rewards not discounted",
        "NStepAccumulator.emit",
        replace("self.discounts[_k]", "np.ones_like(self.discounts)[_k]", keep="self.discounts[self.n]"),
        "check-n-step-return",
    ),
    (
        "gamma^(n-1) for the bootstrap",
        "NStepAccumulator.emit",
        replace("self.discounts[self.n]", "self.discounts[self.n - 1]"),
        "check-n-step-return",
    ),
    (
        "the newest step as the transition's start",
        "NStepAccumulator.emit",
        replace("_window[0]", "_window[-1]"),
        "check-n-step-return",
    ),
    (
        "a flush that bootstraps from the next episode's first state",
        "NStepAccumulator.push",
        replace("self.flush(states)", "self.flush(next_states)"),
        ANY,
    ),
    ("the window not emptied after a flush", "NStepAccumulator.push", drop("self.count = 0"), ANY),
    (
        "a flush that emits the full window's oldest step again",
        "NStepAccumulator.flush",
        replace("1 if _ else 0", "0"),
        "check-n-step-flush",
    ),
    (
        "a flush that discounts every bootstrap by gamma^n",
        "NStepAccumulator.flush",
        replace("self.discounts[m - j]", "self.discounts[self.n]"),
        "check-n-step-flush",
    ),
    # 5.1 the sum tree
    (
        "a walk that forgets to go down on the left",
        "walk_step",
        replace("(2 * node, _u)", "(node, _u)"),
        "check-sum-tree-walk",
    ),
    ("a walk that forgets to subtract the left sum", "walk_step", replace("u - left", "u"), "check-sum-tree-walk"),
    ("a walk that sends the boundary left", "walk_step", replace("u >= left", "u > left"), "check-sum-tree-walk"),
    # 5.2 importance weights and priorities
    (
        "the weights divided by their smallest",
        "importance_weights",
        replace("weights.max()", "weights.min()"),
        "check-importance-weights",
    ),
    ("the weights' exponent +beta", "importance_weights", replace("-beta", "beta"), "check-importance-weights"),
    (
        "the weights not divided by their largest",
        "importance_weights",
        replace("weights / weights.max()", "weights"),
        "check-importance-weights",
    ),
    (
        "a priority from the signed TD error",
        "PrioritizedReplay.update_priorities",
        replace("abs(td_errors)", "td_errors"),
        "check-new-priority",
    ),
    (
        "a priority without its offset",
        "PrioritizedReplay.update_priorities",
        replace("_p + self.offset", "_p"),
        "check-new-priority",
    ),
    (
        "new transitions at the largest priority ever",
        "PrioritizedReplay.update_priorities",
        replace("self.recent[_] = _p", "self.recent[0] = max(self.recent[0], _p)"),
        "check-new-priority",
    ),
    ("a ring that never turns", "PrioritizedReplay.update_priorities", drop("self.updates += 1"), "check-new-priority"),
    (
        "priorities stored without the exponent alpha",
        "PrioritizedReplay._set_priority",
        replace("_p ** self.alpha", "_p"),
        ANY,
    ),
    # 6.1 noisy layers
    (
        "noise without f(x) = sgn(x) sqrt(|x|)",
        "NoisyLinear.set_noise",
        replace("_e.sign() * _e.abs().sqrt()", "_e"),
        ANY,
    ),
    (
        "weight noise not scaled by sigma",
        "NoisyLinear.noisy_weights",
        replace("self.weight_sigma", "torch.ones_like(self.weight_sigma)"),
        "check-noisy-weights",
    ),
    (
        "no noise on the bias",
        "NoisyLinear.noisy_weights",
        replace("self.bias_sigma", "torch.zeros_like(self.bias_sigma)"),
        "check-noisy-weights",
    ),
    # 3.1 the Ornstein-Uhlenbeck process
    (
        "OU noise that returns the white increment",
        "OrnsteinUhlenbeck.sample",
        replace("return self.state", "return xi"),
        "check-ou-step",
    ),
    (
        "an OU increment scaled by kappa",
        "OrnsteinUhlenbeck.sample",
        replace("(1 - (1 - self.kappa) ** 2) ** 0.5", "self.kappa"),
        "check-ou-step",
    ),
    (
        "an OU decay of kappa instead of 1 - kappa",
        "OrnsteinUhlenbeck.sample",
        replace("(1 - self.kappa) * self.state", "self.kappa * self.state"),
        "check-ou-step",
    ),
    # 3.3 and 7 the agent: schedules, learn, step
    ("an agent that never explores", "DDPGAgent.act", replace("_noisy if explore else _mean", "_mean"), ANY),
    ("n ramped one episode early", "Agent.begin_episode", replace("episode - 1", "episode"), ANY),
    (
        "the fast episodes one short",
        "DDPGAgent.begin_episode",
        replace("episode <= cfg.learn_every_until", "episode < cfg.learn_every_until"),
        ANY,
    ),
    ("beta never reaching 1", "Agent.beta", replace("min(1.0, _b)", "min(0.9, _b)"), ANY),
    ("beta stuck at its start", "Agent.beta", replace("self.steps", "0"), ANY),
    (
        "learning one step after the warm-up",
        "DDPGAgent.step",
        replace("self.memory.size >= self.cfg.warmup", "self.memory.size > self.cfg.warmup"),
        ANY,
    ),
    ("the behaviour policy not refreshed each step", "DDPGAgent.step", drop("self.behaviour.refresh()"), ANY),
    (
        "the actor's step before the critic's",
        "DDPGAgent.learn",
        move("_ = self.update_actor(...)", before="_ = self.update_critic(...)"),
        "check-learn",
    ),
    ("the critic's step not followed by its hook", "DDPGAgent.learn", drop("self.after_critic(...)"), "check-learn"),
    ("raw states in the update", "DDPGAgent.learn", replace("self.norm(_s)", "_s"), "check-learn"),
    ("priorities never updated", "Agent.after_critic", drop("self.memory.update_priorities(...)"), ANY),
    ("no fresh noise for the actor's step", "Agent.after_critic", drop("self.actor.set_noise(...)"), ANY),
    (
        "the actor's noise from the global generator",
        "Agent.after_critic",
        replace("torch.randn(_size, generator=self.gen)", "torch.randn(_size)"),
        ANY,
    ),
    ("batches drawn at beta 1 from the start", "Agent.replay_batch", replace("self.beta()", "1.0"), ANY),
]
# The training loop (3.4) runs the environment, which no check here has: its bugs follow (LOOP_BUGS), each
# planted in the lesson's `train`, which then trains on tests/test_training.py's made-up environment.


def lesson() -> list[dict]:
    """The whole lesson's code and checks, in order, as one program."""
    return grader.program(grader.cells(LESSON))


def test_the_checks_pass_on_the_lessons_code(judge):
    assert judge.run(lesson(), cpu=60)["failed"] == {}


def test_the_list_covers_thirty_bugs_in_every_section_and_every_blank():
    assert len(BUGS) >= 30
    assert {check for *_, check in BUGS} - {ANY} == {f"check-{blank}" for blank in student.blank_ids()}


@pytest.mark.parametrize("what, function, mutation, check", BUGS, ids=[b[0] for b in BUGS])
def test_a_check_catches_the_bug(judge, what, function, mutation, check):
    if check == ANY:
        failed = judge.run(plant(lesson(), function, mutation), first=True, cpu=60)["failed"]
        assert failed, f"no check fails with {what}"
    else:
        blank = check.removeprefix("check-")
        [cell] = plant([{"name": blank, "source": SOLVED[blank]}], function, mutation)
        assert not judge.grade(blank, cell["source"])["passed"], f"{what}: the judge gives {check}'s point"
        visible = judge.run(grader.program(grader.cells(EDITION), blank, {blank: cell["source"]}))["failed"]
        assert check in visible, f"{what}: the visible {check} passes"


LOOP_BUGS = [
    ("the state never advanced", replace("states = next_states", "pass")),
    (
        "the done step never given to the agent",
        replace("agent.step(_s, _a, _r, _n, done)", "agent.step(_s, _a, _r, _n, False)"),
    ),
    ("a score of the last step only", replace("scores += rewards", "scores = rewards")),
]


def made_up_training(tmp_path, program: list[dict]) -> tuple[list, dict]:
    """What the lesson's `train`, as `program` defines it, gives the agent over two episodes of tests/test_training.py's
    made-up environment, and the scores it keeps."""
    from test_training import Steps

    ns, seen, env = {}, [], Steps()
    for cell in program:
        exec(compile(cell["source"], cell["name"], "exec"), ns)

    class Spy(ns["Agent"]):
        def begin_episode(self, episode):
            seen.append(("episode", episode))
            super().begin_episode(episode)

        def step(self, states, actions, rewards, next_states, done):
            seen.append((states[0, 0], rewards.tolist(), next_states[0, 0], done))
            return super().step(states, actions, rewards, next_states, done)

    cfg = ns["Config"](buffer_size=100, batch_size=4, warmup=4)
    return seen, ns["train"](cfg, env, str(tmp_path), 2, live=False, agent_class=Spy)


@pytest.mark.parametrize("what, mutation", [(None, None), *LOOP_BUGS], ids=["no bug", *(b[0] for b in LOOP_BUGS)])
def test_the_made_up_environment_catches_each_bug_of_the_training_loop(tmp_path, what, mutation):
    program = [cell for cell in lesson() if cell["kind"] == "given"]
    seen, history = made_up_training(tmp_path, plant(program, "train", mutation) if mutation else program)
    episode = [(0, [1, 2], 1, False), (1, [1, 2], 2, False), (2, [1, 2], 3, False), (3, [1, 2], 0, True)]
    right = seen == [("episode", 1), *episode, ("episode", 2), *episode] and history["mean"] == [6.0, 6.0]
    assert right if mutation is None else not right, what
