"""The student edition of the lesson, and what an instructor needs to hand it out and grade it with nbgrader.

    python -m tools.student                  # write lab/Continuous_Control_student.ipynb from the lesson
    python -m tools.student --check          # exit 1 if the committed edition is not what the lesson gives
    python -m tools.student --handout DIR    # DIR: the edition and the files it runs with, no solution in any
    python -m tools.student --course DIR     # DIR/source/continuous_control/: nbgrader's source (see doc/instructors.md)

The lesson carries no grading markers. A blank is a code cell with nbgrader's metadata `solution: true`,
which holds one function (a method added to its class, d2l's pattern); its graded check is the cell whose
`grade_id` is `check-` and the blank's id. The student keeps the function's signature and docstring; its
body becomes a hint (below, per blank) and nbgrader's stub. nbgrader's source notebook is the lesson
with the markers put in (the body between `### BEGIN SOLUTION` and `### END SOLUTION`, the hidden
tests below appended to each graded check between `### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS`),
so that `nbgrader generate_assignment` releases exactly the student edition.
"""
import argparse
import ast
import copy
import os
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSON = os.path.join(ROOT, "Continuous_Control.ipynb")
EDITION = os.path.join(ROOT, "lab", "Continuous_Control_student.ipynb")
ASSIGNMENT = "continuous_control"
STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]          # nbgrader's own code stub
# What the lesson needs beside itself: the packages it imports, and the saved runs its effect sentences read.
SUPPORT = ["reacher", "continuous_control", "experiments", "results", "requirements.txt"]
# Files whose code holds a solution: in a hand-out, agent.py is the edition's own export (blanks and all),
# and the report's ablations (a variant of the new-transition priority) are left out.
WITHHELD = {"continuous_control/agent.py", "continuous_control/ablations.py"}

# Each blank's hint: the idea and its section, not the code.
HINTS = {
    "ddpg-target": "2.2, the TD target: the reward plus the transition's own discount times the TARGET critic's "
                   "value of the action the TARGET actor picks in the next state.",
    "ddpg-critic-loss": "2.2, the critic's loss: the TD errors (target minus estimate) and the mean of their squares, "
                        "each weighted by its importance weight.",
    "ddpg-actor-loss": "2.2, the deterministic policy gradient: a loss whose descent climbs the critic's value "
                       "of the actor's own actions.",
    "ddpg-soft-update": "2.2, Polyak averaging: move every parameter of both target networks a fraction tau of the "
                        "way toward its online network's, in place.",
    "clipped-double-q": "2.3, clipped double-Q: the pessimistic value of the pair, transition by transition.",
    "n-step-return": "3, the n-step transition: the oldest step's state and action, the discounted sum of the "
                     "window's n rewards, the state after the window, and the bootstrap's discount.",
    "n-step-flush": "3, the done step: each step of the window that has not started a transition yet sums its "
                    "discounted rewards up to the last real step and bootstraps from the last real state.",
    "sum-tree-walk": "4.1, the sum tree: u falls in the left subtree or, minus the left sum, in the right one.",
    "importance-weights": "4.2, importance sampling: each sampled transition's probability, the correction "
                          "(N P)^-beta, scaled so that the batch's largest weight is 1.",
    "new-priority": "4.2, priorities: |TD error| plus the offset, stored to the power alpha; and this update's "
                    "largest priority goes into the ring of recent updates that new transitions read.",
    "noisy-weights": "5.1, factorised Gaussian noise: the mean weights plus sigma times the noise matrix made "
                     "from the output and input noise; the bias likewise, from the output noise.",
    "ou-step": "5.2, the Ornstein-Uhlenbeck process: decay toward 0 at the rate kappa, plus a fresh standard "
               "normal draw scaled so that the stationary spread stays `scale`.",
    "learn": "6.2, one update: a prioritized batch, normalised; the critic's step; new priorities from its TD "
             "errors; fresh noise; the actor's step; the soft update; the losses and the mean Q.",
}

# Tests that only grading runs (nbgrader's hidden tests), appended to each graded check.
HIDDEN = {
    "check-ddpg-target": """\
_b = torch.Generator().manual_seed(7)
_r, _s2, _d = torch.rand(16, generator=_b), torch.randn(16, state_size, generator=_b), torch.rand(16, generator=_b)
_nets = DDPG(cfg, Actor(state_size, action_size, cfg.hidden), Actor(state_size, action_size, cfg.hidden),
             Critic(state_size, action_size, cfg.hidden), Critic(state_size, action_size, cfg.hidden), state_size)
with torch.no_grad():
    _nets.critic.out.bias.add_(1.0)
    _nets.actor.layers[0].bias.add_(1.0)
    assert torch.allclose(_nets.td_target(_r, _s2, _d), _r + _d * _nets.critic_target(_s2, _nets.actor_target(_s2)), atol=1e-6)
""",
    "check-ddpg-critic-loss": """\
_q, _y, _w = torch.randn(2, 8), torch.randn(8), torch.rand(8)
_td, _loss = ddpg.critic_loss(_q, _y, _w)
assert _td.shape == (2, 8) and torch.allclose(_td, _y - _q) and torch.isclose(_loss, (_w * (_y - _q) ** 2).mean())
""",
    "check-ddpg-actor-loss": """\
_s = torch.randn(8, state_size)
assert torch.isclose(ddpg.actor_loss(_s), -ddpg.critic(_s, ddpg.actor(_s)).mean())
ddpg.actor.zero_grad()
ddpg.actor_loss(_s).backward()
assert all(p.grad is not None for p in ddpg.actor.parameters())
""",
    "check-ddpg-soft-update": """\
_t0, _o0 = flat(ddpg.critic_target), flat(ddpg.critic)
ddpg.update_targets()
ddpg.update_targets()
assert torch.allclose(flat(ddpg.critic_target), _t0 + (1 - (1 - cfg.tau) ** 2) * (_o0 - _t0), atol=1e-6)
""",
    "check-clipped-double-q": """\
_pair = TwinCriticTarget(state_size, action_size, cfg.hidden)
_s, _a = torch.randn(32, state_size), torch.rand(32, action_size)
assert torch.equal(_pair(_s, _a), torch.minimum(_pair.q1(_s, _a), _pair.q2(_s, _a)))
""",
    "check-n-step-return": """\
for _n, _g in ((1, 0.9), (2, 0.9)):
    _acc = NStepAccumulator(n=_n, gamma=_g, num_agents=1, state_size=1, action_size=1)
    _outs = [_acc.push(np.full((1, 1), t, np.float32), np.zeros((1, 1), np.float32), np.array([t + 1.0]),
                       np.full((1, 1), t + 1, np.float32), done=False) for t in range(3)]
    _s, _a, _ret, _s2, _disc = _outs[-1]
    assert np.isclose(_ret[0], sum(_g ** k * (3 - _n + 1 + k) for k in range(_n))) and np.isclose(_disc[0], _g ** _n)
    assert _s[0, 0] == 3 - _n and _s2[0, 0] == 3
""",
    "check-n-step-flush": """\
_acc = NStepAccumulator(n=1, gamma=0.9, num_agents=1, state_size=1, action_size=1)
_acc.push(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32), np.ones(1), np.ones((1, 1), np.float32), done=False)
assert _acc.push(np.ones((1, 1), np.float32), np.zeros((1, 1), np.float32), np.ones(1), np.zeros((1, 1), np.float32), done=True) is None
_acc = NStepAccumulator(n=4, gamma=0.9, num_agents=1, state_size=1, action_size=1)
_acc.push(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32), np.array([2.0]), np.ones((1, 1), np.float32), done=False)
_s, _a, _ret, _s2, _disc = _acc.push(np.ones((1, 1), np.float32), np.zeros((1, 1), np.float32), np.ones(1),
                                     np.zeros((1, 1), np.float32), done=True)
assert _ret.tolist() == [2.0] and np.isclose(_disc[0], 0.9) and _s2[0, 0] == 1
""",
    "check-sum-tree-walk": """\
_p = np.random.default_rng(3).random(50)
_tree = SumTree(50)
_tree[np.arange(50)] = _p
_u = np.random.default_rng(4).uniform(0, _tree.total(), 1000)
assert np.array_equal(_tree.find_prefix_sum(_u), np.searchsorted(np.cumsum(_p), _u, side="right"))
""",
    "check-importance-weights": """\
_p = np.random.default_rng(5).random(32) + 0.1
_w = (100 * _p / 40.0) ** -0.7
assert np.allclose(importance_weights(_p, 40.0, 100, 0.7), _w / _w.max())
""",
    "check-new-priority": """\
_pr = PrioritizedReplay(8, state_size=1, action_size=1, alpha=1.0, offset=0.5, rng=np.random.default_rng(0))
_pr.update_priorities(np.array([0, 1]), np.array([-3.0, 1.0]))
_pr.update_priorities(np.array([2]), np.array([0.25]))
assert np.allclose(_pr.priorities[np.arange(3)], [3.5, 1.5, 0.75]) and _pr.entry_priority == 0.75
""",
    "check-noisy-weights": """\
_layer = NoisyLinear(4, 3, sigma0=0.4)
_fin, _fout = torch.randn(4), torch.randn(3)
_w, _b = _layer.noisy_weights(_fin, _fout)
assert torch.allclose(_w, _layer.weight_mean + _layer.weight_sigma * torch.outer(_fout, _fin))
assert torch.allclose(_b, _layer.bias_mean + _layer.bias_sigma * _fout)
""",
    "check-ou-step": """\
_paths = []
for _ in range(2):
    _ou = OrnsteinUhlenbeck(20_000, kappa=0.3, scale=2.0, generator=torch.Generator().manual_seed(1))
    _paths.append(torch.stack([_ou.sample() for _ in range(30)]))
assert torch.equal(_paths[0], _paths[1]) and abs(_paths[0][-1].std() - 2) < 0.05
assert abs(torch.corrcoef(_paths[0][[10, 11]])[0, 1] - 0.7) < 0.03
""",
    "check-learn": """\
_agent = Agent(Config(buffer_size=1000, batch_size=8, warmup=8), state_size, action_size, 2)
_agent.begin_episode(1)
_x = np.random.default_rng(0).standard_normal((5, 2, state_size)).astype(np.float32)
for _t in range(4):
    _agent.step(_x[_t], _agent.act(_x[_t]), np.ones(2, np.float32), _x[_t + 1], done=_t == 3)
_out = _agent.learn()
assert set(_out) == {"critic_loss", "actor_loss", "q"} and _agent.updates >= 1 and _agent.memory.updates == _agent.updates
""",
}


def blank_ids(lesson=None) -> list[str]:
    """The blanks' grade_ids, in the lesson's order."""
    lesson = lesson or nbformat.read(LESSON, as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in lesson.cells if c.metadata.get("nbgrader", {}).get("solution")]


def body(source: str) -> tuple[int, int, str]:
    """(first, last) line numbers, from 0, of the body of the cell's one function after its docstring, and
    its indentation: what the student writes."""
    functions = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)]
    if len(functions) != 1:
        raise ValueError(f"a blank holds one function, this cell {len(functions)}: {source[:80]!r}")
    statements = functions[0].body
    has_docstring = isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant)
    first = statements[0].end_lineno if has_docstring else statements[0].lineno - 1
    line = source.splitlines()[first]
    return first, functions[0].end_lineno - 1, line[:len(line) - len(line.lstrip())]


def marked(source: str, hint: str) -> str:
    """nbgrader's source cell: the hint as a comment, then the body between the solution markers."""
    lines = source.splitlines()
    first, last, indent = body(source)
    return "\n".join(lines[:first] + [f"{indent}# {hint}", f"{indent}### BEGIN SOLUTION"] + lines[first:last + 1]
                     + [f"{indent}### END SOLUTION"] + lines[last + 1:])


def stubbed(source: str, hint: str) -> str:
    """The student's cell: the hint, and nbgrader's stub where the body was (what generate_assignment makes)."""
    lines = source.splitlines()
    first, last, indent = body(source)
    return "\n".join(lines[:first] + [f"{indent}# {hint}"] + [indent + line for line in STUB] + lines[last + 1:])


def _clean(lesson):
    nb = copy.deepcopy(lesson)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)              # no text twin: saving it makes no scripts/ folder
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("tags", "nbgrader")}   # no run's timings
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def source_notebook(lesson):
    """nbgrader's source version of the lesson: solution and hidden-test markers in, outputs out."""
    nb = _clean(lesson)
    for cell in nb.cells:
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("solution"):
            cell.source = marked(cell.source, HINTS[grading["grade_id"]])
        elif grading.get("grade"):
            cell.source += "\n### BEGIN HIDDEN TESTS\n" + HIDDEN[grading["grade_id"]] + "### END HIDDEN TESTS"
    return nb


def edition(lesson, keep: set = frozenset()):
    """The student edition (what nbgrader releases): each blank's body a stub, outputs cleared; the blanks
    whose ids are in `keep` are filled in (as a correct submission)."""
    nb = _clean(lesson)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id not in keep:
            cell.source = stubbed(cell.source, HINTS[grade_id])
    return nb


def solutions(lesson) -> dict:
    """{blank: the lines of its solution}, as the lesson has them."""
    out = {}
    for cell in lesson.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            first, last, _ = body(cell.source)
            out[cell.metadata["nbgrader"]["grade_id"]] = [x.strip() for x in cell.source.splitlines()[first:last + 1] if x.strip()]
    return out


def write_support(folder: str, notebook) -> None:
    """Into `folder`: the files the lesson runs with, and `continuous_control/agent.py` exported from
    `notebook` (the edition's agent holds its blanks, not their solutions)."""
    from continuous_control import export
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "python.path", "resume", "resume.old*")
    for name in SUPPORT:
        source, target = os.path.join(ROOT, name), os.path.join(folder, name)
        if os.path.isdir(source):
            shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
    for name in WITHHELD:
        os.remove(os.path.join(folder, name))
    exported = os.path.join(folder, "continuous_control", "agent.py")
    nbformat.write(notebook, exported + ".ipynb")
    Path(exported).write_text(export.module_source(exported + ".ipynb"), encoding="utf-8")
    os.remove(exported + ".ipynb")
    Path(folder, "continuous_control", "ablations.py").write_text(
        '"""The report\'s ablations are not part of the hand-out."""\n', encoding="utf-8")   # code_fingerprint reads it


def handout(folder: str) -> str:
    """What students get: the edition as `Continuous_Control.ipynb`, and the files it runs with."""
    lesson = nbformat.read(LESSON, as_version=4)
    os.makedirs(folder, exist_ok=True)
    student = edition(lesson)
    write_support(folder, student)
    nbformat.write(student, os.path.join(folder, "Continuous_Control.ipynb"))
    return folder


def course(folder: str) -> str:
    """nbgrader's source folder of the assignment in the course directory `folder`."""
    source = os.path.join(folder, "source", ASSIGNMENT)
    os.makedirs(source, exist_ok=True)
    lesson = nbformat.read(LESSON, as_version=4)
    write_support(source, edition(lesson))
    nbformat.write(source_notebook(lesson), os.path.join(source, "Continuous_Control.ipynb"))
    return source


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed edition is out of date")
    parser.add_argument("--handout", metavar="DIR", help="write the hand-out into DIR")
    parser.add_argument("--course", metavar="DIR", help="write nbgrader's source of the assignment into DIR/source/")
    args = parser.parse_args(argv)
    if args.handout:
        print(f"wrote the hand-out into {handout(args.handout)}")
        return 0
    if args.course:
        print(f"wrote nbgrader's source into {course(args.course)}")
        return 0
    wanted = nbformat.writes(edition(nbformat.read(LESSON, as_version=4))) + "\n"
    if args.check:
        current = Path(EDITION).read_text(encoding="utf-8") if os.path.exists(EDITION) else ""
        if current != wanted:
            print(f"{os.path.relpath(EDITION, ROOT)} is not the lesson's student edition: run `make student`")
            return 1
        return 0
    os.makedirs(os.path.dirname(EDITION), exist_ok=True)
    with open(EDITION, "w", encoding="utf-8") as f:
        f.write(wanted)
    print(f"wrote {os.path.relpath(EDITION, ROOT)}: {len(blank_ids())} blanks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
