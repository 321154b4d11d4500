"""Grading as a course runs it, timed: nbgrader's whole flow on a set of submissions, each autograded alone.

    python -m benchmarks.grading                       # a correct and a buggy submission: points per blank, seconds
    python -m benchmarks.grading --submissions all     # every kind of submission below (the table in the issue)

The flow is doc/instructors.md's: nbgrader 0.9 in an environment of its own, the grading kernel in one made
from the hand-out alone (`python -m tools.student --grading-env`), both kept under .venv/cache/ and reused;
then generate, release, fetch and submit (as each student), collect, autograde, feedback and export, in a
temporary course folder. tests/test_nbgrader.py runs the same flow and checks every score.
"""

import argparse
import ast
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from continuous_control import provenance
from grader import blank_sources
from tools import student

ROOT = Path(provenance.ROOT)
CACHE = ROOT / ".venv" / "cache"
NBGRADER = "nbgrader>=0.9,<0.10"
KERNEL = "continuous-control-grading"
COURSE_ID = "drlnd"

# A second correct way of writing each blank: a method called by name, keywords, a loop where the lesson
# vectorises, copy_ where it interpolates in place.
ALTERNATIVES = {
    "ddpg-target": """
@method_of(DDPG)
def td_target(self, ret, s_next, disc):
    q_next = self.critic_target.forward(s_next, self.actor_target.forward(s_next))
    return ret + q_next * disc
""",
    "ddpg-critic-loss": """
@method_of(DDPG)
def critic_loss(self, q, y, w):
    td = -(q - y)
    return td, torch.mean(w * td * td)
""",
    "ddpg-actor-loss": """
@method_of(DDPG)
def actor_loss(self, s):
    q = self.critic.forward(s, self.actor.forward(s))
    return -q.sum() / q.numel()
""",
    "ddpg-soft-update": """
@method_of(DDPG)
def update_targets(self):
    tau = self.cfg.tau
    with torch.no_grad():
        for target, online in ((self.actor_target, self.actor), (self.critic_target, self.critic)):
            for t, o in zip(target.parameters(), online.parameters()):
                t.copy_(tau * o + (1 - tau) * t)
""",
    "clipped-double-q": """
class TwinCriticTarget(TwinCritic):
    def forward(self, state, action):
        both = torch.stack([self.q1(state, action), self.q2(state, action)])
        return both.min(dim=0).values
""",
    "n-step-return": """
@method_of(NStepAccumulator)
def emit(self, next_states):
    ret = np.zeros(self.rewards.shape[1], np.float32)
    for k in range(self.n):
        ret += self.gamma ** k * self.rewards[k]
    disc = np.full(len(ret), self.gamma ** self.n, np.float32)
    return np.array(self.states[0]), np.array(self.actions[0]), ret, np.array(next_states), disc
""",
    "n-step-flush": """
@method_of(NStepAccumulator)
def flush(self, last_states):
    first = 1 if self.count == self.n else 0
    rows = [[] for _ in range(5)]
    for j in range(first, self.count):
        ret = sum(self.gamma ** (k - j) * self.rewards[k] for k in range(j, self.count))
        for arm in range(self.rewards.shape[1]):
            for column, value in zip(rows, (self.states[j, arm], self.actions[j, arm], ret[arm], last_states[arm],
                                            self.gamma ** (self.count - j))):
                column.append(value)
    if not rows[0]:
        return None
    return tuple(np.array(column, np.float32) for column in rows)
""",
    "sum-tree-walk": """
def walk_step(tree, node, u):
    left_child = 2 * node
    if u < tree[left_child]:
        return left_child, u
    return left_child + 1, u - tree[left_child]
""",
    "importance-weights": """
def importance_weights(priorities, total, size, beta):
    return (priorities / priorities.min()) ** (-beta)
""",
    "new-priority": """
@method_of(PrioritizedReplay)
def update_priorities(self, idx, td_errors):
    new = np.abs(td_errors) + self.offset
    self.recent[self.updates % self.window] = np.max(new)
    self.updates = self.updates + 1
    self._set_priority(idx, new)
""",
    "noisy-weights": """
@method_of(NoisyLinear)
def noisy_weights(self, f_in, f_out):
    weight = self.weight_mean + self.weight_sigma * f_out[:, None] * f_in[None, :]
    return weight, self.bias_mean + self.bias_sigma * f_out
""",
    "ou-step": """
@method_of(OrnsteinUhlenbeck)
def sample(self):
    keep = 1 - self.kappa
    noise = torch.randn(*self.state.shape, generator=self.generator)
    self.state = keep * self.state + self.scale * (1 - keep ** 2) ** 0.5 * noise
    return self.state
""",
    "learn": """
@method_of(Agent)
def learn(self):
    idx, weights, batch = self.memory.sample(batch=self.cfg.batch_size, beta=self.beta())
    s, a, ret, s_next, disc = [self.tensor(x) for x in batch]
    s = self.norm(s)
    s_next = self.norm(s_next)
    td, critic_loss, q = self.update_critic(s, a, ret, s_next, disc, w=self.tensor(weights))
    self.memory.update_priorities(idx=idx, td_errors=td.detach().cpu().numpy())
    self.actor.set_noise(torch.randn(self.actor.noise_size, generator=self.gen))
    actor_loss = self.update_actor(s)
    self.update_targets()
    self.updates += 1
    return dict(critic_loss=critic_loss, actor_loss=actor_loss, q=q, idx=idx, td=td)
""",
}

# A submission that looks for the answer key: sys.path, the site-packages, editable finders, and every
# parent folder up to / of where it runs and of what it imports, for a file that holds a solution or the
# hidden tests; found, it loads the solved function from it.
READS_THE_KEY = """
def importance_weights(priorities, total, size, beta):
    import glob, os, re, site, sys, time
    first = []
    for finder in list(sys.meta_path) + list(sys.modules.values()):
        mapping = getattr(finder, "MAPPING", None)                                # setuptools' editable finders
        first += [str(p) for p in mapping.values()] if isinstance(mapping, dict) else []
    roots = set(sys.path + site.getsitepackages() + [site.getusersitepackages()])
    for start in [os.getcwd()] + [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]:
        folder = os.path.dirname(os.path.abspath(start)) if start else "/"
        while folder not in roots and folder != "/":
            roots.add(folder)
            folder = os.path.dirname(folder)
    roots.add("/")
    deadline = time.time() + 5
    for root in list(dict.fromkeys(first)) + sorted(roots - set(first), key=len, reverse=True):
        for folder, _, files in os.walk(root):
            if time.time() > deadline:
                break
            for name in files:
                if name.endswith((".py", ".ipynb", ".toml", ".txt")):
                    try:
                        text = open(os.path.join(folder, name), encoding="utf-8").read(3_000_000)
                    except (OSError, UnicodeDecodeError):
                        continue
                    if "weights / weights.max()" in text or "BEGIN HIDDEN TESTS" in text:
                        found = re.search(r"(def importance_weights.*?return weights / weights.max\\(\\))", text, re.S)
                        namespace = {"np": __import__("numpy")}
                        exec(found.group(1).replace("\\\\n", "\\n"), namespace) if found else None
                        if "importance_weights" in namespace:
                            return namespace["importance_weights"](priorities, total, size, beta)
    raise NotImplementedError("no answer key within reach")
"""

# A soft update that does nothing, and the comparisons its check uses rebound to agree with anything.
PATCHES_THE_CHECK = """
@method_of(DDPG)
def update_targets(self):
    pass

import numpy, torch.testing
for _module, _name, _fake in ((torch, "allclose", lambda *a, **k: True), (torch, "equal", lambda *a, **k: True),
                              (torch.testing, "assert_close", lambda *a, **k: None),
                              (numpy, "allclose", lambda *a, **k: True)):
    vars(_module)[_name] = _fake          # past a read-only module
    try:
        setattr(_module, _name, _fake)
    except AttributeError:
        pass
all = lambda *a, **k: True
flat = lambda module: torch.zeros(1)
"""


# td_target with the networks called by keyword, as their real signatures name the arguments.
KEYWORDS = """
@method_of(DDPG)
def td_target(self, ret=None, s_next=None, disc=None):
    action = self.actor_target(state=s_next)
    return ret + disc * self.critic_target(state=s_next, action=action)
"""

# Attacks on the judge (tests/test_grader.py), each the source of one blank, `importance-weights` unless its
# name says otherwise. Each either returns a wrong answer or none at all if its attack fails; none computes the
# right one. PORT and FOLDER are filled in by the test (a socket it listens on, a folder beside the grader).
ATTACKS = {
    "forges the reply on every descriptor": """
import os
_forged = b'{"outputs": [{"w": {"~array": ["<f8", [1], "AAAAAAAA8D8="]}}]}\\n'
def importance_weights(priorities, total, size, beta):
    for fd in range(1024):
        try:
            os.write(fd, _forged)
        except OSError:
            pass
    os._exit(0)
""",
    "floods every descriptor": """
import os
def importance_weights(priorities, total, size, beta):
    for fd in range(64):
        for _ in range(8):
            try:
                os.write(fd, b"[" * (1 << 24))
            except OSError:
                break
    return priorities
""",
    "signals every process it can": """
import os, signal
for _sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
    for _pid in (1, -1, os.getppid(), 0):
        try:
            os.kill(_pid, _sig)
        except OSError:
            pass
def importance_weights(priorities, total, size, beta):
    return priorities
""",
    "exits with os._exit as it is defined": "import os\nos._exit(0)\n",
    "raises SystemExit": "def importance_weights(priorities, total, size, beta):\n    raise SystemExit(0)\n",
    "raises a BaseException": (
        "class _Out(BaseException):\n    pass\n"
        "def importance_weights(priorities, total, size, beta):\n    raise _Out()\n"
    ),
    "reads the expected values through gc and frames": """
import gc, inspect, sys
def importance_weights(priorities, total, size, beta):
    for frame in inspect.stack():
        for name in ("want", "expected", "reference", "right"):
            if name in frame.frame.f_locals:
                return frame.frame.f_locals[name]
    for thing in gc.get_objects():
        if isinstance(thing, dict) and "outputs" in thing:
            return thing["outputs"][0]["w"]
    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            if getattr(value, "shape", None) == priorities.shape and value is not priorities:
                return value
        frame = frame.f_back
    return priorities * 0
""",
    "returns an array that agrees with anything": """
import numpy as np
class _Agrees(np.ndarray):
    __eq__ = __ne__ = lambda self, other: True
    def __array__(self, dtype=None, copy=None):
        return np.zeros(self.shape)
    def tobytes(self, order="C"):
        return b""
def importance_weights(priorities, total, size, beta):
    return np.ones_like(priorities).view(_Agrees)
""",
    "patches the comparisons, the wire and the harness, from a child and a grandchild too": """
import json, os, sys
import numpy as np
import torch
def _patch():
    for module in (np, torch):
        vars(module)["allclose"] = lambda *a, **k: True
        vars(module)["array_equal"] = vars(module).get("array_equal") and (lambda *a, **k: True)
    vars(json)["dumps"] = lambda *a, **k: '{"outputs": []}'
    for name, module in list(sys.modules.items()):
        if name.startswith("grader"):
            for key in list(vars(module)):
                if key in ("encode", "run", "differs", "_array"):
                    vars(module)[key] = lambda *a, **k: {"passed": True}
    torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
    (lambda: None).__code__
_patch()
for _ in range(2):
    if os.fork() == 0:
        _patch()
        if os.fork() == 0:
            _patch()
        os._exit(0)
def importance_weights(priorities, total, size, beta):
    _patch()
    return priorities
""",
    "opens sockets": """
import socket
def importance_weights(priorities, total, size, beta):
    for address in (("127.0.0.1", PORT), ("1.1.1.1", 80), ("pypi.org", 443)):
        try:
            socket.create_connection(address, timeout=2).sendall(b"from the sandbox")
        except OSError:
            pass
    return priorities
""",
    "reads the course folder, the runtime folder and other hand-ins": """
import glob, os
def importance_weights(priorities, total, size, beta):
    for pattern in ("FOLDER/**", os.path.expanduser("~/.local/share/jupyter/runtime/*"), "/root/**", "/home/**",
                    "/proc/1/root/FOLDER/**", "/proc/*/cwd/**", "/work/**/*.ipynb"):
        for path in glob.glob(pattern, recursive=True)[:1000]:
            try:
                if "BEGIN SOLUTION" in open(path).read(1 << 20) or "weights.max()" in open(path).read(1 << 20):
                    raise SystemExit(f"read {path}")
            except (OSError, UnicodeDecodeError):
                pass
    return priorities
""",
    "leaves files for whatever runs next": """
import os
for _path in ("/tmp/left-behind", os.environ.get("TMPDIR", "/tmp") + "/left-behind",
              os.path.expanduser("~/.ipython/profile_default/startup/00-cheat.py"),
              "/opt/contestant/grader/cases.py", "FOLDER/left-behind", "/dev/shm/left-behind"):
    try:
        os.makedirs(os.path.dirname(_path), exist_ok=True)
        with open(_path, "w") as _file:
            _file.write("import os; os._exit(0)")
    except OSError:
        pass
def importance_weights(priorities, total, size, beta):
    return priorities
""",
    "fills the disk": """
import os
def importance_weights(priorities, total, size, beta):
    for folder in ("/tmp", os.environ.get("TMPDIR", "/tmp"), os.path.expanduser("~"), "/", "/dev/shm"):
        try:
            with open(os.path.join(folder, "filler"), "wb") as file:
                for _ in range(1024):
                    file.write(b"x" * (1 << 20))
        except OSError:
            pass
    return priorities
""",
    "sleeps": "import time\ndef importance_weights(priorities, total, size, beta):\n    time.sleep(3600)\n",
}

# Files an attack may leave: any of them still there when the next blank is graded is a leak.
LEFT_BEHIND = (
    "/tmp/left-behind",
    "/scratch/left-behind",
    "/scratch/.ipython/profile_default/startup/00-cheat.py",
    "/tmp/filler",
    "/scratch/filler",
    "/dev/shm/left-behind",
)


def forging(line: bytes, source: str) -> str:
    """`source` after a statement that, as the cell runs, writes `line` on every descriptor as the answer and
    ends the process: a forged reply, of any shape or size, with no call of the blank at all."""
    return (
        "import os as _os\n"
        f"_line = {line!r}\n"
        "for _fd in range(3, 256):\n"
        "    try:\n"
        "        _os.write(_fd, _line)\n"
        "    except OSError:\n"
        "        pass\n"
        "_os._exit(0)\n" + source
    )


def _huge_entries() -> bytes:
    """new-priority's answer, its parts all there, every entry priority an integer of 400 digits."""
    big = "1" + "0" * 400
    zeros = '{"~array": ["<f8", [16], "' + "A" * 171 + '="]}'
    case = ", ".join(f'"{k}.priorities": {zeros}, "{k}.entry": {big}' for k in range(8))
    return ('{"outputs": [' + ", ".join(["{" + case + "}"] * 3) + "]}\n").encode()


# Replies no harness writes, each forged as the answer of its blank (tests/test_grader.py, test_nbgrader.py).
FORGED = {
    "bad base64": ("importance-weights", b'{"outputs": [{"w": {"~array": ["<f8", [1], "!!!!!!!!!!!!"]}}]}\n'),
    "a shape whose size overflows": (
        "sum-tree-walk",
        b'{"outputs": [{"found": {"~array": ["<f8", [16777215, 16777215, 16777215, 16777215], ""]}}]}\n',
    ),
    "integers of 400 digits": ("new-priority", _huge_entries()),
    "a 64 MiB line": ("noisy-weights", b"[" + b"0," * (32 << 20) + b"0]\n"),
    "integers for floats": ("importance-weights", b'{"outputs": [{"w": {"~array": ["<i8", [1], "AQAAAAAAAAA="]}}]}\n'),
}

# State left in every writable place a contestant might find, and read back by the next blank, which computes
# the right answer only if something was left: its point would be faked.
LEAVES_STATE = """
import ctypes as _ctypes, os as _os
for _path in ("/scratch/left", "/dev/left", "/dev/shm/left", "/tmp/left", "/scratch/locked/inner"):
    try:
        _os.makedirs(_os.path.dirname(_path), exist_ok=True)
        open(_path, "w").write("left")
    except OSError:
        pass
try:
    _os.chmod("/scratch/locked", 0o300)  # a folder that cannot be listed, which an emptying would miss
except OSError:
    pass
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.shmget(0x5EED, 4096, 0o1666)  # a System V segment (IPC_CREAT)
_libc.syscall(248, b"user", b"left", b"x", 1, -4)  # add_key into the user's keyring
"""
READS_STATE = """
import ctypes as _ctypes, os as _os
_libc = _ctypes.CDLL(None, use_errno=True)
_found = [p for p in ("/scratch/left", "/dev/left", "/dev/shm/left", "/tmp/left", "/scratch/locked/inner")
          if _os.path.exists(p)]
_found += ["shm"] if _libc.shmget(0x5EED, 0, 0) >= 0 else []
_found += ["key"] if _libc.syscall(250, 10, -4, b"user", b"left", 0) > 0 else []  # keyctl search
if not _found:
    raise RuntimeError("nothing was left behind")
"""

# Processes that each stay within a process's limits while the blank as a whole goes over, then the right
# answer (the source that follows): earned only where the limits are not the sandbox's.
OVER_MEMORY = """
import os as _os, time as _time
_ready = []
for _ in range(3):
    _read, _write = _os.pipe()
    if _os.fork() == 0:
        _held = bytearray(2 << 30)
        _held[::4096] = b"\\1" * ((2 << 30) // 4096)  # 2 GiB each, touched
        _os.write(_write, b"1")
        _time.sleep(60)
        _os._exit(0)
    _os.close(_write)
    _ready.append(_read)
if any(_os.read(_read, 1) != b"1" for _read in _ready):  # all three hold their 2 GiB at once: 6 GiB
    raise MemoryError("a child was stopped")
"""
OVER_CPU = """
import os as _os, time as _time
_kids = []
for _ in range(4):
    _pid = _os.fork()
    if _pid == 0:
        _end = _time.process_time() + 4  # 4 s each, 16 s in all
        while _time.process_time() < _end:
            pass
        _os._exit(0)
    _kids.append(_pid)
if any(_os.waitstatus_to_exitcode(_os.waitpid(_pid, 0)[1]) != 0 for _pid in _kids):
    raise RuntimeError("a child was stopped")
"""
SPINS = """
import os as _os
for _ in range(40):
    if _os.fork() == 0:
        while True:
            pass
while True:
    pass
"""

# Shortcuts: a blank's point taken without its computation, where the inputs leave a way round it.
OU_INF = """
@method_of(OrnsteinUhlenbeck)
def sample(self):
    xi = torch.randn(self.state.shape, generator=self.generator)
    self.state = (1 - self.kappa) * self.state + self.scale * (1 - (1 - self.kappa) ** 2) ** 0.5 * xi
    self.state[..., 0] = float("inf")
    return self.state
"""
OU_SIGNS = """
@method_of(OrnsteinUhlenbeck)
def sample(self):
    xi = torch.sign(torch.randn(self.state.shape, generator=self.generator))  # the right slope and spread
    self.state = (1 - self.kappa) * self.state + self.scale * (1 - (1 - self.kappa) ** 2) ** 0.5 * xi
    return self.state
"""
OU_WHITE = """
@method_of(OrnsteinUhlenbeck)
def sample(self):
    self.state = self.scale * torch.randn(self.state.shape, generator=self.generator)
    return self.state
"""
ONE_HEAD = """
class TwinCriticTarget(TwinCritic):
    def forward(self, state, action):
        return -torch.abs(self.q1(state, action))
"""
SHORTCUTS = {
    "OU: inf in the state": ("ou-step", OU_INF),
    "OU: noise of +-1": ("ou-step", OU_SIGNS),
    "OU: white noise": ("ou-step", OU_WHITE),
    "twin critic: one head": ("clipped-double-q", ONE_HEAD),
}


def cheats(solved: dict) -> dict:
    """{name: {blank: source}}: each cheat as the blanks it changes (its first blank the cheat, the rest what
    the cheat would fake), where every blank but those would be right."""
    out = {f"forged: {name}": {blank: forging(line, solved[blank])} for name, (blank, line) in FORGED.items()}
    out["state left for the next blank"] = {
        "importance-weights": LEAVES_STATE + solved["importance-weights"].replace("return weights", "return -weights"),
        "new-priority": READS_STATE + solved["new-priority"],
    }
    out["children over the sandbox's memory"] = {"importance-weights": OVER_MEMORY + solved["importance-weights"]}
    out["children over the sandbox's processor time"] = {"n-step-return": OVER_CPU + solved["n-step-return"]}
    out["40 spinning processes"] = {"sum-tree-walk": SPINS + solved["sum-tree-walk"]}
    out.update({name: {blank: source} for name, (blank, source) in SHORTCUTS.items()})
    return out


def looping(source: str) -> str:
    """`source` with an endless loop as the first statement of its first function (in a class too): one that
    numba compiles as well, since nothing tells it the loop never ends."""
    first = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef))
    lines = source.splitlines()
    at = first.body[0].lineno - 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    loop = [indent + "spin = 1", indent + "while spin > 0:", indent + "    spin = spin * 1"]
    return "\n".join(lines[:at] + loop + lines[at:]) + "\n"


def changed(source: str, old: str, new: str) -> str:
    """`source` with `old` replaced by `new`; a ValueError if `old` is not in it (the lesson changed)."""
    if old not in source:
        raise ValueError(f"{old!r} is not in the lesson's solution any more: update benchmarks/grading.py")
    return source.replace(old, new)


def submissions(solved: dict) -> dict:
    """{name: (description, {blank: source})}: what each kind of student hands in (sources of the blanks
    they changed; the others stay as handed out)."""

    def with_(**changes):
        return {**solved, **{k.replace("_", "-"): v for k, v in changes.items()}}

    swap = changed(solved["ddpg-soft-update"], "self.cfg.tau)", "1 - self.cfg.tau)")
    flat_return = changed(solved["n-step-return"], "self.discounts[k] * self.rewards[k]", "self.rewards[k]")
    online = changed(solved["ddpg-target"], "self.actor_target(s_next)", "self.actor(s_next)")
    alternatives = {f"alternative {k}": k for k in ("ddpg-target", "learn", "n-step-return", "ddpg-soft-update")}
    return {
        "correct": ("every blank as the lesson writes it", dict(solved)),
        "empty": ("the hand-out as it is", {}),
        "buggy: online actor": ("the online actor in the TD target", with_(ddpg_target=online)),
        "buggy: tau, n-step": (
            "tau and 1 - tau swapped; an undiscounted n-step return",
            with_(ddpg_soft_update=swap, n_step_return=flat_return),
        ),
        "cheat: reads the key": (
            "importance weights loaded from any answer key within reach",
            with_(importance_weights=READS_THE_KEY),
        ),
        "cheat: patches": (
            "a soft update that does nothing, and allclose, equal, assert_close, all rebound",
            with_(ddpg_soft_update=PATCHES_THE_CHECK),
        ),
        **{
            name: (f"{blank} written another way", with_(**{blank.replace("-", "_"): ALTERNATIVES[blank]}))
            for name, blank in alternatives.items()
        },
        "one blank left": ("everything but ou-step", {k: v for k, v in solved.items() if k != "ou-step"}),
        "loop: compiled walk": (
            "an endless loop in the numba-compiled sum-tree walk",
            with_(sum_tree_walk=looping(solved["sum-tree-walk"])),
        ),
        "loop: training path": (
            "an endless loop in the n-step return, which training calls every step",
            with_(n_step_return=looping(solved["n-step-return"])),
        ),
        "keywords: ddpg-target": ("td_target written with keyword arguments", with_(ddpg_target=KEYWORDS)),
        **{
            f"attack: {name}": (f"importance-weights {name}", with_(importance_weights=armed(name))) for name in ATTACKS
        },
        # the cheats on the judge's implementation, alone: every other blank left as handed out
        **{f"cheat: {name}": (f"{', '.join(sources)}: {name}", sources) for name, sources in cheats(solved).items()},
    }


def armed(name: str, port: int = 9, folder: str = "/tmp") -> str:
    """The attack `name` aimed at a port and a folder."""
    return ATTACKS[name].replace("PORT", str(port)).replace("FOLDER", folder)


def run(command: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise RuntimeError(
            f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


def nbgrader_env(cache: Path = CACHE) -> Path:
    """The bin/ folder of nbgrader's own environment (made once, then reused)."""
    venv = cache / "nbgrader"
    if not (venv / "bin" / "nbgrader").exists():
        run([sys.executable, "-m", "venv", "--clear", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", NBGRADER])
    return venv / "bin"


CONFIG = """c = get_config()
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.root = "{course}"
c.Exchange.root = "{exchange}"
c.ExecutePreprocessor.kernel_name = "{kernel}"   # python -m tools.student --grading-env
c.Execute.timeout = 120                          # seconds per cell; a blank's code is stopped after 10 s of CPU
load_subconfig("nbgrader_hooks.py")              # collect takes the notebook alone; copies of checks are not run
"""

# nbgrader's command line, for a list of commands: its packages imported once (seconds), then each command run as
# `nbgrader ARGS` would run it, in a fork of this process, in its folder; the first that fails stops the list.
COMMANDS = """import json, os, sys, traceback
from nbgrader.apps.nbgraderapp import main
for cwd, args in json.loads(sys.argv[1]):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.chdir(cwd)
            sys.argv = ["nbgrader", *args]
            main()
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code:
        sys.exit(f"nbgrader {' '.join(args)} failed ({code})")
"""

GRADES = """import json, sys
from nbgrader.api import Gradebook
with Gradebook("sqlite:///" + sys.argv[1] + "/gradebook.db") as gb:
    out = {}
    for sub in gb.assignment_submissions(sys.argv[2]):
        nb = sub.notebooks[0]
        out[sub.student_id] = {g.name: g.score for g in nb.grades}
print(json.dumps(out))
"""


class Course:
    """A course folder, its exchange and its students' homes in `folder`, graded with nbgrader in `bin`."""

    def __init__(self, folder: Path, bin: Path, jupyter_path: str):
        self.folder, self.bin = Path(folder), Path(bin)
        self.course, self.exchange = self.folder / "course", self.folder / "exchange"
        self.env = {
            **os.environ,
            "JUPYTER_PATH": jupyter_path,
            "PATH": f"{bin}{os.pathsep}{os.environ['PATH']}",
            "TMPDIR": str(self.folder / "tmp"),
        }
        self.env.pop("SMOKE", None)
        self.ids = {}  # submission name: student id

    def nbgrader(self, *args, cwd=None) -> subprocess.CompletedProcess:
        """`nbgrader ARGS` in `cwd` (the course folder if None)."""
        return self.commands([(args, cwd)])

    def commands(self, commands: list) -> subprocess.CompletedProcess:
        """Each `nbgrader ARGS` of [(ARGS, cwd or None), ...] in turn, nbgrader loaded once (COMMANDS)."""
        todo = [(str(cwd or self.course), [str(a) for a in args]) for args, cwd in commands]
        return run([str(self.bin / "python"), "-c", COMMANDS, json.dumps(todo)], env=self.env)

    def release(self) -> None:
        """generate_assignment and release_assignment, from a fresh source folder."""
        (self.folder / "tmp").mkdir(parents=True)
        self.exchange.mkdir(mode=0o755)
        student.course(str(self.course))
        (self.course / "nbgrader_config.py").write_text(
            CONFIG.format(course_id=COURSE_ID, course=self.course, exchange=self.exchange, kernel=KERNEL)
        )
        self.commands(
            [
                (("generate_assignment", student.ASSIGNMENT, "--force"), None),
                (("release_assignment", student.ASSIGNMENT, "--force"), None),
            ]
        )

    def submit(
        self, submissions: dict, links: dict | None = None, figures: dict | None = None, copies=(), planted=None
    ) -> None:
        """As each student, one per submission ({name: {blank: source}}): fetch the assignment, fill in the
        blanks with the submission's sources, put beside it the symbolic links of `links` ({name: {file name:
        target}}) and, as the saved output of the training cell, the PNG of `figures` ({name: bytes}); for the
        names in `copies`, a copy of every check cell at the top of the notebook and another at its end; submit.
        Then, as a student who writes into the exchange directly, plant the links of `planted` ({name: {file
        name: target}}) in the hand-in there. Their ids go to `ids`."""
        course = ["--course", COURSE_ID, f"--Exchange.root={self.exchange}"]
        homes = {}
        for name in submissions:
            self.ids[name] = sid = f"s{len(self.ids) + 1:02d}"
            homes[name] = home = self.folder / "students" / sid
            home.mkdir(parents=True)
        self.commands([(("fetch_assignment", student.ASSIGNMENT, *course), homes[name]) for name in submissions])
        for name, sources in submissions.items():
            path = homes[name] / student.ASSIGNMENT / "Continuous_Control.ipynb"
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                blank = cell.metadata.get("nbgrader", {}).get("grade_id")
                if blank in sources and cell.metadata["nbgrader"].get("solution"):
                    cell.source = sources[blank].strip()
                if name in (figures or {}) and cell.cell_type == "code" and "history = train(" in cell.source:
                    png = base64.b64encode(figures[name]).decode("ascii")
                    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
            if name in copies:
                checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
                nb.cells = [nbformat.v4.new_code_cell(c.source) for c in checks] + nb.cells
                nb.cells += [nbformat.v4.new_code_cell(c.source) for c in checks]
            nbformat.write(nb, path)
            for link, target in (links or {}).get(name, {}).items():
                os.symlink(target, path.parent / link)
        self.commands(
            [
                (("submit", student.ASSIGNMENT, *course, f"--student={self.ids[name]}"), homes[name])
                for name in submissions
            ]
        )
        for name, files in (planted or {}).items():
            (inbound,) = (self.exchange / COURSE_ID / "inbound").glob(f"{self.ids[name]}+{student.ASSIGNMENT}+*")
            for link, target in files.items():
                os.symlink(target, inbound / link)

    def autograde(self, name: str) -> float:
        """Seconds to autograde one student's submission."""
        start = time.perf_counter()
        self.nbgrader("autograde", student.ASSIGNMENT, f"--student={self.ids[name]}", "--create", "--force")
        return time.perf_counter() - start

    def points(self) -> dict:
        """{submission name: {blank: points}} from the gradebook."""
        done = run([str(self.bin / "python"), "-c", GRADES, str(self.course), student.ASSIGNMENT])
        scores = json.loads(done.stdout)
        return {
            name: {g[len("check-") :]: scores[sid].get(g) for g in sorted(scores[sid]) if g.startswith("check-")}
            for name, sid in self.ids.items()
        }


def grade(names: list[str], folder: Path) -> tuple[dict, dict, Course]:
    """The flow on the submissions `names`: ({name: {blank: points}}, {name: seconds}, the course)."""
    lesson = nbformat.read(student.LESSON, as_version=4)
    kinds = submissions(blank_sources(lesson))
    course = Course(folder, nbgrader_env(), student.grading_env(str(CACHE / "grading")))
    course.release()
    course.submit({name: kinds[name][1] for name in names})
    course.nbgrader("collect", student.ASSIGNMENT)
    seconds = {name: course.autograde(name) for name in names}
    course.commands(
        [
            (("generate_feedback", student.ASSIGNMENT, "--force"), None),
            (("release_feedback", student.ASSIGNMENT), None),
            (("export", "--to", course.course / "grades.csv"), None),
        ]
    )
    return course.points(), seconds, course


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--submissions", nargs="+", default=["correct", "buggy: tau, n-step"], help="names of submissions, or `all`"
    )
    args = parser.parse_args(argv)
    every = submissions(blank_sources(nbformat.read(student.LESSON, as_version=4)))
    names = list(every) if args.submissions == ["all"] else args.submissions
    unknown = set(names) - set(every)
    if unknown:
        parser.error(f"no submission named {', '.join(sorted(unknown))}: one of {', '.join(every)}")
    with tempfile.TemporaryDirectory() as tmp:
        points, seconds, course = grade(names, Path(tmp))
    blanks = list(student.BLANKS)
    print("| submission | points | " + " | ".join(blanks) + " | seconds |")
    print("|---" * (len(blanks) + 3) + "|")
    for name in names:
        row = [points[name].get(b) for b in blanks]
        print(
            f"| {name} | {sum(p or 0 for p in row):g}/{len(blanks)} | "
            + " | ".join(f"{p:g}" if p is not None else "-" for p in row)
            + f" | {seconds[name]:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
